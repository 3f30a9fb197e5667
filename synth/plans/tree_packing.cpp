#include "synth/plans/tree_packing.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <tuple>

#include "synth/plans/flow_graph.hpp"
#include "synth/plans/growth_tests.hpp"
#include "topo/bounds.hpp"

namespace tenet::synth {
namespace {

using Cap = FlowGraph::Cap;
constexpr Cap kInf = FlowGraph::kInfinite;

struct OutOfBudget {};   // or no plan: the caller falls back to the plain matcher
struct Stranded {};      // a tree could not span every NPU
struct TooManyTrees {};  // building past PackingOptions::max_trees distinct trees

class Packer {
 public:
  Packer(const topo::Topology& t, const PackingOptions& o, std::vector<NodeId> roots)
      : t_(t),
        o_(o),
        n_(t.num_npus()),
        nodes_(t.num_nodes()),
        npus_(static_cast<size_t>(n_)),
        roots_(std::move(roots)) {
    std::iota(npus_.begin(), npus_.end(), 0);
    // Per ordered pair of nodes, the summed bandwidth of its links, in units of their gcd.
    std::map<std::pair<int, int>, Bandwidth> bw;
    for (LinkId l = 0; l < t.num_links(); ++l) {
      const topo::Link& k = t.link(l);
      bw[{k.src, k.dst}] += k.bandwidth;
      links_[{k.src, k.dst}].push_back(l);
    }
    Bandwidth g = 0;
    for (const auto& [uv, b] : bw) g = std::gcd(g, b);
    for (const auto& [uv, b] : bw) {
      base_.emplace_back(uv, b / g);
      largest_ = std::max(largest_, b / g);
    }
    unit_ = g;
  }

  std::optional<TreePacking> run() {
    std::optional<TreePacking> out;
    try {
      out = pack();
    } catch (const OutOfBudget&) {
    } catch (const Stranded&) {
    } catch (const TooManyTrees&) {
      too_many_trees = true;
    }
    if (o_.spent) *o_.spent = flows_;
    return out;
  }
  bool too_many_trees = false;  // run() stopped at PackingOptions::max_trees

 private:
  // Units every NPU must be able to receive from the super source: k from each root.
  Cap need(int k) const { return static_cast<Cap>(roots_.size()) * k; }

  Cap flow(FlowGraph& f, int s, int t) {
    charge(1);
    return f.max_flow(s, t);
  }
  // Counts `checks` max-flows against the budget. Splitting's checks that one max-flow answers at
  // once count as the max-flows they stand for (split_switches), so the budget, and where the
  // packing gives up, are the same however a check is answered.
  void charge(int64_t checks) {
    if ((flows_ += checks) > o_.max_flow_budget) throw OutOfBudget{};
  }

  // Link capacities floor(U b) and the super source (node `nodes_`) feeding k to every NPU.
  FlowGraph graph(double u, int k) const {
    FlowGraph f(nodes_ + 1);
    for (const auto& [uv, b] : base_)
      f.set_capacity(uv.first, uv.second,
                     static_cast<Cap>(std::floor(u * static_cast<double>(b) + 1e-9)));
    for (NodeId r : roots_) f.set_capacity(nodes_, r, k);
    return f;
  }

  bool feasible(double u, int k) {
    FlowGraph f = graph(u, k);
    return every_npu_receives(f, need(k));
  }
  // Whether every NPU receives `need` from the source, NPU by NPU until one does not: a max-flow
  // each, charged as such, but those the NPUs known to receive it prove
  // (FlowGraph::max_flows_from).
  bool every_npu_receives(FlowGraph& f, Cap need) {
    bool ok = true;
    f.max_flows_from(nodes_, need, npus_, [&](int, Cap flow) {
      charge(1);
      return ok = flow >= need;
    });
    return ok;
  }

