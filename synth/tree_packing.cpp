#include "synth/tree_packing.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <numeric>
#include <set>

#include "synth/flow_graph.hpp"

namespace tenet::synth {
namespace {

using Cap = FlowGraph::Cap;
constexpr Cap kInf = FlowGraph::kInfinite;

struct OutOfBudget {};  // or no plan: the caller falls back to the plain matcher

class Packer {
 public:
  Packer(const topo::Topology& t, const PackingOptions& o) : t_(t), o_(o), n_(t.num_npus()), nodes_(t.num_nodes()) {
    // Per ordered pair of nodes, the summed bandwidth of its links, in units of their gcd.
    std::map<std::pair<int, int>, Bandwidth> bw;
    for (LinkId l = 0; l < t.num_links(); ++l) {
      const topo::Link& k = t.link(l);
      bw[{k.src, k.dst}] += k.bandwidth;
      links_[{k.src, k.dst}].push_back(l);
    }
    Bandwidth g = 0;
    for (const auto& [uv, b] : bw) g = std::gcd(g, b);
    for (const auto& [uv, b] : bw) base_.emplace_back(uv, b / g);
    unit_ = g;
  }

  std::optional<TreePacking> run() {
    try {
      return pack();
    } catch (const OutOfBudget&) {
      if (std::getenv("TENET_DEBUG_PACK")) fprintf(stderr, "pack failed after %lld flows, stage %d\n", (long long)flows_, stage_);
      return std::nullopt;
    }
  }

 private:
  Cap flow(const FlowGraph& f, int s, int t) {
    if (++flows_ > o_.max_flow_budget) throw OutOfBudget{};
    return f.max_flow(s, t);
  }

  // Link capacities floor(U b) and the super source (node `nodes_`) feeding k to every NPU.
  FlowGraph graph(double u, int k) const {
    FlowGraph f(nodes_ + 1);
    for (const auto& [uv, b] : base_) f.set_capacity(uv.first, uv.second, static_cast<Cap>(std::floor(u * static_cast<double>(b) + 1e-9)));
    for (int v = 0; v < n_; ++v) f.set_capacity(nodes_, v, k);
    return f;
  }

  bool feasible(double u, int k) {
    const FlowGraph f = graph(u, k);
    for (int v = 0; v < n_; ++v)
      if (flow(f, nodes_, v) < static_cast<Cap>(n_) * k) return false;
    return true;
  }

  // The least U (within 1e-6 relative) for k trees per root.
  double least_congestion(int k) {
    double lo = 0, hi = 1e-12;
    // Start from the ingress bound: an NPU receives (N-1) k units over its in-links.
    Cap least_in = -1;
    for (int v = 0; v < n_; ++v) {
      Cap in = 0;
      for (const auto& [uv, b] : base_)
        if (uv.second == v) in += b;
      least_in = least_in < 0 ? in : std::min(least_in, in);
    }
    hi = static_cast<double>((n_ - 1) * k) / static_cast<double>(std::max<Cap>(1, least_in));
    while (!feasible(hi, k)) {
      lo = hi;
      hi *= 2;
    }
    for (int i = 0; i < 40 && hi - lo > 1e-7 * hi; ++i) {
      const double mid = (lo + hi) / 2;
      if (feasible(mid, k)) hi = mid;
      else lo = mid;
    }
    return hi;
  }

  std::optional<TreePacking> pack() {
    if (n_ < 2 || n_ > o_.max_npus) return std::nullopt;
    // 1. k and U.
    int k = 1;
    double u = least_congestion(1);
    for (int next = 2; next <= o_.max_k; next *= 2) {
      const double v = least_congestion(next);
      if (v / next >= u / k * (1 - 1e-3)) break;  // no longer worth more trees
      k = next;
      u = v;
    }
    stage_ = 1;
    FlowGraph f = graph(u, k);
    // 2. Split switches off.
    split_switches(f, k);
    for (int w = n_; w <= nodes_; ++w) f.isolate(w);  // switches and the super source
    stage_ = 2;
    // 3. Trees.
    TreePacking out;
    out.k = k;
    out.congestion = u;
    out.unit = unit_;
    build_trees(f, k, out);
    out.max_flows = flows_;
    return out;
  }

