// The lower bound where transfers pay per-step costs (synth/bounds/lower_bound.hpp): the cut's
// bytes flow only after the least step of its links, and the farthest pair pays the step of the
// narrowest-step way that joins it. Hand-computed cases, and never above a verified algorithm on
// random fabrics with random steps, for every collective and producer.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "synth/bounds/lower_bound.hpp"
#include "synth/producers.hpp"
#include "synth/verify/verify.hpp"
#include "tests/synth/test_support.hpp"
#include "topo/topology.hpp"

namespace tenet::synth {
namespace {

constexpr Bandwidth kGBps = 1'000'000'000;

// Two NPUs, one link each way: 100 GB/s, 1 us, a 2 us step. An All-Gather of 1 MiB (512 KiB from
// each) sends one transfer each way: 2 us + 512 KiB / 100 GB/s + 1 us, which is the bound.
TEST(StepBound, TwoNpusPayOneStepEachWay) {
  topo::TopologyBuilder b("pair");
  const topo::NodeId x = b.add_npu(), y = b.add_npu();
  const topo::LinkId l = b.add_bidirectional(x, y, 100 * kGBps, 1'000'000);
  b.set_link_step(l, 2'000'000);
  b.set_link_step(l + 1, 2'000'000);
  topo::Topology t = b.build();
  t.set_charges_steps(true);
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather);
  const Bytes chunk = Bytes{512} << 10;
  const LowerBound bound = lower_bound(t, c, chunk);
  EXPECT_EQ(bound.step, 2'000'000);
  EXPECT_EQ(bound.total, 2'000'000 + transfer_time(chunk, 100 * kGBps) + 1'000'000);
  EXPECT_NE(describe(bound).find("+ 2 us step"), std::string::npos) << describe(bound);
  const Algorithm a = make_algorithm("ring", t, c, chunk, SynthOptions{});
  EXPECT_EQ(a.claimed_time, bound.total);
  // Without steps, the bound is the bytes and the latency alone.
  const LowerBound plain = lower_bound(t, c, chunk, false);
  EXPECT_EQ(plain.step, 0);
  EXPECT_EQ(plain.total, transfer_time(chunk, 100 * kGBps) + 1'000'000);
}

// Two servers of two NPUs (NVLink: 300 ns step, 100 ns) joined by one switch (NICs: 2.6 us step,
// 1 us each way): an NPU of one server reaches the other's only through links of a 2.6 us step,
// so the farthest pair pays 2 us of latency and that step; inside a server only 300 ns.
TEST(StepBound, TheFarthestPairPaysTheStepOfTheWayThatJoinsIt) {
  topo::TopologyBuilder b("servers");
  std::vector<topo::NodeId> npu;
  for (int i = 0; i < 4; ++i) npu.push_back(b.add_npu());
  const topo::NodeId sw = b.add_switch();
  for (int s = 0; s < 2; ++s) {
    const topo::LinkId nv = b.add_bidirectional(npu[2 * s], npu[2 * s + 1], 300 * kGBps, 100'000);
    b.set_link_step(nv, 300'000);
    b.set_link_step(nv + 1, 300'000);
    for (int i = 0; i < 2; ++i) {
      const topo::LinkId nic = b.add_bidirectional(npu[2 * s + i], sw, 50 * kGBps, 1'000'000);
      b.set_link_step(nic, 2'600'000);
      b.set_link_step(nic + 1, 2'600'000);
    }
  }
  topo::Topology t = b.build();
  t.set_charges_steps(true);
  const Collective all = Collective::over_all(t, CollectiveKind::AllGather);
  // (The farthest pair's latency, without the byte that follows it: LowerBound::latency_bytes.)
  auto pair = [&](const Collective& c, bool steps) {
    const LowerBound b = lower_bound(t, c, 1, steps);
    return b.latency - b.latency_bytes;
  };
  EXPECT_EQ(pair(all, true), 2'000'000 + 2'600'000);
  EXPECT_EQ(pair(all, false), 2'000'000);
  Collective server = all;
  server.ranks = {npu[0], npu[1]};
  EXPECT_EQ(pair(server, true), 100'000 + 300'000);
}

// The bound with steps is still a bound: on random fabrics (switches, NPUs that route, 0-2 us
// links, asymmetric ones) whose links pay random steps, for every collective over random groups
// and chunk sizes from latency- to bandwidth-bound, every algorithm the synthesizer makes (each
// method, both link models) and every baseline that applies is verified correct and no faster
// than the bound.
TEST(StepBound, NeverAboveAVerifiedAlgorithm) {
  std::mt19937_64 rng(5505);
  int checked = 0, paid_steps = 0, farther = 0;
  for (int i = 0; i < 400; ++i) {
    const topo::Topology t = testing::random_topology(rng, 7, /*steps=*/true);
    const CollectiveKind kind = kAllCollectives[i % kAllCollectives.size()];
    Collective c = testing::random_collective(rng, t, 2);
    c.kind = kind;
    if (reduces(kind)) c.ranks = Collective::over_all(t, kind).ranks;
    c.root = static_cast<int>(rng() % c.num_ranks());
    const Bytes chunk = Bytes{1} << (6 + rng() % 18);
    const LowerBound b = lower_bound(t, c, chunk);
    const LowerBound plain = lower_bound(t, c, chunk, false);
    paid_steps += b.step > 0;
    farther += b.latency > plain.latency;
    EXPECT_GE(b.total, plain.total) << i;
    testing::for_each_producer(t, c, chunk, [&](const Algorithm& a, const std::string& who) {
      const std::string at = fmt::format("topology {}, {}, {} of {} B chunks over NPUs {}", i, who,
                                         c.describe(), chunk, fmt::join(c.ranks, ","));
      ASSERT_TRUE(a.step_costs) << at;
      const Report r = verify(t, a, {.max_reported = 3});
      EXPECT_TRUE(r.correct()) << at << testing::violation_text(r);
      EXPECT_EQ(r.bound.total, b.total) << at;
      EXPECT_GE(a.claimed_time, b.total) << at << ": " << describe(b);
      ++checked;
    });
  }
  EXPECT_GE(checked, 3000);
  EXPECT_GE(paid_steps, 140);  // the cases exercise both new terms
  EXPECT_GE(farther, 200);
}

}  // namespace
}  // namespace tenet::synth