  // The optimum (ForestColl, section 5), or within PackingOptions::near of it. With the cut bound
  // a / B (B in units: a members behind B units of out-capacity; for one root, a = 1 and B its
  // connectivity), k = B / g and U = a / g for g = gcd(a, B) give whole-number capacities U x b
  // that admit k trees per root exactly at the bound. Fewer trees pipeline better, so first the
  // least k up to max_k for which U = k a / B still admits k trees (capacities rounded down), then
  // k = 2 max_k, 4 max_k, ... up to max_exact_k, exact or within `near`: when the bandwidths have
  // a tiny common divisor (GB/s next to GiB/s), B / g is huge, but rounding down costs a cut at
  // most one unit per arc, which a few hundred units per tree make negligible.
  std::optional<std::pair<int, double>> near_optimum() {
    Cap a = 1, b = 0;
    if (roots_.size() == 1) {
      b = connectivity();
    } else {
      const topo::CutBound cut = topo::allgather_cut_bound(t_);
      a = cut.members_inside;
      b = cut.out_bandwidth / unit_;
    }
    if (a <= 0 || b <= 0) return std::nullopt;
    const double rate = static_cast<double>(a) / static_cast<double>(b);
    for (int k = 1; k <= o_.max_k; ++k)
      if (feasible(rate * k, k)) return std::pair(k, rate * k);
    const Cap g = std::gcd(a, b);
    const bool exact_fits = static_cast<double>(a / g) * static_cast<double>(largest_) < 1e15;
    for (int k = 2 * o_.max_k; k <= o_.max_exact_k; k *= 2) {
      if (b / g <= k && exact_fits && feasible(static_cast<double>(a / g), static_cast<int>(b / g)))
        return std::pair(static_cast<int>(b / g), static_cast<double>(a / g));
      const double u = rate * k * (1 + o_.near);
      if (feasible(u, k)) return std::pair(k, u);
    }
    return std::nullopt;
  }

  // The least max-flow in units from the (single) root to any NPU.
  int connectivity() {
    FlowGraph f = graph(1, 0);
    f.set_capacity(nodes_, roots_.front(), kInf);
    Cap least = kInf;
    for (int v = 0; v < n_; ++v)
      if (v != roots_.front()) least = std::min(least, flow(f, nodes_, v));
    return static_cast<int>(std::min<Cap>(least, std::numeric_limits<int>::max()));
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
    hi = static_cast<double>(need(k) - k) / static_cast<double>(std::max<Cap>(1, least_in));
    if (hi <= 0) hi = static_cast<double>(k) / static_cast<double>(std::max<Cap>(1, least_in));
    while (!feasible(hi, k)) {
      lo = hi;
      hi *= 2;
    }
    for (int i = 0; i < 40 && hi - lo > 1e-7 * hi; ++i) {
      const double mid = (lo + hi) / 2;
      if (feasible(mid, k))
        hi = mid;
      else
        lo = mid;
    }
    return hi;
  }

  std::optional<TreePacking> pack() {
    if (n_ < 2 || n_ > o_.max_npus) return std::nullopt;
    // 1. k and U.
    int k = 1;
    double u = 0;
    if (auto exact = near_optimum()) {
      std::tie(k, u) = *exact;
    } else {
      u = least_congestion(1);
      for (int next = 2; next <= o_.max_k; next *= 2) {
        const double v = least_congestion(next);
        if (v / next >= u / k * (1 - 1e-3)) break;  // no longer worth more trees
        k = next;
        u = v;
      }
    }
    // Splitting at the exact optimum can leave capacity stranded at a switch (the splitting is
    // greedy, switch by switch) so that some tree cannot span. Then the splits are checked
    // directly (every NPU's max-flow) instead of by ForestColl's pairwise conditions, and then a
    // little more capacity is given: 0.1 %, 0.2 %, 0.4 %, 0.8 %. Failing that, twice the trees at
    // twice the congestion (the same time): capacities in finer units, which a switch whose
    // capacity in and out differ can balance where one or two units could not; up to max_exact_k.
    const double least_u = u;
    const int least_k = k;
    for (int attempt = 0;; ++attempt) {
      try {
        FlowGraph f = graph(u, k);
        u_ = u;
        split_.clear();
        path_memo_.clear();
        arc_total_.clear();
        // 2. Split switches off.
        split_switches(f, k, /*direct=*/attempt == 1);
        for (int w = n_; w <= nodes_; ++w) f.isolate(w);  // switches and the super source
        // 3. Trees.
        TreePacking out;
        out.k = k;
        out.congestion = u;
        out.unit = unit_;
        build_trees(f, k, out);
        out.max_flows = flows_;
        return out;
      } catch (const Stranded&) {
        if (attempt == 5) {
          if (2 * k > o_.max_exact_k) throw;
          k *= 2;
          u = least_u * (k / least_k);
          attempt = -1;
        } else if (attempt >= 1) {
          u *= 1 + 1e-3 * (1 << (attempt - 1));
        }
      }
    }
  }

