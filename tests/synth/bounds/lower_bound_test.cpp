// The All-to-All lower bound (synth/bounds/lower_bound.hpp): hand-computed values on regular
// topologies, and never above a verified algorithm's time on random ones.
#include "synth/bounds/lower_bound.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>

#include <numeric>
#include <optional>

#include <array>
#include <limits>
#include <random>

#include "synth/producers.hpp"
#include "synth/verify/verify.hpp"
#include "tests/synth/test_support.hpp"
#include "tests/topo/test_util.hpp"
#include "topo/analysis.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"

namespace tenet::synth {
namespace {

constexpr Bytes kChunk = 1 << 20;          // each member sends each other this much (k = 1)
constexpr Bandwidth kBw = 50'000'000'000;  // the generators' default link bandwidth

LowerBound all_to_all(const topo::Topology& t) {
  return lower_bound(t, Collective::over_all(t, CollectiveKind::AllToAll), kChunk);
}
Time seconds_of(double bytes, double bandwidth) {
  return static_cast<Time>(std::ceil(bytes / bandwidth * 1e12));
}

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
    EXPECT_EQ(b.bandwidth, seconds_of(7.0 * kChunk, spec == std::string("fc:8") ? 7.0 * kBw : kBw))
        << spec;
  }
}

TEST(AllToAllBound, MeshBisectionFromTheFlowLp) {
  // 4x4 mesh: 8 x 8 pairs cross the 4 middle links each way (16 k / B); hop counts give only
  // 640 k over 48 links (13.3 k / B), and no group of the other families is the half.
  const LowerBound b = all_to_all(topo::generate("mesh2d:4x4"));
  EXPECT_EQ(b.label, "max-concurrent-flow bound (LP)");
  EXPECT_NEAR(static_cast<double>(b.bandwidth), static_cast<double>(seconds_of(16.0 * kChunk, kBw)),
              1e-6 * b.bandwidth);
  EXPECT_LE(b.bandwidth, seconds_of(16.0 * kChunk, kBw));
}

TEST(AllToAllBound, IslandsJoinedByABridge) {
  // Two islands of 4 NPUs joined by one 25 GB/s link each way: 4 x 4 x k bytes cross it each way.
  const auto t =
      topo::load(std::string(TENET_SOURCE_DIR) + "/examples/topologies/two-islands.yaml");
  const LowerBound b = all_to_all(t);
  EXPECT_EQ(b.label, "group cut bound");
  EXPECT_EQ(b.bandwidth, seconds_of(16.0 * kChunk, 25e9));
}

// Where the flow LP binds, the bound names the links it weighs: on a line of 4 the middle link,
// which every fastest All-to-All fills (a cut of one link; the NPUs' own links allow less).
TEST(AllToAllBound, TheFlowBoundNamesItsLinks) {
  const auto t = topo::generate("line:4");
  const LowerBound b = all_to_all(t);
  EXPECT_EQ(b.label, "max-concurrent-flow bound (LP)");
  // 2 x 2 pairs cross it each way, rounded down.
  EXPECT_LE(b.bandwidth, seconds_of(4.0 * kChunk, kBw));
  EXPECT_GE(b.bandwidth, seconds_of(4.0 * kChunk, kBw) - 4);
  EXPECT_EQ(b.limit.rfind("the links the LP's duals weigh", 0), 0u) << b.limit;
  EXPECT_TRUE(b.limit.find("npu1 -> npu2 50 GB/s (100 %)") != std::string::npos ||
              b.limit.find("npu2 -> npu1 50 GB/s (100 %)") != std::string::npos)
      << b.limit;
}

