#include "synth/baselines/baselines.hpp"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "synth/baselines/builder.hpp"

namespace tenet::synth {
namespace {

using detail::Builder;
using topo::Topology;

// A path through every cell of a grid (first dimension fastest) in which consecutive cells differ
// by one step in one coordinate: the reflected mixed-radix Gray code (boustrophedon).
std::vector<int64_t> snake_path(const std::vector<int>& dims) {
  std::vector<int64_t> path{0};
  int64_t stride = 1;
  for (int d : dims) {
    std::vector<int64_t> next;
    for (int v = 0; v < d; ++v) {
      if (v % 2 == 0)
        for (int64_t x : path) next.push_back(x + v * stride);
      else
        for (auto it = path.rbegin(); it != path.rend(); ++it) next.push_back(*it + v * stride);
    }
    path = std::move(next);
    stride *= d;
  }
  return path;
}

// A Hamiltonian cycle of an A x L grid (x along A, y along the path `rows`), or nothing when A
// and L are both odd: x = 0 is the way back, the rest is traversed as a snake.
std::vector<NodeId> grid_cycle(int a, const std::vector<int64_t>& rows) {
  const int64_t l = static_cast<int64_t>(rows.size());
  if (a < 2 || l < 2) return {};
  auto id = [&](int x, int64_t y) { return static_cast<NodeId>(x + a * rows[y]); };
  std::vector<NodeId> cycle;
  if (l % 2 == 0) {
    for (int64_t y = 0; y < l; ++y)
      for (int i = 1; i < a; ++i) cycle.push_back(id(y % 2 == 0 ? i : a - i, y));
    for (int64_t y = l - 1; y >= 0; --y) cycle.push_back(id(0, y));
  } else if (a % 2 == 0) {
    for (int x = 0; x < a; ++x)
      for (int64_t j = 1; j < l; ++j) cycle.push_back(id(x, x % 2 == 0 ? j : l - j));
    for (int x = a - 1; x >= 0; --x) cycle.push_back(id(x, 0));
  }
  return cycle;
}

}  // namespace

std::vector<NodeId> ring_order(const Topology& t, const std::vector<NodeId>& npus) {
  const size_t p = npus.size();
  if (p <= 2) return npus;
  Builder probe(t, Collective::over_all(t, CollectiveKind::AllGather), 1, LinkModel::Pipelined, "");
  auto closes = [&](const std::vector<NodeId>& order) {
    for (size_t i = 0; i < order.size(); ++i)
      if (!probe.adjacent(order[i], order[(i + 1) % order.size()])) return false;
    return true;
  };
  // The generator's grid, when the ring covers every NPU.
  if (static_cast<int>(p) == t.num_npus() && t.grid().size() >= 2) {
    std::vector<int> rest(t.grid().begin() + 1, t.grid().end());
    std::vector<NodeId> cycle = grid_cycle(t.grid()[0], snake_path(rest));
    if (cycle.size() == p && closes(cycle)) return cycle;
  }
  if (closes(npus)) return npus;
  // A bounded depth-first search preferring the neighbour with the fewest onward choices
  // (Warnsdorff's rule).
  std::vector<char> member(t.num_npus(), 0), used(t.num_npus(), 0);
  for (NodeId v : npus) member[v] = 1;
  std::vector<std::vector<NodeId>> adj(t.num_npus());
  if (p <= 512)
    for (NodeId u : npus)
      for (NodeId v : npus)
        if (u != v && probe.adjacent(u, v)) adj[u].push_back(v);
  std::vector<NodeId> order{npus[0]};
  used[npus[0]] = 1;
  int64_t budget = p <= 512 ? 200'000 : 0;
  std::function<bool()> extend = [&]() -> bool {
    if (order.size() == p) return probe.adjacent(order.back(), order.front());
    if (--budget < 0) return false;
    std::vector<std::pair<int, NodeId>> options;
    for (NodeId v : adj[order.back()])
      if (!used[v]) {
        int onward = 0;
        for (NodeId w : adj[v]) onward += !used[w];
        options.emplace_back(onward, v);
      }
    std::sort(options.begin(), options.end());
    for (auto [onward, v] : options) {
      used[v] = 1;
      order.push_back(v);
      if (extend()) return true;
      order.pop_back();
      used[v] = 0;
    }
    return false;
  };
  if (budget > 0 && extend()) return order;
  // Otherwise: nearest unvisited NPU (by hops over the topology) next.
  order.assign(1, npus[0]);
  std::fill(used.begin(), used.end(), 0);
  used[npus[0]] = 1;
  while (order.size() < p) {
    std::vector<int> d(t.num_nodes(), -1);
    std::vector<NodeId> q{order.back()};
    d[order.back()] = 0;
    NodeId next = -1;
    for (size_t i = 0; i < q.size() && next < 0; ++i)
      for (LinkId l : t.out_links(q[i])) {
        const NodeId w = t.link(l).dst;
        if (d[w] >= 0) continue;
        d[w] = d[q[i]] + 1;
        q.push_back(w);
        if (t.is_npu(w) && member[w] && !used[w]) {
          next = w;
          break;
        }
      }
    if (next < 0)
      for (NodeId v : npus)
        if (!used[v]) {
          next = v;
          break;
        }
    used[next] = 1;
    order.push_back(next);
  }
  return order;
}

}  // namespace tenet::synth