  // Splitting-off is complete only at a switch whose capacity in equals its capacity out
  // (Bang-Jensen, Frank and Jackson). Capacity beyond that on the heavier side cannot all be used
  // at once, so arcs there give up what no NPU's connectivity needs, one at a time: with the
  // arc's capacity c, the max-flow to v is min(A_v + c, F_v) (A_v: the arc at zero), so
  // c = max over v of (need - A_v) keeps every NPU at `need`.
  void balance(FlowGraph& f, int w, Cap need) {
    Cap in = 0, out = 0;
    for (int u : f.predecessors(w)) in += f.capacity(u, w);
    for (int t : f.successors(w)) out += f.capacity(w, t);
    const bool heavy_in = in > out;
    Cap excess = heavy_in ? in - out : out - in;
    for (int x : heavy_in ? f.predecessors(w) : f.successors(w)) {
      if (excess == 0) break;
      const int from = heavy_in ? x : w, to = heavy_in ? w : x;
      const Cap c = f.capacity(from, to);
      if (c == 0) continue;
      f.set_capacity(from, to, 0);
      Cap least = 0;
      f.max_flows_from(nodes_, need, npus_, [&](int, Cap flow) {
        charge(1);
        least = std::max(least, need - flow);
        return true;
      });
      const Cap keep = std::max(least, c - excess);
      f.set_capacity(from, to, keep);
      excess -= c - keep;
    }
  }

  // The most of (u -> w, w -> t), at most `most`, that can be split off into u -> t with every
  // NPU still receiving `need` from the source: checked directly, a max-flow per NPU per step of a
  // binary search (the fallback when the pairwise conditions below leave capacity stranded).
  //
  // Two max-flows often answer at once. Splitting m lowers only the cuts X (the source inside, an
  // NPU outside) that hold u and t but not w (u -> w crosses them, w -> t and u -> t do not) or w
  // but neither u nor t (w -> t crosses), each by m; it lowers no other cut (u -> t crossing makes
  // up for what it lowers). So where every cut of the first kind is worth need + m before the
  // split (the max-flow into w from the source, u and t: surely_fits) and every one of the second
  // too (from the source and w into t and u), every NPU keeps `need`: such a check is answered
  // without a flow per NPU and charged as the max-flows it stands for (charge), so every split,
  // and where the budget ends splitting, are the same.
  Cap largest_direct_split(FlowGraph& f, int u, int w, int t, Cap most, Cap need) {
    const Cap sure = most > 0 ? surely_fits(f, u, w, t, most, need) : 0;
    auto fits = [&](Cap m) {
      if (m <= sure) {
        charge(n_);  // every NPU's check passes
        return true;
      }
      f.set_capacity(u, w, f.capacity(u, w) - m);
      f.set_capacity(w, t, f.capacity(w, t) - m);
      if (u != t) f.set_capacity(u, t, f.capacity(u, t) + m);
      const bool ok = every_npu_receives(f, need);
      f.set_capacity(u, w, f.capacity(u, w) + m);
      f.set_capacity(w, t, f.capacity(w, t) + m);
      if (u != t) f.set_capacity(u, t, f.capacity(u, t) - m);
      return ok;
    };
    if (most <= 0 || fits(most)) return std::max<Cap>(most, 0);
    Cap lo = 0, hi = most;  // fits(lo), not fits(hi)
    while (hi - lo > 1) {
      const Cap mid = lo + (hi - lo) / 2;
      (fits(mid) ? lo : hi) = mid;
    }
    return lo;
  }

  // The most that largest_direct_split can surely split off (at most `most`; above).
  Cap surely_fits(FlowGraph& f, int u, int w, int t, Cap most, Cap need) {
    const int s = nodes_;
    const Cap su = f.capacity(s, u), st = f.capacity(s, t);
    f.set_capacity(s, u, kInf);
    f.set_capacity(s, t, kInf);
    const Cap into_w = f.max_flow(s, w, need + most);  // from the source, u and t
    f.set_capacity(s, u, su);
    f.set_capacity(s, t, st);
    if (into_w <= need) return 0;
    const Cap sw = f.capacity(s, w), ut = f.capacity(u, t);
    f.set_capacity(s, w, kInf);
    if (u != t) f.set_capacity(u, t, kInf);
    const Cap into_tu = f.max_flow(s, t, need + most);  // from the source and w into t and u
    f.set_capacity(s, w, sw);
    if (u != t) f.set_capacity(u, t, ut);
    return std::max<Cap>(0, std::min(into_w, into_tu) - need);
  }

