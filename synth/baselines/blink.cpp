// blink: Blink's All-Reduce (Wang et al., "Blink: Fast and Generic Collectives for Distributed
// ML", MLSys 2020): spanning trees packed over the links between the ranks, each tree reducing
// its share of the chunks towards its root and broadcasting the result back, pipelined.
//
// A tree edge {u, v} carries the reduction up one way and the broadcast down the other, so a
// packing is limited by each direction's capacity: the fractional packing of undirected spanning
// trees (Nash-Williams and Tutte), which Blink approximates by multiplicative weights over minimum
// spanning trees. Where links are uniform it reaches the All-Reduce arrivals bound (every element
// crosses 2 (P - 1) links, lower_bound.hpp): an 8x8 mesh packs 112 / 63 trees of its link rate, so
// its All-Reduce takes about 0.56 M / B, where a Reduce-Scatter + All-Gather needs M / B at the
// corners (two links for 2 (P - 1) / P of the data each way).
//
// Model and invariants:
//   - the trees join the ranks over links from NPU to NPU both ways (a tree edge needs both: the
//     reduction goes child -> parent, the broadcast parent -> child); parallel links add up.
//     Where those leave a rank out, pairs joined through switches or router NPUs are edges too,
//     each way over one route whose every link the packing charges;
//   - kBlinkTrees trees, each a minimum spanning tree under lengths that grow exponentially with
//     the trees already on each direction (Blink's few heavy trees: each tree pipelines its chunks
//     through its height, so many light ones fill slowly), weighted by Garg and Koenemann's
//     packing over them (epsilon kBlinkEpsilon: within about 1 + 3 epsilon of the best weights);
//   - each tree is rooted at its center (least height) and carries a share of the chunks in
//     proportion to its weight (largest remainders); each tree has a channel of its own, so that
//     trees sharing a port queue independently, and the waves are listed oldest chunk first;
//   - the trees and their weights depend on the topology and the ranks alone (BlinkPacking), not on
//     the chunks: a BaselineMemo keeps them between builds;
//   - every chunk crosses each edge of its tree once each way, so the links of an edge carry the
//     bytes of its trees' chunks at most at their bandwidth: blink_load_floor, a floor of the time
//     that needs no transfer made (the chunk searches leave a count that cannot win unbuilt).
#include <fmt/format.h>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/connected_components.hpp>
#include <boost/graph/kruskal_min_spanning_tree.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "synth/baselines/baseline_memo.hpp"
#include "synth/baselines/baselines.hpp"
#include "synth/baselines/builder.hpp"
#include "synth/baselines/families.hpp"

namespace tenet::synth::detail {
namespace {

// Garg-Koenemann's epsilon: the weights are within about 1 + 3 epsilon of the best.
constexpr double kBlinkEpsilon = 0.1;
// How many trees carry the chunks (fewer where some are the same tree).
constexpr size_t kBlinkTrees = 32;
// The packing stops after this many steps at the latest (a safety stop: it converges long before).
constexpr int kBlinkIterations = 20000;
// How steeply a direction's length grows with the trees on it (per tree at the largest capacity).
constexpr double kBlinkGrowth = 1.0;
// Up to this many ranks, pairs joined through switches are candidate tree edges too (every pair).
constexpr int kBlinkRoutedRanks = 64;

// A pair of ranks joined both ways (group indices u < v): the capacities each direction uses
// (resources: the links between two NPUs together, or one link of a route through switches) and,
// through switches, the route each way (empty: the direct links, taken in turn).
struct Edge {
  int u = 0, v = 0;
  std::vector<int> up, down;  // u -> v and v -> u
  std::vector<LinkId> up_route, down_route;
};

using Graph = boost::adjacency_list<
    boost::vecS, boost::vecS, boost::undirectedS, boost::no_property,
    boost::property<boost::edge_weight_t, double, boost::property<boost::edge_index_t, int>>>;

// Spanning trees of the members (sets of edge indices) and their weights under each direction's
// capacity.
class TreePacker {
 public:
  TreePacker(int members, std::vector<Edge> edges, std::vector<double> capacity)
      : edges_(std::move(edges)), capacity_(std::move(capacity)), g_(members) {
    for (size_t e = 0; e < edges_.size(); ++e)
      boost::add_edge(edges_[e].u, edges_[e].v, {0.0, static_cast<int>(e)}, g_);
  }

