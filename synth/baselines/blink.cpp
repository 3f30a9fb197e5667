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
//     reduction goes child -> parent, the broadcast parent -> child); parallel links add up;
//   - kBlinkTrees trees, each a minimum spanning tree under lengths that grow exponentially with
//     the trees already on each direction (Blink's few heavy trees: each tree pipelines its chunks
//     through its height, so many light ones fill slowly), weighted by Garg and Koenemann's
//     packing over them (epsilon kBlinkEpsilon: within about 1 + 3 epsilon of the best weights);
//   - each tree is rooted at its center (least height) and carries a share of the chunks in
//     proportion to its weight (largest remainders); each tree has a channel of its own, so that
//     trees sharing a port queue independently, and the waves are listed oldest chunk first.
#include <fmt/format.h>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/kruskal_min_spanning_tree.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <utility>
#include <vector>

#include "synth/baselines/builder.hpp"
#include "synth/baselines/families.hpp"

namespace tenet::synth::detail {
namespace {

// Garg-Koenemann's epsilon: the weights are within about 1 + 3 epsilon of the best.
constexpr double kBlinkEpsilon = 0.1;
// How many trees carry the chunks (fewer where some are the same tree).
constexpr size_t kBlinkTrees = 32;
// The packing stops after this many steps at the latest (about a thousand on an 8x8 mesh).
constexpr int kBlinkIterations = 20000;
// How steeply a direction's length grows with the trees on it (per tree at the largest capacity).
constexpr double kBlinkGrowth = 1.0;

// A pair of ranks linked both ways: group indices u < v and each direction's capacity.
struct Edge {
  int u = 0, v = 0;
  double up = 0, down = 0;  // bytes/s u -> v and v -> u
};

using Graph = boost::adjacency_list<
    boost::vecS, boost::vecS, boost::undirectedS, boost::no_property,
    boost::property<boost::edge_weight_t, double, boost::property<boost::edge_index_t, int>>>;

// Spanning trees of the members (sets of edge indices) and their weights under each direction's
// capacity.
class TreePacker {
 public:
  TreePacker(int members, std::vector<Edge> edges) : edges_(std::move(edges)), g_(members) {
    for (size_t e = 0; e < edges_.size(); ++e)
      boost::add_edge(edges_[e].u, edges_[e].v, {0.0, static_cast<int>(e)}, g_);
  }

  // Garg-Koenemann's packing of the trees `among` (each a set of edges): per tree, its weight
  // (proportional to its rate).
  std::map<std::vector<int>, double> pack(const std::vector<std::vector<int>>& among) const {
    const double m = 2.0 * static_cast<double>(edges_.size());
    const double delta =
        (1 + kBlinkEpsilon) * std::pow((1 + kBlinkEpsilon) * m, -1 / kBlinkEpsilon);
    // Per edge, the length of each direction (times its capacity: delta at first).
    std::vector<double> up(edges_.size()), down(edges_.size());
    for (size_t e = 0; e < edges_.size(); ++e) {
      up[e] = delta / edges_[e].up;
      down[e] = delta / edges_[e].down;
    }
    double volume = m * delta;  // sum over directions of capacity x length
    std::map<std::vector<int>, double> weight;
    for (int it = 0; it < kBlinkIterations && volume < 1; ++it) {
      std::vector<int> tree = lightest_of(among, up, down);
      if (tree.empty()) return {};
      double rate = std::numeric_limits<double>::max();
      for (int e : tree) rate = std::min({rate, edges_[e].up, edges_[e].down});
      for (int e : tree) {
        const double grow_up = up[e] * kBlinkEpsilon * rate / edges_[e].up;
        const double grow_down = down[e] * kBlinkEpsilon * rate / edges_[e].down;
        volume += grow_up * edges_[e].up + grow_down * edges_[e].down;
        up[e] += grow_up;
        down[e] += grow_down;
      }
      weight[std::move(tree)] += rate;
    }
    return weight;
  }

  // `count` spanning trees chosen one at a time, each a minimum spanning tree under lengths that
  // grow exponentially with the trees already on each direction (per unit of its capacity):
  // Blink's few heavy trees. Empty where the edges do not span the members.
  std::vector<std::vector<int>> spread(int count) {
    double most = 0;
    for (const Edge& e : edges_) most = std::max({most, e.up, e.down});
    std::vector<double> load_up(edges_.size(), 0), load_down(edges_.size(), 0);
    std::vector<double> up(edges_.size()), down(edges_.size());
    std::vector<std::vector<int>> trees;
    for (int i = 0; i < count; ++i) {
      for (size_t e = 0; e < edges_.size(); ++e) {
        up[e] = std::exp(kBlinkGrowth * load_up[e] * most / edges_[e].up) / edges_[e].up;
        down[e] = std::exp(kBlinkGrowth * load_down[e] * most / edges_[e].down) / edges_[e].down;
      }
      std::vector<int> tree = minimum_tree(up, down);
      if (tree.empty()) return {};
      for (int e : tree) {
        load_up[e] += 1;
        load_down[e] += 1;
      }
      trees.push_back(std::move(tree));
    }
    std::sort(trees.begin(), trees.end());
    trees.erase(std::unique(trees.begin(), trees.end()), trees.end());
    return trees;
  }

  const std::vector<Edge>& edges() const { return edges_; }

 private:
  std::vector<int> minimum_tree(const std::vector<double>& up, const std::vector<double>& down) {
    for (auto [it, end] = boost::edges(g_); it != end; ++it) {
      const int e = boost::get(boost::edge_index, g_, *it);
      boost::put(boost::edge_weight, g_, *it, up[e] + down[e]);
    }
    chosen_.clear();
    boost::kruskal_minimum_spanning_tree(g_, std::back_inserter(chosen_));
    if (chosen_.size() + 1 != boost::num_vertices(g_)) return {};
    std::vector<int> tree;
    for (const auto& d : chosen_) tree.push_back(boost::get(boost::edge_index, g_, d));
    std::sort(tree.begin(), tree.end());
    return tree;
  }

