// Growing the packed trees (synth/plans/tree_packing.cpp, build_trees): a test that a flow of
// paths of two hops, or a cut that left a test short before, answers without its max-flow gives
// the max-flow's answer, so the trees are the same as where every test is a max-flow.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <string>
#include <vector>

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

}  // namespace
}  // namespace tenet::synth
