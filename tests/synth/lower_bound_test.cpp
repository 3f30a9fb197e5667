// The All-to-All lower bound (synth/lower_bound.hpp): hand-computed values on regular topologies,
// and never above a verified algorithm's time on random ones.
#include "synth/lower_bound.hpp"

#include <fmt/format.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>

#include <numeric>

#include <array>
#include <random>

#include "synth/producers.hpp"
#include "synth/verify.hpp"
#include "tests/synth/test_support.hpp"
#include "topo/analysis.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"

namespace tenet::synth {
namespace {

constexpr Bytes kChunk = 1 << 20;           // each member sends each other this much (k = 1)
constexpr Bandwidth kBw = 50'000'000'000;  // the generators' default link bandwidth

LowerBound all_to_all(const topo::Topology& t) {
  return lower_bound(t, Collective::over_all(t, CollectiveKind::AllToAll), kChunk);
}
Time seconds_of(double bytes, double bandwidth) { return static_cast<Time>(std::ceil(bytes / bandwidth * 1e12)); }

TEST(AllToAllBound, HopCountsOnRingsAndTori) {
  // Bidirectional ring of 8: from each NPU the others are 1, 2, 3, 4, 3, 2, 1 hops away (16); 16
  // links. 8 x 16 x k bytes of link traffic over 16 links: 8 k / B, where the NPUs' own links
  // allow 7 k / 2B.
  LowerBound b = all_to_all(topo::generate("ring:8"));
  EXPECT_EQ(b.label, "hop-count bound");
  EXPECT_EQ(b.bandwidth, seconds_of(8.0 * kChunk, kBw));
  // 4x4 torus: 16 x 32 hops over 64 links: 8 k / B.
  b = all_to_all(topo::generate("torus2d:4x4"));
  EXPECT_EQ(b.label, "hop-count bound");
  EXPECT_EQ(b.bandwidth, seconds_of(8.0 * kChunk, kBw));
  // 8x8x8 torus: 3 x 16 x 64 hops from each NPU over 6 links each: 512 k / B. With 512 MiB per
  // rank (k = 1 MiB) at 50 GB/s that is 10.74 ms, where the NPUs' links allow 1.79 ms.
  b = all_to_all(topo::generate("torus3d:8x8x8"));
  EXPECT_EQ(b.label, "hop-count bound");
  EXPECT_EQ(b.bandwidth, seconds_of(512.0 * kChunk, kBw));
}

TEST(AllToAllBound, OneHopTopologiesKeepTheNpuBound) {
  // Fully connected and a switch: every byte crosses one link (two through the switch, over twice
  // the links): the distance bound equals what each NPU's own links allow.
  for (const char* spec : {"fc:8", "switch:8"}) {
    const LowerBound b = all_to_all(topo::generate(spec));
    EXPECT_EQ(b.label, "ingress/egress bound") << spec;
    EXPECT_EQ(b.bandwidth, seconds_of(7.0 * kChunk, spec == std::string("fc:8") ? 7.0 * kBw : kBw)) << spec;
  }
}

TEST(AllToAllBound, MeshBisectionFromTheFlowLp) {
  // 4x4 mesh: 8 x 8 pairs cross the 4 middle links each way (16 k / B); hop counts give only
  // 640 k over 48 links (13.3 k / B), and no group of the other families is the half.
  const LowerBound b = all_to_all(topo::generate("mesh2d:4x4"));
  EXPECT_EQ(b.label, "max-concurrent-flow bound (LP)");
  EXPECT_NEAR(static_cast<double>(b.bandwidth), static_cast<double>(seconds_of(16.0 * kChunk, kBw)), 1e-6 * b.bandwidth);
  EXPECT_LE(b.bandwidth, seconds_of(16.0 * kChunk, kBw));
}

TEST(AllToAllBound, IslandsJoinedByABridge) {
  // Two islands of 4 NPUs joined by one 25 GB/s link each way: 4 x 4 x k bytes cross it each way.
  const auto t = topo::load(std::string(TENET_SOURCE_DIR) + "/examples/topologies/two-islands.yaml");
  const LowerBound b = all_to_all(t);
  EXPECT_EQ(b.label, "group cut bound");
  EXPECT_EQ(b.bandwidth, seconds_of(16.0 * kChunk, 25e9));
}

TEST(GatherScatterBound, TheFarIslandCrossesTheBridge) {
  // Gather to a1: the 4 NPUs of island b send their k bytes over the 25 GB/s bridge; the root's
  // own 3 x 100 GB/s of links would allow 7 k in a fifth of that time. Scatter from a1 the other way.
  const auto t = topo::load(std::string(TENET_SOURCE_DIR) + "/examples/topologies/two-islands.yaml");
  for (CollectiveKind kind : {CollectiveKind::Gather, CollectiveKind::Scatter}) {
    Collective c = Collective::over_all(t, kind);
    c.root = 1;
    const LowerBound b = lower_bound(t, c, kChunk);
    EXPECT_EQ(b.label, "group cut bound") << to_string(kind);
    EXPECT_EQ(b.bandwidth, seconds_of(4.0 * kChunk, 25e9)) << to_string(kind);
  }
  // On a switch the root's own link is the bottleneck, as before.
  const auto sw = topo::generate("switch:8");
  const LowerBound g = lower_bound(sw, Collective::over_all(sw, CollectiveKind::Gather), kChunk);
  EXPECT_EQ(g.label, "ingress/egress bound");
  EXPECT_EQ(g.bandwidth, seconds_of(7.0 * kChunk, kBw));
}

TEST(AllToAllBound, RacksBehindOversubscribedUplinks) {
  // leafspine:4x8,spines=2: 8 NPUs per leaf at 50 GB/s, two 50 GB/s uplinks per leaf (2:1). A rack
  // sends 8 x 24 x k bytes to the others over 100 GB/s.
  const auto t = topo::generate("leafspine:4x8,spines=2");
  const LowerBound b = all_to_all(t);
  EXPECT_EQ(b.label, "group cut bound");
  EXPECT_EQ(b.bandwidth, seconds_of(8.0 * 24 * kChunk, 100e9));
}

// The synthesizer's and the direct baseline's algorithms for `c` (where direct applies): each
// verified correct and no faster than the bound. Returns how many were checked.
int verified_above_bound(const topo::Topology& t, const Collective& c, Bytes chunk, int case_number) {
  const LowerBound b = lower_bound(t, c, chunk);
  int checked = 0;
  for (const char* producer : {"tenet", "direct"}) {
    Algorithm a;
    try {
      a = make_algorithm(producer, t, c, chunk);
    } catch (const NotApplicable&) {
      continue;
    }
    const std::string at = fmt::format("topology {}, {}, {} over NPUs {}", case_number, producer, c.describe(),
                                       fmt::join(c.ranks, ","));
    const Report r = verify(t, a, {.max_reported = 3, .lower_bound = false});
    EXPECT_TRUE(r.correct()) << at << testing::violation_text(r);
    EXPECT_GE(a.claimed_time, b.total) << at << ": " << describe(b);
    ++checked;
  }
  return checked;
}

TEST(AllToAllBound, NeverAboveAVerifiedAlgorithm) {  // nor the Gather and Scatter bounds
  std::mt19937_64 rng(1818);
  int checked = 0;
  for (int i = 0; i < 40; ++i) {
    const topo::Topology t = testing::random_topology(rng, 9);
    const CollectiveKind kind = std::array{CollectiveKind::AllToAll, CollectiveKind::Gather, CollectiveKind::Scatter}[i % 3];
    Collective c = Collective::over_all(t, kind, 1 + static_cast<int>(rng() % 2));
    c.root = static_cast<int>(rng() % c.num_ranks());
    const Bytes chunk = Bytes{1} << (8 + rng() % 14);
    checked += verified_above_bound(t, c, chunk, i);
  }
  EXPECT_GE(checked, 50);
}

// Process groups (--ranks): on random topologies, a random group of at least two NPUs in a random
// order, every collective the synthesizer and a baseline build is correct for the members (relays
// through the others checked by the verifier) and never beats the group's bound.
TEST(GroupBound, NeverAboveAVerifiedAlgorithmOnRandomGroups) {
  std::mt19937_64 rng(1717);
  int checked = 0;
  for (int i = 0; i < 40; ++i) {
    const topo::Topology t = testing::random_topology(rng, 9);
    std::vector<topo::NodeId> npus(static_cast<size_t>(t.num_npus()));
    std::iota(npus.begin(), npus.end(), 0);
    std::shuffle(npus.begin(), npus.end(), rng);
    npus.resize(2 + rng() % static_cast<size_t>(t.num_npus() - 1));
    const CollectiveKind kind = std::array{CollectiveKind::AllReduce, CollectiveKind::AllGather,
                                           CollectiveKind::ReduceScatter, CollectiveKind::AllToAll}[i % 4];
    Collective c = Collective::over_all(t, kind, 1 + static_cast<int>(rng() % 2));
    c.ranks = npus;
    const Bytes chunk = Bytes{1} << (10 + rng() % 12);
    checked += verified_above_bound(t, c, chunk, i);
  }
  EXPECT_GE(checked, 60);
}

}  // namespace
}  // namespace tenet::synth

namespace tenet::synth {
namespace {

// Over 4,096 NPUs the latency term is the farthest pair found from a sample of sources (a search
// per source took 84 s on 32,768 NPUs): never above the diameter, and on these fabrics (a mesh,
// whose corners alone are farthest apart, and a torus) the exact one.
TEST(LatencyBound, SampledSourcesFindTheDiameter) {
  for (const char* spec : {"mesh2d:65x65", "torus2d:65x65"}) {
    const auto t = topo::generate(spec);
    const Collective c = Collective::over_all(t, CollectiveKind::AllGather);
    EXPECT_EQ(lower_bound(t, c, 1).latency, topo::npu_diameter(t).latency) << spec;
  }
}

}  // namespace
}  // namespace tenet::synth
