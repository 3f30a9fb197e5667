// Deterministic routes for multi-hop messages. A route from NPU a to NPU b is a chain of links
// whose interior nodes pass traffic through (switches, router NPUs); an NPU that is no router
// never appears inside a route. Among routes, the cost is (summed latency, hop count),
// compared in that order; equal-cost routes (ECMP) are ordered by their link ids, and the
// deterministic route is the first of them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <tuple>
#include <vector>

#include "topo/topology.hpp"

namespace tenet::topo {

struct Route {
  std::vector<LinkId> links;
  Time latency = 0;          // summed over the links
  Bandwidth bottleneck = 0;  // the narrowest link's bandwidth
};

// Equal-cost routes as one array of links: an equal cost is as many links (the cost counts them),
// so route i is links[i * length, (i + 1) * length).
struct FlatRoutes {
  std::vector<LinkId> links;
  int length = 0;
  size_t count() const { return length > 0 ? links.size() / static_cast<size_t>(length) : 0; }
  std::span<const LinkId> route(size_t i) const {
    return {links.data() + i * static_cast<size_t>(length), static_cast<size_t>(length)};
  }
};

// The searches Routers of one topology may share (Router's constructor): a source's least-cost
// routes through switches to every NPU, per topology (its fingerprint: nodes, links, bandwidths
// and latencies, all a route depends on), source, limit and least bandwidth. Kept until they hold
// `most_routes` routes in all (by default kMostRoutes: a few MB); past that a Router searches as
// it would alone. A caller that plans one topology again and again (a chunk search's server plan
// and matcher channels at every chunk size) holds one, so each source's routes are searched once.
// Safe to share between threads.
class RouteMemo {
 public:
  static constexpr size_t kMostRoutes = size_t{1} << 16;
  explicit RouteMemo(size_t most_routes = kMostRoutes) : most_routes_(most_routes) {}
  // One search: per NPU, its routes (as Router::switch_routes_from gives them).
  using Searched = std::shared_ptr<const std::vector<std::vector<Route>>>;

 private:
  friend class Router;
  using Key = std::tuple<uint64_t, NodeId, int, Bandwidth>;
  const size_t most_routes_;
  std::mutex mutex_;
  std::map<Key, Searched> kept_;
  size_t routes_ = 0;  // kept, summed over kept_
};

class Router {
 public:
  // `memo`: searches shared with other Routers (RouteMemo), or none; it must outlive the Router.
  explicit Router(const Topology& t, RouteMemo* memo = nullptr);

  // The deterministic least-cost route from `src` to `dst` (distinct nodes), or nothing when the
  // two are not joined through pass-through nodes.
  std::optional<Route> route(NodeId src, NodeId dst) const;
  // All least-cost routes, at most `limit`, in lexicographic order of their link ids.
  std::vector<Route> equal_cost_routes(NodeId src, NodeId dst, int limit = 16) const;

  // From `src` to every other NPU reachable through switches only (no NPU inside, routers
  // included): least-cost routes, at most `limit` per destination (a deterministic choice when
  // there are more), sorted by link ids.
  // One shortest-path search for all destinations. result[v] is empty when there is none.
  // Links narrower than `min_bandwidth` are left out. An NPU whose one link leads to a switch
  // has that switch's routes behind its link: the switch's are searched once per Router (and
  // its copies) and kept.
  std::vector<std::vector<Route>> switch_routes_from(NodeId src, int limit = 8,
                                                     Bandwidth min_bandwidth = 0) const;
  // The least-latency routes, and with them the quickest ones for a message of `bytes` where they
  // are quicker: least latency + bytes / bottleneck (a slightly longer way round a thin link wins
  // for large messages). Those are the least-latency routes over the links of at least b, for
  // each bandwidth b in the topology (the quickest-path algorithm of Chen and Chin): a quickest
  // route is a least-latency route over the links at least as wide as its own bottleneck. At most
  // `limit` of each kind, sorted by link ids.
  std::vector<std::vector<Route>> quickest_switch_routes_from(NodeId src, Bytes bytes,
                                                              int limit = 8) const;
  // The routes of switch_routes_from and quickest_switch_routes_from, passed to `visit(v, links)`
  // one by one in their order, with no Route made for each (`links` lasts for the call): a
  // baseline or plan that keeps the links of millions of them in its own form. With `to` (a flag
  // per NPU), only the routes to the NPUs flagged, the others not searched for.
  void for_each_switch_route(NodeId src, int limit, Bandwidth min_bandwidth,
                             const std::function<void(NodeId, std::span<const LinkId>)>& visit,
                             const std::vector<char>* to = nullptr) const;
  void for_each_quickest_switch_route(
      NodeId src, Bytes bytes, int limit,
      const std::function<void(NodeId, std::span<const LinkId>)>& visit,
      const std::vector<char>* to = nullptr) const;

 private:
  friend class RouteCache;
  const Topology& topo_;
  // The topology as Boost graphs (forward, reversed), built once per Router: every query uses them,
  // and a synthesizer asks thousands of queries of one topology.
  struct Views;
  std::shared_ptr<const Views> views_;
  // switch_routes_from of switches, kept (see there); safe to share between threads.
  struct SwitchRoutes;
  std::shared_ptr<SwitchRoutes> switch_routes_;
  RouteMemo* memo_ = nullptr;
  // switch_routes_from by its search, and the routes of either kind to the NPUs flagged in `to`
  // (every one where null).
  std::vector<std::vector<Route>> search_switch_routes_from(
      NodeId src, int limit, Bandwidth min_bandwidth, const std::vector<char>* to = nullptr) const;
  // routes_from's, shared: the memo's (routes to every NPU, `to`'s among them) where it keeps
  // them, else made for the caller.
  using Searched = RouteMemo::Searched;
  Searched searched_from(NodeId src, int limit, Bandwidth min_bandwidth,
                         const std::vector<char>* to) const;
  // quickest_routes_from's routes, pointing into the searches `kept` holds.
  std::vector<std::vector<const Route*>> quickest_from(NodeId src, Bytes bytes, int limit,
                                                       const std::vector<char>* to,
                                                       std::vector<Searched>& kept) const;
  std::vector<std::vector<Route>> routes_from(NodeId src, int limit, Bandwidth min_bandwidth,
                                              const std::vector<char>* to) const;
  std::vector<std::vector<Route>> quickest_routes_from(NodeId src, Bytes bytes, int limit,
                                                       const std::vector<char>* to) const;
  // `src`'s link where it is an NPU with one link, to a switch.
  std::optional<LinkId> one_link_to_a_switch(NodeId src) const;
  // The bandwidths of the links leaving `src` or a switch, ascending, once each.
  std::vector<Bandwidth> switch_widths(NodeId src) const;
};

// Router::equal_cost_routes for many pairs among a few sources and destinations (a baseline's
// direct sends): the search from each source and the one to each destination are done once, not
// twice per pair. The same routes. Not for use from several threads at once.
class RouteCache {
 public:
  explicit RouteCache(const Router& r);  // keeps a reference
  ~RouteCache();
  std::vector<Route> equal_cost_routes(NodeId src, NodeId dst, int limit = 16);
  // The same routes' links, in one array (a baseline's millions of pairs allocate once each).
  FlatRoutes flat_equal_cost_routes(NodeId src, NodeId dst, int limit = 16);

 private:
  // equal_cost_routes between NPUs that pass nothing through, from the routes between the
  // pass-through nodes they link to (kept).
  FlatRoutes between_npus(NodeId src, NodeId dst, int limit);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tenet::topo
