// The order a collective graph runs in as ASTRA-sim runs it (collective_graph_detail.hpp,
// ready_order): Kahn's algorithm over every rank's nodes at once, a receive completing after the
// send it pairs with, and what never becomes ready.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <queue>
#include <unordered_map>
#include <utility>

#include "chakra/collective_graph_detail.hpp"

namespace tenet::chakra::detail {
namespace {

// Node v of rank r is base[r] + v.
struct Graph {
  std::vector<size_t> base;
  std::vector<std::vector<size_t>> users;  // v -> the nodes waiting for v
  std::vector<int64_t> waits;              // v -> dependencies not done yet
  std::vector<bool> blocked;               // v waits for something that never completes
};

}  // namespace

ReadyOrder ready_order(const std::vector<EtFile>& files, const Pairing& pairing,
                       const std::vector<int64_t>& key, const std::string& prefix) {
  ReadyOrder out;
  Graph g;
  g.base.assign(files.size() + 1, 0);
  for (size_t r = 0; r < files.size(); ++r) g.base[r + 1] = g.base[r] + files[r].nodes.size();
  const size_t n = g.base.back();
  g.users.resize(n);
  g.waits.assign(n, 0);
  g.blocked.assign(n, false);
  auto at = [&](int r, size_t i) { return g.base[static_cast<size_t>(r)] + i; };
  auto describe = [&](size_t v) {
    size_t r = 0;
    while (g.base[r + 1] <= v) ++r;
    const Node& node = files[r].nodes[v - g.base[r]];
    return std::pair{static_cast<int>(r), &node};
  };

  // The order a node is taken in when several are ready: a pair's send and receive, and a COMP node
  // reducing that receive, by the pair's key; every other node first.
  std::vector<int64_t> priority(n, std::numeric_limits<int64_t>::min());
  for (size_t k = 0; k < pairing.pairs.size(); ++k) {
    const auto& [s, rv] = pairing.pairs[k];
    priority[at(s.rank, s.index)] = priority[at(rv.rank, rv.index)] = key[k];
  }
  for (size_t r = 0; r < files.size(); ++r) {
    const auto& nodes = files[r].nodes;
    std::unordered_map<uint64_t, size_t> index;
    for (size_t i = 0; i < nodes.size(); ++i) index.emplace(nodes[i].id(), i);
    for (size_t i = 0; i < nodes.size(); ++i) {
      const Node& node = nodes[i];
      const size_t v = at(static_cast<int>(r), i);
      for (const auto& deps : {node.data_deps(), node.ctrl_deps()})
        for (uint64_t d : deps) {
          auto it = index.find(d);
          if (it == index.end()) {
            g.blocked[v] = true;
            out.problems.push_back(
                {synth::ImportProblemKind::NeverReady, static_cast<int>(r), -1,
                 static_cast<int64_t>(node.id()),
                 fmt::format("{}: node {} ('{}'): depends on node {}, which is not in this file: "
                             "it never runs",
                             et_path(prefix, static_cast<int>(r)), node.id(), node.name(), d)});
            continue;
          }
          ++g.waits[v];
          g.users[at(static_cast<int>(r), it->second)].push_back(v);
        }
      if (node.type() == ChakraProtoMsg::COMP_NODE && node.data_deps_size() == 1)
        if (auto it = index.find(node.data_deps(0)); it != index.end())
          if (nodes[it->second].type() == ChakraProtoMsg::COMM_RECV_NODE)
            priority[v] = priority[at(static_cast<int>(r), it->second)];
    }
  }
  for (const auto& [s, rv] : pairing.pairs) {
    ++g.waits[at(rv.rank, rv.index)];
    g.users[at(s.rank, s.index)].push_back(at(rv.rank, rv.index));
  }
  for (const Pairing::End& rv : pairing.unpaired_recvs) g.blocked[at(rv.rank, rv.index)] = true;

  // Kahn's algorithm, the smallest (priority, node) first.
  using Entry = std::pair<int64_t, size_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> ready;
  for (size_t v = 0; v < n; ++v)
    if (g.waits[v] == 0 && !g.blocked[v]) ready.push({priority[v], v});
  std::vector<size_t> taken_at(n, n);  // v -> its place in the order; n when never taken
  size_t taken = 0;
  while (!ready.empty()) {
    const size_t v = ready.top().second;
    ready.pop();
    taken_at[v] = taken++;
    for (size_t u : g.users[v])
      if (--g.waits[u] == 0 && !g.blocked[u]) ready.push({priority[u], u});
  }
  for (size_t k = 0; k < pairing.pairs.size(); ++k) {
    const auto& [s, rv] = pairing.pairs[k];
    if (taken_at[at(s.rank, s.index)] < n && taken_at[at(rv.rank, rv.index)] < n)
      out.pairs.push_back(k);
  }
  std::sort(out.pairs.begin(), out.pairs.end(), [&](size_t x, size_t y) {
    const auto& sx = pairing.pairs[x].first;
    const auto& sy = pairing.pairs[y].first;
    return taken_at[at(sx.rank, sx.index)] < taken_at[at(sy.rank, sy.index)];
  });
  if (taken == n) return out;

  // What was never taken: behind a blocked node (a missing dependency, an unpaired receive), or in
  // or behind a cycle.
  std::vector<bool> behind(n, false);
  std::vector<size_t> queue;
  for (size_t v = 0; v < n; ++v)
    if (g.blocked[v]) {
      behind[v] = true;
      queue.push_back(v);
    }
  for (size_t q = 0; q < queue.size(); ++q)
    for (size_t u : g.users[queue[q]])
      if (!behind[u]) {
        behind[u] = true;
        queue.push_back(u);
      }
  size_t waiting = 0, cycle = 0, first_waiting = n, first_cycle = n;
  for (size_t v = 0; v < n; ++v) {
    if (taken_at[v] < n || g.blocked[v]) continue;
    size_t& count = behind[v] ? waiting : cycle;
    size_t& first = behind[v] ? first_waiting : first_cycle;
    if (count++ == 0) first = v;
  }
  auto summary = [&](size_t count, size_t first, std::string_view what) {
    if (count == 0) return;
    const auto [r, node] = describe(first);
    out.problems.push_back({synth::ImportProblemKind::NeverReady, r, -1,
                            static_cast<int64_t>(node->id()),
                            fmt::format("{} node{} {}, e.g. {}: node {} ('{}'): ASTRA-sim would "
                                        "never finish the collective",
                                        count, count == 1 ? "" : "s", what, et_path(prefix, r),
                                        node->id(), node->name())});
  };
  summary(cycle, first_cycle,
          "in or after a cycle of dependencies (and receives after their sends) never become "
          "ready: the dependencies form a cycle");
  summary(waiting, first_waiting,
          "never become ready: they wait on a node that never completes (a receive no send "
          "matches, or a node depending on one not in its file)");
  return out;
}

}  // namespace tenet::chakra::detail
