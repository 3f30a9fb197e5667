#include "synth/plans/pipelines.hpp"

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include "synth/cost/timing.hpp"

namespace tenet::synth::detail {

PipelineFill pipeline_fill(const topo::Topology& ft, const TreePacking& packing, Bytes chunk_bytes,
                           const PipelineShape& shape, const StreamSpeedup& speedup,
                           int chunks_per_root) {
  const bool lanes = shape.lanes;
  const int split = shape.split;
  const int n = ft.num_npus();
  const double per_copy = static_cast<double>(packing.unit) / packing.congestion;
  auto time_at = [&](double rate) {
    return transfer_time(chunk_bytes, std::max<Bandwidth>(1, static_cast<Bandwidth>(rate)));
  };
  PipelineFill f;
  f.split = split;
  // Per NPU, when the tree's first chunk reaches it: as dealt (over each arc's slowest route), with
  // steps, and the soonest (over its fastest, with steps).
  std::vector<Time> arrival(n), likely(n), soonest(n);
  std::vector<char> known(n);
  std::vector<NodeId> path;
  for (const PackedTree& tr : packing.trees) {
    const double rate = per_copy * tr.copies;
    f.chunk_time.push_back(time_at(rate));
    std::fill(known.begin(), known.end(), 0);
    arrival[tr.root] = likely[tr.root] = soonest[tr.root] = 0;
    known[tr.root] = 1;
    Time last = 0, last_likely = 0, last_soonest = 0, step_time = 0;
    const int height = shape.messages ? tree_height(tr) : 0;
    for (NodeId v = 0; v < n; ++v) {
      path.clear();  // v and its ancestors not yet known, deepest first
      for (NodeId at = v; !known[at]; at = tr.parent[at]) path.push_back(at);
      for (auto it = path.rbegin(); it != path.rend(); ++it) {
        const NodeId u = *it;
        const auto& shares = lanes ? tr.lanes[u] : tr.shares[u];
        const int m =
            shape.messages
                ? message_chunks(ft, tr, u,
                                 std::max(1, chunks_per_root * tr.copies / std::max(1, packing.k)),
                                 chunk_bytes, rate / split, height)
                : 1;
        Time hop = 0, soonest_hop = std::numeric_limits<Time>::max(), step = 0;
        for (size_t r = 0; r < tr.routes[u].size(); ++r) {
          if (shares[r] <= 0) continue;
          Time latency = 0;
          for (LinkId l : tr.routes[u][r]) {
            latency += ft.link(l).latency;
            if (ft.charges_steps()) step = std::max(step, ft.link(l).step);
          }
          const double own = shape.stream_rate(rate, shares[r]) / split;
          hop = std::max(hop,
                         transfer_time(chunk_bytes * m, speedup(tr.routes[u][r], own)) + latency);
          // (Split chunks leave at once, and where their links have room, as fast as whole ones.)
          soonest_hop = std::min(
              soonest_hop,
              transfer_time(chunk_bytes * m, speedup(tr.routes[u][r], own * split)) + latency);
        }
        arrival[u] = arrival[tr.parent[u]] + hop;
        likely[u] = likely[tr.parent[u]] + hop + step;
        soonest[u] = soonest[tr.parent[u]] + (hop > 0 ? soonest_hop + step : 0);
        step_time = std::max(step_time, step / m);
        known[u] = 1;
      }
      last = std::max(last, arrival[v]);
      last_likely = std::max(last_likely, likely[v]);
      last_soonest = std::max(last_soonest, soonest[v]);
    }
    f.last.push_back(last);
    f.likely.push_back(last_likely);
    f.soonest.push_back(last_soonest);
    f.step_time.push_back(step_time);
  }
  return f;
}

PipelinePrediction pipeline_prediction(const PipelineFill& fill, const std::vector<int>& dealing,
                                       size_t trees) {
  std::vector<int64_t> dealt(trees, 0);
  for (int i : dealing)
    if (i >= 0) ++dealt[i];
  PipelinePrediction p{.end = 0, .first = std::numeric_limits<Time>::max()};
  for (size_t i = 0; i < trees; ++i) {
    if (dealt[i] == 0) continue;
    const Time per_chunk = fill.chunk_time[i] + fill.step_time[i];
    p.end =
        std::max(p.end, fill.soonest[i] + std::max<int64_t>(0, dealt[i] - fill.split) * per_chunk);
    p.first = std::min(p.first, fill.soonest[i]);
    p.likely = std::max(p.likely, fill.likely[i] + (dealt[i] - 1) * per_chunk);
  }
  if (p.end == 0) p.first = 0;
  return p;
}

int tree_height(const PackedTree& tr) {
  int height = 0;
  for (NodeId v = 0; v < static_cast<NodeId>(tr.parent.size()); ++v) {
    int depth = 0;
    for (NodeId x = v; tr.parent[x] >= 0; x = tr.parent[x]) ++depth;
    height = std::max(height, depth);
  }
  return height;
}

int message_chunks(const topo::Topology& ft, const PackedTree& tr, NodeId v, int chunks,
                   Bytes chunk_bytes, double rate, int height) {
  if (!ft.charges_steps()) return 1;
  Time step = 0;
  for (const auto& route : tr.routes[v])
    for (LinkId l : route) step = std::max(step, ft.link(l).step);
  return balanced_message_chunks(
      chunks, step,
      transfer_time(chunk_bytes, std::max<Bandwidth>(1, static_cast<Bandwidth>(rate))),
      std::max(1, height - 1));
}

std::vector<int> block_dealing(const std::vector<int>& dealing, const TreePacking& packing) {
  std::vector<int> per_tree(packing.trees.size(), 0);
  for (int i : dealing) ++per_tree[i];
  // Per root, its trees in order (the packing groups them by root) and the next to fill.
  std::vector<std::vector<int>> trees_of;
  for (size_t i = 0; i < packing.trees.size(); ++i) {
    const auto root = static_cast<size_t>(packing.trees[i].root);
    if (trees_of.size() <= root) trees_of.resize(root + 1);
    trees_of[root].push_back(static_cast<int>(i));
  }
  std::vector<size_t> next(trees_of.size(), 0);
  std::vector<int> out(dealing.size());
  for (size_t ch = 0; ch < dealing.size(); ++ch) {
    const auto root = static_cast<size_t>(packing.trees[dealing[ch]].root);
    const std::vector<int>& mine = trees_of[root];
    while (per_tree[mine[next[root]]] == 0) ++next[root];
    out[ch] = mine[next[root]];
    --per_tree[out[ch]];
  }
  return out;
}

namespace {

// One transfer of a tree's stream in the fluid schedule: chunks j .. j + len - 1 of tree `tree`
// into NPU v (at `depth` in the tree), at `key`, its start in chunk times of one copy's rate.
struct StreamItem {
  double key;
  int tree, depth;
  NodeId v;
  int j, len;
};

// Per tree, its chunks (tree_of: each chunk's tree) in the order it streams them (last first when
// asked).
std::vector<std::vector<ChunkId>> streamed_chunks(const TreePacking& packing,
                                                  const std::vector<int>& tree_of,
                                                  bool last_first) {
  std::vector<std::vector<ChunkId>> ids(packing.trees.size());
  std::vector<int> per_tree(packing.trees.size(), 0), index(packing.trees.size(), 0);
  for (int i : tree_of) ++per_tree[i];
  for (size_t i = 0; i < ids.size(); ++i) ids[i].resize(per_tree[i]);
  for (ChunkId ch = 0; ch < static_cast<ChunkId>(tree_of.size()); ++ch) {
    const int i = tree_of[ch];
    const int j = last_first ? per_tree[i] - 1 - index[i]++ : index[i]++;
    ids[i][j] = ch;
  }
  return ids;
}

// Every tree's transfers in the fluid schedule (`ids`: each tree's chunks in stream order), in
// start order (the shallower first, then by tree). In chunk times of its tree, chunk j leaves the
// root at j, and a stream sends a message once all of its chunks are at its source and its
// previous message has gone, a chunk time per chunk (one chunk at a time: the fluid pipeline,
// j + depth - 1).
std::vector<StreamItem> fluid_items(const topo::Topology& ft, const TreePacking& packing,
                                    const std::vector<std::vector<ChunkId>>& ids, Bytes chunk_bytes,
                                    const PipelineShape& shape) {
  const int n = ft.num_npus();
  const double per_copy = static_cast<double>(packing.unit) / packing.congestion;
  std::vector<StreamItem> items;
  std::vector<int> depth(n), order(n);
  std::vector<int64_t> at;  // per NPU and chunk of the tree, when it is there
  for (size_t i = 0; i < packing.trees.size(); ++i) {
    const PackedTree& tr = packing.trees[i];
    const int chunks = static_cast<int>(ids[i].size());
    if (chunks == 0) continue;
    for (NodeId v = 0; v < n; ++v) {
      depth[v] = 0;
      for (NodeId x = v; tr.parent[x] >= 0; x = tr.parent[x]) ++depth[v];
    }
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](NodeId a, NodeId b) { return depth[a] < depth[b]; });
    at.assign(static_cast<size_t>(n) * chunks, 0);
    for (int j = 0; j < chunks; ++j) at[static_cast<size_t>(tr.root) * chunks + j] = j;
    const double rate = per_copy * tr.copies / shape.split;
    const int height = depth[order.back()];
    for (NodeId v : order) {
      if (v == tr.root) continue;
      const int m =
          shape.messages ? message_chunks(ft, tr, v, chunks, chunk_bytes, rate, height) : 1;
      const int64_t* from = &at[static_cast<size_t>(tr.parent[v]) * chunks];
      int64_t* to = &at[static_cast<size_t>(v) * chunks];
      int64_t free = 0;
      for (int j = 0; j < chunks; j += m) {
        const int len = std::min(m, chunks - j);
        const int64_t begin = std::max(free, *std::max_element(from + j, from + j + len));
        free = begin + len;
        std::fill(to + j, to + j + len, free);
        items.push_back(
            {static_cast<double>(begin) / tr.copies, static_cast<int>(i), depth[v], v, j, len});
      }
    }
  }
  std::stable_sort(items.begin(), items.end(), [](const StreamItem& a, const StreamItem& b) {
    if (a.key != b.key) return a.key < b.key;
    if (a.depth != b.depth) return a.depth < b.depth;
    return a.tree < b.tree;
  });
  return items;
}

}  // namespace

