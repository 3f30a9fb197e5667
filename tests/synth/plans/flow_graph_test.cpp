#include "synth/plans/flow_graph.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace tenet::synth {
namespace {

using Cap = FlowGraph::Cap;

// A random digraph of `nodes` nodes, arcs of capacity 1..9 or unbounded.
FlowGraph random_graph(std::mt19937& rng, int nodes) {
  FlowGraph f(nodes);
  std::uniform_int_distribution<int> node(0, nodes - 1), cap(1, 10);
  for (int i = 0; i < 4 * nodes; ++i) {
    const int u = node(rng), v = node(rng);
    if (u == v) continue;
    const int c = cap(rng);
    f.set_capacity(u, v, c == 10 ? FlowGraph::kInfinite : c);
  }
  return f;
}

// The limited max-flow is min(max-flow, limit), and leaves the graph as it was: the tree
// packing asks it instead of the whole max-flow wherever it compares a flow with a need.
TEST(FlowGraph, ALimitedFlowIsTheLeastOfTheFlowAndTheLimitAndLeavesTheGraphAsItWas) {
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    const int nodes = 2 + static_cast<int>(rng() % 12);
    FlowGraph f = random_graph(rng, nodes);
    std::uniform_int_distribution<int> node(0, nodes - 1);
    for (int q = 0; q < 5; ++q) {
      const int s = node(rng), t = node(rng);
      if (s == t) continue;
      const Cap whole = f.max_flow(s, t);
      for (const Cap limit : {Cap{0}, Cap{1}, whole / 2, whole, whole + 1, FlowGraph::kInfinite}) {
        const int64_t arcs = f.num_arcs();
        EXPECT_EQ(f.max_flow(s, t, limit), std::min(whole, std::max<Cap>(limit, 0)))
            << "round " << round << " s " << s << " t " << t << " limit " << limit;
        EXPECT_EQ(f.num_arcs(), arcs);
        EXPECT_EQ(f.num_nodes(), nodes);
        EXPECT_EQ(f.max_flow(s, t), whole);
      }
    }
    // Nodes and arcs added after a limited flow take part in the next ones.
    const int extra = f.add_node();
    f.set_capacity(0, extra, 3);
    f.set_capacity(extra, 1, 3);
    const Cap now = f.max_flow(0, 1);
    EXPECT_EQ(f.max_flow(0, 1, now + 1), now);
    EXPECT_GE(f.max_flow(0, 1), 3);
  }
}

// The graph keeps one Preflow between runs while its nodes stand: after any edits (arcs set,
// changed and removed, nodes isolated and added, limited flows between), every max-flow is what a
// fresh graph of the same arcs computes.
TEST(FlowGraph, AFlowAfterEditsIsAFreshGraphs) {
  std::mt19937 rng(11);
  for (int round = 0; round < 200; ++round) {
    const int nodes = 2 + static_cast<int>(rng() % 12);
    FlowGraph f = random_graph(rng, nodes);
    for (int step = 0; step < 30; ++step) {
      std::uniform_int_distribution<int> node(0, f.num_nodes() - 1);
      const int u = node(rng), v = node(rng);
      switch (rng() % 6) {
        case 0:
          f.add_node();
          break;
        case 1:
          f.isolate(u);
          break;
        case 2:
          f.max_flow(u, v == u ? (u + 1) % f.num_nodes() : v, 1 + rng() % 20);
          break;
        default:
          if (u != v) f.set_capacity(u, v, static_cast<Cap>(rng() % 8));  // 0 removes it
      }
      const int s = node(rng), t = node(rng);
      if (s == t) continue;
      FlowGraph fresh(f);
      EXPECT_EQ(f.max_flow(s, t), fresh.max_flow(s, t)) << "round " << round << " step " << step;
    }
  }
}

