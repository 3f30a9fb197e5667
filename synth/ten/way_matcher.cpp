#include "synth/ten/way_matcher.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <queue>
#include <vector>

namespace tenet::synth::detail {

ChunkWays flow_ways(const topo::Topology& t, const ChannelGraph& g,
                    const std::vector<std::array<NodeId, 2>>& ends,
                    const std::vector<int>& round_of, Bytes chunk_bytes, double horizon_seconds) {
  constexpr double kGamma = 8.0;
  constexpr int kPasses = 4;
  // Shortest-way trees per source and pass, over all rounds: 64, fewer where that would cost more
  // than about 2e8 channel relaxations (512 NPUs of a 3D torus: 32).
  const int trees_per_source = static_cast<int>(std::clamp<int64_t>(
      int64_t{200'000'000} /
          (int64_t{t.num_npus()} * kPasses * std::max<int64_t>(1, static_cast<int64_t>(g.size()))),
      8, 64));
  const int n = t.num_npus();
  std::vector<double> load(t.num_links(), 0.0);
  // A channel's length is the sum of its route's links' weights, in route order, each link's
  // weight kept as its load changes: a link through a switch lies on thousands of channels' routes
  // (every pair of a leaf-spine's leaves), which a length kept per channel had to refresh at every
  // change of its load (docs/synthesis.md).
  std::vector<double> weight(t.num_links());
  auto reweigh = [&](LinkId l) {
    const double bw = static_cast<double>(t.link(l).bandwidth);
    weight[l] = std::exp(std::min(50.0, kGamma * load[l] / (bw * horizon_seconds))) / bw;
  };
  for (LinkId l = 0; l < t.num_links(); ++l) reweigh(l);
  auto length = [&](ChannelId c) {
    double len = 0;
    for (LinkId l : g.route(g[c])) len += weight[l];
    return len;
  };
  // Chunks by round and source.
  int rounds = 0;
  for (int r : round_of) rounds = std::max(rounds, r + 1);
  const int batches = std::max(1, trees_per_source / rounds);
  std::vector<std::vector<std::vector<int32_t>>> by(rounds, std::vector<std::vector<int32_t>>(n));
  for (size_t i = 0; i < ends.size(); ++i)
    by[round_of[i]][ends[i][0]].push_back(static_cast<int32_t>(i));
  std::vector<std::vector<ChannelId>> way(ends.size());
  std::vector<double> dist(n);
  std::vector<ChannelId> via(n);
  std::vector<char> touched(t.num_links(), 0);
  std::vector<LinkId> stale;
  std::vector<int64_t> wanted(n, 0);  // == stamp: a destination of the batch not yet settled
  int64_t stamp = 0;
  using Item = std::pair<double, NodeId>;
  std::vector<ChannelId> path;
  // Adds (sign 1) or removes (-1) the chunks' ways' load, and reweighs the links it changes.
  auto carry = [&](std::span<const int32_t> chunks, double sign) {
    for (int32_t i : chunks)
      for (ChannelId c : way[i])
        for (LinkId l : g.route(g[c])) {
          load[l] += sign * static_cast<double>(chunk_bytes);
          if (!touched[l]) {
            touched[l] = 1;
            stale.push_back(l);
          }
        }
    for (LinkId l : stale) {
      touched[l] = 0;
      reweigh(l);
    }
    stale.clear();
  };
  for (int pass = 0; pass < kPasses; ++pass)
    for (int r = 0; r < rounds; ++r)
      for (int k = 0; k < n; ++k) {
        const NodeId s = static_cast<NodeId>((k + (static_cast<int64_t>(r) + pass) * 7919) %
                                             n);  // sources take turns
        const std::vector<int32_t>& mine = by[r][s];
        const size_t batch = std::max<size_t>(1, (mine.size() + batches - 1) / batches);
        for (size_t b0 = 0; b0 < mine.size(); b0 += batch) {
          const std::span<const int32_t> these(mine.data() + b0, std::min(batch, mine.size() - b0));
          if (pass > 0) carry(these, -1);  // rip up, then route again among everyone else's load
          std::fill(dist.begin(), dist.end(), std::numeric_limits<double>::infinity());
          std::fill(via.begin(), via.end(), -1);
          std::priority_queue<Item, std::vector<Item>, std::greater<Item>> q;
          dist[s] = 0;
          q.push({0, s});
          // Until every destination of the batch is settled.
          ++stamp;
          int unsettled = 0;
          for (int32_t i : these)
            if (wanted[ends[i][1]] != stamp) {
              wanted[ends[i][1]] = stamp;
              ++unsettled;
            }
          while (!q.empty() && unsettled > 0) {
            auto [d, u] = q.top();
            q.pop();
            if (d > dist[u]) continue;
            if (wanted[u] == stamp) {
              wanted[u] = 0;
              --unsettled;
            }
            for (ChannelId c : g.out(u))
              if (const double through = d + length(c); through < dist[g[c].dst]) {
                dist[g[c].dst] = through;
                via[g[c].dst] = c;
                q.push({dist[g[c].dst], g[c].dst});
              }
          }
          for (int32_t i : these) {
            path.clear();
            for (NodeId v = ends[i][1]; v != s; v = g[via[v]].src) {
              if (via[v] < 0)
                throw Unreachable(
                    fmt::format("synthesis is stuck: NPU {} cannot reach NPU {} through channels",
                                s, ends[i][1]));
              path.push_back(via[v]);
            }
            way[i].assign(path.rbegin(), path.rend());
          }
          carry(these, 1);
        }
      }
  ChunkWays out;
  out.offset.push_back(0);
  for (const auto& w : way) {
    out.ways.insert(out.ways.end(), w.begin(), w.end());
    out.offset.push_back(static_cast<int64_t>(out.ways.size()));
  }
  return out;
}

}  // namespace tenet::synth::detail
