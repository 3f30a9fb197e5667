// What the chunk search leaves out of a count from the times its counts before made
// (synth/auto/count_leave_outs.hpp).
#include "synth/auto/count_leave_outs.hpp"

#include <gtest/gtest.h>

#include <map>
#include <optional>

#include "synth/bounds/lower_bound.hpp"
#include "synth/memo.hpp"
#include "synth/synthesizer.hpp"
#include "synth/tuning.hpp"
#include "tests/synth/test_support.hpp"
#include "topo/generators.hpp"

namespace tenet::synth {
namespace {

using testing::example_with_steps;

constexpr unsigned bit(MatcherRun run) { return 1U << static_cast<unsigned>(run); }

// The simulator's first gradient bucket of ResNet-50 on cluster16.yaml: an All-Reduce of 8.2 MB
// over every NPU, at a count of chunks per NPU.
struct FirstBucket {
  topo::Topology t = example_with_steps("cluster16.yaml");
  SynthOptions o;
  Collective at(int count) const {
    Collective c = Collective::over_all(t, CollectiveKind::AllReduce);
    c.chunks_per_npu = count;
    return c;
  }
  Bytes chunk(int count) const { return at(count).chunk_bytes_for(8'200'000); }
};

// A doubling at most halves a count's time: a run of the plain matcher over kMatcherFar of the
// fastest at the first count cannot beat it at the second, and is left out from there on, however
// its times would go; one under it, without a count before to show its trend, is not. In the
// first bucket (FirstBucket), at one chunk per NPU the server plan took 104.3 us, the runs under
// hold 226.8 and 236.6 us (left out of two chunks per NPU, where they took 247.3 and 297.1 us), the
// scarce matcher 206.2 us.
TEST(CountLeaveOuts, AMatcherRunOverTwiceTheFastestIsLeftOutOfTheNextCount) {
  const FirstBucket b;
  detail::CountLeaveOuts leave_outs(b.t, b.o);
  const Time fastest = 104'250'000;
  leave_outs.record(MatcherRun::Scarce, 1, 206'175'000);           // 1.98x
  leave_outs.record(MatcherRun::UnderHold, 1, 226'808'000);        // 2.18x
  leave_outs.record(MatcherRun::ScarceUnderHold, 1, 236'617'000);  // 2.27x
  ASSERT_LT(kMatcherFar * static_cast<double>(fastest), 226'808'000.0);
  const unsigned out = leave_outs.leave_out_matchers(b.at(2), b.chunk(2), fastest);
  EXPECT_EQ(out, bit(MatcherRun::UnderHold) | bit(MatcherRun::ScarceUnderHold));
  // Left out, they stay out at the counts after.
  EXPECT_EQ(leave_outs.leave_out_matchers(b.at(4), b.chunk(4), fastest) & out, out);
}

// A run within kMatcherFar of the fastest at a count, its time there more than halved by the
// doubling before (its gain, gained again, beats the fastest), is made at the next count.
TEST(CountLeaveOuts, AMatcherRunGainingFastStaysIn) {
  const FirstBucket b;
  detail::CountLeaveOuts leave_outs(b.t, b.o);
  leave_outs.record(MatcherRun::Scarce, 1, 400'000'000);
  leave_outs.record(MatcherRun::Scarce, 2, 190'000'000);  // 1.9x the fastest, 2 x 190 - 400 < 100
  EXPECT_EQ(
      leave_outs.leave_out_matchers(b.at(4), b.chunk(4), 100'000'000) & bit(MatcherRun::Scarce),
      0U);
  // Gaining less, it cannot reach the fastest by doubling: left out.
  detail::CountLeaveOuts slower(b.t, b.o);
  slower.record(MatcherRun::Scarce, 1, 250'000'000);
  slower.record(MatcherRun::Scarce, 2, 190'000'000);  // 2 x 190 - 250 = 130 >= 100
  EXPECT_NE(slower.leave_out_matchers(b.at(4), b.chunk(4), 100'000'000) & bit(MatcherRun::Scarce),
            0U);
}

// Past the search's counts, where a run of the plain matcher made the fastest at the last one, its
// runs double alone (double_matcher); a run the search would leave out of the next count is left
// out there too. `mi250-box.yaml`, All-Reduce of 1 GiB: at 64 chunks per NPU the random choice
// made the fastest (6.765 ms), the scarce matcher 8.985 ms and it under hold 8.423 ms; the
// pipelines' doubling then made 6.646 ms. At 128 the scarce matcher (1.35x, gaining too little)
// is left out, the run under hold (1.27x) and the random choice are not.
TEST(CountLeaveOuts, TheMatchersDoublingAloneLeavesOutWhatTheSearchWould) {
  const topo::Topology t = example_with_steps("mi250-box.yaml");
  const SynthOptions o;
  detail::CountLeaveOuts leave_outs(t, o);
  leave_outs.record(MatcherRun::Scarce, 32, 9'400'000'000);
  leave_outs.record(MatcherRun::Scarce, 64, 8'985'000'000);
  leave_outs.record(MatcherRun::ScarceUnderHold, 32, 9'000'000'000);
  leave_outs.record(MatcherRun::ScarceUnderHold, 64, 8'423'000'000);
  leave_outs.record(MatcherRun::Random, 64, 6'765'000'000);
  const Time fastest = 6'646'000'000;
  const std::map<int, Time> none;
  EXPECT_TRUE(leave_outs.leaves_out_doubling(MatcherRun::Scarce, 128, none, fastest));
  EXPECT_FALSE(leave_outs.leaves_out_doubling(MatcherRun::ScarceUnderHold, 128, none, fastest));
  EXPECT_FALSE(leave_outs.leaves_out_doubling(MatcherRun::Random, 128, none, fastest));
  // At 256, from the doubling's own time at 128 and the search's at 64: under hold it took
  // 10.63 ms at 128, over kMatcherContend of the fastest and slower than at 64.
  EXPECT_TRUE(leave_outs.leaves_out_doubling(MatcherRun::ScarceUnderHold, 256,
                                             {{128, 10'631'000'000}}, fastest));
  EXPECT_FALSE(
      leave_outs.leaves_out_doubling(MatcherRun::Random, 256, {{128, 6'731'000'000}}, fastest));
  // A run the search left out for good stays out.
  Collective c = Collective::over_all(t, CollectiveKind::AllReduce);
  c.chunks_per_npu = 128;
  const unsigned out = leave_outs.leave_out_matchers(c, c.chunk_bytes_for(Bytes{1} << 30), fastest);
  ASSERT_NE(out & bit(MatcherRun::Scarce), 0U);
  ASSERT_EQ(out & bit(MatcherRun::Random), 0U);
  EXPECT_TRUE(leave_outs.leaves_out_doubling(MatcherRun::Scarce, 256, {}, fastest));
}

// The pipelines' variants doubling alone past the search on one MI250 box (mi250-box.yaml, steps
// charged), All-Reduce of 1 GiB: at 128 and 256 chunks per NPU the plain whole variant (0) took
// 7.191 and 7.064 ms, its paced twin (1) 7.129 and 6.905 ms, the sped-up one (8) 7.061 and
// 7.103 ms, the paced sped-up one (9) 7.115 and 6.859 ms (the fastest at 256). Variants 0 and 8,
// over kPipelineVariantBehind of the fastest and losing ground on it, are left out of 512; 1,
// within it, stays whatever its trend; a variant as far behind as 0 but gaining fast stays, and
// without a time at 128 to show a trend only one over kMatcherFar goes.
TEST(CountLeaveOuts, APipelineVariantFallingBehindItsSiblingsIsLeftOut) {
  const Time fastest = 6'859'174'826;
  EXPECT_TRUE(detail::variant_falls_behind(7'064'030'618, 7'190'531'205, fastest));
  EXPECT_TRUE(detail::variant_falls_behind(7'102'806'874, 7'061'306'840, fastest));
  EXPECT_FALSE(detail::variant_falls_behind(6'904'746'351, 7'128'664'263, fastest));
  EXPECT_FALSE(detail::variant_falls_behind(fastest, 7'114'673'746, fastest));
  // Gaining 0.5 ms a doubling, it would pass the fastest at the next count.
  EXPECT_FALSE(detail::variant_falls_behind(7'064'030'618, 7'564'030'618, fastest));
  EXPECT_FALSE(detail::variant_falls_behind(7'743'833'653, std::nullopt, fastest));
  EXPECT_TRUE(detail::variant_falls_behind(2 * fastest + 1, std::nullopt, fastest));
  // Floors of links of a few bytes a second saturate near 2^63 ps: twice one is no overflow (it
  // wrapped to a negative gain before, and the variant stayed).
  const Time huge = Time{9'000'000'000'000'000'000};
  EXPECT_TRUE(detail::variant_falls_behind(huge, huge + 100'000'000'000'000'000, huge / 3 * 2));
}

// A plan's prediction at the search's last count counts as its time there where it is a likely
// time (an All-Gather's pipelines): made at 10.76 ms at 32 chunks per NPU and predicted at 9.17 ms
// at 64, they are behind the fastest 7.071 ms (their gain, gained again, ends at 7.58 ms). An
// All-Reduce's pipelines predicted there stand as their halves' likely times summed, over what
// they take joined: no time that says they cannot win (ForestColl's 4 MI250 boxes, All-Reduce of
// 1 GiB, whose doubling alone then won at 256: docs/tuning.md).
TEST(CountLeaveOuts, AnAllReducesStandInAtTheLastCountIsNoTimeBehind) {
  const topo::Topology t = example_with_steps("mi250-box.yaml");
  const SynthOptions o;
  const Time fastest = 7'070'616'320;
  for (const CollectiveKind kind : {CollectiveKind::AllGather, CollectiveKind::AllReduce}) {
    detail::CountLeaveOuts leave_outs(t, o);
    leave_outs.record(SynthMethod::PlanPipeline, 32, 10'756'618'192, false);
    leave_outs.record(SynthMethod::PlanPipeline, 64, 9'172'872'062, true);
    EXPECT_EQ(leave_outs.cannot_win(SynthMethod::PlanPipeline, kind, 64, fastest),
              kind == CollectiveKind::AllGather)
        << static_cast<int>(kind);
  }
}

// The pipelines' doubling alone gains at most the series of halving gains up to the last count
// their budgets let it make (cannot_win's `doublings`), not the whole series: nvcluster:8x8,
// Reduce-Scatter of 1 GiB, the pipelines predicted at 5.629 ms at 8 chunks per NPU and 4.035 ms at
// 16, the search's fastest 2.49 ms. The whole series ends at 2.441 ms, under it; the four counts
// their budgets allow (32 to 256: 64 NPUs x 256 chunks x 63 transfers each is within
// kPipelineFastestTransferBudget, 512 not) end at 2.541 ms at most, behind it (made alone at 32,
// they took at least 2.859 ms, 0.2 s of the command's 1.1 s of CPU). Six counts would still
// reach 2.466 ms.
TEST(CountLeaveOuts, PipelinesCannotWinPastWhatTheirBudgetsLetThemGain) {
  const topo::Topology t = topo::generate("nvcluster:8x8");
  const SynthOptions o;
  const Time fastest = 2'489'654'969;
  detail::CountLeaveOuts leave_outs(t, o);
  leave_outs.record(SynthMethod::PlanPipeline, 8, 5'629'024'339, true);
  leave_outs.record(SynthMethod::PlanPipeline, 16, 4'035'017'307, true);
  const auto cannot_win = [&](int doublings) {
    return leave_outs.cannot_win(SynthMethod::PlanPipeline, CollectiveKind::ReduceScatter, 16,
                                 fastest, doublings);
  };
  EXPECT_FALSE(cannot_win(-1));
  EXPECT_TRUE(cannot_win(4));
  EXPECT_TRUE(cannot_win(1));
  EXPECT_FALSE(cannot_win(6));
  // Within kPipelinesContend of the fastest they double whatever their budgets.
  detail::CountLeaveOuts near(t, o);
  near.record(SynthMethod::PlanPipeline, 8, 2'800'000'000, false);
  near.record(SynthMethod::PlanPipeline, 16, 2'700'000'000, false);
  EXPECT_FALSE(
      near.cannot_win(SynthMethod::PlanPipeline, CollectiveKind::ReduceScatter, 16, fastest, 1));
}

// The server plan's time at the last count it made, its excess over the bound's bandwidth term
// halved at each doubling since (the most a doubling gains, as times go), is the least it may take
// at a count: where that does not beat the fastest it is left out (ForestColl's 8 MI250 boxes,
// All-Reduce of 1 GiB: 64.06 ms at 8 chunks per NPU against the fastest 7.57 ms, made again at 32
// for 0.5 s of CPU before). In the first bucket (FirstBucket), with the fastest 10 % over the
// bound: a time 4.1 times as far over it at one chunk per NPU is left out of 2 and 4, not of 8;
// made again at 4, it is judged from there.
TEST(CountLeaveOuts, TheServerPlanFarBehindIsLeftOutWhereHalvingItsExcessCannotWin) {
  const FirstBucket b;
  detail::CountLeaveOuts leave_outs(b.t, b.o);
  const auto bound = [&](int k) {
    return lower_bound(b.t, b.at(k), b.chunk(k), bounds_of(b.o)).bandwidth;
  };
  const Time least = bound(1);
  const Time fastest = least + least / 10;
  const auto behind = [&](int k) {
    return leave_outs.server_plan_far_behind(b.at(k), b.chunk(k), fastest);
  };
  EXPECT_FALSE(behind(2));  // (nothing made yet)
  leave_outs.record(SynthMethod::ServerPlan, 1, least + 41 * (least / 100), false);
  EXPECT_TRUE(behind(2));
  EXPECT_TRUE(behind(4));
  EXPECT_FALSE(behind(8));
  leave_outs.record(SynthMethod::ServerPlan, 4, least + 25 * (least / 100), false);
  EXPECT_TRUE(behind(8));
  EXPECT_FALSE(behind(16));
}

}  // namespace
}  // namespace tenet::synth
