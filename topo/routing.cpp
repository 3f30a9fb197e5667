#include "topo/routing.hpp"

#include <algorithm>
#include <boost/graph/dijkstra_shortest_paths.hpp>
#include <boost/graph/filtered_graph.hpp>
#include <boost/property_map/function_property_map.hpp>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <tuple>
#include <unordered_map>

#include "topo/boost_view.hpp"

namespace tenet::topo {
namespace {

using detail::BoostEdge;
using detail::BoostGraph;
using Cost = std::pair<Time, int>;  // (latency, hops), compared lexicographically
constexpr Cost kInfinity{std::numeric_limits<Time>::max(), std::numeric_limits<int>::max()};

struct CostPlus {
  Cost operator()(const Cost& a, const Cost& b) const {
    if (a == kInfinity || b == kInfinity) return kInfinity;
    return {a.first + b.first, a.second + b.second};
  }
};

// Stops a search once its target's cost is final (throwing is Boost's way out of
// dijkstra_shortest_paths).
struct Reached {};
struct StopAt : boost::default_dijkstra_visitor {
  NodeId until = -1;
  template <typename Vertex, typename Graph>
  void examine_vertex(Vertex v, const Graph&) const {
    if (static_cast<NodeId>(v) == until) throw Reached{};
  }
};

// Least (latency, hops) costs from `from` over a (filtered) view of `g`. With `until`, the search
// stops once that node's cost is final: the costs below it are final then too, every other one is
// an upper bound (or infinity).
template <typename View>
std::vector<Cost> least_costs_over(const Topology& t, const BoostGraph& g, const View& view,
                                   NodeId from, NodeId until = -1) {
  std::vector<Cost> dist(t.num_nodes(), kInfinity);
  auto weight = boost::make_function_property_map<BoostEdge, Cost>([&](const BoostEdge& e) {
    return Cost{t.link(g[e]).latency, 1};
  });
  try {
    boost::dijkstra_shortest_paths(view, static_cast<detail::BoostVertex>(from),
                                   boost::weight_map(weight)
                                       .distance_map(boost::make_iterator_property_map(
                                           dist.begin(), get(boost::vertex_index, g)))
                                       .distance_compare(std::less<Cost>())
                                       .distance_combine(CostPlus())
                                       .distance_inf(kInfinity)
                                       .distance_zero(Cost{0, 0})
                                       .visitor(StopAt{{}, until}));
  } catch (const Reached&) {
  }
  return dist;
}

// Least costs from `from` over the graph restricted to pass-through nodes plus the two ends.
std::vector<Cost> least_costs(const Topology& t, const BoostGraph& g, NodeId from, NodeId other) {
  auto keep = [&](detail::BoostVertex v) {
    return static_cast<NodeId>(v) == from || static_cast<NodeId>(v) == other ||
           t.passes_through(static_cast<NodeId>(v));
  };
  boost::filtered_graph<BoostGraph, boost::keep_all, std::function<bool(detail::BoostVertex)>> fg(
      g, boost::keep_all(), keep);
  return least_costs_over(t, g, fg, from);
}

Route make_route(const Topology& t, std::vector<LinkId> links) {
  Route r;
  r.links = std::move(links);
  r.bottleneck = std::numeric_limits<Bandwidth>::max();
  for (LinkId l : r.links) {
    r.latency += t.link(l).latency;
    r.bottleneck = std::min(r.bottleneck, t.link(l).bandwidth);
  }
  return r;
}

}  // namespace

struct Router::Views {
  BoostGraph forward, reversed;
};

struct Router::SwitchRoutes {
  std::mutex mutex;
  std::map<std::tuple<NodeId, int, Bandwidth>,
           std::shared_ptr<const std::vector<std::vector<Route>>>>
      kept;  // (switch, limit, min_bandwidth): its routes
};

Router::Router(const Topology& t, RouteMemo* memo)
    : topo_(t),
      views_(
          std::make_shared<const Views>(Views{detail::boost_view(t), detail::boost_view(t, true)})),
      switch_routes_(std::make_shared<SwitchRoutes>()),
      memo_(memo) {}

std::optional<Route> Router::route(NodeId src, NodeId dst) const {
  std::vector<Route> r = equal_cost_routes(src, dst, 1);
  if (r.empty()) return std::nullopt;
  return std::move(r.front());
}

namespace {

// The routes from src to dst over the links `on_route` takes, depth-first in link-id order, which
// yields them in lexicographic order; at most `limit`.
template <typename OnRoute>
std::vector<Route> walk_routes(const Topology& t, NodeId src, NodeId dst, int limit,
                               OnRoute&& on_route) {
  std::vector<Route> out;
  std::vector<LinkId> path;
  auto walk = [&](auto&& self, NodeId at) -> void {
    if (static_cast<int>(out.size()) >= limit) return;
    if (at == dst) {
      out.push_back(make_route(t, path));
      return;
    }
    for (LinkId l : t.out_links(at)) {
      if (!on_route(l)) continue;
      path.push_back(l);
      self(self, t.link(l).dst);
      path.pop_back();
    }
  };
  walk(walk, src);
  return out;
}

// The least-cost routes from src to dst, given the least costs from src and to dst over
// pass-through interiors: a link u->v lies on one iff cost(src,u) + w + cost(v,dst) == best.
std::vector<Route> routes_between(const Topology& t, NodeId src, NodeId dst, int limit,
                                  const std::vector<Cost>& from_src,
                                  const std::vector<Cost>& to_dst) {
  if (from_src[dst] == kInfinity) return {};
  const Cost best = from_src[dst];
  return walk_routes(t, src, dst, limit, [&](LinkId l) {
    const Link& k = t.link(l);
    if (k.dst != dst && !t.passes_through(k.dst)) return false;
    if (from_src[k.src] == kInfinity || to_dst[k.dst] == kInfinity) return false;
    return CostPlus()(CostPlus()(from_src[k.src], Cost{k.latency, 1}), to_dst[k.dst]) == best;
  });
}

}  // namespace

std::vector<Route> Router::equal_cost_routes(NodeId src, NodeId dst, int limit) const {
  if (src == dst || limit <= 0) return {};
  std::vector<Cost> from_src = least_costs(topo_, views_->forward, src, dst);
  if (from_src[dst] == kInfinity) return {};
  return routes_between(topo_, src, dst, limit, from_src,
                        least_costs(topo_, views_->reversed, dst, src));
}

// The cache keeps whole searches only for ends asked for again: a ring asks each source and each
// destination once, and whole searches kept for all of them took 16 B x 2 x N^2 (8.6 GB for a
// 16,384-NPU ring). The first pair of a source and a destination searches from the source only
// until the destination's cost is final, and takes the routes from those costs alone: a link u->v
// lies on a least-cost route iff it is tight (cost(u) + w == cost(v)) and v is the destination or a
// pass-through node that reaches it over tight links. An end asked for again (a direct All-to-All
// asks each N - 1 times) gets whole searches from the source and to the destination, kept.
//
// Between two NPUs that pass nothing through (most pairs a baseline asks for), a route is a direct
// link, or a link out of the source into a pass-through node a, a route from a to a pass-through
// node b, and a link from b into the destination (a == b: no route between). Its cost is the sum,
// so the least-cost routes come from the least-cost routes between a and b, kept per pair of
// pass-through nodes (on a leaf-spine of N NPUs, a search per pair of leaves instead of per pair
// of NPUs), for every link out of the source and into the destination; sorted by their links, the
// order of the depth-first walk.
struct RouteCache::Impl {
  const Router& router;
  std::unordered_map<NodeId, std::vector<Cost>> from, to;  // whole searches, kept
  std::vector<char> asked_from, asked_to;  // per node: asked for as a source, a destination
  std::vector<uint32_t> leads;  // per node: the pair (stamp) it leads to the destination for
  uint32_t stamp = 0;
  struct Between {
    int limit = 0;
    std::vector<Route> routes;  // at most `limit`, in order
  };
  std::unordered_map<uint64_t, Between> between;  // per pair of pass-through nodes: their routes
  // between_npus' ways from a source's link to a destination's (kept to save their allocation).
  struct Candidate {
    Cost cost;
    LinkId first, last;                // `last` -1: a direct link
    const std::vector<LinkId>* inner;  // between a and b (null: none)
  };
  std::vector<Candidate> candidates;
  std::vector<const Candidate*> least;
};

RouteCache::RouteCache(const Router& r)
    : impl_(std::make_unique<Impl>(Impl{r, {}, {}, {}, {}, {}, 0, {}, {}, {}})) {}
RouteCache::~RouteCache() = default;

FlatRoutes RouteCache::between_npus(NodeId src, NodeId dst, int limit) {
  Impl& m = *impl_;
  const Topology& t = m.router.topo_;
  std::vector<Impl::Candidate>& candidates = m.candidates;
  candidates.clear();
  for (LinkId l : t.out_links(src)) {
    const Link& out = t.link(l);
    if (out.dst == dst) {
      candidates.push_back({Cost{out.latency, 1}, l, -1, nullptr});
      continue;
    }
    if (!t.passes_through(out.dst)) continue;
    for (LinkId k : t.in_links(dst)) {
      const Link& in = t.link(k);
      if (!t.passes_through(in.src)) continue;
      const Cost ends{out.latency + in.latency, 2};
      if (out.dst == in.src) {
        candidates.push_back({ends, l, k, nullptr});
        continue;
      }
      const uint64_t key = static_cast<uint64_t>(out.dst) << 32 | static_cast<uint32_t>(in.src);
      Impl::Between& kept = m.between[key];
      if (kept.limit != limit) kept = {limit, equal_cost_routes(out.dst, in.src, limit)};
      for (const Route& r : kept.routes)
        candidates.push_back(
            {CostPlus()(ends, Cost{r.latency, static_cast<int>(r.links.size())}), l, k, &r.links});
    }
  }
  FlatRoutes out;
  if (candidates.empty()) return out;
  Cost best = kInfinity;
  for (const Impl::Candidate& c : candidates) best = std::min(best, c.cost);
  // The least-cost ones (as many links each: the cost counts them), in lexicographic order of
  // their links, the first `limit`.
  std::vector<const Impl::Candidate*>& least = m.least;
  least.clear();
  for (const Impl::Candidate& c : candidates)
    if (c.cost == best) least.push_back(&c);
  const auto link_at = [](const Impl::Candidate& c, size_t i) {
    const size_t inner = c.inner ? c.inner->size() : 0;
    return i == 0 ? c.first : i <= inner ? (*c.inner)[i - 1] : c.last;
  };
  out.length = best.second;
  std::sort(least.begin(), least.end(), [&](const Impl::Candidate* a, const Impl::Candidate* b) {
    for (int i = 0; i < out.length; ++i)
      if (const LinkId x = link_at(*a, i), y = link_at(*b, i); x != y) return x < y;
    return false;
  });
  if (static_cast<int>(least.size()) > limit) least.resize(limit);
  out.links.reserve(least.size() * static_cast<size_t>(out.length));
  for (const Impl::Candidate* c : least)
    for (int i = 0; i < out.length; ++i) out.links.push_back(link_at(*c, i));
  return out;
}

FlatRoutes RouteCache::flat_equal_cost_routes(NodeId src, NodeId dst, int limit) {
  if (src == dst || limit <= 0) return {};
  const Topology& t = impl_->router.topo_;
  if (!t.passes_through(src) && !t.passes_through(dst)) return between_npus(src, dst, limit);
  FlatRoutes out;
  for (const Route& r : equal_cost_routes(src, dst, limit)) {
    out.length = static_cast<int>(r.links.size());
    out.links.insert(out.links.end(), r.links.begin(), r.links.end());
  }
  return out;
}

std::vector<Route> RouteCache::equal_cost_routes(NodeId src, NodeId dst, int limit) {
  if (src == dst || limit <= 0) return {};
  Impl& m = *impl_;
  const Topology& t = m.router.topo_;
  if (!t.passes_through(src) && !t.passes_through(dst)) {
    const FlatRoutes flat = between_npus(src, dst, limit);
    std::vector<Route> out;
    out.reserve(flat.count());
    for (size_t i = 0; i < flat.count(); ++i) {
      const std::span<const LinkId> links = flat.route(i);
      out.push_back(make_route(t, std::vector<LinkId>(links.begin(), links.end())));
    }
    return out;
  }
  const Router::Views& views = *m.router.views_;
  // Least costs from `end` to every node, or (reversed) from every node to `end`, over routes whose
  // interior nodes pass traffic through. Per pair, Router::equal_cost_routes keeps the other end as
  // a vertex too; a route through it costs at least the pair's best, so it never lies on one.
  // (A plain struct, not a std::function: the filter runs on every edge Dijkstra looks at, and a
  // ring over 4096 NPUs asks for 4096 searches.)
  struct Keep {
    const Topology* t = nullptr;
    const BoostGraph* g = nullptr;
    NodeId end = 0;
    bool reversed = false;
    bool operator()(const BoostEdge& e) const {
      const Link& k = t->link((*g)[e]);
      const NodeId leaving = reversed ? k.dst : k.src;  // the node the search continues from
      return leaving == end || t->passes_through(leaving);
    }
  };
  auto costs = [&](NodeId end, bool reversed, NodeId until = -1) {
    const BoostGraph& g = reversed ? views.reversed : views.forward;
    boost::filtered_graph<BoostGraph, Keep> fg(g, Keep{&t, &g, end, reversed});
    return least_costs_over(t, g, fg, end, until);
  };
  if (m.asked_from.empty()) {
    m.asked_from.assign(t.num_nodes(), 0);
    m.asked_to.assign(t.num_nodes(), 0);
  }
  const bool again = m.asked_from[src] || m.asked_to[dst];
  m.asked_from[src] = m.asked_to[dst] = 1;
  if (again) {
    auto from = m.from.find(src);
    if (from == m.from.end()) from = m.from.emplace(src, costs(src, false)).first;
    if (from->second[dst] == kInfinity) return {};
    auto to = m.to.find(dst);
    if (to == m.to.end()) to = m.to.emplace(dst, costs(dst, true)).first;
    return routes_between(t, src, dst, limit, from->second, to->second);
  }
  const std::vector<Cost> c = costs(src, false, dst);
  if (c[dst] == kInfinity) return {};
  auto tight = [&](LinkId l) {
    const Link& k = t.link(l);
    return (k.src == src || t.passes_through(k.src)) && c[k.src] != kInfinity &&
           CostPlus()(c[k.src], Cost{k.latency, 1}) == c[k.dst];
  };
  // The nodes that lead to `dst` over tight links, backwards from it.
  if (m.leads.size() != static_cast<size_t>(t.num_nodes()) || m.stamp == UINT32_MAX) {
    m.leads.assign(t.num_nodes(), 0);
    m.stamp = 0;
  }
  const uint32_t pair = ++m.stamp;
  std::vector<NodeId> todo{dst};
  m.leads[dst] = pair;
  while (!todo.empty()) {
    const NodeId v = todo.back();
    todo.pop_back();
    for (LinkId l : t.in_links(v)) {
      const NodeId u = t.link(l).src;
      if (m.leads[u] == pair || !tight(l)) continue;
      m.leads[u] = pair;
      if (u != src) todo.push_back(u);
    }
  }
  // Depth-first from `src` over those links: routes in lexicographic order.
  return walk_routes(t, src, dst, limit, [&](LinkId l) {
    const NodeId v = t.link(l).dst;
    return m.leads[v] == pair && v != src && tight(l);
  });
}

std::vector<std::vector<Route>> Router::switch_routes_from(NodeId src, int limit,
                                                           Bandwidth min_bandwidth) const {
  return routes_from(src, limit, min_bandwidth, nullptr);
}

std::vector<std::vector<Route>> Router::routes_from(NodeId src, int limit, Bandwidth min_bandwidth,
                                                    const std::vector<char>* to) const {
  const Topology& t = topo_;
  if (!one_link_to_a_switch(src)) return search_switch_routes_from(src, limit, min_bandwidth, to);
  std::vector<std::vector<Route>> out(t.num_npus());
  for_each_switch_route(
      src, limit, min_bandwidth,
      [&](NodeId v, std::span<const LinkId> links) {
        out[v].push_back(make_route(t, std::vector<LinkId>(links.begin(), links.end())));
      },
      to);
  return out;
}

std::optional<LinkId> Router::one_link_to_a_switch(NodeId src) const {
  const Topology& t = topo_;
  if (t.is_npu(src) && t.out_links(src).size() == 1 && t.is_switch(t.link(t.out_links(src)[0]).dst))
    return t.out_links(src)[0];
  return std::nullopt;
}

void Router::for_each_switch_route(
    NodeId src, int limit, Bandwidth min_bandwidth,
    const std::function<void(NodeId, std::span<const LinkId>)>& visit,
    const std::vector<char>* to) const {
  const Topology& t = topo_;
  const std::optional<LinkId> up = one_link_to_a_switch(src);
  if (!up) {
    const std::vector<std::vector<Route>> all =
        search_switch_routes_from(src, limit, min_bandwidth, to);
    for (NodeId v = 0; v < t.num_npus(); ++v)
      for (const Route& r : all[v]) visit(v, r.links);
    return;
  }
  // An NPU whose one link leads to a switch: every route starts with that link, and the rest is a
  // least-cost route from the switch (costs from the NPU are the switch's plus the link's, so the
  // same links are tight past it, and the search walks back from each destination to the switch
  // in the same order before taking the link). The switch's own routes back to the NPU are no
  // route of the NPU's.
  if (t.link(*up).bandwidth < min_bandwidth) return;
  const auto key = std::make_tuple(t.link(*up).dst, limit, min_bandwidth);
  std::shared_ptr<const std::vector<std::vector<Route>>> from;
  {
    std::lock_guard<std::mutex> lock(switch_routes_->mutex);
    if (auto it = switch_routes_->kept.find(key); it != switch_routes_->kept.end())
      from = it->second;
  }
  if (!from) {
    auto searched = std::make_shared<const std::vector<std::vector<Route>>>(
        search_switch_routes_from(t.link(*up).dst, limit, min_bandwidth));
    std::lock_guard<std::mutex> lock(switch_routes_->mutex);
    from = switch_routes_->kept.try_emplace(key, std::move(searched)).first->second;
  }
  std::vector<LinkId> links{*up};
  for (NodeId v = 0; v < t.num_npus(); ++v) {
    if (v == src || (to && !(*to)[v])) continue;
    for (const Route& r : (*from)[v]) {
      links.resize(1);
      links.insert(links.end(), r.links.begin(), r.links.end());
      visit(v, links);
    }
  }
}

void Router::for_each_quickest_switch_route(
    NodeId src, Bytes bytes, int limit,
    const std::function<void(NodeId, std::span<const LinkId>)>& visit,
    const std::vector<char>* to) const {
  const Topology& t = topo_;
  if (switch_widths(src).size() <= 1) {  // the least-latency routes are the quickest
    for_each_switch_route(src, limit, 0, visit, to);
    return;
  }
  std::vector<Searched> kept;
  const std::vector<std::vector<const Route*>> quickest =
      quickest_from(src, bytes, limit, to, kept);
  for (NodeId v = 0; v < t.num_npus(); ++v)
    for (const Route* r : quickest[v]) visit(v, r->links);
}

std::vector<Bandwidth> Router::switch_widths(NodeId src) const {
  std::vector<Bandwidth> widths;
  for (const Link& k : topo_.links())
    if (k.src == src || topo_.is_switch(k.src)) widths.push_back(k.bandwidth);
  std::sort(widths.begin(), widths.end());
  widths.erase(std::unique(widths.begin(), widths.end()), widths.end());
  return widths;
}

Router::Searched Router::searched_from(NodeId src, int limit, Bandwidth min_bandwidth,
                                       const std::vector<char>* to) const {
  auto alone = [&] {
    return std::make_shared<const std::vector<std::vector<Route>>>(
        routes_from(src, limit, min_bandwidth, to));
  };
  if (!memo_ || one_link_to_a_switch(src)) return alone();  // (the switch's routes are kept)
  const RouteMemo::Key key{topo_.fingerprint(), src, limit, min_bandwidth};
  bool full = false;
  {
    std::lock_guard lock(memo_->mutex_);
    if (auto it = memo_->kept_.find(key); it != memo_->kept_.end()) return it->second;
    full = memo_->routes_ >= memo_->most_routes_;
  }
  if (full) return alone();
  // The search to every NPU, not only to `to`'s: one Dijkstra either way, and the walks back.
  auto all = std::make_shared<const std::vector<std::vector<Route>>>(
      search_switch_routes_from(src, limit, min_bandwidth, nullptr));
  size_t routes = 0;
  for (const std::vector<Route>& r : *all) routes += r.size();
  std::lock_guard lock(memo_->mutex_);
  if (memo_->routes_ + routes <= memo_->most_routes_ && memo_->kept_.try_emplace(key, all).second)
    memo_->routes_ += routes;
  return all;
}

std::vector<std::vector<Route>> Router::search_switch_routes_from(
    NodeId src, int limit, Bandwidth min_bandwidth, const std::vector<char>* to) const {
  const Topology& t = topo_;
  const BoostGraph& g = views_->forward;
  // Only links leaving the source or a switch: routes whose interior nodes are all switches. (A
  // plain struct, not a std::function: the filter runs on every edge Dijkstra looks at.)
  struct Keep {
    const Topology* t = nullptr;
    const BoostGraph* g = nullptr;
    NodeId src = 0;
    Bandwidth min_bandwidth = 0;
    bool forwards(const Link& k) const {
      return (k.src == src || t->is_switch(k.src)) && k.bandwidth >= min_bandwidth;
    }
    bool operator()(const BoostEdge& e) const { return forwards(t->link((*g)[e])); }
  };
  const Keep keep{&t, &g, src, min_bandwidth};
  boost::filtered_graph<BoostGraph, Keep> fg(g, keep);
  const std::vector<Cost> dist = least_costs_over(t, g, fg, src);
  // A link x->y lies on a least-cost route iff x may forward and dist(x) + w == dist(y). Walk
  // backwards from each NPU over such links, smallest link ids first, and reverse.
  auto tight = [&](LinkId l) {
    const Link& k = t.link(l);
    return keep.forwards(k) && dist[k.src] != kInfinity &&
           CostPlus()(dist[k.src], Cost{k.latency, 1}) == dist[k.dst];
  };
  // The tight links into each node, in in_links order, found once (a walk that scanned every link
  // into a switch per destination was quadratic in the switch's ports per source).
  const int nodes = t.num_nodes();
  std::vector<int> first(static_cast<size_t>(nodes) + 1, 0);
  std::vector<LinkId> into;
  for (NodeId at = 0; at < nodes; ++at) {
    first[at] = static_cast<int>(into.size());
    if (dist[at] == kInfinity) continue;
    for (LinkId l : t.in_links(at))
      if (tight(l)) into.push_back(l);
  }
  first[nodes] = static_cast<int>(into.size());
  std::vector<std::vector<Route>> out(t.num_npus());
  std::vector<LinkId> path;
  for (NodeId v = 0; v < t.num_npus(); ++v) {
    if (v == src || dist[v] == kInfinity || (to && !(*to)[v])) continue;
    std::vector<std::vector<LinkId>> found;
    auto walk = [&](auto&& self, NodeId at) -> void {
      if (static_cast<int>(found.size()) >= limit) return;
      if (at == src) {
        found.emplace_back(path.rbegin(), path.rend());
        return;
      }
      for (int i = first[at]; i < first[at + 1]; ++i) {
        const LinkId l = into[i];
        path.push_back(l);
        self(self, t.link(l).src);
        path.pop_back();
      }
    };
    walk(walk, v);
    std::sort(found.begin(), found.end());
    for (auto& links : found) out[v].push_back(make_route(t, std::move(links)));
  }
  return out;
}

std::vector<std::vector<Route>> Router::quickest_switch_routes_from(NodeId src, Bytes bytes,
                                                                    int limit) const {
  return quickest_routes_from(src, bytes, limit, nullptr);
}

std::vector<std::vector<const Route*>> Router::quickest_from(NodeId src, Bytes bytes, int limit,
                                                             const std::vector<char>* to,
                                                             std::vector<Searched>& kept) const {
  const Topology& t = topo_;
  auto cost = [&](const Route& r) { return r.latency + transfer_time(bytes, r.bottleneck); };
  // (A search kept in the memo holds the routes to every NPU: those not in `to` are passed over.)
  auto wanted = [&](NodeId v) { return !to || (*to)[v]; };
  kept.push_back(searched_from(src, limit, 0, to));
  std::vector<std::vector<const Route*>> out(t.num_npus());
  std::vector<Time> least(t.num_npus(), std::numeric_limits<Time>::max());
  for (NodeId v = 0; v < t.num_npus(); ++v)
    if (wanted(v))
      for (const Route& r : (*kept.back())[v]) {
        out[v].push_back(&r);
        least[v] = std::min(least[v], cost(r));
      }
  // The quickest routes where they beat every least-latency one.
  const std::vector<Bandwidth> widths = switch_widths(src);
  std::vector<std::vector<const Route*>> quicker(t.num_npus());
  for (size_t i = 1; i < widths.size(); ++i) {  // the narrowest width is every link: done above
    kept.push_back(searched_from(src, limit, widths[i], to));
    for (NodeId v = 0; v < t.num_npus(); ++v) {
      if (!wanted(v)) continue;
      for (const Route& r : (*kept.back())[v]) {
        const Time c = cost(r);
        if (c > least[v]) continue;
        if (c < least[v]) {
          least[v] = c;
          quicker[v].clear();
        }
        const auto same = [&](const Route* x) { return x->links == r.links; };
        if (static_cast<int>(quicker[v].size()) < limit &&
            std::none_of(out[v].begin(), out[v].end(), same) &&
            std::none_of(quicker[v].begin(), quicker[v].end(), same))
          quicker[v].push_back(&r);
      }
    }
  }
  for (NodeId v = 0; v < t.num_npus(); ++v) {
    out[v].insert(out[v].end(), quicker[v].begin(), quicker[v].end());
    std::sort(out[v].begin(), out[v].end(),
              [](const Route* x, const Route* y) { return x->links < y->links; });
  }
  return out;
}

std::vector<std::vector<Route>> Router::quickest_routes_from(NodeId src, Bytes bytes, int limit,
                                                             const std::vector<char>* to) const {
  std::vector<Searched> kept;
  const std::vector<std::vector<const Route*>> quickest =
      quickest_from(src, bytes, limit, to, kept);
  std::vector<std::vector<Route>> out(quickest.size());
  for (size_t v = 0; v < quickest.size(); ++v)
    for (const Route* r : quickest[v]) out[v].push_back(*r);
  return out;
}

}  // namespace tenet::topo