  // ForestColl's removeSwitchNodes: for each switch w, in-neighbour u and out-neighbour t, split
  // off as much of (u -> w, w -> t) into u -> t as keeps every NPU's connectivity from the source.
  void split_switches(FlowGraph& f, int k) {
    const int s = nodes_;
    const Cap need = static_cast<Cap>(n_) * k;
    // A switch already split (done) takes no arc again: what it could not split is lost capacity.
    std::vector<char> done(nodes_ + 1, 0);
    for (int w = nodes_ - 1; w >= n_; --w) {
      for (int u : f.predecessors(w)) {
        if (u == s || done[u]) continue;
        // Passes over the out-arcs until u -> w is split off entirely (a split elsewhere can make an
        // earlier t possible again) or a pass splits nothing.
        for (bool progress = true; progress && f.capacity(u, w) > 0;) {
        progress = false;
        // Back to u itself last: such a split only absorbs capacity no other pair can use.
        std::vector<int> outs = f.successors(w);
        std::stable_partition(outs.begin(), outs.end(), [&](int t) { return t != u; });
        // Spread u's capacity over its destinations a share at a time, so that the logical graph
        // is dense and the trees grown on it are shallow (a chunk crosses few hops).
        const Cap share = std::max<Cap>(1, (f.capacity(u, w) + static_cast<Cap>(outs.size()) - 1) /
                                               std::max<Cap>(1, static_cast<Cap>(outs.size()) - 1));
        for (int t : outs) {
          if (f.capacity(u, w) == 0) break;
          if (t == s || done[t] || f.capacity(w, t) == 0) continue;
          Cap m = std::min({f.capacity(u, w), f.capacity(w, t), t == u ? f.capacity(u, w) : share});
          // (a) u must still reach w: flow u -> w with u -> s, u -> t and every other NPU -> w free.
          const Cap ut = f.capacity(u, t);
          f.set_capacity(u, s, kInf);
          if (u != t) f.set_capacity(u, t, kInf);
          for (int v = 0; v < n_ && m > 0; ++v) {
            if (v == u || v == t) continue;
            const Cap vw = f.capacity(v, w);
            f.set_capacity(v, w, kInf);
            m = std::min(m, flow(f, u, w) - need);
            f.set_capacity(v, w, vw);
          }
          f.set_capacity(u, s, 0);
          // (b) w must still reach t: flow w -> t with w -> s and every other NPU -> t free.
          if (m > 0) {
            f.set_capacity(w, s, kInf);
            for (int v = 0; v < n_ && m > 0; ++v) {
              if (v == t) continue;
              if (v == u) {
                m = std::min(m, flow(f, w, t) - need);
                continue;
              }
              const Cap vt = f.capacity(v, t);
              f.set_capacity(v, t, kInf);
              m = std::min(m, flow(f, w, t) - need);
              f.set_capacity(v, t, vt);
            }
            f.set_capacity(w, s, 0);
          }
          if (u != t) f.set_capacity(u, t, ut);
          if (m <= 0) continue;
          progress = true;
          if (u != t) split_[{u, t}][w] += m;
          f.set_capacity(u, w, f.capacity(u, w) - m);
          f.set_capacity(w, t, f.capacity(w, t) - m);
          if (u != t) f.set_capacity(u, t, f.capacity(u, t) + m);
        }
        }
      }
      done[w] = 1;
      if (std::getenv("TENET_DEBUG_PACK")) {
        Cap in = 0, out = 0;
        for (int u : f.predecessors(w)) in += f.capacity(u, w);
        for (int t : f.successors(w)) out += f.capacity(w, t);
        if (in || out) {
          fprintf(stderr, "switch %d left in %lld out %lld (k %d):", w, (long long)in, (long long)out, k);
          for (int u : f.predecessors(w)) fprintf(stderr, " %d->w %lld", u, (long long)f.capacity(u, w));
          for (int t : f.successors(w)) fprintf(stderr, " w->%d %lld", t, (long long)f.capacity(w, t));
          fprintf(stderr, "\n");
        }
      }
    }
  }

  struct Tree {
    NodeId root;
    int copies;
    std::vector<std::pair<int, int>> edges;
    std::vector<char> in;
    int source;  // its node in the flow graph (arcs to every node of the tree)
  };

