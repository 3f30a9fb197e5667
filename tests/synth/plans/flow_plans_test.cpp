// The run's memo of flow plans (synth/plans/flow_plans.hpp): a topology and its reverse of the same
// shape share one packing, and what it gives the reverse is exactly what packing the reverse
// itself gives (the same trees over the same links), so sharing changes no result.
#include <gtest/gtest.h>

#include <string>

#include "synth/plans/flow_plans.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"

namespace tenet::synth {
namespace {

void expect_same(const TreePacking& a, const TreePacking& b, const std::string& where) {
  EXPECT_EQ(a.k, b.k) << where;
  EXPECT_EQ(a.congestion, b.congestion) << where;
  EXPECT_EQ(a.unit, b.unit) << where;
  ASSERT_EQ(a.trees.size(), b.trees.size()) << where;
  for (size_t i = 0; i < a.trees.size(); ++i) {
    const PackedTree &x = a.trees[i], &y = b.trees[i];
    EXPECT_EQ(x.root, y.root) << where << ", tree " << i;
    EXPECT_EQ(x.copies, y.copies) << where << ", tree " << i;
    EXPECT_EQ(x.parent, y.parent) << where << ", tree " << i;
    EXPECT_EQ(x.routes, y.routes) << where << ", tree " << i;
    EXPECT_EQ(x.shares, y.shares) << where << ", tree " << i;
    EXPECT_EQ(x.lanes, y.lanes) << where << ", tree " << i;
  }
}

// Links both ways alike: mesh and torus, dgx1's doubled pairs (parallel links: the k-th of a pair
// stands for the k-th), switches (routes through them), and the preset with NVSwitches and NICs.
TEST(FlowPlans, ReverseOfTheSameShapeSharesThePackingExactly) {
  for (const char* spec : {"mesh2d:3x4", "torus2d:4x4", "dgx1", "leafspine:2x4,spines=2",
                           "nvcluster:2x4,net=fattree"}) {
    const topo::Topology t = topo::generate(spec);
    const topo::Topology r = topo::reversed(t);
    ASSERT_NE(t.fingerprint(), r.fingerprint()) << spec;
    detail::FlowPlans plans;
    const TreePacking* forward = plans.of(t);
    const TreePacking* shared = plans.of(r);
    ASSERT_NE(forward, nullptr) << spec;
    ASSERT_NE(shared, nullptr) << spec;
    const std::optional<TreePacking> own = pack_pipelined_trees(r);
    ASSERT_TRUE(own.has_value()) << spec;
    expect_same(*shared, *own, std::string(spec) + " reversed");
    EXPECT_EQ(plans.of(r), shared) << spec << ": asked again, the same plan";
  }
}

// Where the two directions differ (an asymmetric system), the reverse is packed on its own.
TEST(FlowPlans, ReverseOfAnotherShapeIsPackedOnItsOwn) {
  const topo::Topology t =
      topo::load(std::string(TENET_SOURCE_DIR) + "/examples/topologies/hetero-asymmetric.yaml");
  const topo::Topology r = topo::reversed(t);
  detail::FlowPlans plans;
  ASSERT_NE(plans.of(t), nullptr);
  const TreePacking* reverse = plans.of(r);
  const std::optional<TreePacking> own = pack_pipelined_trees(r);
  ASSERT_EQ(reverse != nullptr, own.has_value());
  if (own) expect_same(*reverse, *own, "hetero-asymmetric reversed");
}

}  // namespace
}  // namespace tenet::synth
