#include "topo/flow_bound.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <boost/graph/dijkstra_shortest_paths.hpp>
#include <boost/property_map/function_property_map.hpp>

#include "topo/boost_view.hpp"
#include "topo/error.hpp"
#include "topo/flow_lp.hpp"

namespace tenet::topo {
namespace {

using detail::BoostEdge;
using detail::BoostGraph;

// Demands grouped by one end (the root): by source, or by destination on the reversed graph, so
// that a commodity is one shortest-path tree from its root.
struct Commodities {
  bool by_destination = false;
  std::vector<NodeId> roots;
  std::vector<std::vector<std::pair<NodeId, double>>> ends;  // (other end, bytes)
};

Commodities group(const Topology& t, std::span<const Demand> demands) {
  std::map<NodeId, std::map<NodeId, double>> by_src, by_dst;
  for (const Demand& d : demands) {
    if (d.src == d.dst || d.bytes <= 0) continue;
    if (d.src < 0 || d.src >= t.num_nodes() || d.dst < 0 || d.dst >= t.num_nodes())
      throw Error(fmt::format(
          "flow bound: a demand from node {} to node {} names a node the topology does not have",
          d.src, d.dst));
    by_src[d.src][d.dst] += static_cast<double>(d.bytes);
    by_dst[d.dst][d.src] += static_cast<double>(d.bytes);
  }
  Commodities c;
  c.by_destination = by_dst.size() < by_src.size();
  for (const auto& [root, ends] : c.by_destination ? by_dst : by_src) {
    c.roots.push_back(root);
    c.ends.emplace_back(ends.begin(), ends.end());
  }
  return c;
}

// One shortest-path tree from `root` under the weights: distances, the link into each node (-1
// for the root and unreached nodes) and the nodes in the order they were settled.
struct Tree {
  std::vector<double> dist;
  std::vector<LinkId> via;
  std::vector<NodeId> order;
};

struct TreeVisitor : boost::default_dijkstra_visitor {
  Tree* tree;
  explicit TreeVisitor(Tree* t) : tree(t) {}
  void examine_vertex(detail::BoostVertex v, const BoostGraph&) {
    tree->order.push_back(static_cast<NodeId>(v));
  }
  void edge_relaxed(const BoostEdge& e, const BoostGraph& g) { tree->via[target(e, g)] = g[e]; }
};

void shortest_tree(const BoostGraph& g, NodeId root, std::span<const double> w, Tree& tree) {
  const double inf = std::numeric_limits<double>::infinity();
  tree.dist.assign(num_vertices(g), inf);
  tree.via.assign(num_vertices(g), -1);
  tree.order.clear();
  auto weight = boost::make_function_property_map<BoostEdge, double>(
      [&](const BoostEdge& e) { return w[g[e]]; });
  boost::dijkstra_shortest_paths(g, static_cast<detail::BoostVertex>(root),
                                 boost::weight_map(weight)
                                     .distance_map(boost::make_iterator_property_map(
                                         tree.dist.begin(), get(boost::vertex_index, g)))
                                     .visitor(TreeVisitor(&tree)));
}

// sum of w(e) B(e), in bytes per second of weight.
double weighted_capacity(const Topology& t, std::span<const double> w) {
  double alpha = 0;
  for (LinkId l = 0; l < t.num_links(); ++l)
    alpha += w[l] * static_cast<double>(t.link(l).bandwidth);
  return alpha;
}

// The dual bound of w in seconds, and (when `load` is given) the load of routing every demand
// on its w-shortest path.
double dual_bound(const Topology& t, const BoostGraph& g, const Commodities& c,
                  std::span<const double> w, std::vector<double>* load) {
  const double alpha = weighted_capacity(t, w);
  if (alpha <= 0) return 0;
  Tree tree;
  std::vector<double> below;
  double bytes_distance = 0;
  for (size_t k = 0; k < c.roots.size(); ++k) {
    shortest_tree(g, c.roots[k], w, tree);
    if (load) below.assign(t.num_nodes(), 0.0);
    for (const auto& [end, bytes] : c.ends[k]) {
      if (!std::isfinite(tree.dist[end])) continue;  // unreachable: not this bound's business
      bytes_distance += bytes * tree.dist[end];
      if (load) below[end] += bytes;
    }
    if (!load) continue;
    for (auto it = tree.order.rbegin(); it != tree.order.rend(); ++it) {
      const LinkId l = tree.via[*it];
      if (l < 0 || below[*it] == 0) continue;
      (*load)[l] += below[*it];
      const Link& link = t.link(l);
      below[c.by_destination ? link.dst : link.src] += below[*it];
    }
  }
  return bytes_distance / alpha;
}

// The LP's capacity duals as link weights (FlowLpResult::duals, empty unless it solved to
// optimality). Amounts are scaled so that the largest demand and the widest link are 1.
detail::FlowLpResult lp_weights(const Topology& t, const Commodities& c, int max_iterations) {
  detail::FlowLp lp;
  lp.iteration_limit = max_iterations;
  lp.num_nodes = t.num_nodes();
  double max_bw = 0, max_bytes = 0;
  for (const Link& l : t.links()) max_bw = std::max(max_bw, static_cast<double>(l.bandwidth));
  for (const auto& ends : c.ends)
    for (const auto& [end, bytes] : ends) max_bytes = std::max(max_bytes, bytes);
  if (max_bw <= 0 || max_bytes <= 0) return {};
  for (const Link& l : t.links()) {
    lp.arcs.emplace_back(c.by_destination ? l.dst : l.src, c.by_destination ? l.src : l.dst);
    lp.capacity.push_back(static_cast<double>(l.bandwidth) / max_bw);
  }
  lp.roots.assign(c.roots.begin(), c.roots.end());
  for (const auto& ends : c.ends) {
    auto& scaled = lp.ends.emplace_back();
    for (const auto& [end, bytes] : ends) scaled.emplace_back(end, bytes / max_bytes);
  }
  return detail::concurrent_flow_duals(lp);
}

Time to_picos_down(double seconds) {
  const double ps = std::floor(seconds * static_cast<double>(kPicosPerSecond) * (1 - 1e-9));
  return static_cast<Time>(
      std::clamp(ps, 0.0, static_cast<double>(std::numeric_limits<Time>::max() / 2)));
}

}  // namespace

double flow_dual_bound(const Topology& t, std::span<const Demand> demands,
                       std::span<const double> weights) {
  if (static_cast<int>(weights.size()) != t.num_links())
    throw Error(
        fmt::format("flow bound: {} link weights for {} links", weights.size(), t.num_links()));
  const Commodities c = group(t, demands);
  const BoostGraph g = detail::boost_view(t, c.by_destination);
  return dual_bound(t, g, c, weights, nullptr);
}

FlowBound concurrent_flow_bound(const Topology& t, std::span<const Demand> demands,
                                const FlowBoundOptions& options) {
  FlowBound result;
  const Commodities c = group(t, demands);
  const int m = t.num_links();
  if (c.roots.empty() || m == 0) {
    result.method = FlowMethod::None;
    return result;
  }
  const BoostGraph g = detail::boost_view(t, c.by_destination);
  const long long size = static_cast<long long>(c.roots.size()) * m;
  if (size <= options.max_lp_size) {
    detail::FlowLpResult lp = lp_weights(t, c, options.max_lp_iterations);
    if (lp.status == detail::FlowLpStatus::Optimal) {
      result.time = to_picos_down(dual_bound(t, g, c, lp.duals, nullptr));
      result.method = FlowMethod::Lp;
      result.lp = LpOutcome::Optimal;
      result.weights = std::move(lp.duals);
      return result;
    }
    // No duals to trust: the weights below give a bound however far the simplex got.
    result.lp =
        lp.status == detail::FlowLpStatus::IterationLimit ? LpOutcome::CutShort : LpOutcome::Failed;
  }
  // Multiplicative weights from the better of hop counts and link times.
  std::vector<double> w(m, 1.0), by_time(m);
  for (LinkId l = 0; l < m; ++l) by_time[l] = 1.0 / static_cast<double>(t.link(l).bandwidth);
  if (dual_bound(t, g, c, by_time, nullptr) > dual_bound(t, g, c, w, nullptr)) w = by_time;
  double best = 0;
  std::vector<double> best_w = w, load(m), total_load(m, 0.0);
  const long long rounds =
      std::max<long long>(1, options.max_relaxations / std::max<long long>(1, size));
  long long round = 0;
  double upper = std::numeric_limits<double>::infinity();
  while (round < rounds) {
    std::fill(load.begin(), load.end(), 0.0);
    const double bound = dual_bound(t, g, c, w, &load);
    ++round;
    if (bound > best) {
      best = bound;
      best_w = w;
    }
    // The averaged routing so far is a flow of every demand: its time bounds the LP optimum above.
    double congestion = 0, averaged = 0;
    for (LinkId l = 0; l < m; ++l) {
      total_load[l] += load[l];
      const double bw = static_cast<double>(t.link(l).bandwidth);
      congestion = std::max(congestion, load[l] / bw);
      averaged = std::max(averaged, total_load[l] / static_cast<double>(round) / bw);
    }
    upper = std::min(upper, averaged);
    if (round == 1 && congestion > 0) {
      // The links this first routing loads most, as a cut: weight 1 on every link loaded to at
      // least theta of the most, 0 elsewhere (the long dimension of a 16x8x8 torus, which
      // multiplicative weights take many rounds to single out).
      std::vector<double> cut(m);
      for (double theta : {1.0, 0.9, 0.75, 0.5}) {
        for (LinkId l = 0; l < m; ++l)
          cut[l] =
              load[l] / static_cast<double>(t.link(l).bandwidth) >= theta * congestion * (1 - 1e-12)
                  ? 1.0
                  : 0.0;
        if (const double b = dual_bound(t, g, c, cut, nullptr); b > best) {
          best = b;
          best_w = cut;
        }
      }
    }
    if (congestion <= 0 || best >= (1 - options.target_gap) * upper) break;
    // Raise the weights of the links this routing overloads, most for the most loaded; an
    // exponent that shrinks with the rounds lets the weights settle.
    const double step = 2.0 / std::sqrt(static_cast<double>(round));
    double top = 0;
    for (LinkId l = 0; l < m; ++l) {
      w[l] *= std::exp(step * load[l] / static_cast<double>(t.link(l).bandwidth) / congestion);
      top = std::max(top, w[l]);
    }
    for (double& x : w) x /= top;  // keep them finite
  }
  result.time = to_picos_down(best);
  result.upper = std::isfinite(upper)
                     ? static_cast<Time>(std::ceil(upper * static_cast<double>(kPicosPerSecond)))
                     : -1;
  result.method = FlowMethod::MultiplicativeWeights;
  result.rounds = round;
  result.weights = std::move(best_w);
  return result;
}

std::string describe_limit(const Topology& t, const FlowBound& b) {
  std::vector<std::pair<double, LinkId>> shares;  // w(e) x B(e), link
  double total = 0;
  for (LinkId l = 0; l < static_cast<LinkId>(b.weights.size()) && l < t.num_links(); ++l) {
    const double part = b.weights[l] * static_cast<double>(t.link(l).bandwidth);
    if (!(part > 0)) continue;
    shares.emplace_back(part, l);
    total += part;
  }
  if (shares.empty()) return "";
  // Heaviest first; ties in link order, so that the words do not depend on the solver's order.
  std::sort(shares.begin(), shares.end(), [](const auto& x, const auto& y) {
    return x.first != y.first ? x.first > y.first : x.second < y.second;
  });
  std::vector<std::string> named;
  double rest = 0;
  for (size_t i = 0; i < shares.size(); ++i) {
    const auto [part, l] = shares[i];
    if (i >= kNamedFlowLinks) {
      rest += part;
      continue;
    }
    const Link& k = t.link(l);
    named.push_back(fmt::format("{} -> {} {} ({:.0f} %)", t.node(k.src).name, t.node(k.dst).name,
                                format_bandwidth(k.bandwidth), 100 * part / total));
  }
  const size_t more = shares.size() - named.size();
  return fmt::format(
      "{}: {}{}",
      b.method == FlowMethod::Lp ? "the links the LP's duals weigh (each one full in every fastest "
                                   "flow)"
                                 : "the links the bound's weights weigh most",
      fmt::join(named, ", "),
      more == 0 ? "" : fmt::format(", and {} more ({:.0f} %)", more, 100 * rest / total));
}

std::string describe(const FlowBound& b) {
  switch (b.method) {
    case FlowMethod::None:
      return "none";
    case FlowMethod::Lp:
      return "LP";
    case FlowMethod::MultiplicativeWeights:
      return fmt::format("multiplicative weights ({} round{}{})", b.rounds,
                         b.rounds == 1 ? "" : "s",
                         b.lp == LpOutcome::CutShort ? "; the LP was cut short"
                         : b.lp == LpOutcome::Failed ? "; the LP failed"
                                                     : "");
  }
  return "?";
}

}  // namespace tenet::topo