  // `count` spanning trees chosen one at a time, each a minimum spanning tree under lengths that
  // grow exponentially with the trees already on each resource (per unit of its capacity): Blink's
  // few heavy trees. Empty where the edges do not span the members.
  std::vector<std::vector<int>> spread(int count) {
    if (edges_.empty()) return {};
    const double most = *std::max_element(capacity_.begin(), capacity_.end());
    std::vector<double> load(capacity_.size(), 0), length(capacity_.size());
    std::vector<std::vector<int>> trees;
    for (int i = 0; i < count; ++i) {
      for (size_t r = 0; r < capacity_.size(); ++r)
        length[r] = std::exp(kBlinkGrowth * load[r] * most / capacity_[r]) / capacity_[r];
      std::vector<int> tree = minimum_tree(length);
      if (tree.empty()) return {};
      for (const auto& [r, uses] : resources_of(tree)) load[r] += uses;
      trees.push_back(std::move(tree));
    }
    std::sort(trees.begin(), trees.end());
    trees.erase(std::unique(trees.begin(), trees.end()), trees.end());
    return trees;
  }

  // Garg-Koenemann's packing of the trees `among` (each a set of edges): per tree, in their order,
  // its weight (proportional to its rate).
  std::vector<double> pack(const std::vector<std::vector<int>>& among) const {
    const auto m = static_cast<double>(capacity_.size());
    const double delta =
        (1 + kBlinkEpsilon) * std::pow((1 + kBlinkEpsilon) * m, -1 / kBlinkEpsilon);
    std::vector<double> length(capacity_.size());
    for (size_t r = 0; r < capacity_.size(); ++r) length[r] = delta / capacity_[r];
    double volume = m * delta;  // sum over resources of capacity x length
    // Per tree, (resource, uses) in resource order, flat: the loop below scans them all at every
    // step.
    std::vector<std::vector<std::pair<int, int>>> uses;
    for (const std::vector<int>& tree : among) {
      const std::map<int, int> of = resources_of(tree);
      uses.emplace_back(of.begin(), of.end());
    }
    std::vector<double> weight(among.size(), 0);
    for (int it = 0; it < kBlinkIterations && volume < 1; ++it) {
      size_t best = 0;
      double least = std::numeric_limits<double>::max();
      for (size_t i = 0; i < among.size(); ++i) {
        double l = 0;
        for (const auto& [r, n] : uses[i]) l += n * length[r];
        if (l < least) {
          least = l;
          best = i;
        }
      }
      double rate = std::numeric_limits<double>::max();
      for (const auto& [r, n] : uses[best]) rate = std::min(rate, capacity_[r] / n);
      for (const auto& [r, n] : uses[best]) {
        const double grow = length[r] * kBlinkEpsilon * rate * n / capacity_[r];
        volume += grow * capacity_[r];
        length[r] += grow;
      }
      weight[best] += rate;
    }
    return weight;
  }

  const std::vector<Edge>& edges() const { return edges_; }

 private:
  // Per resource a tree's edges use, how many times.
  std::map<int, int> resources_of(const std::vector<int>& tree) const {
    std::map<int, int> uses;
    for (int e : tree) {
      for (int r : edges_[e].up) ++uses[r];
      for (int r : edges_[e].down) ++uses[r];
    }
    return uses;
  }

  std::vector<int> minimum_tree(const std::vector<double>& length) {
    for (auto [it, end] = boost::edges(g_); it != end; ++it) {
      const Edge& e = edges_[boost::get(boost::edge_index, g_, *it)];
      double w = 0;
      for (int r : e.up) w += length[r];
      for (int r : e.down) w += length[r];
      boost::put(boost::edge_weight, g_, *it, w);
    }
    chosen_.clear();
    boost::kruskal_minimum_spanning_tree(g_, std::back_inserter(chosen_));
    if (chosen_.size() + 1 != boost::num_vertices(g_)) return {};
    std::vector<int> tree;
    for (const auto& d : chosen_) tree.push_back(boost::get(boost::edge_index, g_, d));
    std::sort(tree.begin(), tree.end());
    return tree;
  }