  // Check (a) of split_switches from its flow `to_w` without an arc freed and its least source
  // side `side` (FlowGraph::max_flow): where an NPU other than u and t is off that side, the
  // checks in turn, v = 0, 1, ... (but u and t), each min(m, its flow - need), come to what they
  // would: to_w - need after every one where that is more than 0, else 0 at the first such NPU
  // (an NPU on that side is inside every cut of value to_w: its flow is more). They are charged
  // as asked; `m` set. False (nothing charged) where no NPU is off it, or where to_w is below
  // `need` (splitting keeps every NPU at `need`, so a cut with an NPU outside is worth that much).
  bool answered_at_once(const std::vector<char>& side, int u, int t, Cap to_w, Cap need, Cap& m) {
    if (to_w < need) return false;
    int asked = 0;
    for (int v = 0; v < n_; ++v) {
      if (v == u || v == t) continue;
      ++asked;
      if (side[v] || to_w - need > 0) continue;
      charge(asked);  // the checks up to v, the first whose flow leaves nothing
      m = 0;
      return true;
    }
    bool outside = false;
    for (int v = 0; v < n_ && !outside; ++v) outside = v != u && v != t && !side[v];
    if (!outside) return false;
    charge(asked);
    m = std::min(m, to_w - need);
    return true;
  }