TEST(GatherScatterBound, TheFarIslandCrossesTheBridge) {
  // Gather to a1: the 4 NPUs of island b send their k bytes over the 25 GB/s bridge; the root's
  // own 3 x 100 GB/s of links would allow 7 k in a fifth of that time. Scatter from a1 the other
  // way.
  const auto t =
      topo::load(std::string(TENET_SOURCE_DIR) + "/examples/topologies/two-islands.yaml");
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
int verified_above_bound(const topo::Topology& t, const Collective& c, Bytes chunk,
                         int case_number) {
  const LowerBound b = lower_bound(t, c, chunk);
  int checked = 0;
  for (const char* producer : {"tenet", "direct"}) {
    Algorithm a;
    try {
      a = make_algorithm(producer, t, c, chunk);
    } catch (const NotApplicable&) {
      continue;
    }
    const std::string at = fmt::format("topology {}, {}, {} over NPUs {}", case_number, producer,
                                       c.describe(), fmt::join(c.ranks, ","));
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
    const CollectiveKind kind = std::array{CollectiveKind::AllToAll, CollectiveKind::Gather,
                                           CollectiveKind::Scatter}[i % 3];
    Collective c = Collective::over_all(t, kind, 1 + static_cast<int>(rng() % 2));
    c.root = static_cast<int>(rng() % c.num_ranks());
    const Bytes chunk = Bytes{1} << (8 + rng() % 14);
    checked += verified_above_bound(t, c, chunk, i);
  }
  EXPECT_GE(checked, 50);
}

// The All-Reduce bound in closed form: on a switch the arrivals bound is the classic
// 2(p-1)/p M/B; on a line the whole buffer crosses the middle each way, M/B, which a reduction to
// the middle and back reaches (the Reduce-Scatter plus All-Gather figure, 2(p-1)/p M/B, was
// printed as the bound and beaten by 43 %).
TEST(AllReduceBound, ClosedFormsOnASwitchAndALine) {
  const Bytes m = Bytes{256} << 20;
  for (const char* spec : {"switch:8", "line:8"}) {
    const topo::Topology t = topo::generate(spec);
    const Collective c = Collective::over_all(t, CollectiveKind::AllReduce);
    const LowerBound b = lower_bound(t, c, c.chunk_bytes_for(m));
    const Bandwidth bw = t.link(0).bandwidth;
    const Time want =
        spec == std::string("line:8") ? transfer_time(m, bw) : transfer_time(2 * 7 * m / 8, bw);
    EXPECT_NEAR(static_cast<double>(b.bandwidth), static_cast<double>(want), 2.0) << spec;
    if (b.label == "arrivals bound")  // the switch's: every NPU alone takes in 8 links' worth
      EXPECT_EQ(b.limit,
                fmt::format("8 nodes hold the ranks: every byte enters them 2 x (8 - 1) times, "
                            "through {} in all into the NPUs and reducing switches",
                            format_bandwidth(8 * bw)))
          << spec;
    else
      EXPECT_NE(b.limit, "") << spec;
    EXPECT_LE(b.total, make_algorithm("tenet", t, c, c.chunk_bytes_for(m)).claimed_time) << spec;
  }
}

// At small sizes the farthest pair's latency is followed by the bytes that depend on its one end
// entering the other: an All-Reduce's whole buffer (an All-Gather's one share) through the widest
// NPU's links in. On a line of 10 us links: 7 hops, then 1 MiB through an inner NPU's two 50 GB/s
// links in; the answer and every baseline stay above it.
TEST(LatencyBound, TheBytesThatDependOnTheFarthestPairFollowItsLatency) {
  const topo::Topology t = topo::generate("line:8,lat=10us");
  const Bytes m = Bytes{1} << 20;
  Collective c = Collective::over_all(t, CollectiveKind::AllReduce);
  const LowerBound b = lower_bound(t, c, c.chunk_bytes_for(m), false);
  EXPECT_EQ(b.latency_bytes, transfer_time(m, 2 * t.link(0).bandwidth));
  EXPECT_EQ(b.latency, 7 * t.link(0).latency + b.latency_bytes);
  EXPECT_EQ(b.total, b.latency);
  EXPECT_NE(describe(b).find("+ 10.49 us for what depends on it to enter an NPU"),
            std::string::npos)
      << describe(b);
  for (const std::string& name : algorithm_names(CollectiveKind::AllReduce)) {
    Algorithm a;
    try {
      a = make_algorithm(name, t, c, c.chunk_bytes_for(m));
    } catch (const NotApplicable&) {
      continue;
    }
    EXPECT_TRUE(verify(t, a, {.lower_bound = false}).correct()) << name;
    EXPECT_GE(a.claimed_time, lower_bound(t, c, c.chunk_bytes_for(m)).total) << name;
  }
  c.kind = CollectiveKind::AllGather;  // one rank's share: 1 MiB / 8
  EXPECT_EQ(lower_bound(t, c, c.chunk_bytes_for(m), false).latency_bytes,
            transfer_time(m / 8, 2 * t.link(0).bandwidth));
  // A Reduce into npu0, at the line's end: the buffer through its one link in, after 7 hops.
  c.kind = CollectiveKind::Reduce;
  const LowerBound reduce = lower_bound(t, c, c.chunk_bytes_for(m), false);
  EXPECT_EQ(reduce.latency, 7 * t.link(0).latency + transfer_time(m, t.link(0).bandwidth));
  // A Broadcast from it: the buffer through the widest links in a member has, after 7 hops.
  c.kind = CollectiveKind::Broadcast;
  EXPECT_EQ(lower_bound(t, c, c.chunk_bytes_for(m), false).latency,
            7 * t.link(0).latency + transfer_time(m, 2 * t.link(0).bandwidth));
}

// An All-Reduce's halves in turn: each half's bound summed, for the All-Reduce only. On a line it
// is the figure once printed as the bound (9.4 ms at 256 MiB), which a reduction to the middle and
// back beats: a bound on that shape, not on every All-Reduce.
TEST(AllReduceBound, HalvesInTurnAreEachHalfsBoundSummed) {
  const topo::Topology t = topo::generate("line:8");
  const Bytes m = Bytes{256} << 20;
  Collective c = Collective::over_all(t, CollectiveKind::AllReduce);
  const Bytes chunk = c.chunk_bytes_for(m);
  const std::optional<HalvesInTurn> h = halves_in_turn_bound(t, c, chunk, true);
  ASSERT_TRUE(h.has_value());
  Collective half = c;
  half.kind = CollectiveKind::ReduceScatter;
  EXPECT_EQ(h->reduce_scatter.total, lower_bound(t, half, chunk, true).total);
  half.kind = CollectiveKind::AllGather;
  EXPECT_EQ(h->all_gather.total, lower_bound(t, half, chunk, true).total);
  EXPECT_EQ(h->total(), h->reduce_scatter.total + h->all_gather.total);
  // 2 x 7/8 of the buffer through the end NPU's one 50 GB/s link each way.
  EXPECT_NEAR(static_cast<double>(h->reduce_scatter.bandwidth + h->all_gather.bandwidth),
              static_cast<double>(transfer_time(2 * 7 * m / 8, t.link(0).bandwidth)), 2.0);
  const Algorithm a = make_algorithm_auto_chunks("tenet", t, c, m).algorithm;  // as `tenet synth`
  EXPECT_TRUE(verify(t, a, {.lower_bound = false}).correct());
  EXPECT_LT(a.claimed_time, h->total());
  EXPECT_GE(a.claimed_time, lower_bound(t, c, chunk, true).total);
  // Twice the line's end through its one link, against the whole buffer once across the middle.
  EXPECT_TRUE(h->above(lower_bound(t, c, chunk, true)));
  EXPECT_EQ(describe_limit(*h),
            "Reduce-Scatter: the links out of npu0 to the rest: 50 GB/s = 50 GB/s to npu1; "
            "All-Gather: the links into npu0 from the rest: 50 GB/s = 50 GB/s from npu1");
  // On a switch they are the bound's own arrivals: nothing more to say.
  const topo::Topology sw = topo::generate("switch:8");
  const Collective on_switch = Collective::over_all(sw, CollectiveKind::AllReduce);
  EXPECT_FALSE(halves_in_turn_bound(sw, on_switch, chunk, true)
                   ->above(lower_bound(sw, on_switch, chunk, true)));
  // Nothing for another kind, or an All-Reduce in chunks in all.
  EXPECT_FALSE(halves_in_turn_bound(t, half, chunk, true).has_value());
  c.all_reduce_chunks = 4;
  EXPECT_FALSE(halves_in_turn_bound(t, c, chunk, true).has_value());
}

// Where the islands the arrivals bound counts take in unequal amounts, its limit says which take
// in what, the most common amount last: a mesh's corners, edges and inner NPUs.
TEST(AllReduceBound, TheArrivalsBoundNamesWhatEachIslandTakesIn) {
  const topo::Topology t = topo::generate("mesh2d:4x4");
  const Collective c = Collective::over_all(t, CollectiveKind::AllReduce);
  const LowerBound b = lower_bound(t, c, c.chunk_bytes_for(Bytes{64} << 20));
  ASSERT_EQ(b.label, "arrivals bound");
  EXPECT_EQ(b.limit,
            "16 nodes hold the ranks: every byte enters them 2 x (16 - 1) times, through 2.4 TB/s "
            "in all into the NPUs and reducing switches (100 GB/s into each of npu0, npu3, "
            "npu12, 1 more; 200 GB/s into each of npu5, npu6, npu9, 1 more; 150 GB/s into each "
            "of the other 8)");
}

// No All-Reduce, whoever made it (every method, both link models, every baseline, in-network
// reduction where a switch reduces), is faster than the printed bound.
TEST(AllReduceBound, NeverAboveAnyVerifiedAlgorithm) {
  std::mt19937_64 rng(5823);
  int checked = 0;
  for (int i = 0; i < 24; ++i) {
    const topo::Topology t =
        i % 4 == 3 ? topo::generate(std::array{"line:6", "mesh2d:3x3", "hetmesh2d:3x3",
                                               "nvcluster:2x4,net=rail", "switch:6"}[i / 4 % 5])
                   : testing::random_topology(rng, 8);
    Collective c =
        Collective::over_all(t, CollectiveKind::AllReduce, 1 + static_cast<int>(rng() % 2));
    const Bytes chunk = Bytes{1} << (10 + rng() % 12);
    const LowerBound b = lower_bound(t, c, chunk);
    for (const std::string& name : algorithm_names(CollectiveKind::AllReduce))
      for (SynthMethod method : {SynthMethod::Auto, SynthMethod::PlanPipeline}) {
        if (name != "tenet" && method != SynthMethod::Auto) continue;
        SynthOptions o;
        o.method = method;
        Algorithm a;
        try {
          a = make_algorithm(name, t, c, chunk, o);
        } catch (const NotApplicable&) {
          continue;
        }
        const std::string at = fmt::format("case {} ({}), {} {}", i, t.name(), name, a.method);
        const Report r = verify(t, a, {.max_reported = 3, .lower_bound = false});
        EXPECT_TRUE(r.correct()) << at << testing::violation_text(r);
        EXPECT_GE(a.claimed_time, b.total) << at << ": " << describe(b);
        ++checked;
      }
  }
  EXPECT_GE(checked, 80);
}

// The fabric of bandwidths across 14 orders of magnitude whose flow LP never finished: the
// All-to-All, Gather and Scatter bounds come, and stay under the verified algorithms' times.
TEST(AllToAllBound, FinishesOnBandwidthsAcrossFourteenOrdersOfMagnitude) {
  const topo::Topology t = topo::testing::wide_bandwidth_topology();
  int checked = 0;
  for (CollectiveKind kind :
       {CollectiveKind::AllToAll, CollectiveKind::Gather, CollectiveKind::Scatter})
    checked += verified_above_bound(t, Collective::over_all(t, kind), kChunk, 0);
  EXPECT_GE(checked, 3);
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
    const CollectiveKind kind =
        std::array{CollectiveKind::AllReduce, CollectiveKind::AllGather,
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
    const LowerBound b = lower_bound(t, c, 1);
    EXPECT_EQ(b.latency - b.latency_bytes, topo::npu_diameter(t).latency) << spec;
  }
}

}  // namespace
}  // namespace tenet::synth