  std::vector<Edge> edges_;
  std::vector<double> capacity_;
  Graph g_;
  std::vector<boost::graph_traits<Graph>::edge_descriptor> chosen_;
};

// The parent of each member in `tree` rooted at its center (the member of least height; ties to
// the lowest index), -1 at the root.
std::vector<int> rooted_at_center(int members, const std::vector<Edge>& edges,
                                  const std::vector<int>& tree) {
  std::vector<std::vector<int>> next(members);
  for (int e : tree) {
    next[edges[e].u].push_back(edges[e].v);
    next[edges[e].v].push_back(edges[e].u);
  }
  auto bfs = [&](int root, std::vector<int>& parent) {
    parent.assign(members, -2);
    parent[root] = -1;
    std::vector<int> queue{root};
    std::vector<int> depth(members, 0);
    int height = 0;
    for (size_t i = 0; i < queue.size(); ++i)
      for (int w : next[queue[i]])
        if (parent[w] == -2) {
          parent[w] = queue[i];
          depth[w] = depth[queue[i]] + 1;
          height = std::max(height, depth[w]);
          queue.push_back(w);
        }
    return height;
  };
  std::vector<int> parent, best;
  int least = members + 1;
  for (int r = 0; r < members; ++r)
    if (const int h = bfs(r, parent); h < least) {
      least = h;
      best = parent;
    }
  return best;
}

// One tree as blink lists it, and per member the route up to its parent and down from it (empty:
// the direct links, taken in turn).
struct BlinkTree {
  TreeJob job;
  std::vector<std::vector<LinkId>> up, down;
};

// The trees' transfers in waves, oldest chunk first: in wave w, each tree of height h reduces its
// chunk j at depth d when w = j + h - d (the deepest first) and broadcasts chunk j to depth d when
// w = j + h + d - 1, so a link shared by a reduction and a broadcast serves the older chunk first
// (admission takes eligible transfers in list order) and neither phase falls behind the other.
void list_waves(Builder& b, const std::vector<BlinkTree>& trees) {
  // Per tree and depth, its members there in group order.
  std::vector<std::vector<std::vector<int>>> at_depth(trees.size());
  std::vector<int> height(trees.size(), 0);
  int last = 0;
  for (size_t t = 0; t < trees.size(); ++t) {
    const TreeJob& job = trees[t].job;
    const int p = static_cast<int>(job.group.size());
    for (int i = 0; i < p; ++i) {
      int depth = 0;
      for (int at = i; job.parent[at] >= 0; at = job.parent[at]) ++depth;
      if (static_cast<int>(at_depth[t].size()) <= depth) at_depth[t].resize(depth + 1);
      at_depth[t][depth].push_back(i);
      height[t] = std::max(height[t], depth);
    }
    last = std::max(last, static_cast<int>(job.chunks.size()) + 2 * height[t]);
  }
  for (int wave = 0; wave < last; ++wave)
    for (size_t t = 0; t < trees.size(); ++t) {
      const TreeJob& job = trees[t].job;
      const int h = height[t], k = static_cast<int>(job.chunks.size());
      b.set_channel(job.channel);
      for (int d = 2 * h; d >= 1; --d) {  // reductions at depth d (d <= h), then broadcasts
        const bool up = d <= h;
        const int at = up ? d : 2 * h + 1 - d;  // the sender's depth (up) or the receiver's
        const int j = up ? wave - (h - at) : wave - (h + at - 1);
        if (j < 0 || j >= k) continue;
        for (const int i : at_depth[t][at]) {
          const NodeId member = job.group[i], parent = job.group[job.parent[i]];
          const NodeId from = up ? member : parent, to = up ? parent : member;
          const Op op = up ? Op::Reduce : Op::Copy;
          const std::vector<LinkId>& route = (up ? trees[t].up : trees[t].down)[i];
          route.empty() ? b.send(job.chunks[j], from, to, op)
                        : b.send_on(job.chunks[j], from, to, route, op);
        }
      }
    }
  b.set_channel(0);
}

// Whether `edges` join all `members`.
bool spans(int members, const std::vector<Edge>& edges) {
  Graph g(members);
  for (const Edge& e : edges) boost::add_edge(e.u, e.v, g);
  std::vector<int> component(static_cast<size_t>(members));
  return boost::connected_components(g, component.data()) == 1;
}

}  // namespace

// Blink's trees for some ranks on a topology: everything blink() makes before it deals out the
// chunks (BaselineMemo keeps it).
struct BlinkPacking {
  struct Tree {
    std::vector<int> parent;                    // per member, rooted at the tree's center
    std::vector<std::vector<LinkId>> up, down;  // per member, its routes (BlinkTree)
  };
  std::vector<Tree> trees;     // none: the edges do not reach every rank
  std::vector<double> weight;  // per tree, proportional to its rate
};

namespace {

std::shared_ptr<const BlinkPacking> pack(Builder& b, const Topology& t, const Collective& c) {
  const int p = c.num_ranks();
  std::vector<int> index(t.num_nodes(), -1);
  for (int i = 0; i < p; ++i) index[c.ranks[i]] = i;
  // Resources: per ordered pair of ranks, the links between them together; per link of a route
  // through switches (or router NPUs), that link.
  std::vector<double> capacity;
  std::map<std::pair<int, int>, int> direct;
  for (int i = 0; i < p; ++i)
    for (LinkId l : t.out_links(c.ranks[i]))
      if (const int j = index[t.link(l).dst]; j >= 0 && j != i) {
        const auto [at, fresh] = direct.try_emplace({i, j}, static_cast<int>(capacity.size()));
        if (fresh) capacity.push_back(0);
        capacity[at->second] += static_cast<double>(t.link(l).bandwidth);
      }
  std::vector<Edge> edges;
  for (const auto& [pair, there] : direct)
    if (pair.first < pair.second)
      if (auto back = direct.find({pair.second, pair.first}); back != direct.end())
        edges.push_back({pair.first, pair.second, {there}, {back->second}, {}, {}});
  // Where those links leave a rank out, pairs with no link between them, joined through switches
  // or router NPUs, up to kBlinkRoutedRanks ranks (every pair is a candidate edge). (Where NPU
  // links span the ranks, routes through switches only add hops: on a torus of router NPUs the
  // trees over them were slower.)
  const bool passing =
      std::any_of(t.nodes().begin(), t.nodes().end(), [](const topo::Node& v) { return v.router; });
  if ((t.num_switches() > 0 || passing) && p <= kBlinkRoutedRanks && !spans(p, edges)) {
    std::map<LinkId, int> of_link;
    auto resources = [&](const std::vector<LinkId>& route) {
      std::vector<int> out;
      for (LinkId l : route) {
        const auto [at, fresh] = of_link.try_emplace(l, static_cast<int>(capacity.size()));
        if (fresh) capacity.push_back(static_cast<double>(t.link(l).bandwidth));
        out.push_back(at->second);
      }
      return out;
    };
    for (int i = 0; i < p; ++i)
      for (int j = i + 1; j < p; ++j) {
        if (direct.contains({i, j}) || direct.contains({j, i})) continue;
        const auto* there = b.hop_routes(c.ranks[i], c.ranks[j]);
        const auto* back = b.hop_routes(c.ranks[j], c.ranks[i]);
        if (!there || !back) continue;
        const std::vector<LinkId> up(there->route(0).begin(), there->route(0).end()),
            down(back->route(0).begin(), back->route(0).end());
        edges.push_back({i, j, resources(up), resources(down), up, down});
      }
  }
  TreePacker packer(p, std::move(edges), std::move(capacity));
  const std::vector<std::vector<int>> kept = packer.spread(static_cast<int>(kBlinkTrees));
  auto packed = std::make_shared<BlinkPacking>();
  if (kept.empty()) return packed;
  packed->weight = packer.pack(kept);
  // Per pair of members, the edge between them.
  std::map<std::pair<int, int>, int> edge_of;
  for (size_t e = 0; e < packer.edges().size(); ++e)
    edge_of[{packer.edges()[e].u, packer.edges()[e].v}] = static_cast<int>(e);
  for (const std::vector<int>& edges_of_tree : kept) {
    BlinkPacking::Tree tree;
    tree.parent = rooted_at_center(p, packer.edges(), edges_of_tree);
    tree.up.resize(p);
    tree.down.resize(p);
    for (int m = 0; m < p; ++m) {
      const int q = tree.parent[m];
      if (q < 0) continue;
      const Edge& e = packer.edges()[edge_of.at({std::min(m, q), std::max(m, q)})];
      tree.up[m] = m == e.u ? e.up_route : e.down_route;    // m -> q
      tree.down[m] = m == e.u ? e.down_route : e.up_route;  // q -> m
    }
    packed->trees.push_back(std::move(tree));
  }
  return packed;
}

// The trees blink deals `c`'s chunks over (the memo's where `b` has one).
std::shared_ptr<const BlinkPacking> packing(Builder& b, const Topology& t, const Collective& c) {
  return b.memo() ? b.memo()->blink(t, c.ranks, [&] { return pack(b, t, c); }) : pack(b, t, c);
}

}  // namespace

void blink(Builder& b, const Topology& t, const Collective& c) {
  const std::shared_ptr<const BlinkPacking> packed = packing(b, t, c);
  if (packed->trees.empty())
    throw NotApplicable(fmt::format(
        "blink's trees join the {} ranks over links between them both ways (from NPU to NPU, or "
        "through switches up to {} ranks), and those do not reach every rank",
        c.num_ranks(), kBlinkRoutedRanks));
  // The chunks in proportion to the weights (largest remainders; ties to the earlier tree).
  const std::vector<ChunkId> chunks = all_chunks(c);
  const std::vector<int64_t> count =
      largest_remainders(static_cast<int64_t>(chunks.size()), packed->weight);
  std::vector<BlinkTree> trees;
  int64_t next = 0;
  for (size_t i = 0; i < packed->trees.size(); ++i) {
    if (count[i] == 0) continue;
    BlinkTree tree;
    tree.job.group = c.ranks;
    tree.job.parent = packed->trees[i].parent;
    tree.job.chunks.assign(chunks.begin() + next, chunks.begin() + next + count[i]);
    tree.job.channel = static_cast<int>(trees.size());
    tree.up = packed->trees[i].up;
    tree.down = packed->trees[i].down;
    next += count[i];
    trees.push_back(std::move(tree));
  }
  list_waves(b, trees);
}

}  // namespace tenet::synth::detail