  // ForestColl's removeSwitchNodes: for each switch w, in-neighbour u and out-neighbour t, split
  // off as much of (u -> w, w -> t) into u -> t as keeps every NPU's connectivity from the source.
  void split_switches(FlowGraph& f, int k, bool direct) {
    const int s = nodes_;
    const Cap need = this->need(k);
    // A switch already split (done) takes no arc again: what it could not split is lost capacity.
    std::vector<char> done(nodes_ + 1, 0);
    // Splitting takes up to two max-flows per NPU for every (in-neighbour, switch, out-neighbour)
    // it tries, most of the budget on large switched fabrics. It gives up as soon as the budget is
    // out of reach: when the max-flows of the triples tried so far, spread over those left, would
    // overrun it (a 128-port switch: once its first pair of ports is seen to take hundreds of
    // max-flows, not after the whole budget is spent). Those left: the triples of the switches not
    // yet split, as their arcs stand (splits add arcs between the neighbours of a switch), and the
    // current switch's, each tried as many times over as the split switches' were (passes over
    // the out-arcs), less what the current one has tried.
    std::vector<std::pair<int, int>> degrees;  // in and out, per node, as the arcs stand
    auto triples_of = [&](int w) {
      return static_cast<double>(degrees[w].first) * static_cast<double>(degrees[w].second);
    };
    int64_t tried = 0, tried_before = 0;  // triples tried in all, and before the current switch
    double split = 0, current = 0, unsplit = 0;  // the triples of the switches split, etc.
    const int64_t began = flows_;
    auto hopeless = [&] {
      if (tried == 0) return false;
      const double passes =
          split > 0 ? std::max(1.0, static_cast<double>(tried_before) / split) : 1.0;
      const double left =
          unsplit * passes +
          std::max(0.0, current * passes - static_cast<double>(tried - tried_before));
      const double each = static_cast<double>(flows_ - began) / static_cast<double>(tried);
      return static_cast<double>(flows_) + each * left > static_cast<double>(o_.max_flow_budget);
    };
    std::vector<char> side;  // check (a)'s least source side, its memory reused
    // m: the most of the current (u -> w, w -> t) the checks below still let split off. Where a
    // check's one flow does not answer it, a check per NPU v, each the max-flow with v's arc into
    // the check's sink freed, in turn while m stays above 0 (FlowGraph::max_flows_freeing: the
    // same values as a max-flow each, charged as such).
    Cap m = 0;
    std::vector<int> others;
    const std::function<bool(int, Cap)> lowering = [&](int, Cap flow) {
      charge(1);
      m = std::min(m, flow - need);
      return m > 0;
    };
    for (int w = nodes_ - 1; w >= n_; --w) {
      balance(f, w, need);
      degrees = f.degrees();
      current = triples_of(w);
      unsplit = 0;
      for (int x = n_; x < w; ++x) unsplit += triples_of(x);
      for (int u : f.predecessors(w)) {
        if (u == s || done[u]) continue;
        // Passes over the out-arcs until u -> w is split off entirely (a split elsewhere can make
        // an earlier t possible again) or a pass splits nothing.
        for (bool progress = true; progress && f.capacity(u, w) > 0;) {
          progress = false;
          // Back to u itself last: such a split only absorbs capacity no other pair can use.
          std::vector<int> outs = f.successors(w);
          std::stable_partition(outs.begin(), outs.end(), [&](int t) { return t != u; });
          // Spread u's capacity over its destinations a share at a time, so that the logical graph
          // is dense and the trees grown on it are shallow (a chunk crosses few hops).
          const Cap share =
              std::max<Cap>(1, (f.capacity(u, w) + static_cast<Cap>(outs.size()) - 1) /
                                   std::max<Cap>(1, static_cast<Cap>(outs.size()) - 1));
          for (int t : outs) {
            if (hopeless()) throw OutOfBudget{};
            ++tried;
            if (f.capacity(u, w) == 0) break;
            if (t == s || done[t] || f.capacity(w, t) == 0) continue;
            m = std::min({f.capacity(u, w), f.capacity(w, t), t == u ? f.capacity(u, w) : share});
            if (direct) {
              m = largest_direct_split(f, u, w, t, m, need);
            } else {
              // (a) u must still reach w: flow u -> w with u -> s, u -> t and every other NPU -> w
              // free. Freeing an arc never lowers a max-flow: where the flow with none of the
              // others freed leaves m to spare, so does each, and that one max-flow answers them
              // all (charged as they were asked: charge).
              // Where it does not, an NPU v off the least source side of its minimum cuts has
              // its flow with v -> w freed the same, and every other NPU's is no less: where one
              // is, that one max-flow answers the checks at once, as they were asked
              // (answered_at_once).
              const Cap ut = f.capacity(u, t);
              f.set_capacity(u, s, kInf);
              if (u != t) f.set_capacity(u, t, kInf);
              const Cap to_w = f.max_flow(u, w, need + m, side);
              const bool reaches = to_w - need >= m;
              if (reaches) charge(n_ - (u < n_ ? 1 : 0) - (t < n_ && t != u ? 1 : 0));
              const bool answered = !reaches && answered_at_once(side, u, t, to_w, need, m);
              if (m > 0 && !reaches && !answered) {
                others.clear();
                for (int v = 0; v < n_; ++v)
                  if (v != u && v != t) others.push_back(v);
                f.max_flows_freeing(u, w, need + m, others, lowering);
              }
              f.set_capacity(u, s, 0);
              // (b) w must still reach t: flow w -> t with w -> s and every other NPU -> t free
              // (the same: the flow with none freed is u's own check).
              if (m > 0) {
                f.set_capacity(w, s, kInf);
                const bool reached = f.max_flow(w, t, need + m) - need >= m;
                if (reached) charge(n_ - (t < n_ ? 1 : 0));
                if (!reached) {
                  // (u -> t is free already: u's check is the flow with nothing more freed.)
                  others.clear();
                  for (int v = 0; v < n_; ++v)
                    if (v != t) others.push_back(v);
                  f.max_flows_freeing(w, t, need + m, others, lowering);
                }
                f.set_capacity(w, s, 0);
              }
              if (u != t) f.set_capacity(u, t, ut);
            }
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
      split += current;
      tried_before = tried;
    }
  }

  struct Tree;
  // Whether the trees' growing is projected past max_tree_work: every node a tree still lacks
  // takes a max-flow at least, over a graph about as large as now (its trees' sources gain arcs as
  // they grow, and lose them only as they complete).
  bool out_of_reach(int64_t size, const std::vector<Tree>& trees,
                    const std::vector<char>& active) const {
    int64_t lacking = 0;
    for (size_t id = 0; id < trees.size(); ++id)
      if (active[id]) lacking += n_ - static_cast<int64_t>(trees[id].bfs.size());
    return tree_work_ + lacking * size > o_.max_tree_work;
  }

  struct Tree {
    NodeId root;
    int copies;
    std::vector<std::pair<int, int>> edges;
    std::vector<char> in;
    int source;            // its node in the flow graph (arcs to every node of the tree)
    std::vector<int> bfs;  // its nodes, breadth first
    size_t next = 0;       // the first of them not yet expanded
  };

  // ForestColl's BranchingGenerator: grow the trees arc by arc, giving an arc to as many of a
  // tree's copies as the others can still be completed with. The trees grow together, a breadth-
  // first level each in turn, so that none is left only the long ways round (a chunk's time down
  // a pipeline grows with the tree's depth).
  //
  // A test of tree `id` on x -> y is a max-flow from x, where x may also send each other active
  // tree's copies to that tree's source (arcs to its every node). Those arcs from x are kept at a
  // hub instead (hub -> source, the tree's copies, while it grows), and the test's flow leaves a
  // node `from` that feeds both x and the hub without bound: the same flow, with two arcs set per
  // test instead of two per tree. Capped at what the test asks (the others' copies and the most
  // this tree may take), and answered without LEMON's flow where the direct arc, the trees that
  // hold y, paths of two hops into y or shortest paths already carry that much, where a cut that
  // left a test short before leaves this one short, or where Dinic's algorithm on arrays finds that
  // much: only a test left short runs LEMON's flow, for its least source side
  // (PackingOptions::answer_without_flows). The work counted
  // (max_tree_work) is the graph's size as that formulation has it: without the hub, `from` and
  // their arcs.
  void build_trees(FlowGraph& f, int k, TreePacking& out) {
    std::vector<Tree> trees;
    std::vector<char> active;
    const int hub = f.add_node(), from = f.add_node();
    growth_ = detail::GrowthTests(f, n_);
    f.set_capacity(from, hub, kInf);
    int64_t growing_trees = 0;  // the hub's arcs, one per active tree
    // The graph's nodes and arcs as ForestColl's formulation has them, between tests.
    auto size = [&] { return f.num_arcs() - growing_trees - 1 + f.num_nodes() - 2; };
    auto add_tree = [&](Tree tr) {
      if (o_.max_trees > 0 && trees.size() >= static_cast<size_t>(o_.max_trees))
        throw TooManyTrees{};
      tr.source = f.add_node();
      for (int v = 0; v < n_; ++v)
        if (tr.in[v]) f.set_capacity(tr.source, v, kInf);
      f.set_capacity(hub, tr.source, tr.copies);
      ++growing_trees;
      trees.push_back(std::move(tr));
      active.push_back(1);
    };
    for (NodeId r : roots_) {
      std::vector<char> in(n_, 0);
      in[r] = 1;
      add_tree(Tree{r, k, {}, std::move(in), -1, {r}, 0});
    }
    // How many copies of tree `id` may use x -> y: min(its copies, the arc's capacity, the
    // max-flow from x less the others' copies).
    auto fitting = [&](size_t id, int x, int y) {
      Cap others = 0, missing = 0;  // the other active trees' copies; those of trees without y
      for (size_t j = 0; j < trees.size(); ++j)
        if (j != id && active[j]) {
          others += trees[j].copies;
          if (!trees[j].in[y]) missing += trees[j].copies;
        }
      // (ForestColl's graph holds x's arcs to the others' sources during the test.)
      if ((tree_work_ += size() + (growing_trees - 1)) > o_.max_tree_work) throw OutOfBudget{};
      const Cap most = std::min<Cap>(trees[id].copies, f.capacity(x, y));
      charge(1);
      // The direct arc and, for each other tree that holds y, x -> its source -> y, are disjoint
      // paths: where they carry the others' copies and `most`, so does the max-flow; else those
      // and paths of two hops may, or shortest paths; else Dinic's algorithm on arrays answers
      // (GrowthTests).
      if (f.capacity(x, y) >= trees[id].copies + missing) return most;
      if (o_.answer_without_flows) {
        if (growth_.two_hops_carry(trees, active, id, x, y, others + most)) return most;
        if (growth_.tight_cut(trees, active, id, x, y, others)) return Cap{0};
        if (growth_.paths_carry(trees, active, id, x, y, others + most) ||
            growth_.flow_carries(trees, active, id, x, y, others + most))
          return most;
      }
      f.set_capacity(hub, trees[id].source, 0);
      f.set_capacity(from, x, kInf);
      // (Its least source side, where it leaves the test short, for the tests after: GrowthTests.)
      const Cap limit = others + most;
      const Cap into_y =
          o_.answer_without_flows ? f.max_flow(from, y, limit, side_) : f.max_flow(from, y, limit);
      const Cap copies = std::min(most, into_y - others);
      if (copies <= 0 && o_.answer_without_flows) growth_.remember_short(side_);
      f.set_capacity(from, x, 0);
      f.set_capacity(hub, trees[id].source, trees[id].copies);
      return copies;
    };
    for (bool growing = true; growing;) {
      growing = false;
      for (size_t id = 0; id < trees.size(); ++id) {
        if (!active[id]) continue;
        if (out_of_reach(size(), trees, active)) throw OutOfBudget{};
        const size_t level_end = trees[id].bfs.size();
        if (trees[id].next == level_end) {
          f.isolate(trees[id].source);  // (and its arc from the hub)
          --growing_trees;
          active[id] = 0;
          // A tree that cannot span every NPU means the splitting left capacity stranded at a
          // switch: no plan then.
          if (level_end != static_cast<size_t>(n_)) throw Stranded{};
          continue;
        }
        growing = true;
        for (; trees[id].next < level_end; ++trees[id].next) {
          const int x = trees[id].bfs[trees[id].next];
          for (int y : f.successors(x)) {
            if (y >= n_ || trees[id].in[y]) continue;
            const Cap copies = fitting(id, x, y);
            if (copies <= 0) continue;
            if (copies < trees[id].copies) {
              // The rest of the copies go on as a tree of their own, from here.
              Tree rest = trees[id];
              rest.copies -= static_cast<int>(copies);
              add_tree(std::move(rest));
              trees[id].copies = static_cast<int>(copies);
              f.set_capacity(hub, trees[id].source, trees[id].copies);
            }
            trees[id].edges.emplace_back(x, y);
            trees[id].in[y] = 1;
            trees[id].bfs.push_back(y);
            f.set_capacity(trees[id].source, y, kInf);
            f.set_capacity(x, y, f.capacity(x, y) - copies);
            growth_.used(x, y, copies);
          }
        }
      }
    }
    std::stable_sort(trees.begin(), trees.end(),
                     [](const Tree& a, const Tree& b) { return a.root < b.root; });
    for (const Tree& tr : trees) {
      PackedTree p;
      p.root = tr.root;
      p.copies = tr.copies;
      p.parent.assign(n_, -1);
      p.routes.resize(n_);
      p.shares.resize(n_);
      for (auto [x, y] : tr.edges) {
        p.parent[y] = x;
        for (auto& [route, share] : paths(x, y)) {
          p.routes[y].push_back(route);
          p.shares[y].push_back(share);
        }
        if (p.routes[y].empty()) throw Stranded{};  // an arc whose every expansion loops: no plan
      }
      out.trees.push_back(std::move(p));
    }
    assign_lanes(out.trees);
  }

  // PackedTree::lanes: per logical arc, its routes' capacities (shares of the arc's) dealt to the
  // trees on it, the most copies first, each to the route that fits it most tightly, or over the
  // roomiest routes in turn when none fits it whole.
  void assign_lanes(std::vector<PackedTree>& trees) {
    std::map<std::pair<int, int>, std::vector<std::pair<int, size_t>>> on_arc;  // (copies, tree)
    for (size_t i = 0; i < trees.size(); ++i) {
      trees[i].lanes.resize(n_);
      for (int v = 0; v < n_; ++v)
        if (trees[i].parent[v] >= 0)
          on_arc[{trees[i].parent[v], v}].emplace_back(trees[i].copies, i);
    }
    for (auto& [arc, users] : on_arc) {
      std::stable_sort(users.begin(), users.end(),
                       [](const auto& a, const auto& b) { return a.first > b.first; });
      const std::vector<double>& shares = trees[users.front().second].shares[arc.second];
      double used = 0;
      for (const auto& [copies, i] : users) used += copies;
      const double total = std::max(arc_total_[arc], used);
      std::vector<double> room(shares.size());
      for (size_t r = 0; r < shares.size(); ++r) room[r] = shares[r] * total;
      for (const auto& [copies, i] : users) {
        std::vector<double>& lane = trees[i].lanes[arc.second];
        lane.assign(shares.size(), 0.0);
        double need = copies;
        size_t fit = shares.size();
        for (size_t r = 0; r < shares.size(); ++r)
          if (room[r] >= need - 1e-9 && (fit == shares.size() || room[r] < room[fit])) fit = r;
        if (fit < shares.size()) {
          lane[fit] = need;
          room[fit] -= need;
        } else {
          std::vector<size_t> order(shares.size());
          std::iota(order.begin(), order.end(), 0);
          std::stable_sort(order.begin(), order.end(),
                           [&](size_t a, size_t b) { return room[a] > room[b]; });
          for (size_t r : order) {
            if (need <= 1e-9) break;
            const double take = std::min(need, std::max(0.0, room[r]));
            lane[r] += take;
            room[r] -= take;
            need -= take;
          }
          // Rounding left some over: in proportion to the shares.
          if (need > 1e-9)
            for (size_t r = 0; r < shares.size(); ++r) lane[r] += need * shares[r];
        }
        for (double& x : lane) x /= copies;
      }
    }
  }

  // The physical routes a logical arc x -> y stands for, with the share of its capacity each
  // carries: its own links (by bandwidth), and through each switch it was split off at (by the
  // amount split there), the routes to it and on from it (their shares multiplied).
  using Weighted = std::vector<std::pair<std::vector<LinkId>, double>>;
  Weighted paths(int x, int y) {
    auto memo = path_memo_.find({x, y});
    if (memo != path_memo_.end()) return memo->second;
    path_memo_[{x, y}] = {};  // while expanding: a cycle back here finds no route
    Weighted out;
    double total = 0;
    if (auto it = links_.find({x, y}); it != links_.end())
      for (LinkId l : it->second) {
        out.push_back(
            {{l}, u_ * static_cast<double>(t_.link(l).bandwidth) / static_cast<double>(unit_)});
        total += out.back().second;
      }
    if (auto it = split_.find({x, y}); it != split_.end())
      for (const auto& [w, amount] : it->second) {
        const Weighted first = paths(x, w), second = paths(w, y);
        for (const auto& [a, share_a] : first)
          for (const auto& [b, share_b] : second) {
            if (out.size() >= 32) break;
            std::vector<LinkId> route = a;
            route.insert(route.end(), b.begin(), b.end());
            // A route is a path: no link twice.
            std::set<LinkId> seen(route.begin(), route.end());
            if (seen.size() != route.size()) continue;
            out.push_back({std::move(route), static_cast<double>(amount) * share_a * share_b});
            total += out.back().second;
          }
      }
    for (auto& [route, share] : out)
      share = total > 0 ? share / total : 1.0 / static_cast<double>(out.size());
    path_memo_[{x, y}] = out;
    arc_total_[{x, y}] = total;
    return out;
  }

  const topo::Topology& t_;
  const PackingOptions& o_;
  const int n_, nodes_;
  std::vector<int> npus_;  // 0, 1, ..., n_ - 1
  std::vector<std::pair<std::pair<int, int>, Cap>> base_;
  std::map<std::pair<int, int>, std::vector<LinkId>> links_;
  std::map<std::pair<int, int>, std::map<int, Cap>> split_;
  std::map<std::pair<int, int>, Weighted> path_memo_;
  std::map<std::pair<int, int>, double> arc_total_;  // an arc's capacity in units, over its routes
  std::vector<NodeId> roots_;
  int64_t flows_ = 0;
  detail::GrowthTests growth_;  // build_trees' tests answered without a max-flow
  std::vector<char> side_;      // a test's least source side, its memory reused
  int64_t tree_work_ = 0;       // the arcs and nodes of build_trees' max-flows, summed
  double u_ = 0;                // the capacities' scale: a link of b units has capacity U b
  Bandwidth unit_ = 0;
  Bandwidth largest_ = 0;  // the largest capacity in units
};

}  // namespace

std::optional<TreePacking> pack_spanning_trees(const topo::Topology& t,
                                               const PackingOptions& options) {
  std::vector<NodeId> roots(t.num_npus());
  std::iota(roots.begin(), roots.end(), 0);
  return Packer(t, options, std::move(roots)).run();
}

std::optional<TreePacking> pack_pipelined_trees(const topo::Topology& t) {
  std::vector<NodeId> roots(t.num_npus());
  std::iota(roots.begin(), roots.end(), 0);
  PackingOptions capped;
  capped.max_trees = kMostTreesPerRoot * t.num_npus();
  Packer exact(t, capped, roots);
  if (std::optional<TreePacking> out = exact.run(); out || !exact.too_many_trees) return out;
  PackingOptions fewest;
  fewest.max_exact_k = fewest.max_k;  // no exact optimum past max_k trees per root
  return Packer(t, fewest, std::move(roots)).run();
}

std::optional<TreePacking> pack_broadcast_trees(const topo::Topology& t, NodeId root,
                                                const PackingOptions& options) {
  return Packer(t, options, {root}).run();
}

}  // namespace tenet::synth