namespace tenet::synth {
namespace {

// The latency past the cut (lower_bound.cpp, past_cut): a star of NPUs on one switch, 100 GB/s
// and 1 us everywhere. A Broadcast's narrowest cut is the root's one link out; the bytes that cross
// it last still cross the switch's link to the other NPUs: the bound is M / 100 GB/s + 2 us (the
// cheapest link's 1 us before). Reduce: the same mirrored. All-Gather's critical set is all but one
// NPU, whose one link in is the last: + 1 us.
TEST(CutLatency, StarAddsTheWayPastTheCut) {
  topo::TopologyBuilder b("star");
  for (int i = 0; i < 4; ++i) b.add_npu();
  const topo::NodeId hub = b.add_switch();
  for (topo::NodeId v = 0; v < 4; ++v) b.add_bidirectional(v, hub, 100'000'000'000, 1'000'000);
  const topo::Topology t = b.build();
  constexpr Bytes kMiB = Bytes{1} << 20;
  for (CollectiveKind kind : {CollectiveKind::Broadcast, CollectiveKind::Reduce}) {
    const LowerBound lb = lower_bound(t, Collective::over_all(t, kind), kMiB);
    EXPECT_EQ(lb.cut_latency, 2'000'000) << to_string(kind);
    EXPECT_EQ(lb.total, seconds_of(static_cast<double>(kMiB), 100e9) + 2'000'000)
        << to_string(kind);
    EXPECT_NE(describe(lb).find("+ 2 us latency past the cut"), std::string::npos) << describe(lb);
  }
  const LowerBound ag = lower_bound(t, Collective::over_all(t, CollectiveKind::AllGather), kMiB);
  EXPECT_EQ(ag.cut_latency, 1'000'000);
  EXPECT_EQ(ag.total, seconds_of(3.0 * kMiB, 100e9) + 1'000'000);
}

// Servers behind NICs (nvcluster:4x8,net=fattree: 450 GB/s NVLink at 250 ns, 50 GB/s NICs into
// leaves and spines at 1 us): the narrowest cuts of a Broadcast and a Reduce are a server's eight
// NICs (400 GB/s), and past them the data crosses leaf, spine and leaf to a GPU: 4 us. The
// tie-break finds the Reduce's cut around another server (around the root's, the latency past it
// is one 1 us link).
TEST(CutLatency, ServersBehindNicsCountTheFabricsWay) {
  const topo::Topology t = topo::generate("nvcluster:4x8,net=fattree");
  const Bytes size = Bytes{256} << 20;
  for (CollectiveKind kind : {CollectiveKind::Broadcast, CollectiveKind::Reduce}) {
    const LowerBound lb = lower_bound(t, Collective::over_all(t, kind), size);
    EXPECT_EQ(lb.bandwidth, seconds_of(static_cast<double>(size), 400e9)) << to_string(kind);
    EXPECT_EQ(lb.cut_latency, 4'000'000) << to_string(kind);
  }
}

// The bound with the latency past the cut is still a bound: on random topologies (switches, NPUs
// that route, 0-2 us links, asymmetric ones), for All-Gather, Reduce-Scatter, Broadcast and Reduce
// over random groups and chunk sizes from latency- to bandwidth-bound, every algorithm the
// synthesizer makes (each method, both link models) and every baseline that applies is verified
// correct and no faster than the bound.
TEST(CutLatency, NeverAboveAVerifiedAlgorithm) {
  std::mt19937_64 rng(2611);
  int checked = 0, past_cheapest = 0;
  for (int i = 0; i < 160; ++i) {
    const topo::Topology t = testing::random_topology(rng, 9);
    const CollectiveKind kind =
        std::array{CollectiveKind::AllGather, CollectiveKind::ReduceScatter,
                   CollectiveKind::Broadcast, CollectiveKind::Reduce}[i % 4];
    Collective c = Collective::over_all(t, kind, 1 + static_cast<int>(rng() % 3));
    if (!reduces(kind) && rng() % 2) {
      std::shuffle(c.ranks.begin(), c.ranks.end(), rng);
      c.ranks.resize(2 + rng() % static_cast<size_t>(t.num_npus() - 1));
    }
    c.root = static_cast<int>(rng() % c.num_ranks());
    const Bytes chunk = Bytes{1} << (8 + rng() % 16);
    const LowerBound b = lower_bound(t, c, chunk);
    Time cheapest = std::numeric_limits<Time>::max();
    for (const topo::Link& l : t.links()) cheapest = std::min(cheapest, l.latency);
    past_cheapest += b.cut_latency > cheapest && b.total == b.bandwidth + b.cut_latency;
    testing::for_each_producer(t, c, chunk, [&](const Algorithm& a, const std::string& who) {
      const std::string at = fmt::format("topology {}, {}, {} of {} B chunks over NPUs {}", i, who,
                                         c.describe(), chunk, fmt::join(c.ranks, ","));
      const Report r = verify(t, a, {.max_reported = 3, .lower_bound = false});
      EXPECT_TRUE(r.correct()) << at << testing::violation_text(r);
      EXPECT_GE(a.claimed_time, b.total) << at << ": " << describe(b);
      ++checked;
    });
  }
  EXPECT_GE(checked, 1000);
  EXPECT_GE(past_cheapest, 40);  // the cases exercise the new term
}

}  // namespace
}  // namespace tenet::synth
