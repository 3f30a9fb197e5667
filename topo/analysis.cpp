#include "topo/analysis.hpp"

#include <algorithm>
#include <iterator>

// disjoint_sets first: it finds get() on raw pointers only when the graph headers come after it.
#include <boost/pending/disjoint_sets.hpp>

#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/dijkstra_shortest_paths.hpp>
#include <boost/graph/strong_components.hpp>
#include <boost/property_map/function_property_map.hpp>

#include "topo/boost_view.hpp"

namespace tenet::topo {
namespace detail {

BoostGraph boost_view(const Topology& t, bool reversed) {
  std::vector<std::pair<int, int>> edges;
  std::vector<LinkId> ids;
  edges.reserve(t.num_links());
  ids.reserve(t.num_links());
  for (LinkId l = 0; l < t.num_links(); ++l) {
    const Link& k = t.link(l);
    edges.emplace_back(reversed ? k.dst : k.src, reversed ? k.src : k.dst);
    ids.push_back(l);
  }
  return BoostGraph(boost::edges_are_unsorted_multi_pass, edges.begin(), edges.end(), ids.begin(),
                    t.num_nodes());
}

}  // namespace detail

using detail::BoostGraph;

namespace {

std::vector<int> bfs_hops(const BoostGraph& g, NodeId src) {
  std::vector<int> dist(num_vertices(g), kUnreachable);
  dist[src] = 0;
  boost::breadth_first_search(
      g, static_cast<detail::BoostVertex>(src),
      boost::visitor(boost::make_bfs_visitor(boost::record_distances(
          boost::make_iterator_property_map(dist.begin(), get(boost::vertex_index, g)),
          boost::on_tree_edge()))));
  return dist;
}

// From the nearest of `sources` (each at distance 0).
std::vector<Time> dijkstra_latency(const Topology& t, const BoostGraph& g,
                                   std::span<const NodeId> sources) {
  const Time inf = std::numeric_limits<Time>::max();
  std::vector<Time> dist(num_vertices(g), inf);
  auto weight = boost::make_function_property_map<detail::BoostEdge, Time>(
      [&](const detail::BoostEdge& e) { return t.link(g[e]).latency; });
  const std::vector<detail::BoostVertex> from(sources.begin(), sources.end());
  boost::dijkstra_shortest_paths(
      g, from.begin(), from.end(), boost::dummy_property_map(),
      boost::make_iterator_property_map(dist.begin(), get(boost::vertex_index, g)), weight,
      get(boost::vertex_index, g), std::less<Time>(), boost::closed_plus<Time>(inf), inf, Time{0},
      boost::default_dijkstra_visitor());
  for (Time& d : dist)
    if (d == inf) d = -1;
  return dist;
}
std::vector<Time> dijkstra_latency(const Topology& t, const BoostGraph& g, NodeId src) {
  return dijkstra_latency(t, g, std::span<const NodeId>(&src, 1));
}

}  // namespace

std::optional<std::pair<NodeId, NodeId>> first_unreachable_npu_pair(const Topology& t) {
  // Every NPU reaches every other iff NPU 0 reaches all and all reach NPU 0.
  std::vector<int> from0 = bfs_hops(detail::boost_view(t), 0);
  for (NodeId v = 1; v < t.num_npus(); ++v)
    if (from0[v] == kUnreachable) return std::pair{NodeId{0}, v};
  std::vector<int> to0 = bfs_hops(detail::boost_view(t, /*reversed=*/true), 0);
  for (NodeId v = 1; v < t.num_npus(); ++v)
    if (to0[v] == kUnreachable) return std::pair{v, NodeId{0}};
  return std::nullopt;
}

bool npus_joined_pairwise(const Topology& t, const std::vector<NodeId>& npus) {
  std::vector<int> seen(t.num_nodes(), -1);
  std::vector<NodeId> stack;
  for (size_t i = 0; i < npus.size(); ++i) {
    const NodeId src = npus[i];
    seen[src] = static_cast<int>(i);
    stack.assign(1, src);
    while (!stack.empty()) {
      const NodeId u = stack.back();
      stack.pop_back();
      if (u != src && !t.passes_through(u)) continue;  // an NPU ends a route
      for (LinkId l : t.out_links(u)) {
        const NodeId v = t.link(l).dst;
        if (seen[v] == static_cast<int>(i)) continue;
        seen[v] = static_cast<int>(i);
        stack.push_back(v);
      }
    }
    for (NodeId v : npus)
      if (seen[v] != static_cast<int>(i)) return false;
  }
  return true;
}

std::vector<int> hop_distances(const Topology& t, NodeId src) {
  return bfs_hops(detail::boost_view(t), src);
}

std::vector<Time> latency_distances(const Topology& t, NodeId src) {
  return dijkstra_latency(t, detail::boost_view(t), src);
}

std::vector<Time> latency_distances_from(const Topology& t, std::span<const NodeId> sources,
                                         bool reversed) {
  return dijkstra_latency(t, detail::boost_view(t, reversed), sources);
}

std::vector<double> link_time_distances(const Topology& t, NodeId src) {
  const BoostGraph g = detail::boost_view(t);
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> dist(num_vertices(g), inf);
  auto weight =
      boost::make_function_property_map<detail::BoostEdge, double>([&](const detail::BoostEdge& e) {
        return 1.0 / static_cast<double>(t.link(g[e]).bandwidth);
      });
  boost::dijkstra_shortest_paths(
      g, static_cast<detail::BoostVertex>(src),
      boost::weight_map(weight).distance_map(
          boost::make_iterator_property_map(dist.begin(), get(boost::vertex_index, g))));
  for (double& d : dist)
    if (d == inf) d = -1;
  return dist;
}

Diameter npu_diameter(const Topology& t, int exact_up_to) {
  BoostGraph g = detail::boost_view(t);
  Diameter d;
  // With one latency everywhere, latency paths are hop paths: skip Dijkstra.
  bool uniform = true;
  for (const Link& l : t.links()) uniform = uniform && l.latency == t.link(0).latency;
  auto from = [&](NodeId s) {
    std::vector<int> hops = bfs_hops(g, s);
    std::vector<Time> lat;
    if (!uniform) lat = dijkstra_latency(t, g, s);
    for (NodeId v = 0; v < t.num_npus(); ++v) {
      if (hops[v] > d.hops) d = {hops[v], d.latency, s, v, d.latency_from, d.latency_to, d.sources};
      Time lv = uniform ? Time{hops[v]} * (t.num_links() ? t.link(0).latency : 0) : lat[v];
      if (lv > d.latency) {
        d.latency = lv;
        d.latency_from = s;
        d.latency_to = v;
      }
    }
    ++d.sources;
  };
  const int n = t.num_npus();
  if (exact_up_to <= 0 || n <= exact_up_to) {
    for (NodeId s = 0; s < n; ++s) from(s);
    return d;
  }
  constexpr int kSamples = 64;
  for (int i = 0; i < kSamples; ++i)
    from(static_cast<NodeId>(static_cast<int64_t>(i) * n / kSamples));
  // The sweep: the NPU farthest from the farthest NPU found, searched from too.
  const std::vector<Time> back =
      dijkstra_latency(t, detail::boost_view(t, /*reversed=*/true), d.latency_to);
  NodeId far = 0;
  for (NodeId v = 0; v < n; ++v)
    if (back[v] > back[far]) far = v;
  from(far);
  return d;
}

int strong_component_count(const Topology& t) {
  BoostGraph g = detail::boost_view(t);
  std::vector<int> comp(t.num_nodes());
  return static_cast<int>(boost::strong_components(
      g, boost::make_iterator_property_map(comp.begin(), get(boost::vertex_index, g))));
}

std::vector<std::vector<NodeId>> detect_servers(const Topology& t, Bandwidth* joined) {
  const int n = t.num_npus();
  if (n < 4) return {};
  std::vector<Bandwidth> speeds;
  for (const Link& l : t.links()) speeds.push_back(l.bandwidth);
  std::sort(speeds.begin(), speeds.end(), std::greater<>());
  speeds.erase(std::unique(speeds.begin(), speeds.end()), speeds.end());
  for (Bandwidth threshold : speeds) {
    boost::disjoint_sets_with_storage<> sets(t.num_nodes());
    for (const Link& l : t.links())
      if (l.bandwidth >= threshold) sets.union_set(l.src, l.dst);
    std::vector<int> group_of(t.num_nodes(), -1);
    std::vector<std::vector<NodeId>> groups;
    for (NodeId v = 0; v < n; ++v) {
      const auto root = sets.find_set(v);
      if (group_of[root] < 0) {
        group_of[root] = static_cast<int>(groups.size());
        groups.emplace_back();
      }
      groups[group_of[root]].push_back(v);
    }
    const size_t size = groups[0].size();
    if (size == static_cast<size_t>(n)) return {};  // everything joined: no slower level below
    if (size < 2) continue;
    if (std::all_of(groups.begin(), groups.end(),
                    [&](const auto& g) { return g.size() == size; })) {
      if (joined) *joined = threshold;
      return groups;
    }
  }
  return {};
}

std::vector<std::vector<NodeId>> detect_pods(const Topology& t) {
  const int n = t.num_npus();
  if (n < 4 || t.num_switches() < 2) return {};
  // Each switch's switch neighbours (either direction), sorted.
  std::vector<std::vector<NodeId>> near(t.num_nodes());
  for (const Link& l : t.links())
    if (l.src != l.dst && t.is_switch(l.src) && t.is_switch(l.dst)) {
      near[l.src].push_back(l.dst);
      near[l.dst].push_back(l.src);
    }
  for (auto& v : near) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  }
  boost::disjoint_sets_with_storage<> sets(t.num_nodes());
  for (NodeId a = n; a < t.num_nodes(); ++a)
    for (NodeId b : near[a]) {
      if (b < a) continue;
      std::vector<NodeId> common;
      std::set_intersection(near[a].begin(), near[a].end(), near[b].begin(), near[b].end(),
                            std::back_inserter(common));
      if (!common.empty()) sets.union_set(a, b);
    }
  // Every NPU in the pod of the switches it attaches to (all of one pod).
  std::vector<int> pod_of(t.num_nodes(), -1);
  std::vector<std::vector<NodeId>> pods;
  for (NodeId v = 0; v < n; ++v) {
    int root = -1;
    for (const auto& links : {t.out_links(v), t.in_links(v)})
      for (LinkId l : links) {
        const NodeId w = t.link(l).src == v ? t.link(l).dst : t.link(l).src;
        if (!t.is_switch(w)) continue;
        const auto r = static_cast<int>(sets.find_set(w));
        if (root >= 0 && r != root) return {};
        root = r;
      }
    if (root < 0) return {};
    if (pod_of[root] < 0) {
      pod_of[root] = static_cast<int>(pods.size());
      pods.emplace_back();
    }
    pods[pod_of[root]].push_back(v);
  }
  const size_t size = pods[0].size();
  if (pods.size() < 2 || size < 2 ||
      !std::all_of(pods.begin(), pods.end(), [&](const auto& p) { return p.size() == size; }))
    return {};
  return pods;
}