// max_flows_freeing gives, for each v in turn, what freeing v -> t and asking the limited max-flow
// gives (the splitting of switches' checks), stops where told, and leaves the graph as it was:
// v = s and v = t among them, arcs unbounded and missing, flows under and at the limit.
TEST(FlowGraph, FlowsWithAnArcFreedAreEachFreedArcsMaxFlow) {
  std::mt19937 rng(13);
  int under = 0;  // cases whose first flow was under the limit (the residual graph's paths)
  for (int round = 0; round < 300; ++round) {
    const int nodes = 2 + static_cast<int>(rng() % 14);
    FlowGraph f = random_graph(rng, nodes);
    std::uniform_int_distribution<int> node(0, nodes - 1);
    for (int q = 0; q < 4; ++q) {
      const int s = node(rng), t = node(rng);
      if (s == t) continue;
      const Cap whole = f.max_flow(s, t);
      if (whole >= FlowGraph::kInfinite) continue;  // (an unbounded arc is kInfinite, not more)
      std::vector<int> vs(static_cast<size_t>(nodes));
      for (int v = 0; v < nodes; ++v) vs[static_cast<size_t>(v)] = v;
      std::shuffle(vs.begin(), vs.end(), rng);
      for (const Cap limit : {Cap{0}, whole, whole + 1 + static_cast<Cap>(rng() % 12)}) {
        under += whole < limit;
        const int64_t arcs = f.num_arcs();
        const size_t stop = rng() % (vs.size() + 1);  // `each` says stop after this many
        std::vector<int> asked;
        f.max_flows_freeing(s, t, limit, vs, [&](int v, Cap flow) {
          asked.push_back(v);
          FlowGraph freed(f);
          freed.set_capacity(v, t, v == t ? 0 : FlowGraph::kInfinite);
          EXPECT_EQ(flow, freed.max_flow(s, t, limit))
              << "round " << round << " s " << s << " t " << t << " v " << v << " limit " << limit;
          return asked.size() < stop;
        });
        EXPECT_EQ(asked, std::vector<int>(vs.begin(), vs.begin() + std::max<size_t>(1, stop)));
        EXPECT_EQ(f.num_arcs(), arcs);
        EXPECT_EQ(f.max_flow(s, t), whole);
      }
    }
  }
  EXPECT_GT(under, 100);
}

// max_flows_from gives, for each v in turn, the limited max-flow from s to v (the packing's check
// that every NPU still receives its need), stops where told, and leaves the graph as it was; the
// nodes it answers without a flow (those the nodes known to receive the limit send it, in all)
// among them: arcs unbounded and missing, limits under, at and over the flows.
TEST(FlowGraph, FlowsFromOneSourceAreEachLimitedMaxFlow) {
  std::mt19937 rng(17);
  for (int round = 0; round < 300; ++round) {
    const int nodes = 2 + static_cast<int>(rng() % 14);
    FlowGraph f = random_graph(rng, nodes);
    std::uniform_int_distribution<int> node(0, nodes - 1);
    const int s = node(rng);
    std::vector<int> vs;
    for (int v = 0; v < nodes; ++v)
      if (v != s) vs.push_back(v);
    std::shuffle(vs.begin(), vs.end(), rng);
    for (const Cap limit : {Cap{0}, Cap{1}, Cap{1} + static_cast<Cap>(rng() % 12), Cap{20}}) {
      const int64_t arcs = f.num_arcs();
      const size_t stop = rng() % (vs.size() + 1);
      std::vector<int> asked;
      f.max_flows_from(s, limit, vs, [&](int v, Cap flow) {
        asked.push_back(v);
        FlowGraph fresh(f);
        EXPECT_EQ(flow, fresh.max_flow(s, v, limit))
            << "round " << round << " s " << s << " v " << v << " limit " << limit;
        return asked.size() < stop;
      });
      EXPECT_EQ(asked,
                std::vector<int>(vs.begin(),
                                 vs.begin() + std::min(vs.size(), std::max<size_t>(1, stop))));
      EXPECT_EQ(f.num_arcs(), arcs);
    }
  }
}

}  // namespace
}  // namespace tenet::synth
