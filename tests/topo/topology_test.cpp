#include "topo/topology.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <utility>
#include <vector>

#include "topo/analysis.hpp"
#include "topo/generators.hpp"

namespace tenet::topo {
namespace {

using ::testing::HasSubstr;

constexpr Bandwidth kBw = 50'000'000'000;
constexpr Time kLat = 500'000;

std::string build_error(const TopologyBuilder& b) {
  try {
    b.build();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Topology, NumbersNpusFirstThenSwitches) {
  TopologyBuilder b("t");
  NodeId s = b.add_switch("core");
  NodeId a = b.add_npu();
  NodeId c = b.add_npu("gpu1");
  b.add_bidirectional(a, s, kBw, kLat);
  b.add_bidirectional(c, s, kBw, kLat);
  Topology t = b.build();
  EXPECT_EQ(t.num_npus(), 2);
  EXPECT_EQ(t.num_switches(), 1);
  EXPECT_EQ(t.find_node("core"), 2);
  EXPECT_EQ(t.find_node("npu0"), 0);
  EXPECT_EQ(t.find_node("gpu1"), 1);
  EXPECT_EQ(t.find_node("nope"), -1);
  EXPECT_TRUE(t.is_switch(2));
  EXPECT_TRUE(t.passes_through(2));
  EXPECT_FALSE(t.passes_through(0));
  EXPECT_EQ(t.link(0).src, 0);
  EXPECT_EQ(t.link(0).dst, 2);
}

TEST(Topology, CsrListsEveryLinkOnceInIdOrder) {
  TopologyBuilder b;
  for (int i = 0; i < 4; ++i) b.add_npu();
  b.add_link(0, 1, kBw, kLat);
  b.add_link(2, 0, kBw, kLat);
  b.add_link(0, 1, kBw, kLat);  // a parallel link stays distinct
  b.add_link(1, 2, kBw, kLat);
  b.add_link(2, 3, kBw, kLat);
  b.add_link(3, 0, kBw, kLat);
  Topology t = b.build();
  EXPECT_THAT(std::vector<LinkId>(t.out_links(0).begin(), t.out_links(0).end()),
              ::testing::ElementsAre(0, 2));
  EXPECT_THAT(std::vector<LinkId>(t.in_links(0).begin(), t.in_links(0).end()),
              ::testing::ElementsAre(1, 5));
  int out_total = 0, in_total = 0;
  for (NodeId v = 0; v < t.num_nodes(); ++v) {
    for (LinkId l : t.out_links(v)) {
      EXPECT_EQ(t.link(l).src, v);
      ++out_total;
    }
    for (LinkId l : t.in_links(v)) {
      EXPECT_EQ(t.link(l).dst, v);
      ++in_total;
    }
  }
  EXPECT_EQ(out_total, t.num_links());
  EXPECT_EQ(in_total, t.num_links());
}

TEST(Topology, FingerprintFollowsStructureNotNames) {
  auto make = [](Bandwidth bw, const char* name) {
    TopologyBuilder b;
    b.add_npu(name);
    b.add_npu();
    b.add_bidirectional(0, 1, bw, kLat);
    return b.build().fingerprint();
  };
  EXPECT_EQ(make(kBw, "a"), make(kBw, "b"));
  EXPECT_NE(make(kBw, "a"), make(kBw + 1, "a"));
}

// A topology that is its own reverse pairs each link with the one back between the same nodes and
// of the same bandwidth, latency and step (parallel links in id order); a link without one (one
// way only, or back at another speed or step) leaves nothing to pair.
TEST(Topology, TwinLinksPairEachLinkWithItsReverse) {
  TopologyBuilder b;
  for (int i = 0; i < 3; ++i) b.add_npu();
  b.add_link(0, 1, kBw, kLat);      // 0
  b.add_link(1, 2, kBw, kLat);      // 1
  b.add_link(0, 1, kBw, kLat);      // 2: parallel to 0
  b.add_link(2, 1, kBw, kLat);      // 3
  b.add_link(1, 0, kBw, kLat);      // 4
  b.add_link(1, 0, kBw, kLat);      // 5
  b.add_link(0, 2, 2 * kBw, kLat);  // 6
  b.add_link(2, 0, 2 * kBw, kLat);  // 7
  const std::optional<std::vector<LinkId>> twin = twin_links(b.build());
  ASSERT_TRUE(twin);
  EXPECT_THAT(*twin, ::testing::ElementsAre(4, 3, 5, 1, 0, 2, 7, 6));
  for (const auto& [bandwidth, latency] : {std::pair{kBw + 1, kLat}, std::pair{kBw, kLat + 1}}) {
    TopologyBuilder other = b;
    other.add_link(1, 2, bandwidth, latency);  // back only at the speed of the others
    other.add_link(2, 1, kBw, kLat);
    EXPECT_FALSE(twin_links(other.build())) << bandwidth << " " << latency;
  }
  TopologyBuilder one_way = b;
  one_way.add_link(1, 2, kBw, kLat);
  EXPECT_FALSE(twin_links(one_way.build()));
  TopologyBuilder stepped = b;
  stepped.set_link_step(0, 2 * kDefaultStep);
  EXPECT_FALSE(twin_links(stepped.build()));
  // Every generated fabric of full-duplex links is its own reverse, link by link.
  for (const char* spec : {"ring:8", "torus2d:4x4", "leafspine:4x8", "nvcluster:2x8"}) {
    const Topology t = generate(spec);
    const std::optional<std::vector<LinkId>> pairs = twin_links(t);
    ASSERT_TRUE(pairs) << spec;
    for (LinkId l = 0; l < t.num_links(); ++l) {
      const Link &k = t.link(l), &back = t.link((*pairs)[l]);
      EXPECT_EQ(back.src, k.dst) << spec;
      EXPECT_EQ(back.dst, k.src) << spec;
      EXPECT_EQ((*pairs)[(*pairs)[l]], l) << spec;
    }
  }
}

TEST(TopologyValidation, RejectsSelfLoop) {
  TopologyBuilder b;
  b.add_npu();
  b.add_link(0, 0, kBw, kLat);
  EXPECT_THAT(build_error(b), HasSubstr("self-loop"));
}

TEST(TopologyValidation, RejectsNonPositiveBandwidth) {
  TopologyBuilder b;
  b.add_npu();
  b.add_npu();
  b.add_bidirectional(0, 1, 0, kLat);
  EXPECT_THAT(build_error(b), HasSubstr("non-positive bandwidth"));
}

TEST(TopologyValidation, RejectsNegativeLatency) {
  TopologyBuilder b;
  b.add_npu();
  b.add_npu();
  b.add_bidirectional(0, 1, kBw, -1);
  EXPECT_THAT(build_error(b), HasSubstr("negative latency"));
}

TEST(TopologyValidation, RejectsUnknownEndpoint) {
  TopologyBuilder b;
  b.add_npu();
  b.add_link(0, 7, kBw, kLat);
  EXPECT_THAT(build_error(b), HasSubstr("unknown destination node"));
  TopologyBuilder c;
  c.add_npu();
  c.add_link(~3, 0, kBw, kLat);
  EXPECT_THAT(build_error(c), HasSubstr("unknown source node"));
}

TEST(TopologyValidation, NamesAnUnreachablePair) {
  TopologyBuilder b;
  for (int i = 0; i < 3; ++i) b.add_npu();
  b.add_link(0, 1, kBw, kLat);
  b.add_link(1, 2, kBw, kLat);  // nothing returns to 0
  EXPECT_THAT(build_error(b), HasSubstr("NPU 'npu1' cannot reach NPU 'npu0'"));
  TopologyBuilder c;
  for (int i = 0; i < 3; ++i) c.add_npu();
  c.add_bidirectional(0, 1, kBw, kLat);
  EXPECT_THAT(build_error(c), HasSubstr("NPU 'npu0' cannot reach NPU 'npu2'"));
}

TEST(TopologyValidation, RejectsSwitchWithoutLinks) {
  TopologyBuilder b;
  b.add_npu();
  b.add_switch("lonely");
  EXPECT_THAT(build_error(b), HasSubstr("switch 'lonely' has no links"));
}

TEST(TopologyValidation, RejectsDuplicateNames) {
  TopologyBuilder b;
  b.add_npu("x");
  EXPECT_THROW(b.add_switch("x"), Error);
  EXPECT_THROW(b.add_npu("x"), Error);
}

TEST(TopologyValidation, RejectsEmptyTopology) {
  TopologyBuilder b;
  EXPECT_THAT(build_error(b), HasSubstr("no NPUs"));
}

TEST(TopologyValidation, ErrorsCarryTheirSourceLocation) {
  TopologyBuilder b;
  b.add_npu();
  b.add_npu();
  b.add_link(0, 1, kBw, -5, "", Location("net.yaml", 12, 5));
  EXPECT_THAT(build_error(b),
              HasSubstr("net.yaml:12:5: link 0 (npu0 -> npu1) has negative latency"));
}

TEST(Analysis, DistancesAndDiameterOnALine) {
  TopologyBuilder b;
  for (int i = 0; i < 4; ++i) b.add_npu();
  b.add_bidirectional(0, 1, kBw, 1000);
  b.add_bidirectional(1, 2, kBw, 5000);
  b.add_bidirectional(2, 3, kBw, 1000);
  Topology t = b.build();
  EXPECT_EQ(hop_distances(t, 0), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(latency_distances(t, 0), (std::vector<Time>{0, 1000, 6000, 7000}));
  Diameter d = npu_diameter(t);
  EXPECT_EQ(d.hops, 3);
  EXPECT_EQ(d.latency, 7000);
  EXPECT_EQ(strong_component_count(t), 1);
  EXPECT_EQ(ingress_bandwidth(t, 1), 2 * kBw);
  EXPECT_EQ(egress_bandwidth(t, 0), kBw);
}

// Past `exact_up_to` NPUs the diameter comes from 64 evenly spaced NPUs (0, 3, 6, ... of 200) and
// one found by a sweep back: on a line whose ends are NPUs 1 and 2, no sample is an end, and the
// sweep from the farthest NPU the samples found (2) finds the other end (1).
TEST(Analysis, SampledDiameterSweepsBackToTheFarEnd) {
  const int n = 200;
  std::vector<NodeId> order{1, 0};
  for (NodeId v = 3; v < n; ++v) order.push_back(v);
  order.push_back(2);
  TopologyBuilder b;
  for (int i = 0; i < n; ++i) b.add_npu();
  for (size_t i = 0; i + 1 < order.size(); ++i)
    b.add_bidirectional(order[i], order[i + 1], kBw, 1000);
  const Topology t = b.build();
  const Diameter exact = npu_diameter(t);
  EXPECT_EQ(exact.sources, n);
  EXPECT_EQ(exact.latency, (n - 1) * Time{1000});
  const Diameter sampled = npu_diameter(t, 100);
  EXPECT_EQ(sampled.sources, 65);
  EXPECT_EQ(sampled.latency, exact.latency);
  EXPECT_EQ(sampled.hops, exact.hops);
  EXPECT_EQ(npu_diameter(t, n).sources, n);  // not past the limit: exact
}

// Pods (detect_pods): a dragonfly's groups (its routers all joined to each other), a
// leaf-spine's leaves; no pods on one switch, on NPUs without switches, or where an NPU attaches
// to two leaves.
TEST(Analysis, PodsAreTheSwitchesGroups) {
  const auto pods = [](const char* spec) { return detect_pods(generate(spec)); };
  const std::vector<std::vector<NodeId>> dragonfly = pods("dragonfly:4x4x2");
  ASSERT_EQ(dragonfly.size(), 4U);
  for (size_t g = 0; g < 4; ++g) {
    ASSERT_EQ(dragonfly[g].size(), 8U);
    for (size_t i = 0; i < 8; ++i) EXPECT_EQ(dragonfly[g][i], static_cast<NodeId>(8 * g + i));
  }
  EXPECT_EQ(pods("dragonfly:8x16x8").size(), 8U);
  const std::vector<std::vector<NodeId>> leaves = pods("leafspine:4x8,spines=2");
  ASSERT_EQ(leaves.size(), 4U);
  EXPECT_EQ(leaves[1], (std::vector<NodeId>{8, 9, 10, 11, 12, 13, 14, 15}));
  for (const char* spec : {"switch:8", "torus2d:4x4", "ring:8"}) EXPECT_TRUE(pods(spec).empty());
  // Two leaves of two NPUs under a spine; NPU 0 on both leaves, or not.
  const auto leaves_of_two = [](bool second_nic) {
    TopologyBuilder b("two-leaves");
    for (int i = 0; i < 4; ++i) b.add_npu();
    const NodeId leaf[2] = {b.add_switch(), b.add_switch()}, spine = b.add_switch();
    for (int i = 0; i < 4; ++i) b.add_bidirectional(i, leaf[i / 2], kBw, kLat);
    for (NodeId l : leaf) b.add_bidirectional(l, spine, kBw, kLat);
    if (second_nic) b.add_bidirectional(0, leaf[1], kBw, kLat);
    return detect_pods(b.build());
  };
  EXPECT_EQ(leaves_of_two(false), (std::vector<std::vector<NodeId>>{{0, 1}, {2, 3}}));
  EXPECT_TRUE(leaves_of_two(true).empty());
}

}  // namespace
}  // namespace tenet::topo
