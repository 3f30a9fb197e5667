#include "synth/plans/pipelines.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace tenet::synth::detail {

PipelineFill pipeline_fill(const topo::Topology& ft, const TreePacking& packing, Bytes chunk_bytes,
                           const PipelineShape& shape, const StreamSpeedup& speedup) {
  const bool lanes = shape.lanes;
  const int split = shape.split;
  const int n = ft.num_npus();
  const double per_copy = static_cast<double>(packing.unit) / packing.congestion;
  auto time_at = [&](double rate) {
    return transfer_time(chunk_bytes, std::max<Bandwidth>(1, static_cast<Bandwidth>(rate)));
  };
  PipelineFill f;
  std::vector<Time> arrival(n);
  std::vector<char> known(n);
  std::vector<NodeId> path;
  for (const PackedTree& tr : packing.trees) {
    const double rate = per_copy * tr.copies;
    f.chunk_time.push_back(time_at(rate));
    std::fill(known.begin(), known.end(), 0);
    arrival[tr.root] = 0;
    known[tr.root] = 1;
    Time last = 0;
    for (NodeId v = 0; v < n; ++v) {
      path.clear();  // v and its ancestors not yet known, deepest first
      for (NodeId at = v; !known[at]; at = tr.parent[at]) path.push_back(at);
      for (auto it = path.rbegin(); it != path.rend(); ++it) {
        const NodeId u = *it;
        const auto& shares = lanes ? tr.lanes[u] : tr.shares[u];
        Time hop = 0;
        for (size_t r = 0; r < tr.routes[u].size(); ++r) {
          if (shares[r] <= 0) continue;
          Time latency = 0;
          for (LinkId l : tr.routes[u][r]) latency += ft.link(l).latency;
          const double own = shape.stream_rate(rate, shares[r]) / split;
          hop = std::max(hop, transfer_time(chunk_bytes, speedup(tr.routes[u][r], own)) + latency);
        }
        arrival[u] = arrival[tr.parent[u]] + hop;
        known[u] = 1;
      }
      last = std::max(last, arrival[v]);
    }
    f.last.push_back(last);
  }
  return f;
}

RawList plan_pipeline(const topo::Topology& ft, const ChannelGraph& g, const TreePacking& packing,
                      const std::vector<int>& tree_of, Bytes chunk_bytes, bool last_first,
                      const PipelineShape& shape, const StreamSpeedup& speedup,
                      std::vector<int32_t>* pace) {
  const int n = ft.num_npus();
  const bool lanes = shape.lanes;
  const int split = shape.split;
  struct Item {
    double key;
    int tree, depth;
    NodeId v;
    ChunkId chunk;
    int j;
  };
  std::vector<Item> items;
  std::vector<int> index_in_tree(packing.trees.size(), 0);
  std::vector<std::vector<int>> depth(packing.trees.size());
  for (size_t i = 0; i < packing.trees.size(); ++i) {
    const PackedTree& tr = packing.trees[i];
    depth[i].assign(n, 0);
    for (NodeId v = 0; v < n; ++v)
      for (NodeId at = v; tr.parent[at] >= 0; at = tr.parent[at]) ++depth[i][v];
  }
  std::vector<int> per_tree(packing.trees.size(), 0);
  for (int i : tree_of) ++per_tree[i];
  for (ChunkId ch = 0; ch < static_cast<ChunkId>(tree_of.size()); ++ch) {
    const int i = tree_of[ch];
    const PackedTree& tr = packing.trees[i];
    const int j = last_first ? per_tree[i] - 1 - index_in_tree[i]++ : index_in_tree[i]++;
    for (NodeId v = 0; v < n; ++v)
      if (v != tr.root)
        items.push_back(
            {static_cast<double>(j + depth[i][v] - 1) / tr.copies, i, depth[i][v], v, ch, j});
  }
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    if (a.key != b.key) return a.key < b.key;
    if (a.depth != b.depth) return a.depth < b.depth;
    return a.tree < b.tree;
  });
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
  const double per_copy = static_cast<double>(packing.unit) / packing.congestion;
  for (const Item& it : items) {
    const PackedTree& tr = packing.trees[it.tree];
    const auto& routes = tr.routes[it.v];
    const auto& shares = lanes ? tr.lanes[it.v] : tr.shares[it.v];
    std::vector<Stream>& mine = streams[static_cast<size_t>(it.tree) * n + it.v];
    mine.resize(routes.size());
    size_t pick = 0;
    while (shares[pick] <= 0) ++pick;
    for (size_t r = pick + 1; r < routes.size(); ++r)
      if (shares[r] > 0 &&
          (mine[r].chunks + 1) / shares[r] < (mine[pick].chunks + 1) / shares[pick])
        pick = r;
    Stream& stream = mine[pick];
    ++stream.chunks;
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
    const int32_t dep = brought[static_cast<size_t>(tr.parent[it.v]) * chunks + it.chunk];
    // The fluid start, but never before the chunk has arrived (the reversal orders by these times),
    // nor, in serial channels, before the stream's last chunk has left the link.
    Time start = static_cast<Time>(it.key * static_cast<double>(ser) * tr.copies);
    if (dep >= 0) start = std::max(start, raw[dep].end);
    if (shape.serial) {
      start = std::max(start, stream.free);
      stream.free = start + transfer_time(chunk_bytes, planned);
    }
    raw.push_back({.chunk = it.chunk,
                   .channel = id,
                   .dep = dep,
                   .queue = stream.channel,
                   .start = start,
                   // At the plan's rate: the fluid schedule, which orders and paces.
                   .end = start + transfer_time(chunk_bytes, planned) +
                          (g[id].duration - transfer_time(chunk_bytes, g[id].rate)),
                   .rate = rate < g[id].rate ? rate : 0});
    brought[static_cast<size_t>(it.v) * chunks + it.chunk] = static_cast<int32_t>(raw.size()) - 1;
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