namespace tenet::synth {

std::optional<Time> blink_load_floor(const topo::Topology& t, const Collective& c,
                                     Bytes chunk_bytes, BaselineMemo* memo) {
  if (c.kind != CollectiveKind::AllReduce || chunk_bytes < 1) return std::nullopt;
  // (The packing reads the ranks alone: a builder of one chunk per rank finds their routes, with
  // no table of every chunk's arrivals made for it.)
  Collective ranks = c;
  ranks.chunks_per_npu = 1;
  ranks.all_reduce_chunks = 0;
  detail::Builder b(t, ranks, chunk_bytes, LinkModel::Pipelined, "blink");
  b.set_memo(memo);
  std::shared_ptr<const detail::BlinkPacking> packed;
  try {
    packed = detail::packing(b, t, ranks);
  } catch (const NotApplicable&) {
    return std::nullopt;
  }
  if (packed->trees.empty()) return std::nullopt;
  const std::vector<int64_t> count =
      detail::largest_remainders(static_cast<int64_t>(c.num_chunks()), packed->weight);
  // Bytes per link of a route, and per ordered pair of members joined directly (their links
  // together: the builder takes them in turn).
  std::vector<double> on_link(t.num_links(), 0);
  std::map<std::pair<int, int>, double> on_pair;
  for (size_t i = 0; i < packed->trees.size(); ++i) {
    const double bytes = static_cast<double>(count[i]) * static_cast<double>(chunk_bytes);
    const detail::BlinkPacking::Tree& tree = packed->trees[i];
    for (size_t m = 0; m < tree.parent.size(); ++m) {
      const int q = tree.parent[m];
      if (q < 0) continue;
      for (const auto& [route, from, to] : {std::tuple(&tree.up[m], static_cast<int>(m), q),
                                            std::tuple(&tree.down[m], q, static_cast<int>(m))}) {
        if (route->empty()) on_pair[{from, to}] += bytes;
        for (LinkId l : *route) on_link[l] += bytes;
      }
    }
  }
  double most = 0;  // seconds
  for (LinkId l = 0; l < t.num_links(); ++l)
    if (on_link[l] > 0)
      most = std::max(most, on_link[l] / static_cast<double>(t.link(l).bandwidth));
  for (const auto& [pair, bytes] : on_pair) {
    double bandwidth = 0;
    for (LinkId l : t.out_links(c.ranks[pair.first]))
      if (t.link(l).dst == c.ranks[pair.second])
        bandwidth += static_cast<double>(t.link(l).bandwidth);
    if (bandwidth > 0) most = std::max(most, bytes / bandwidth);
  }
  return static_cast<Time>(std::min(most * static_cast<double>(kPicosPerSecond),
                                    static_cast<double>(std::numeric_limits<Time>::max() / 2)));
}

}  // namespace tenet::synth
