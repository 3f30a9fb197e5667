// The maximum-concurrent-flow bound (topo/flow_bound.hpp): the LP's value on topologies where it
// is known by hand, multiplicative weights against the LP, and bad input.
#include "topo/flow_bound.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "tests/topo/test_util.hpp"
#include "topo/error.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"

namespace tenet::topo {
namespace {

constexpr Bytes kPair = 1 << 20;  // bytes per ordered NPU pair
constexpr double kBw = 50e9;      // the generators' default link bandwidth

std::vector<Demand> all_to_all(const Topology& t) {
  std::vector<Demand> d;
  for (NodeId s = 0; s < t.num_npus(); ++s)
    for (NodeId x = 0; x < t.num_npus(); ++x)
      if (s != x) d.push_back({s, x, kPair});
  return d;
}

// The bound in ps for `pairs` pairs' bytes over `bandwidth`, as the bound rounds: down.
// "npu0 -> npu1": link l's ends by name.
std::string arrow(const Topology& t, LinkId l) {
  return t.node(t.link(l).src).name + " -> " + t.node(t.link(l).dst).name;
}

Time expected(double pairs, double bandwidth) {
  return static_cast<Time>(pairs * kPair / bandwidth * 1e12);
}

void expect_near_ps(Time got, Time want, const std::string& what) {
  EXPECT_NEAR(static_cast<double>(got), static_cast<double>(want), 2e-6 * static_cast<double>(want))
      << what;
  EXPECT_LE(got, want) << what << ": a bound rounds down";
}

TEST(FlowBound, MeshBisection) {
  // 4x4 mesh: the 8 NPUs of one half send 8 x 8 pairs' bytes across 4 links each way; the hop
  // counts (640 pair-hops over 48 links: 13.3 pairs' time) are less. The LP finds the cut.
  const Topology t = generate("mesh2d:4x4");
  const FlowBound b = concurrent_flow_bound(t, all_to_all(t));
  EXPECT_EQ(b.method, FlowMethod::Lp);
  expect_near_ps(b.time, expected(64, 4 * kBw), "mesh2d:4x4");
  // The same bound from its certificate.
  expect_near_ps(static_cast<Time>(flow_dual_bound(t, all_to_all(t), b.weights) * 1e12),
                 expected(64, 4 * kBw), "mesh2d:4x4 certificate");
}

TEST(FlowBound, HopCountsWhereEveryLinkIsAlike) {
  // Ring of 8 both ways: 8 x 16 pair-hops over 16 links; 4x4 torus: 16 x 32 over 64 links.
  for (const auto& [spec, pairs] : {std::pair{"ring:8", 8.0}, std::pair{"torus2d:4x4", 8.0}}) {
    const Topology t = generate(spec);
    const FlowBound b = concurrent_flow_bound(t, all_to_all(t));
    EXPECT_EQ(b.method, FlowMethod::Lp) << spec;
    expect_near_ps(b.time, expected(pairs, kBw), spec);
  }
}

TEST(FlowBound, SwitchAndFullyConnected) {
  // Every NPU sends 7 pairs' bytes over its own link (switch) or its 7 links (fc).
  for (const auto& [spec, bw] : {std::pair{"switch:8", kBw}, std::pair{"fc:8", 7 * kBw}}) {
    const Topology t = generate(spec);
    expect_near_ps(concurrent_flow_bound(t, all_to_all(t)).time, expected(7, bw), spec);
  }
}

TEST(FlowBound, TwoIslands) {
  // Two islands of 4 behind one 25 GB/s link each way: 16 pairs each way cross it.
  const Topology t = load(std::string(TENET_SOURCE_DIR) + "/examples/topologies/two-islands.yaml");
  expect_near_ps(concurrent_flow_bound(t, all_to_all(t)).time, expected(16, 25e9), "two-islands");
}

// What limits a flow bound, in the topology's names: the links with weight, by their share of the
// capacity term. Two islands: the one link joining them, one way or both (the duals may weigh
// either, both full in every fastest flow).
TEST(FlowBound, NamesTheLinksItWeighs) {
  const Topology t = load(std::string(TENET_SOURCE_DIR) + "/examples/topologies/two-islands.yaml");
  const FlowBound b = concurrent_flow_bound(t, all_to_all(t));
  ASSERT_EQ(b.method, FlowMethod::Lp);
  const std::string limit = describe_limit(t, b);
  EXPECT_EQ(
      limit.rfind("the links the LP's duals weigh (each one full in every fastest flow): ", 0), 0u)
      << limit;
  EXPECT_NE(limit.find("25 GB/s"), std::string::npos) << limit;
  // Every link the LP weighs is full in the LP's fastest flow: only the 25 GB/s bridge ones are.
  for (LinkId l = 0; l < t.num_links(); ++l) {
    if (b.weights[l] > 0) {
      EXPECT_EQ(t.link(l).bandwidth, 25'000'000'000) << t.describe_link(l);
    }
  }
  // Weights by hand: shares heaviest first, ties in link order, past kNamedFlowLinks counted.
  const Topology ring = generate("ring:4");
  ASSERT_EQ(ring.num_links(), 8);  // of 50 GB/s
  FlowBound w;
  w.method = FlowMethod::MultiplicativeWeights;
  w.weights = {1, 0, 4, 1, 1, 1, 1, 0};
  EXPECT_EQ(describe_limit(ring, w),
            fmt::format("the links the bound's weights weigh most: {} 50 GB/s (44 %), {} 50 GB/s "
                        "(11 %), {} 50 GB/s (11 %), {} 50 GB/s (11 %), and 2 more (22 %)",
                        arrow(ring, 2), arrow(ring, 0), arrow(ring, 3), arrow(ring, 4)));
  EXPECT_EQ(describe_limit(ring, FlowBound{}), "");
}

TEST(FlowBound, GatherIsOneCommodity) {
  // Gather into NPU 0 of a bidirectional ring of 8: 7 pairs' bytes into its two links.
  const Topology t = generate("ring:8");
  std::vector<Demand> d;
  for (NodeId s = 1; s < 8; ++s) d.push_back({s, 0, kPair});
  const FlowBound b = concurrent_flow_bound(t, d);
  EXPECT_EQ(b.method, FlowMethod::Lp);
  expect_near_ps(b.time, expected(7, 2 * kBw), "gather");
}

TEST(FlowBound, UnevenDemands) {
  // A 4-NPU switch where NPU 0 sends 3 MiB to NPU 1 and 1 MiB to each other NPU: its own link
  // carries 5 MiB; NPU 1 receives only 3 MiB.
  const Topology t = generate("switch:4");
  const std::vector<Demand> d{{0, 1, 3 * kPair}, {0, 2, kPair}, {0, 3, kPair}, {2, 3, kPair}};
  expect_near_ps(concurrent_flow_bound(t, d).time, expected(5, kBw), "uneven");
}

TEST(FlowBound, MultiplicativeWeightsStayBelowTheLpAndNearIt) {
  FlowBoundOptions mw;
  mw.max_lp_size = 0;
  for (const char* spec : {"mesh2d:4x4", "torus2d:4x4", "dgx1", "leafspine:4x8,spines=2",
                           "hetmesh2d:4x4", "nvcluster:2x8,net=rail", "dragonfly:2x4x2"}) {
    const Topology t = generate(spec);
    const std::vector<Demand> d = all_to_all(t);
    const FlowBound lp = concurrent_flow_bound(t, d);
    const FlowBound approx = concurrent_flow_bound(t, d, mw);
    ASSERT_EQ(lp.method, FlowMethod::Lp) << spec;
    EXPECT_EQ(approx.method, FlowMethod::MultiplicativeWeights) << spec;
    EXPECT_LE(approx.time, lp.time + lp.time / 1'000'000) << spec;  // both are lower bounds
    EXPECT_GE(approx.time, lp.time * 0.97) << spec;
    // The averaged routing is a flow: no faster than the LP's optimum.
    EXPECT_GE(approx.upper, lp.time) << spec;
  }
}

// The LP runs scaled and for a bounded number of simplex iterations; one stopped there leaves the
// bound to multiplicative weights, and says so. Either way the bound is the dual bound of the
// weights found, so it never exceeds the LP's optimum.
TEST(FlowBound, AnLpCutShortLeavesAValidBoundAndSaysSo) {
  const Topology t = generate("mesh2d:4x4");
  const FlowBound lp = concurrent_flow_bound(t, all_to_all(t));
  ASSERT_EQ(lp.lp, LpOutcome::Optimal);
  FlowBoundOptions few;
  few.max_lp_iterations = 5;
  const FlowBound cut = concurrent_flow_bound(t, all_to_all(t), few);
  EXPECT_EQ(cut.lp, LpOutcome::CutShort);
  EXPECT_EQ(cut.method, FlowMethod::MultiplicativeWeights);
  EXPECT_NE(describe(cut).find("; the LP was cut short"), std::string::npos) << describe(cut);
  EXPECT_GT(cut.time, 0);
  EXPECT_LE(cut.time, lp.time + lp.time / 1'000'000);
  // Past max_lp_size the LP is not tried at all.
  FlowBoundOptions no_lp;
  no_lp.max_lp_size = 0;
  EXPECT_EQ(concurrent_flow_bound(t, all_to_all(t), no_lp).lp, LpOutcome::NotTried);
}

// Bandwidths across 14 orders of magnitude (3 B/s to 900 TB/s) kept GLPK's simplex going without
// end: scaled and limited, the bound comes, positive and certified by its weights.
TEST(FlowBound, BandwidthsAcrossFourteenOrdersOfMagnitudeFinish) {
  const Topology t = testing::wide_bandwidth_topology();
  const FlowBound b = concurrent_flow_bound(t, all_to_all(t));
  EXPECT_NE(b.lp, LpOutcome::NotTried);
  EXPECT_GT(b.time, 0);
  const double certified = flow_dual_bound(t, all_to_all(t), b.weights) * 1e12;
  EXPECT_LE(static_cast<double>(b.time), certified);
  EXPECT_GE(static_cast<double>(b.time), certified * (1 - 1e-6));
}

TEST(FlowBound, NoDemandNoBound) {
  const Topology t = generate("ring:4");
  const FlowBound b = concurrent_flow_bound(t, std::vector<Demand>{{1, 1, kPair}, {2, 3, 0}});
  EXPECT_EQ(b.method, FlowMethod::None);
  EXPECT_EQ(b.time, 0);
}

TEST(FlowBound, BadInput) {
  const Topology t = generate("ring:4");
  try {
    concurrent_flow_bound(t, std::vector<Demand>{{0, 9, kPair}});
    FAIL() << "a demand to node 9 of 4";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node 9"), std::string::npos) << e.what();
  }
  EXPECT_THROW(flow_dual_bound(t, all_to_all(t), std::vector<double>(3, 1.0)), Error);
}

}  // namespace
}  // namespace tenet::topo