  // ForestColl's BranchingGenerator: grow each tree arc by arc (breadth first), giving an arc to as
  // many of the tree's copies as the others can still be completed with.
  void build_trees(FlowGraph& f, int k, TreePacking& out) {
    std::vector<Tree> trees;
    std::vector<int> queue;
    auto add_tree = [&](NodeId root, int copies, const std::vector<std::pair<int, int>>& edges, const std::vector<char>& in) {
      Tree tr{root, copies, edges, in, f.add_node()};
      for (int v = 0; v < n_; ++v)
        if (in[v]) f.set_capacity(tr.source, v, kInf);
      trees.push_back(std::move(tr));
      queue.push_back(static_cast<int>(trees.size()) - 1);
    };
    for (NodeId r = 0; r < n_; ++r) {
      std::vector<char> in(n_, 0);
      in[r] = 1;
      add_tree(r, k, {}, in);
    }
    std::vector<char> active(trees.size(), 1);
    for (size_t qi = 0; qi < queue.size(); ++qi) {
      const int id = queue[qi];
      std::vector<int> bfs;
      for (int v = 0; v < n_; ++v)
        if (trees[id].in[v]) bfs.push_back(v);
      for (size_t bi = 0; bi < bfs.size(); ++bi) {
        const int x = bfs[bi];
        for (int y : f.successors(x)) {
          if (y >= n_ || trees[id].in[y]) continue;
          // How many copies of this tree may use x -> y.
          Cap others = 0;
          for (size_t j = 0; j < trees.size(); ++j)
            if (static_cast<int>(j) != id && active[j]) {
              f.set_capacity(x, trees[j].source, trees[j].copies);
              others += trees[j].copies;
            }
          const Cap copies = std::min<Cap>({trees[id].copies, f.capacity(x, y), flow(f, x, y) - others});
          for (size_t j = 0; j < trees.size(); ++j)
            if (static_cast<int>(j) != id && active[j]) f.set_capacity(x, trees[j].source, 0);
          if (copies <= 0) continue;
          bfs.push_back(y);
          if (copies < trees[id].copies) {
            const Tree copy = trees[id];
            add_tree(copy.root, copy.copies - static_cast<int>(copies), copy.edges, copy.in);
            active.push_back(1);
            trees[id].copies = static_cast<int>(copies);
          }
          trees[id].edges.emplace_back(x, y);
          trees[id].in[y] = 1;
          f.set_capacity(trees[id].source, y, kInf);
          f.set_capacity(x, y, f.capacity(x, y) - copies);
        }
      }
      f.isolate(trees[id].source);
      active[id] = 0;
      // A tree that cannot span every NPU means the splitting left capacity stranded at a switch
      // (unbalanced in and out): no plan then.
      if (std::count(trees[id].in.begin(), trees[id].in.end(), 1) != n_) throw OutOfBudget{};
    }
    std::stable_sort(trees.begin(), trees.end(), [](const Tree& a, const Tree& b) { return a.root < b.root; });
    for (const Tree& tr : trees) {
      PackedTree p;
      p.root = tr.root;
      p.copies = tr.copies;
      p.parent.assign(n_, -1);
      p.routes.resize(n_);
      for (auto [x, y] : tr.edges) {
        p.parent[y] = x;
        p.routes[y] = paths(x, y);
        if (p.routes[y].empty()) throw OutOfBudget{};  // an arc whose every expansion loops: no plan
      }
      out.trees.push_back(std::move(p));
    }
  }

  // The physical routes a logical arc x -> y stands for: its own links, and through each switch it
  // was split off at, the routes to it and on from it.
  std::vector<std::vector<LinkId>> paths(int x, int y) {
    auto memo = path_memo_.find({x, y});
    if (memo != path_memo_.end()) return memo->second;
    path_memo_[{x, y}] = {};  // while expanding: a cycle back here finds no route
    std::vector<std::vector<LinkId>> out;
    if (auto it = links_.find({x, y}); it != links_.end())
      for (LinkId l : it->second) out.push_back({l});
    if (auto it = split_.find({x, y}); it != split_.end())
      for (const auto& [w, amount] : it->second) {
        const auto first = paths(x, w), second = paths(w, y);
        for (const auto& a : first)
          for (const auto& b : second) {
            if (out.size() >= 32) break;
            std::vector<LinkId> route = a;
            route.insert(route.end(), b.begin(), b.end());
            // A route is a path: no link twice.
            std::set<LinkId> seen(route.begin(), route.end());
            if (seen.size() == route.size()) out.push_back(std::move(route));
          }
      }
    path_memo_[{x, y}] = out;
    return out;
  }

  const topo::Topology& t_;
  const PackingOptions& o_;
  const int n_, nodes_;
  std::vector<std::pair<std::pair<int, int>, Cap>> base_;
  std::map<std::pair<int, int>, std::vector<LinkId>> links_;
  std::map<std::pair<int, int>, std::map<int, Cap>> split_;
  std::map<std::pair<int, int>, std::vector<std::vector<LinkId>>> path_memo_;
  int64_t flows_ = 0;
  int stage_ = 0;
  Bandwidth unit_ = 0;
};

}  // namespace

std::optional<TreePacking> pack_spanning_trees(const topo::Topology& t, const PackingOptions& options) {
  return Packer(t, options).run();
}

}  // namespace tenet::synth
