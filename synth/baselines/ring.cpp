#include "synth/baselines/families.hpp"

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "synth/baselines/baseline_memo.hpp"
#include "synth/baselines/builder.hpp"
#include "synth/baselines/ring_channels.hpp"
#include "synth/ir/ring_plan.hpp"

namespace tenet::synth::detail {
namespace {

// find_ring_channels, its searches kept in `memo` where one is given (the ring's search both ways
// round is the bidirectional ring's).
std::vector<RingChannel> channel_rings(BaselineMemo* memo, const Topology& t,
                                       const std::vector<NodeId>& ranks, int channels, bool bidir) {
  RingWays ways(t, ranks);  // (found at the first search the memo does not answer)
  return find_ring_channels(channels, bidir, [&](bool both_ways) {
    auto search = [&] { return search_ring_channels(ways, channels, both_ways); };
    return memo ? memo->rings(t, ranks, channels, both_ways, search) : search();
  });
}

// `chunks` dealt to the channels in order, each a share in proportion to its rate.
std::vector<std::vector<ChunkId>> split_by_rate(const std::vector<ChunkId>& chunks,
                                                const std::vector<RingChannel>& rings) {
  std::vector<Bandwidth> rates;
  for (const RingChannel& r : rings) rates.push_back(r.rate);
  const std::vector<int64_t> count = largest_remainders(static_cast<int64_t>(chunks.size()), rates);
  std::vector<std::vector<ChunkId>> out(rings.size());
  size_t at = 0;
  for (size_t ch = 0; ch < rings.size(); ++ch)
    for (int64_t k = 0; k < count[ch]; ++k) out[ch].push_back(chunks[at++]);
  return out;
}

// NCCL-style chains for Broadcast and Reduce over channel rings (see ring_channels.hpp): of the
// chunks, a share in proportion to each channel's rate. False when no ring over adjacent members
// exists (the single ring with relays takes over).
bool channel_chains(Builder& b, const Topology& t, const Collective& c, bool bidir, int channels) {
  const std::vector<RingChannel> rings = channel_rings(b.memo(), t, c.ranks, channels, bidir);
  if (rings.empty()) return false;
  const int p = c.num_ranks();
  const std::vector<std::vector<ChunkId>> per = split_by_rate(all_chunks(c), rings);
  const NodeId root = c.ranks[c.root];
  for (size_t ch = 0; ch < rings.size(); ++ch) {
    if (per[ch].empty()) continue;
    const RingChannel& ring = rings[ch];
    const int r0 = static_cast<int>(std::find(ring.order.begin(), ring.order.end(), root) -
                                    ring.order.begin());
    // Broadcast: the chain starts at the root; Reduce: it ends there. Hop h of the chain is ring
    // hop `first + h`.
    const int first = c.kind == CollectiveKind::Broadcast ? r0 : (r0 + 1) % p;
    const int k = static_cast<int>(per[ch].size());
    for (int wave = 0; wave < k + p - 2; ++wave)
      for (int h = 0; h + 1 < p; ++h) {
        const int j = wave - h;
        if (j < 0 || j >= k) continue;
        const int at = (first + h) % p;
        b.send_on(per[ch][j], ring.order[at], ring.order[(at + 1) % p], ring.routes[at],
                  c.kind == CollectiveKind::Reduce ? Op::Reduce : Op::Copy, {}, ring.rate,
                  static_cast<int>(ch));
      }
  }
  return true;
}

}  // namespace

// A ring Reduce-Scatter, All-Gather or All-Reduce as a plan (synth/ir/ring_plan.hpp): NCCL-style
// channel rings (channels other than 1) where the topology has them, each rank's block split among
// them in proportion to their rates; else one ring along ring_order, and its reverse carrying the
// second half of every block when bidirectional. nullopt where that ring needs NPUs to relay (its
// neighbours are neither linked nor joined through switches): the ring baseline's relays take over.
std::optional<RingPlan> plan_ring(const Topology& t, const Collective& c, Bytes chunk_bytes,
                                  LinkModel model, Bandwidth reduce_bandwidth, bool bidir,
                                  int channels, const std::string& name, BaselineMemo* memo) {
  const int p = c.num_ranks();
  if (p < 2) return std::nullopt;
  const Blocks by_rank = rank_blocks(c);
  std::vector<RingPlan::Lane> lanes;
  const std::vector<RingChannel> rings =
      channels != 1 ? channel_rings(memo, t, c.ranks, channels, bidir) : std::vector<RingChannel>{};
  if (!rings.empty()) {
    std::vector<int> rank_of(t.num_nodes(), -1);
    for (int r = 0; r < p; ++r) rank_of[c.ranks[r]] = r;
    std::vector<std::vector<std::vector<ChunkId>>> per_rank(p);  // [rank][channel]
    for (int r = 0; r < p; ++r) per_rank[r] = split_by_rate(by_rank[r], rings);
    for (size_t ch = 0; ch < rings.size(); ++ch) {
      const RingChannel& ring = rings[ch];
      RingPlan::Lane lane;
      lane.order = ring.order;
      lane.rate = ring.rate;
      lane.channel = static_cast<uint16_t>(ch);
      for (int i = 0; i < p; ++i) {
        lane.hops.push_back({{ring.routes[i]}, 0});
        lane.blocks.push_back(per_rank[rank_of[ring.order[i]]][ch]);
      }
      lanes.push_back(std::move(lane));
    }
  } else {
    const std::vector<NodeId> order = ring_order(t, c.ranks);
    std::vector<int> position(t.num_nodes(), -1);
    for (int i = 0; i < p; ++i) position[order[i]] = i;
    Hops hops(t);
    for (int dir : {1, -1}) {
      if (dir < 0 && !bidir) break;
      RingPlan::Lane lane;
      lane.order = order;
      lane.dir = dir;
      lane.blocks.resize(p);
      for (int i = 0; i < p; ++i) {
        const std::vector<Hops::Hop>& path = hops.path(order[i], order[wrap(i + dir, p)]);
        if (path.size() != 1) return std::nullopt;
        lane.hops.push_back({path[0].each_route(), static_cast<uint32_t>(path[0].next)});
      }
      for (int r = 0; r < p; ++r) {
        const std::vector<ChunkId>& chunks = by_rank[r];
        const auto half =
            static_cast<std::ptrdiff_t>(bidir ? (chunks.size() + 1) / 2 : chunks.size());
        std::vector<ChunkId>& block = lane.blocks[position[c.ranks[r]]];
        if (dir > 0)
          block.assign(chunks.begin(), chunks.begin() + half);
        else
          block.assign(chunks.begin() + half, chunks.end());
      }
      lanes.push_back(std::move(lane));
    }
  }
  return RingPlan(t, name, c, chunk_bytes, model, reduce_bandwidth,
                  t.calibration().efficiency_of(name), std::move(lanes));
}

namespace {

// Ring All-to-All, store and forward, over the collective's ranks (ring_all_to_all_steps).
void ring_all_to_all(Builder& b, const Topology& t, const Collective& c) {
  const std::vector<NodeId> order = ring_order(t, c.ranks);
  const int p = static_cast<int>(order.size());
  std::vector<int> position(t.num_nodes(), -1);
  for (int i = 0; i < p; ++i) position[order[i]] = i;
  const Blocks blocks = rank_blocks(c);
  // Each rank's chunks by the rank that needs them, in block order (a scan of the block per
  // (origin, destination) pair was p^4 k tests, most of a large All-to-All's synthesis).
  std::vector<std::vector<ChunkId>> towards(static_cast<size_t>(p) * p);
  for (int r = 0; r < p; ++r)
    for (ChunkId ch : blocks[r])
      towards[static_cast<size_t>(position[c.ranks[r]]) * p + position[c.ranks[c.needed_by(ch)]]]
          .push_back(ch);
  Steps st{b};
  ring_all_to_all_steps(b, order, towards, st);
}

}  // namespace

// Rings: rank blocks placed along the ring order. Bidirectional: the first half of each block's
// chunks goes one way, the rest the other way. With channels other than 1: channel_rings.
void ring(Builder& b, const Topology& t, const Collective& c, bool bidir, int channels) {
  if (c.kind == CollectiveKind::AllToAll) return ring_all_to_all(b, t, c);
  // Each phase moves every chunk p - 1 hops (more where NPUs relay): reserved up front, so a
  // large ring is not copied as it grows (4096 ranks: 34M transfers, 1.9 GB).
  const size_t phases = c.kind == CollectiveKind::AllReduce ? 2 : 1;
  if (c.kind == CollectiveKind::AllGather || c.kind == CollectiveKind::ReduceScatter ||
      c.kind == CollectiveKind::AllReduce)
    b.reserve(phases * static_cast<size_t>(c.num_ranks() - 1) *
              static_cast<size_t>(c.num_chunks()));
  if (channels != 1 && (c.kind == CollectiveKind::Broadcast || c.kind == CollectiveKind::Reduce) &&
      channel_chains(b, t, c, bidir, channels))
    return;
  std::vector<NodeId> order = ring_order(t, c.ranks);
  std::vector<int> position(t.num_npus(), -1);
  for (int i = 0; i < static_cast<int>(order.size()); ++i) position[order[i]] = i;
  const Blocks by_rank = rank_blocks(c);
  Blocks cw(order.size()), ccw(order.size());
  for (int r = 0; r < c.num_ranks(); ++r) {
    const auto& chunks = by_rank[r];
    const size_t half = bidir ? (chunks.size() + 1) / 2 : chunks.size();
    const int at = position[c.ranks[r]];
    cw[at].assign(chunks.begin(), chunks.begin() + static_cast<std::ptrdiff_t>(half));
    ccw[at].assign(chunks.begin() + static_cast<std::ptrdiff_t>(half), chunks.end());
  }
  auto both = [&](auto&& phase) {
    phase(cw, 1);
    if (bidir) phase(ccw, -1);
  };
  switch (c.kind) {
    case CollectiveKind::AllGather:
      both([&](const Blocks& bl, int dir) { ring_all_gather(b, order, bl, dir); });
      break;
    case CollectiveKind::ReduceScatter:
      both([&](const Blocks& bl, int dir) { ring_reduce_scatter(b, order, bl, dir); });
      break;
    case CollectiveKind::AllReduce:
      both([&](const Blocks& bl, int dir) { ring_reduce_scatter(b, order, bl, dir); });
      both([&](const Blocks& bl, int dir) { ring_all_gather(b, order, bl, dir); });
      break;
    case CollectiveKind::Broadcast:
    case CollectiveKind::Reduce: {
      // The chain starts at the root and runs around the ring (the other way for the second half).
      const int r0 = position[c.ranks[c.root]], p = static_cast<int>(order.size());
      std::vector<NodeId> fwd, bwd;
      for (int i = 0; i < p; ++i) {
        fwd.push_back(order[(r0 + i) % p]);
        bwd.push_back(order[wrap(r0 - i, p)]);
      }
      const std::vector<ChunkId> chunks = all_chunks(c);
      const size_t half = bidir ? (chunks.size() + 1) / 2 : chunks.size();
      const bool reduce = c.kind == CollectiveKind::Reduce;
      ring_chain(b, fwd, {chunks.begin(), chunks.begin() + static_cast<std::ptrdiff_t>(half)},
                 reduce);
      if (bidir && half < chunks.size())
        ring_chain(b, bwd, {chunks.begin() + static_cast<std::ptrdiff_t>(half), chunks.end()},
                   reduce);
      break;
    }
    default:
      break;
  }
}

}  // namespace tenet::synth::detail
