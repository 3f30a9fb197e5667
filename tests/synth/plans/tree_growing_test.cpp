// Growing the packed trees (synth/plans/tree_packing.cpp, build_trees): a test that a flow of
// paths of two hops, a cut that left a test short before, or Dinic's algorithm on arrays answers
// without LEMON's max-flow gives the max-flow's answer, so the trees are the same as where every
// test is a max-flow.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "synth/plans/growth_tests.hpp"
#include "synth/plans/tree_packing.hpp"
#include "tests/synth/test_support.hpp"
#include "tests/topo/test_util.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"

namespace tenet::synth {
namespace {

// Both packings of `t`, expected the same tree for tree (`what` names the case).
void expect_same_trees(const topo::Topology& t, const PackingOptions& options,
                       const std::string& what) {
  PackingOptions flows = options;
  flows.answer_without_flows = false;
  PackingOptions shortcuts = options;
  shortcuts.answer_without_flows = true;
  const std::optional<TreePacking> a = pack_spanning_trees(t, flows),
                                   b = pack_spanning_trees(t, shortcuts);
  ASSERT_EQ(a.has_value(), b.has_value()) << what;
  if (!a) return;
  EXPECT_EQ(a->k, b->k) << what;
  EXPECT_EQ(a->congestion, b->congestion) << what;
  // (Each test is charged as a max-flow either way: the budget runs out at the same place.)
  EXPECT_EQ(a->max_flows, b->max_flows) << what;
  ASSERT_EQ(a->trees.size(), b->trees.size()) << what;
  for (size_t i = 0; i < a->trees.size(); ++i) {
    EXPECT_EQ(a->trees[i].root, b->trees[i].root) << what << ", tree " << i;
    EXPECT_EQ(a->trees[i].copies, b->trees[i].copies) << what << ", tree " << i;
    EXPECT_EQ(a->trees[i].parent, b->trees[i].parent) << what << ", tree " << i;
    EXPECT_EQ(a->trees[i].routes, b->trees[i].routes) << what << ", tree " << i;
  }
}

TEST(TreeGrowing, AnswersWithoutFlowsAreTheFlowsAnswers) {
  std::mt19937_64 rng(58);
  for (int i = 0; i < 150; ++i)
    expect_same_trees(testing::random_topology(rng, 10), {}, fmt::format("random topology {}", i));
  // Fabrics whose packings are many trees (each test's graph the largest): switched servers with
  // a NIC at half speed (7 trees per root), meshes and leaf-spines, capped as the pipelines' are
  // (pack_pipelined_trees).
  auto capped = [](const topo::Topology& t) {
    PackingOptions o;
    o.max_trees = kMostTreesPerRoot * t.num_npus();
    return o;
  };
  const topo::Topology cluster16 = topo::load(topo::testing::examples_dir() + "/cluster16.yaml");
  expect_same_trees(cluster16, capped(cluster16), "cluster16.yaml");
  for (const char* spec : {"hetmesh2d:4x4", "leafspine:4x4", "nvcluster:2x8,net=fattree",
                           "dragonfly:3x3x2", "mesh2d:4x4"}) {
    const topo::Topology t = topo::generate(spec);
    expect_same_trees(t, capped(t), spec);
  }
}

// build_trees' list as GrowthTests reads it.
struct GrowingTree {
  std::vector<char> in;
  std::vector<int> bfs;
  int copies = 0;
};

// Against the test's max-flow (ForestColl's formulation: a source feeding x without bound and each
// other active tree's source its copies, a tree's source reaching its every NPU without bound), on
// random graphs and trees: flow_carries says a test carries its target exactly where the max-flow
// does; paths_carry only there, and in most of those cases; both leave the capacities as they
// were.
TEST(TreeGrowing, PathsOnArraysCarryWhatTheMaxFlowCarries) {
  std::mt19937_64 rng(57);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int carried = 0, by_shortest = 0, rounds = 0;
  for (int round = 0; round < 6000; ++round) {
    const int n = uniform(3, 9);
    FlowGraph npus(n);
    const int density = uniform(1, 3);  // a quarter of the pairs joined, half or three quarters
    for (int a = 0; a < n; ++a)
      for (int b = 0; b < n; ++b)
        if (a != b && uniform(0, 3) < density) npus.set_capacity(a, b, uniform(1, 4));
    std::vector<GrowingTree> trees(static_cast<size_t>(uniform(1, 6)));
    std::vector<char> active(trees.size());
    for (size_t j = 0; j < trees.size(); ++j) {
      GrowingTree& tree = trees[j];
      tree.in.assign(static_cast<size_t>(n), 0);
      for (int v = 0; v < n; ++v)
        if (v == uniform(0, n - 1) || uniform(0, 3) == 0) tree.in[v] = 1;
      if (std::find(tree.in.begin(), tree.in.end(), 1) == tree.in.end()) tree.in[0] = 1;
      for (int v = 0; v < n; ++v)
        if (tree.in[v]) tree.bfs.push_back(v);
      std::shuffle(tree.bfs.begin(), tree.bfs.end(), rng);
      tree.copies = uniform(1, 3);
      active[j] = uniform(0, 4) > 0;
    }
    const size_t id = static_cast<size_t>(uniform(0, static_cast<int>(trees.size()) - 1));
    active[id] = 1;
    std::vector<int> outside;
    for (int v = 0; v < n; ++v)
      if (!trees[id].in[v]) outside.push_back(v);
    if (outside.empty()) continue;
    const int x =
        trees[id].bfs[static_cast<size_t>(uniform(0, static_cast<int>(trees[id].bfs.size()) - 1))];
    const int y = outside[static_cast<size_t>(uniform(0, static_cast<int>(outside.size()) - 1))];
    FlowGraph::Cap others = 0;
    for (size_t j = 0; j < trees.size(); ++j)
      if (j != id && active[j]) others += trees[j].copies;
    const FlowGraph::Cap target = others + uniform(0, 4);
    // The test's graph: the NPUs' arcs, then `from` (feeding x and the hub), the hub and a source
    // per tree.
    FlowGraph test(npus);
    const int from = test.add_node(), hub = test.add_node();
    test.set_capacity(from, x, FlowGraph::kInfinite);
    test.set_capacity(from, hub, FlowGraph::kInfinite);
    for (size_t j = 0; j < trees.size(); ++j) {
      if (j == id || !active[j]) continue;
      const int source = test.add_node();
      test.set_capacity(hub, source, trees[j].copies);
      for (int v : trees[j].bfs) test.set_capacity(source, v, FlowGraph::kInfinite);
    }
    const FlowGraph::Cap max_flow = test.max_flow(from, y, target);
    detail::GrowthTests growth(npus, n);
    const bool shortest = growth.paths_carry(trees, active, id, x, y, target);
    const bool says = growth.flow_carries(trees, active, id, x, y, target);
    const std::string what = fmt::format("round {}: {} NPUs, tree {} of {}, {} -> {}, target {}",
                                         round, n, id, trees.size(), x, y, target);
    EXPECT_EQ(says, max_flow >= target) << what << ", max-flow " << max_flow;
    if (shortest) {
      EXPECT_GE(max_flow, target) << what << ", shortest paths";
    }
    // As it was: the same answers again, and paths of two hops carry what they did on the graph.
    EXPECT_EQ(growth.flow_carries(trees, active, id, x, y, target), says) << what;
    EXPECT_EQ(growth.paths_carry(trees, active, id, x, y, target), shortest) << what;
    for (FlowGraph::Cap asked = 0; asked <= target; ++asked)
      EXPECT_EQ(growth.two_hops_carry(trees, active, id, x, y, asked),
                detail::GrowthTests(npus, n).two_hops_carry(trees, active, id, x, y, asked))
          << what << ", two hops carrying " << asked;
    carried += max_flow >= target;
    by_shortest += shortest;
    ++rounds;
  }
  // (Both answers, many times each.)
  EXPECT_GT(carried, 1000);
  EXPECT_GT(rounds - carried, 300);
  EXPECT_GT(by_shortest, carried * 9 / 10);
}

}  // namespace
}  // namespace tenet::synth
