#include "synth/baselines/families.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <vector>

#include "synth/baselines/builder.hpp"
#include "topo/analysis.hpp"
#include "topo/error.hpp"

namespace tenet::synth::detail {

namespace {

// The NPUs as a mixed-radix grid, first dimension fastest: from the topology's dimensions (NPU
// ids in mixed radix), or from detected servers (position in the server, then the server).
struct Hierarchy {
  std::vector<int> levels;
  std::vector<int64_t> slot_of;  // NPU -> its mixed-radix index
  std::vector<NodeId> npu_at;    // mixed-radix index -> NPU
  std::vector<int64_t> stride;   // per dimension, the index step of one coordinate
  size_t dims() const { return levels.size(); }
  // Coordinate d of the NPU at mixed-radix index x.
  int coord(int64_t x, size_t d) const {
    for (size_t e = 0; e < d; ++e) x /= levels[e];
    return static_cast<int>(x % levels[d]);
  }
};

// Throws NotApplicable where `t` has neither dimensions nor servers.
Hierarchy hierarchy_of(const Topology& t) {
  Hierarchy h;
  h.levels = t.levels();
  h.slot_of.resize(t.num_npus());
  if (h.levels.size() >= 2) {
    for (NodeId v = 0; v < t.num_npus(); ++v) h.slot_of[v] = v;
  } else {
    const std::vector<std::vector<NodeId>> servers = topo::detect_servers(t);
    if (servers.empty())
      throw NotApplicable(
          "the topology has no dimensions and no servers (NPUs joined by faster links than the "
          "rest): generate it with ' x ' between specs, load an ASTRA-sim network.yml, or give a "
          "topology file `dimensions`");
    h.levels = {static_cast<int>(servers[0].size()), static_cast<int>(servers.size())};
    for (size_t s = 0; s < servers.size(); ++s)
      for (size_t k = 0; k < servers[s].size(); ++k)
        h.slot_of[servers[s][k]] = static_cast<int64_t>(s * servers[s].size() + k);
  }
  h.npu_at.resize(t.num_npus());
  for (NodeId v = 0; v < t.num_npus(); ++v) h.npu_at[h.slot_of[v]] = v;
  h.stride.assign(h.dims(), 1);
  for (size_t d = 1; d < h.dims(); ++d) h.stride[d] = h.stride[d - 1] * h.levels[d - 1];
  return h;
}

// All-to-All, dimension by dimension in ascending order (ASTRA-sim's native one): in the phase
// over dimension d a chunk moves, along its line of d, from where the phases before left it (its
// destination's coordinates below d, its origin's from d on) to its destination's coordinate d,
// by the store-and-forward ring All-to-All of each line.
void all_to_all_by_dimension(Builder& b, const Topology& t, const Collective& c, const Hierarchy& h,
                             const std::vector<BaselineKind>& per_dim) {
  Steps st{b};
  for (size_t d = 0; d < h.dims(); ++d) {
    const int p = h.levels[d];
    if (p == 1) continue;
    if (per_dim[d] != BaselineKind::Ring)
      throw NotApplicable("a hierarchical All-to-All runs a ring per dimension");
    st.begin();
    // Per line (its member at coordinate 0 of d): towards[i * p + j], member i's chunks for j.
    std::map<int64_t, std::vector<std::vector<ChunkId>>> lines;
    for (ChunkId ch = 0; ch < c.num_chunks(); ++ch) {
      const int64_t origin = h.slot_of[c.ranks[c.origin(ch)]];
      const int64_t dest = h.slot_of[c.ranks[c.needed_by(ch)]];
      int64_t holder = 0;
      for (size_t e = 0; e < h.dims(); ++e)
        holder += (e < d ? h.coord(dest, e) : h.coord(origin, e)) * h.stride[e];
      const int from = h.coord(origin, d), to = h.coord(dest, d);
      if (from == to) continue;
      auto& towards = lines[holder - from * h.stride[d]];
      towards.resize(static_cast<size_t>(p) * p);
      towards[static_cast<size_t>(from) * p + to].push_back(ch);
    }
    for (const auto& [base, towards] : lines) {
      std::vector<NodeId> line(p);
      for (int j = 0; j < p; ++j) line[j] = h.npu_at[base + j * h.stride[d]];
      for (int j = 0; j < p; ++j) b.gate(line[j], st.deps(line[j]));
      // The line's natural order is a ring on a Ring dimension; otherwise find one.
      const std::vector<NodeId> order = ring_order(t, line);
      std::vector<int> pos(t.num_npus(), -1);
      for (int j = 0; j < p; ++j) pos[order[j]] = j;
      std::vector<std::vector<ChunkId>> placed(towards.size());
      for (int i = 0; i < p; ++i)
        for (int j = 0; j < p; ++j)
          placed[static_cast<size_t>(pos[line[i]]) * p + pos[line[j]]] =
              towards[static_cast<size_t>(i) * p + j];
      Steps inner{b};
      ring_all_to_all_steps(b, order, placed, inner);
      b.clear_gates();
    }
  }
}

}  // namespace

void hierarchical(Builder& b, const Topology& t, const Collective& c,
                  std::vector<BaselineKind> per_dim) {
  const Hierarchy h = hierarchy_of(t);
  if (c.num_ranks() != t.num_npus())
    throw NotApplicable("hierarchical runs over every NPU of the topology, not a subset");
  const size_t dims = h.dims();
  if (per_dim.empty()) per_dim.assign(dims, BaselineKind::Ring);
  if (per_dim.size() == 1) per_dim.assign(dims, per_dim[0]);
  if (per_dim.size() != dims)
    throw Error(
        fmt::format("hierarchical names {} algorithms for {} dimensions", per_dim.size(), dims));
  if (c.kind == CollectiveKind::AllToAll) {
    all_to_all_by_dimension(b, t, c, h, per_dim);
    return;
  }
  const std::vector<int>& levels = h.levels;
  const std::vector<int64_t>& stride = h.stride;
  auto coord = [&h](int64_t x, size_t d) { return h.coord(x, d); };
  // Per chunk, the mixed-radix index whose coordinates place it in each phase's blocks. Of a
  // Reduce-Scatter or All-Gather, its owner's. An All-Reduce's result belongs to no rank: its
  // chunks in rank-major order take the coordinates with the first dimension slowest, so that
  // every phase's blocks are runs of consecutive chunks (the first phase splits the buffer into
  // contiguous shards, the next each shard, ...), sent as one message a step where the algorithm
  // sends by steps, as MPI's hierarchical All-Reduce does on a contiguous buffer.
  std::vector<int64_t> placed_at(c.num_chunks());
  for (ChunkId ch = 0; ch < c.num_chunks(); ++ch) {
    if (c.kind != CollectiveKind::AllReduce) {
      placed_at[ch] = h.slot_of[c.ranks[c.origin(ch)]];
      continue;
    }
    int64_t rest = c.origin(ch), below = t.num_npus(), at = 0;
    for (size_t d = 0; d < dims; ++d) {
      below /= levels[d];
      at += rest / below * stride[d];
      rest %= below;
    }
    placed_at[ch] = at;
  }
  Steps st{b};
  // Phase over dimension d on every line: member j's block is the chunks whose owner agrees with
  // the line on dimensions before d and has coordinate j in d.
  auto phase = [&](size_t d, bool reduce) {
    st.begin();
    const int p = levels[d];
    if (per_dim[d] == BaselineKind::Rhd && !power_of_two(p))
      throw NotApplicable(
          fmt::format("dimension {} has {} NPUs: halving-doubling needs a power of two", d + 1, p));
    for (int64_t base = 0; base < t.num_npus(); ++base) {
      if (coord(base, d) != 0) continue;
      std::vector<NodeId> line(p);
      for (int j = 0; j < p; ++j) line[j] = h.npu_at[base + j * stride[d]];
      Blocks blocks(p);
      for (ChunkId ch = 0; ch < c.num_chunks(); ++ch) {
        const int64_t owner = placed_at[ch];
        bool same = true;
        for (size_t e = 0; e < d && same; ++e) same = coord(owner, e) == coord(base, e);
        if (same) blocks[coord(owner, d)].push_back(ch);
      }
      // Each member starts the phase once everything of the previous phase has arrived at it.
      for (int j = 0; j < p; ++j) b.gate(line[j], st.deps(line[j]));
      switch (per_dim[d]) {
        case BaselineKind::Ring: {
          // The line's natural order is a ring on a Ring dimension; otherwise find one.
          std::vector<NodeId> order = ring_order(t, line);
          std::vector<int> pos(t.num_npus(), -1);
          for (int j = 0; j < p; ++j) pos[order[j]] = j;
          Blocks placed(p);
          for (int j = 0; j < p; ++j) placed[pos[line[j]]] = blocks[j];
          Steps inner{b};
          ring_steps(b, order, placed, 1, reduce, &inner);
          break;
        }
        case BaselineKind::Direct:
          direct_exchange(b, line, blocks, reduce);
          break;
        case BaselineKind::Rhd: {
          Steps inner{b};
          if (reduce)
            rhd_reduce_scatter(b, line, blocks, inner);
          else
            rhd_all_gather(b, line, blocks, inner);
          break;
        }
        default:
          break;
      }
      b.clear_gates();
    }
  };
  const bool rs = c.kind == CollectiveKind::ReduceScatter || c.kind == CollectiveKind::AllReduce;
  const bool ag = c.kind == CollectiveKind::AllGather || c.kind == CollectiveKind::AllReduce;
  if (rs)
    for (size_t d = 0; d < dims; ++d) phase(d, true);
  if (ag)
    for (size_t d = dims; d-- > 0;) phase(d, false);
}

}  // namespace tenet::synth::detail
