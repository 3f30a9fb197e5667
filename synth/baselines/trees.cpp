#include "synth/baselines/baselines.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <numeric>
#include <vector>

#include "synth/baselines/builder.hpp"
#include "synth/baselines/families.hpp"
#include "topo/analysis.hpp"

namespace tenet::synth {

std::vector<int> binary_tree(int p) {
  std::vector<int> parent(p, -1);
  std::function<int(int, int, int)> build = [&](int lo, int hi, int up) -> int {
    if (lo > hi) return -1;
    const int mid = (lo + hi) / 2;
    parent[mid] = up;
    build(lo, mid - 1, mid);
    build(mid + 1, hi, mid);
    return mid;
  };
  build(0, p - 1, -1);
  return parent;
}

// (Shifting the first tree by one, as before, gave a member two children in one tree and one in
// the other wherever p is not 2^n - 1: three chunks in per step, every tree all-reduce 1.5x slower
// than its links allow.)
std::vector<int> complementary_positions(const std::vector<int>& parent) {
  const int p = static_cast<int>(parent.size());
  std::vector<int> children(p, 0);
  for (int v : parent)
    if (v >= 0) ++children[v];
  std::vector<int> members(p), positions(p);
  std::iota(members.begin(), members.end(), 0);
  std::iota(positions.begin(), positions.end(), 0);
  std::stable_sort(members.begin(), members.end(),
                   [&](int x, int y) { return children[x] < children[y]; });
  std::stable_sort(positions.begin(), positions.end(),
                   [&](int x, int y) { return children[x] > children[y]; });
  std::vector<int> at(p);
  for (int i = 0; i < p; ++i) at[positions[i]] = members[i];
  return at;
}

namespace detail {
namespace {

// All-Reduce over trees: reduce towards each root, then broadcast back, chunk by chunk in waves so
// the chunks pipeline. The trees' waves are listed interleaved (wave w of every tree, then wave
// w + 1), so trees sharing a port progress together.
void trees_all_reduce(Builder& b, const std::vector<TreeJob>& jobs) {
  std::vector<std::vector<int>> depth(jobs.size());
  int max_depth = 0, max_k = 0;
  for (size_t t = 0; t < jobs.size(); ++t) {
    const int p = static_cast<int>(jobs[t].group.size());
    depth[t].assign(p, 0);
    for (int i = 0; i < p; ++i) {
      for (int at = i; jobs[t].parent[at] >= 0; at = jobs[t].parent[at]) ++depth[t][i];
      max_depth = std::max(max_depth, depth[t][i]);
    }
    max_k = std::max(max_k, static_cast<int>(jobs[t].chunks.size()));
  }
  // Up: the deepest first within a wave; a node sends chunk j after its children's chunk j arrived.
  for (int wave = 0; wave < max_k + max_depth; ++wave)
    for (size_t t = 0; t < jobs.size(); ++t) {
      const TreeJob& job = jobs[t];
      b.set_channel(job.channel);
      for (int dd = max_depth; dd >= 1; --dd) {
        const int j = wave - (max_depth - dd);
        if (j < 0 || j >= static_cast<int>(job.chunks.size())) continue;
        for (size_t i = 0; i < job.group.size(); ++i)
          if (depth[t][i] == dd)
            b.send(job.chunks[j], job.group[i], job.group[job.parent[i]], Op::Reduce);
      }
    }
  // Down.
  for (int wave = 0; wave < max_k + max_depth; ++wave)
    for (size_t t = 0; t < jobs.size(); ++t) {
      const TreeJob& job = jobs[t];
      b.set_channel(job.channel);
      for (int dd = 1; dd <= max_depth; ++dd) {
        const int j = wave - (dd - 1);
        if (j < 0 || j >= static_cast<int>(job.chunks.size())) continue;
        for (size_t i = 0; i < job.group.size(); ++i)
          if (depth[t][i] == dd)
            b.send(job.chunks[j], job.group[job.parent[i]], job.group[i], Op::Copy);
      }
    }
  b.set_channel(0);
}

// Binomial tree rooted at group[root]: round by round (masks 1, 2, 4, ...), each node sending its
// rounds in order, a round's chunks as messages (send_runs).
void binomial(Builder& b, const std::vector<NodeId>& group, int root,
              const std::vector<ChunkId>& chunks, bool reduce, Steps& st) {
  const int p = static_cast<int>(group.size());
  auto member = [&](int rel) { return group[(rel + root) % p]; };
  std::vector<int> masks;
  for (int mask = 1; mask < p; mask *= 2) masks.push_back(mask);
  if (reduce) std::reverse(masks.begin(), masks.end());  // the broadcast's rounds, mirrored
  // Broadcast: rel < mask sends to rel + mask. Reduce: rel + mask sends to rel.
  for (int mask : masks) {
    st.begin();
    std::map<NodeId, std::vector<TransferId>> sent;
    for (int rel = 0; rel < mask && rel + mask < p; ++rel) {
      const NodeId from = reduce ? member(rel + mask) : member(rel),
                   to = reduce ? member(rel) : member(rel + mask);
      send_runs(b, chunks, from, to, reduce ? Op::Reduce : Op::Copy, st.deps(from), &sent[from]);
    }
    for (auto& [v, ids] : sent) st.record(v, ids);
  }
}

}  // namespace

void dbt(Builder& b, const Collective& c) {
  const int p = c.num_ranks();
  if (c.kind == CollectiveKind::AllReduce) {
    // Two complementary trees (complementary_positions): leaves of one are inner nodes of the
    // other. Each carries half the chunks.
    const std::vector<int> parent = binary_tree(p);
    const std::vector<ChunkId> chunks = all_chunks(c);
    const size_t half = (chunks.size() + 1) / 2;
    const std::vector<int> second = complementary_positions(parent);
    std::vector<NodeId> shifted(p);
    for (int i = 0; i < p; ++i) shifted[i] = c.ranks[second[i]];
    trees_all_reduce(
        b,
        {{c.ranks, parent, {chunks.begin(), chunks.begin() + static_cast<std::ptrdiff_t>(half)}, 0},
         {shifted, parent, {chunks.begin() + static_cast<std::ptrdiff_t>(half), chunks.end()}, 1}});
    return;
  }
  Steps st{b};
  binomial(b, c.ranks, c.root, all_chunks(c), c.kind == CollectiveKind::Reduce, st);
}

// NCCL's tree All-Reduce: per channel, a double binary tree across servers whose nodes are the
// servers' head GPUs (channel c's head is GPU c of every server, so each channel crosses the
// network on its own NIC), and a chain from the head through the server's other GPUs. Half of a
// channel's chunks go up and down each of the two trees. On a topology without servers every NPU
// is a server of one, and the channels' trees are rotated.
void nccl_tree(Builder& b, const Topology& t, const Collective& c, int channels) {
  std::vector<std::vector<NodeId>> servers = topo::servers_of(t, c.ranks);
  if (servers.empty())
    for (NodeId v : c.ranks) servers.push_back({v});
  const int count = static_cast<int>(servers.size()), g = static_cast<int>(servers[0].size());
  if (channels == 0) channels = g;
  const std::vector<int> up = binary_tree(count);
  const std::vector<int> second = complementary_positions(up);
  const std::vector<ChunkId> chunks = all_chunks(c);
  const int n = static_cast<int>(chunks.size());
  std::vector<TreeJob> jobs;
  for (int ch = 0; ch < channels; ++ch) {
    const std::vector<ChunkId> mine(
        chunks.begin() + static_cast<std::ptrdiff_t>(static_cast<int64_t>(n) * ch / channels),
        chunks.begin() +
            static_cast<std::ptrdiff_t>(static_cast<int64_t>(n) * (ch + 1) / channels));
    if (mine.empty()) continue;
    const int head = ch % g;
    const int rotate = g == 1 ? 2 * ch : 0;  // flat: each channel's trees over a rotated order
    for (int tree = 0; tree < 2; ++tree) {
      // The first tree puts server i at position i, the second as complementary_positions does
      // (leaves of one are inner nodes of the other); the channel's servers are rotated by
      // `rotate`.
      std::vector<NodeId> group;
      std::vector<int> parent;
      std::vector<int> head_at(count);  // group index of each tree position's head
      for (int pos = 0; pos < count; ++pos) {
        const auto& server =
            servers[((tree == 0 ? pos : second[pos]) + count - rotate % count) % count];
        head_at[pos] = static_cast<int>(group.size());
        for (int k = 0; k < g; ++k) {
          group.push_back(server[(head + k) % g]);
          parent.push_back(k == 0 ? -1 : static_cast<int>(group.size()) - 2);
        }
      }
      for (int pos = 0; pos < count; ++pos)
        if (up[pos] >= 0) parent[head_at[pos]] = head_at[up[pos]];
      const size_t half = (mine.size() + 1) / 2;
      const std::vector<ChunkId> part =
          tree == 0
              ? std::vector<ChunkId>(mine.begin(), mine.begin() + static_cast<std::ptrdiff_t>(half))
              : std::vector<ChunkId>(mine.begin() + static_cast<std::ptrdiff_t>(half), mine.end());
      if (!part.empty()) jobs.push_back({group, parent, part, 2 * ch + tree});
    }
  }
  trees_all_reduce(b, jobs);
}

}  // namespace detail
}  // namespace tenet::synth