GroupBandwidth group_bandwidth(const Topology& t, const std::vector<std::vector<NodeId>>& groups) {
  std::vector<int> group_of(t.num_nodes(), -1);
  for (size_t g = 0; g < groups.size(); ++g)
    for (NodeId v : groups[g]) group_of[v] = static_cast<int>(g);
  for (NodeId w = t.num_npus(); w < t.num_nodes(); ++w) {
    int only = -1;  // its NPU neighbours' group; -2 where they are in several or none of them
    for (const auto& links : {t.out_links(w), t.in_links(w)})
      for (LinkId l : links) {
        const NodeId v = t.link(l).src == w ? t.link(l).dst : t.link(l).src;
        if (!t.is_npu(v)) continue;
        only = only == -1 || only == group_of[v] ? group_of[v] : -2;
      }
    if (only >= 0) group_of[w] = only;
  }
  GroupBandwidth b{std::vector<Bandwidth>(groups.size(), 0),
                   std::vector<Bandwidth>(groups.size(), 0)};
  for (const Link& l : t.links())
    if (group_of[l.src] != group_of[l.dst]) {
      if (group_of[l.src] >= 0) b.out[group_of[l.src]] += l.bandwidth;
      if (group_of[l.dst] >= 0) b.in[group_of[l.dst]] += l.bandwidth;
    }
  return b;
}

std::vector<std::vector<NodeId>> servers_of(const Topology& t, std::vector<NodeId> members,
                                            Bandwidth* joined) {
  std::vector<std::vector<NodeId>> servers = detect_servers(t, joined);
  std::vector<NodeId> all;
  for (const auto& s : servers) all.insert(all.end(), s.begin(), s.end());
  std::sort(all.begin(), all.end());
  std::sort(members.begin(), members.end());
  if (all != members) servers.clear();
  return servers;
}

Bandwidth ingress_bandwidth(const Topology& t, NodeId n) {
  Bandwidth sum = 0;
  for (LinkId l : t.in_links(n)) sum += t.link(l).bandwidth;
  return sum;
}

Bandwidth egress_bandwidth(const Topology& t, NodeId n) {
  Bandwidth sum = 0;
  for (LinkId l : t.out_links(n)) sum += t.link(l).bandwidth;
  return sum;
}

}  // namespace tenet::topo
