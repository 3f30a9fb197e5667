// Throughput-optimal spanning trees for All-Gather (and, reversed, Reduce-Scatter), after
// ForestColl (Zhao et al., arXiv 2402.06787): the synthesizer's flow plan.
//
// The All-Gather cut bound (topo/bounds.hpp) is reachable on any topology, switches included, by
// k out-trees per NPU whose load on every link fits its capacity at the optimal rate. This finds
// them with max-flow computations, in three steps:
//   1. the least congestion U for k trees per root: link capacities floor(U x bandwidth) (in units
//      of the bandwidths' greatest common divisor) admit them iff every NPU can receive N x k units
//      from a super source feeding k to each NPU (Edmonds' branching theorem; N max-flows a test).
//      The optimum U/k is the cut bound a/B itself (B in units), reached with k = B/g and U = a/g
//      for g = gcd(a, B), or with fewer trees; the fewest are searched, within 0.1 % of the
//      optimum when the exact k is huge; failing all that, k is doubled from 1 while U/k improves;
//   2. switches removed by splitting off pairs of arcs (u -> w, w -> t) into direct logical arcs
//      u -> t, as much as keeps every NPU's connectivity (the splitting-off theorem; two max-flow
//      tests per NPU), remembering which physical paths each logical arc stands for;
//   3. the trees built one arc at a time, each arc taking as many copies of the tree as a
//      max-flow test says the rest can still be completed with (a tree splits when only some of
//      its copies fit).
// The trees route the synthesizer's chunks; the link-chunk matcher still decides when each goes.
#pragma once

#include <optional>
#include <vector>

#include "synth/ir/algorithm.hpp"
#include "topo/topology.hpp"

namespace tenet::synth {

struct PackedTree {
  NodeId root = 0;
  int copies = 0;              // how many of the root's k tree units it is: in the fluid optimum it
                               // streams at copies x unit / U on every arc
  std::vector<NodeId> parent;  // per NPU, -1 at the root
  // Per NPU v other than the root: the physical routes from parent[v] to v the tree may use, and
  // the share of the arc's capacity each stands for (the splits that made it, summing to 1): a
  // tree's chunks take them in those proportions.
  std::vector<std::vector<std::vector<LinkId>>> routes;
  std::vector<std::vector<double>> shares;
  // Per NPU v other than the root: this tree's own part of each of those routes (summing to 1).
  // The trees that use an arc divide its routes' capacities among them, each on as few routes as
  // fit its copies (best fit, the most copies first): streamed at `lanes` x its rate, every route
  // carries its trees' streams at once within its capacity.
  std::vector<std::vector<double>> lanes;
};

struct TreePacking {
  int k = 0;                      // tree units per root
  double congestion = 0;          // U: the time is U / k x (bytes per root) / unit
  Bandwidth unit = 0;             // the bandwidth of one capacity unit (the links' gcd)
  std::vector<PackedTree> trees;  // grouped by root, in root order
  // How many max-flows it took, counting a check of splitting's answered at once by another as
  // the max-flow it stands for (the same count as computing each).
  int64_t max_flows = 0;
};

struct PackingOptions {
  int max_k = 16;          // trees per root tried one by one for the exact optimum, then doubled
  int max_exact_k = 1024;  // up to this many, exact or within `near` of the optimum;
  double near = 1e-3;      // beyond, the best of 1, 2, 4, ... max_k trees per root
  // Give up (nothing) beyond this many max-flow computations, or as soon as splitting the switches
  // off is projected to need more.
  int64_t max_flow_budget = 400'000;
  // Give up (nothing) when building the trees takes max-flows over more arcs and nodes than this
  // in all (each test's graph holds every growing tree's arcs to its nodes, so the work grows with
  // trees x NPUs squared), or as soon as it is projected to: every node a tree still lacks takes a
  // max-flow at least, over a graph about as large as it is then.
  int64_t max_tree_work = 300'000'000;
  int max_npus = 128;
  int max_trees = 0;  // give up (nothing) when building more distinct trees than this; 0: no cap
  // Growing the trees, answer a test without its max-flow where a flow of paths of two hops, or a
  // cut that left a test short before, gives the max-flow's answer (the same trees, faster);
  // false: every such test is a max-flow (tests compare the two).
  bool answer_without_flows = true;
  int64_t* spent = nullptr;  // where set: the max-flow computations it took, packed or not
};

// Trees spanning every NPU of `t`, k units per NPU, or nothing when the topology is too large for
// the budget.
std::optional<TreePacking> pack_spanning_trees(const topo::Topology& t,
                                               const PackingOptions& options = {});
// The spanning trees the flow plan's pipelines stream (All-Gather, and reversed Reduce-Scatter):
// pack_spanning_trees' optimum, unless it needs more than kMostTreesPerRoot distinct trees per
// root (its building stops there); then the packing of the fewest trees per root doubling k finds
// (1, 2, 4, ... up to max_k while U/k improves), a few percent above the optimum's rate. A stream's
// chunks fill its tree before it runs at its rate, and a budget of transfers shared by hundreds of
// trees leaves each too few chunks to amortize that fill. The measurements (two MI250 boxes, and
// the fabrics it leaves alone): docs/synthesis.md.
inline constexpr int kMostTreesPerRoot = 8;
std::optional<TreePacking> pack_pipelined_trees(const topo::Topology& t);

// The same from one root (Broadcast; Reduce on the reversed topology): k trees spanning every NPU,
// the most data per unit of time the root can get to every NPU (Edmonds' arborescence packing).
std::optional<TreePacking> pack_broadcast_trees(const topo::Topology& t, NodeId root,
                                                const PackingOptions& options = {});

// `packing` (of `t`) with its thin lanes dropped: each lane under half of its tree's arc, the
// thinnest first, moves to the tree's other routes of that arc, in proportion to their lanes, where
// every link they take has room for it at the plan's rates (a tree's copies x unit / U): no link
// is loaded past its bandwidth that was not before. Streamed a chunk at a time at the tree's rate
// times its lane, a lane of 5 % takes twenty of the tree's chunk times per chunk, and the subtree
// below waits for it.
TreePacking drop_thin_lanes(const topo::Topology& t, TreePacking packing);

}  // namespace tenet::synth
