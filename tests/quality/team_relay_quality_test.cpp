// Quality pins of team relays (moved from tests/synth/groups/team_relay_test.cpp): how fast a group
// that borrows its members' idle server mates (or mirrors) gets, against the group's ring and its
// lower bound. The thresholds are tuning outcomes; that the relays verify, and that auto picks
// them, stays in tenet_tests (TeamRelay).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "synth/baselines/baselines.hpp"
#include "synth/bounds/lower_bound.hpp"
#include "synth/groups/team_relay.hpp"
#include "synth/synthesizer.hpp"
#include "synth/tuning.hpp"
#include "synth/verify/verify.hpp"
#include "tests/synth/groups/team_relay_support.hpp"
#include "topo/generators.hpp"

namespace tenet::synth {
namespace {

// On rail clusters a team relay is faster than the group's ring, which cannot leave its rail (on a
// fat-tree the group's own NICs already reach every spine, and borrowing gains nothing: the
// synthesizer keeps the faster).
TEST(TeamRelayQuality, FasterThanTheGroupAloneOnRails) {
  for (const char* spec : {"nvcluster:2x8,net=rail", "nvcluster:4x8,net=rail",
                           "nvcluster:3x8,net=rail,bw=300GB/s/25GB/s"}) {
    const auto t = topo::generate(spec);
    for (const auto& [c, chunk, what] : testing::rail_cases(t, spec)) {
      const std::optional<Algorithm> a = testing::ring_team_relay(t, c, chunk);
      ASSERT_TRUE(a) << what;
      const Algorithm alone = make_baseline({BaselineKind::Ring, {}}, t, c, chunk);
      EXPECT_LT(a->claimed_time, alone.claimed_time) << what;
    }
  }
}

// The synthesizer's automatic choice for a data-parallel group: near the group's bound, which
// counts every NIC of the servers (one rail alone is 8x from it).
TEST(TeamRelayQuality, DataParallelGroupReachesItsBound) {
  const auto t = topo::generate("nvcluster:16x8,net=rail");
  for (CollectiveKind kind : {CollectiveKind::AllReduce, CollectiveKind::AllGather}) {
    const Collective c = testing::rail_group(t, kind, 0, 1);
    const ChunkingResult best = synthesize_auto_chunks(t, c, 256 << 20);
    const LowerBound b = lower_bound(t, best.algorithm.collective, best.algorithm.chunk_bytes);
    // All-Reduce: against the Reduce-Scatter plus All-Gather figure the relay is built to
    // (`coarse`); the All-Reduce bound (every byte both ways, arrivals) counts every borrowable
    // NPU's links and lies below it.
    const Time bound = kind == CollectiveKind::AllReduce ? b.coarse : b.total;
    const Time time = verify(t, best.algorithm).collective_time;
    EXPECT_LE(static_cast<double>(time), kRelayEnough * static_cast<double>(bound))
        << to_string(kind) << ": " << best.algorithm.method;
    EXPECT_GE(time, b.total) << to_string(kind);
  }
}

// On a fat-tree a ring and direct tie alone on the slices' sub-groups and compose very differently
// (the ring wants its chunks in an order the hand-overs cannot follow): every tying baseline is
// composed and the fastest kept. nvcluster:4x8 fat-tree, one GPU per server, All-Reduce of 256 MiB:
// 8.0x the bound with the ring's composition, under 2.1x now.
TEST(TeamRelayQuality, TyingBaselinesAreEachComposed) {
  const auto t = topo::generate("nvcluster:4x8,net=fattree");
  const Collective c = testing::rail_group(t, CollectiveKind::AllReduce, 0, 1);
  const ChunkingResult best = synthesize_auto_chunks(t, c, 256 << 20);
  const Time bound = lower_bound(t, best.algorithm.collective, best.algorithm.chunk_bytes).total;
  const Time time = verify(t, best.algorithm).collective_time;
  EXPECT_LT(static_cast<double>(time), 2.1 * static_cast<double>(bound)) << best.algorithm.method;
}

// The sub-group synthesis fastest alone may compose worse than the matcher's: on nvcluster:4x8 a
// rail group's All-Gather sub-group (4 members on a rail's switch) is fastest alone on the flat
// server plan, whose relay took 167.5 us at 64 MiB where the matcher's takes 165.5. The relay
// composes both, so the synthesizer is never slower than the matcher's relay.
TEST(TeamRelayQuality, NoSlowerThanTheMatchersRelay) {
  auto t = topo::generate("nvcluster:4x8");
  t.set_charges_steps(true);  // as tenet synth's default --step-costs on
  for (CollectiveKind kind :
       {CollectiveKind::AllGather, CollectiveKind::ReduceScatter, CollectiveKind::AllReduce}) {
    const Collective c = testing::rail_group(t, kind, 0, 16);
    const Bytes chunk = c.chunk_bytes_for(64 << 20);
    SynthOptions matcher;
    matcher.method = SynthMethod::Matcher;
    matcher.portfolio.team_relay = false;
    const std::optional<Algorithm> relayed =
        team_relay(t, c, chunk, LinkModel::Pipelined,
                   [&](const Collective& sc) { return synthesize(t, sc, chunk, matcher); });
    ASSERT_TRUE(relayed) << to_string(kind);
    const Algorithm best = synthesize(t, c, chunk);
    EXPECT_LE(verify(t, best).collective_time, relayed->claimed_time)
        << to_string(kind) << ": " << best.method;
  }
}

// A tensor-parallel group of a rail cluster: its bound counts its NICs (out through another
// server and back), which its server alone cannot reach (1.11x on nvcluster's 450 GB/s NVSwitch
// links and 50 GB/s NICs). Borrowing the next server gets within 1.05x (kRelayEnough).
TEST(TeamRelayQuality, TensorParallelGroupReachesItsBound) {
  const auto t = topo::generate("nvcluster:16x8,net=rail");
  for (CollectiveKind kind :
       {CollectiveKind::AllGather, CollectiveKind::ReduceScatter, CollectiveKind::AllReduce}) {
    const Collective c = testing::server_group(kind, 8, 8, 1);
    const ChunkingResult best = synthesize_auto_chunks(t, c, 256 << 20);
    const LowerBound b = lower_bound(t, best.algorithm.collective, best.algorithm.chunk_bytes);
    // All-Reduce: against the Reduce-Scatter plus All-Gather figure the relay is built to
    // (`coarse`); the All-Reduce bound (every byte both ways, arrivals) counts every borrowable
    // NPU's links and lies below it.
    const Time bound = kind == CollectiveKind::AllReduce ? b.coarse : b.total;
    const Time time = verify(t, best.algorithm).collective_time;
    EXPECT_LE(static_cast<double>(time), kRelayEnough * static_cast<double>(bound))
        << to_string(kind) << ": " << best.algorithm.method;
    EXPECT_GE(time, b.total) << to_string(kind);
  }
}

}  // namespace
}  // namespace tenet::synth