  static std::vector<int> lightest_of(const std::vector<std::vector<int>>& trees,
                                      const std::vector<double>& up,
                                      const std::vector<double>& down) {
    const std::vector<int>* best = nullptr;
    double least = 0;
    for (const std::vector<int>& tree : trees) {
      double length = 0;
      for (int e : tree) length += up[e] + down[e];
      if (!best || length < least) {
        best = &tree;
        least = length;
      }
    }
    return best ? *best : std::vector<int>{};
  }

  std::vector<Edge> edges_;
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

// The trees' transfers in waves, oldest chunk first: in wave w, each tree of height h reduces its
// chunk j at depth d when w = j + h - d (the deepest first) and broadcasts chunk j to depth d when
// w = j + h + d - 1, so a link shared by a reduction and a broadcast serves the older chunk first
// (admission takes eligible transfers in list order) and neither phase falls behind the other.
void list_waves(Builder& b, const std::vector<TreeJob>& jobs) {
  std::vector<std::vector<int>> depth(jobs.size());
  std::vector<int> height(jobs.size(), 0);
  int last = 0;
  for (size_t t = 0; t < jobs.size(); ++t) {
    const int p = static_cast<int>(jobs[t].group.size());
    depth[t].assign(p, 0);
    for (int i = 0; i < p; ++i) {
      for (int at = i; jobs[t].parent[at] >= 0; at = jobs[t].parent[at]) ++depth[t][i];
      height[t] = std::max(height[t], depth[t][i]);
    }
    last = std::max(last, static_cast<int>(jobs[t].chunks.size()) + 2 * height[t]);
  }
  for (int wave = 0; wave < last; ++wave)
    for (size_t t = 0; t < jobs.size(); ++t) {
      const TreeJob& job = jobs[t];
      const int h = height[t], k = static_cast<int>(job.chunks.size());
      b.set_channel(job.channel);
      for (int d = 2 * h; d >= 1; --d) {  // reductions at depth d (d <= h), then broadcasts
        const bool up = d <= h;
        const int at = up ? d : 2 * h + 1 - d;  // the sender's depth (up) or the receiver's
        const int j = up ? wave - (h - at) : wave - (h + at - 1);
        if (j < 0 || j >= k) continue;
        for (size_t i = 0; i < job.group.size(); ++i)
          if (depth[t][i] == at)
            up ? b.send(job.chunks[j], job.group[i], job.group[job.parent[i]], Op::Reduce)
               : b.send(job.chunks[j], job.group[job.parent[i]], job.group[i], Op::Copy);
      }
    }
  b.set_channel(0);
}

}  // namespace

void blink(Builder& b, const Topology& t, const Collective& c) {
  const int p = c.num_ranks();
  std::vector<int> index(t.num_nodes(), -1);
  for (int i = 0; i < p; ++i) index[c.ranks[i]] = i;
  // Per ordered pair of ranks, the bandwidth of the links between them.
  std::map<std::pair<int, int>, double> capacity;
  for (int i = 0; i < p; ++i)
    for (LinkId l : t.out_links(c.ranks[i]))
      if (const int j = index[t.link(l).dst]; j >= 0 && j != i)
        capacity[{i, j}] += static_cast<double>(t.link(l).bandwidth);
  std::vector<Edge> edges;
  for (const auto& [pair, up] : capacity)
    if (pair.first < pair.second)
      if (auto back = capacity.find({pair.second, pair.first}); back != capacity.end())
        edges.push_back({pair.first, pair.second, up, back->second});
  TreePacker packer(p, std::move(edges));
  const std::vector<std::vector<int>> kept = packer.spread(static_cast<int>(kBlinkTrees));
  if (kept.empty())
    throw NotApplicable(fmt::format(
        "blink's trees join the {} ranks over links from NPU to NPU both ways, and those links do "
        "not reach every rank",
        p));
  std::map<std::vector<int>, double> weight = packer.pack(kept);
  // The chunks in proportion to the weights (largest remainders; ties to the heavier tree).
  const std::vector<ChunkId> chunks = all_chunks(c);
  const auto n = static_cast<int64_t>(chunks.size());
  double total = 0;
  for (const std::vector<int>& tree : kept) total += weight[tree];
  std::vector<int64_t> count(kept.size());
  std::vector<std::pair<double, size_t>> remainder;
  int64_t dealt = 0;
  for (size_t i = 0; i < kept.size(); ++i) {
    const double share = static_cast<double>(n) * weight[kept[i]] / total;
    count[i] = static_cast<int64_t>(std::floor(share));
    dealt += count[i];
    remainder.emplace_back(share - std::floor(share), i);
  }
  std::stable_sort(remainder.begin(), remainder.end(),
                   [](const auto& x, const auto& y) { return x.first > y.first; });
  for (size_t r = 0; dealt < n; ++r, ++dealt) ++count[remainder[r % remainder.size()].second];
  std::vector<TreeJob> jobs;
  int64_t next = 0;
  for (size_t i = 0; i < kept.size(); ++i) {
    if (count[i] == 0) continue;
    TreeJob job{
        c.ranks, rooted_at_center(p, packer.edges(), kept[i]), {}, static_cast<int>(jobs.size())};
    job.chunks.assign(chunks.begin() + next, chunks.begin() + next + count[i]);
    next += count[i];
    jobs.push_back(std::move(job));
  }
  list_waves(b, jobs);
}

}  // namespace tenet::synth::detail
