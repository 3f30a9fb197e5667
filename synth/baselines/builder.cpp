#include "synth/baselines/builder.hpp"

#include <map>
#include <numeric>
#include <vector>

namespace tenet::synth::detail {

void ring_all_to_all_steps(Builder& b, const std::vector<NodeId>& order,
                           const std::vector<std::vector<ChunkId>>& towards, Steps& st) {
  const int p = static_cast<int>(order.size());
  for (int round = 1; round < p; ++round)
    for (int j = 0; j + round < p; ++j) {
      st.begin();  // records no sends: a step waits for the previous step's arrivals only
      for (int i = 0; i < p; ++i) {
        const int origin = wrap(i - (round - 1), p), dest = wrap(origin + round + j, p);
        const NodeId from = order[i], to = order[wrap(i + 1, p)];
        send_runs(b, towards[static_cast<size_t>(origin) * p + dest], from, to, Op::Copy,
                  st.deps(from));
      }
    }
}

void ring_steps(Builder& b, const std::vector<NodeId>& order, const Blocks& blocks, int dir,
                bool reduce, Steps* steps) {
  const int p = static_cast<int>(order.size());
  for (int s = 0; s + 1 < p; ++s) {
    if (steps) steps->begin();
    std::map<NodeId, std::vector<TransferId>> sent;  // for `steps` only
    for (int i = 0; i < p; ++i) {
      const std::vector<TransferId> deps =
          steps ? steps->deps(order[i]) : std::vector<TransferId>{};
      const std::vector<ChunkId>& block = blocks[wrap(i - dir * (reduce ? s + 1 : s), p)];
      const NodeId to = order[wrap(i + dir, p)];
      const Op op = reduce ? Op::Reduce : Op::Copy;
      if (steps)  // a step's block at once, as messages
        send_runs(b, block, order[i], to, op, deps, &sent[order[i]]);
      else
        for (ChunkId c : block) b.send(c, order[i], to, op, deps);
    }
    if (steps)
      for (auto& [v, ids] : sent) steps->record(v, ids);
  }
}
void ring_reduce_scatter(Builder& b, const std::vector<NodeId>& order, const Blocks& blocks,
                         int dir) {
  ring_steps(b, order, blocks, dir, true);
}
void ring_all_gather(Builder& b, const std::vector<NodeId>& order, const Blocks& blocks, int dir) {
  ring_steps(b, order, blocks, dir, false);
}

void ring_chain(Builder& b, const std::vector<NodeId>& order, const std::vector<ChunkId>& chunks,
                bool reduce) {
  const int p = static_cast<int>(order.size()), k = static_cast<int>(chunks.size());
  for (int wave = 0; wave < k + p - 2; ++wave)
    for (int h = 0; h + 1 < p; ++h) {
      const int j = wave - h;
      if (j < 0 || j >= k) continue;
      if (reduce)
        b.send(chunks[j], order[p - 1 - h], order[p - 2 - h], Op::Reduce);
      else
        b.send(chunks[j], order[h], order[h + 1], Op::Copy);
    }
}

namespace {

// A run of `n` chunks as min(n, `messages`) messages of consecutive chunks, as even as can be: one
// per way of the hop (its routes, Builder::hop_routes: as a runtime spreads a large send over its
// channels, each a flow that ECMP hashes to one route), or the relayed messages. (first, count)
// pairs, first from 0.
std::vector<std::pair<int, int>> message_parts(int n, int messages) {
  const int parts = std::max(1, std::min(n, messages));
  std::vector<std::pair<int, int>> out;
  for (int p = 0, first = 0; p < parts; ++p) {
    const int count = n / parts + (p < n % parts ? 1 : 0);
    out.emplace_back(first, count);
    first += count;
  }
  return out;
}

}  // namespace

void send_runs(Builder& b, const std::vector<ChunkId>& chunks, NodeId from, NodeId to, Op op,
               const std::vector<TransferId>& deps, std::vector<TransferId>* sent, bool input) {
  const bool adjacent = b.adjacent(from, to);
  const topo::FlatRoutes* routes = b.hop_routes(from, to);
  const int ways = routes ? static_cast<int>(routes->count()) : 1;
  for (size_t i = 0, j = 0; i < chunks.size(); i = j) {
    for (j = i + 1; j < chunks.size() && chunks[j] == chunks[j - 1] + 1 &&
                    j - i < static_cast<size_t>(kMaxChunksPerTransfer);
         ++j) {
    }
    const int n = static_cast<int>(j - i);
    // Relayed: as many messages as relayed_message_chunks makes of the run.
    const int per_message = adjacent ? n : b.relayed_message_chunks(from, to, n);
    const int messages = adjacent ? ways : (n + per_message - 1) / per_message;
    const std::vector<std::pair<int, int>> parts = message_parts(n, messages);
    for (const auto& [first, count] : parts) {
      if (input)
        b.send_input(chunks[i + first], from, to, op, deps, count);
      else
        b.send(chunks[i + first], from, to, op, deps, count);
      if (sent) sent->push_back(b.first_hop());
    }
  }
}

void direct_exchange(Builder& b, const std::vector<NodeId>& group, const Blocks& blocks,
                     bool reduce) {
  const int p = static_cast<int>(group.size());
  for (int s = 1; s < p; ++s)
    for (int i = 0; i < p; ++i) {
      const int j = (i + s) % p;
      for (ChunkId c : blocks[reduce ? j : i])
        b.send(c, group[i], group[j], reduce ? Op::Reduce : Op::Copy);
    }
}

// The chunks of the blocks `take` picks, in block order.
template <typename Take>
std::vector<ChunkId> chunks_of(const Blocks& blocks, Take&& take) {
  std::vector<ChunkId> out;
  for (size_t blk = 0; blk < blocks.size(); ++blk)
    if (take(static_cast<int>(blk))) out.insert(out.end(), blocks[blk].begin(), blocks[blk].end());
  return out;
}

void rhd_reduce_scatter(Builder& b, const std::vector<NodeId>& group, const Blocks& blocks,
                        Steps& st) {
  const int p = static_cast<int>(group.size());
  for (int d = p / 2; d >= 1; d /= 2) {
    st.begin();
    std::map<NodeId, std::vector<TransferId>> sent;
    for (int i = 0; i < p; ++i) {
      const std::vector<ChunkId> half = chunks_of(blocks, [&](int blk) {
        const bool owned = (blk & ~(2 * d - 1)) == (i & ~(2 * d - 1));
        return owned && (blk & d) != (i & d);
      });
      send_runs(b, half, group[i], group[i ^ d], Op::Reduce, st.deps(group[i]), &sent[group[i]]);
    }
    for (auto& [v, ids] : sent) st.record(v, ids);
  }
}

void rhd_all_gather(Builder& b, const std::vector<NodeId>& group, const Blocks& blocks, Steps& st) {
  const int p = static_cast<int>(group.size());
  for (int d = 1; d < p; d *= 2) {
    st.begin();
    std::map<NodeId, std::vector<TransferId>> sent;
    for (int i = 0; i < p; ++i) {
      const std::vector<ChunkId> held =
          chunks_of(blocks, [&](int blk) { return (blk & ~(d - 1)) == (i & ~(d - 1)); });
      send_runs(b, held, group[i], group[i ^ d], Op::Copy, st.deps(group[i]), &sent[group[i]]);
    }
    for (auto& [v, ids] : sent) st.record(v, ids);
  }
}

Blocks split(const std::vector<ChunkId>& chunks, int parts) {
  Blocks out(parts);
  const size_t n = chunks.size();
  for (size_t i = 0; i < n; ++i) out[i * parts / n].push_back(chunks[i]);
  return out;
}

Blocks rank_blocks(const Collective& c) {
  Blocks out(c.num_ranks());
  for (ChunkId ch = 0; ch < c.num_chunks(); ++ch) out[c.origin(ch)].push_back(ch);
  return out;
}

std::vector<ChunkId> all_chunks(const Collective& c) {
  std::vector<ChunkId> v(c.num_chunks());
  std::iota(v.begin(), v.end(), 0);
  return v;
}

}  // namespace tenet::synth::detail