RawList plan_pipeline(const topo::Topology& ft, const ChannelGraph& g, const TreePacking& packing,
                      const std::vector<int>& tree_of, Bytes chunk_bytes, bool last_first,
                      const PipelineShape& shape, const StreamSpeedup& speedup,
                      std::vector<int32_t>* pace) {
  const int n = ft.num_npus();
  const bool lanes = shape.lanes;
  const int split = shape.split;
  const double per_copy = static_cast<double>(packing.unit) / packing.congestion;
  const std::vector<std::vector<ChunkId>> ids = streamed_chunks(packing, tree_of, last_first);
  const std::vector<StreamItem> items = fluid_items(ft, packing, ids, chunk_bytes, shape);
  RawList raw;
  // Per NPU and chunk, the transfer that brought it there, or -1.
  const size_t chunks = tree_of.size();
  std::vector<int32_t> brought(static_cast<size_t>(n) * chunks, -1);
  // Per tree and NPU, per route: its stream. The next chunk goes to the route furthest below its
  // share. A queue is a sender's first link and channel, so streams that share a route's first
  // link (or, reversed, its last) need different channels; each takes the lowest free at both
  // (few channels, as MSCCL-XML wants: on direct links as many as trees share the link). Past
  // 65535 streams on a link numbers repeat, which only joins streams into one queue.
  struct Stream {
    int chunks = 0;
    uint16_t channel = 0;        // 0: none yet
    std::vector<int32_t> paced;  // with `pace`: its transfers so far
    Time free = 0;  // serial: when its last transfer leaves the link, at the plan's rate
  };
  std::vector<std::vector<Stream>> streams(packing.trees.size() * static_cast<size_t>(n));
  std::vector<std::vector<char>> channels_at_first(static_cast<size_t>(ft.num_links()));
  std::vector<std::vector<char>> channels_at_last(channels_at_first.size());
  if (pace) pace->clear();
  for (const StreamItem& it : items) {
    const PackedTree& tr = packing.trees[it.tree];
    const auto& routes = tr.routes[it.v];
    const auto& shares = lanes ? tr.lanes[it.v] : tr.shares[it.v];
    std::vector<Stream>& mine = streams[static_cast<size_t>(it.tree) * n + it.v];
    mine.resize(routes.size());
    size_t pick = 0;
    while (shares[pick] <= 0) ++pick;
    for (size_t r = pick + 1; r < routes.size(); ++r)
      if (shares[r] > 0 &&
          (mine[r].chunks + it.len) / shares[r] < (mine[pick].chunks + it.len) / shares[pick])
        pick = r;
    Stream& stream = mine[pick];
    stream.chunks += it.len;
    const ChannelId id = g.find(tr.parent[it.v], it.v, routes[pick]);
    if (stream.channel == 0) {
      std::vector<char>& first = channels_at_first[static_cast<size_t>(routes[pick].front())];
      std::vector<char>& last = channels_at_last[static_cast<size_t>(routes[pick].back())];
      size_t free = 1;
      while ((free < first.size() && first[free]) || (free < last.size() && last[free])) ++free;
      first.resize(std::max(first.size(), free + 1), 0);
      last.resize(std::max(last.size(), free + 1), 0);
      first[free] = last[free] = 1;
      stream.channel = static_cast<uint16_t>(1 + (free - 1) % 65535);
    }
    const Bandwidth tree_rate =
        std::max<Bandwidth>(1, static_cast<Bandwidth>(per_copy * tr.copies));
    const Time ser = transfer_time(chunk_bytes, tree_rate);
    // In lanes, a chunk goes at the tree's rate times its lane (shape.least_lane). Split, a chunk
    // takes `split` times as long at that rate over `split`.
    const Bandwidth whole =
        lanes ? static_cast<Bandwidth>(shape.stream_rate(per_copy * tr.copies, shares[pick]))
              : tree_rate;
    const Bandwidth planned = std::max<Bandwidth>(1, whole / split);
    const Bandwidth rate = speedup(routes[pick], static_cast<double>(planned));
    // The message's chunks, consecutive (block_dealing) in either order; it waits for the one
    // that arrives last.
    const ChunkId first = ids[it.tree][it.j], last = ids[it.tree][it.j + it.len - 1];
    const ChunkId chunk = std::min(first, last);
    assert(std::max(first, last) - chunk == it.len - 1);
    int32_t dep = -1;
    for (ChunkId ch = chunk; ch < chunk + it.len; ++ch) {
      const int32_t x = brought[static_cast<size_t>(tr.parent[it.v]) * chunks + ch];
      if (x >= 0 && (dep < 0 || raw[x].end > raw[dep].end)) dep = x;
    }
    const Bytes bytes = chunk_bytes * it.len;
    // The fluid start, but never before the chunks have arrived (the reversal orders by these
    // times), nor, in serial channels, before the stream's last message has left the link.
    Time start = static_cast<Time>(it.key * static_cast<double>(ser) * tr.copies);
    if (dep >= 0) start = std::max(start, raw[dep].end);
    if (shape.serial) {
      start = std::max(start, stream.free);
      stream.free = start + transfer_time(bytes, planned);
    }
    raw.push_back({.chunk = chunk,
                   .channel = id,
                   .dep = dep,
                   .queue = stream.channel,
                   .more = static_cast<uint16_t>(it.len - 1),
                   .start = start,
                   // At the plan's rate: the fluid schedule, which orders and paces.
                   .end = start + transfer_time(bytes, planned) +
                          (g[id].duration - transfer_time(chunk_bytes, g[id].rate)),
                   .rate = rate < g[id].rate ? rate : 0});
    for (ChunkId ch = chunk; ch < chunk + it.len; ++ch)
      brought[static_cast<size_t>(it.v) * chunks + ch] = static_cast<int32_t>(raw.size()) - 1;
    if (pace) {
      // Starts need not rise along a stream (a chunk waits for its arrival): look back over the
      // last 64 for the latest delivered in time.
      std::vector<int32_t>& sent = stream.paced;
      int32_t x = -1;
      for (size_t q = sent.size(); q-- > 0 && q + 64 >= sent.size();)
        if (raw[sent[q]].end <= start) {
          x = sent[q];
          break;
        }
      pace->push_back(x);
      sent.push_back(static_cast<int32_t>(raw.size()) - 1);
    }
  }
  return raw;
}

}  // namespace tenet::synth::detail
