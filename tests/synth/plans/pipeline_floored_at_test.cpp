// The flow plan's pipelines under PipelineOptions::floored_at (the chunk search's doubling sets it
// where a count's time, whatever it is, ends the doubling): a variant whose floor
// (synth::time_floor) is at least it is not timed, and reports that floor. Over every variant's
// time nothing changes; under every floor nothing is timed, and what stands for the count is a
// floor, said so (SynthOptions::floored); just over the fastest variant's time it is still the
// answer. Also what the doubling passes with it and reads: each variant's floor (on_floor) and,
// at the count before, its floor or time (floors_before); the variants it leaves out (left_out).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "synth/plans/all_reduce.hpp"
#include "synth/plans/pipeline_variants.hpp"
#include "synth/synthesizer.hpp"
#include "topo/generators.hpp"

namespace tenet::synth {
namespace {

struct Pipelines {
  std::optional<Algorithm> algorithm;
  bool floored = false;
  std::map<int, Time> reported;  // per variant, its time (or floor, where not timed)
  std::map<int, Time> floors;    // per variant, its floor where one was computed (on_floor)
  std::map<int, Time> timed;     // per variant timed, its time (on_timed)
};

// Every variant of the pipelines for `c` made (none left out by its prediction), under
// `floored_at`, with `before` as each variant's floor at the count before (floors_before) and
// `left_out` (bits) not made, `to_beat` the caller's time to beat.
Pipelines pipelines(const topo::Topology& t, const Collective& c, Bytes chunk, Time floored_at,
                    const std::map<int, Time>* before = nullptr, uint64_t left_out = 0,
                    Time to_beat = -1) {
  Pipelines run;
  SynthOptions o;
  o.to_beat = to_beat;
  o.pipelines.predicted = false;
  o.pipelines.floored_at = floored_at;
  o.pipelines.floors_before = before;
  o.pipelines.left_out = left_out;
  o.floored = &run.floored;
  o.pipelines.on_variant = [&run](int v, Time time) { run.reported[v] = time; };
  o.pipelines.on_floor = [&run](int v, Time floor) { run.floors[v] = floor; };
  o.pipelines.on_timed = [&run](int v, Time time) { run.timed[v] = time; };
  run.algorithm = detail::synthesize_with(t, c, chunk, o, SynthMethod::PlanPipeline);
  return run;
}

// f(t, c, chunk, all) on random fabrics 1-6 x All-Gather, Reduce-Scatter and All-Reduce, `all`
// the pipelines without floored_at, where they are made (a flow plan applies): at least 12 cases.
template <typename F>
void for_each_made(F&& f) {
  int compared = 0;
  for (int seed = 1; seed <= 6; ++seed) {
    topo::Topology t = topo::generate("random-fabric:" + std::to_string(seed));
    t.set_charges_steps(true);
    for (const CollectiveKind kind :
         {CollectiveKind::AllGather, CollectiveKind::ReduceScatter, CollectiveKind::AllReduce}) {
      SCOPED_TRACE(fmt::format("random-fabric:{} {}", seed, to_string(kind)));
      const Collective c = Collective::over_all(t, kind, 4);
      const Bytes chunk = c.chunk_bytes_for(Bytes{64} << 20);
      const Pipelines all = pipelines(t, c, chunk, -1);
      if (!all.algorithm) continue;  // no flow plan here
      f(t, c, chunk, all);
      ++compared;
    }
  }
  EXPECT_GE(compared, 12);
}

TEST(PipelineFlooredAt, OverEveryVariantsTimeNothingChanges) {
  for_each_made(
      [&](const topo::Topology& t, const Collective& c, Bytes chunk, const Pipelines& all) {
        Time slowest = 0;
        for (const auto& [v, time] : all.reported) slowest = std::max(slowest, time);
        const Pipelines over = pipelines(t, c, chunk, slowest + 1);
        ASSERT_TRUE(over.algorithm);
        EXPECT_FALSE(over.floored);
        EXPECT_EQ(over.algorithm->claimed_time, all.algorithm->claimed_time);
        EXPECT_EQ(over.algorithm->size(), all.algorithm->size());
        EXPECT_EQ(over.algorithm->method, all.algorithm->method);
        EXPECT_EQ(over.reported, all.reported);
      });
}

TEST(PipelineFlooredAt, UnderEveryFloorNothingIsTimedAndTheFloorsAreNoMoreThanTheFastest) {
  for_each_made(
      [&](const topo::Topology& t, const Collective& c, Bytes chunk, const Pipelines& all) {
        const Pipelines under = pipelines(t, c, chunk, 1);  // 1 ps: under every floor
        ASSERT_TRUE(under.algorithm);
        EXPECT_TRUE(under.floored);
        ASSERT_FALSE(under.reported.empty());
        // (Fewer where some are split variants: they run only while the fastest so far is far from
        // the bound, and the floor standing for it may not be.)
        for (const auto& [v, floor] : under.reported) EXPECT_TRUE(all.reported.contains(v)) << v;
        // (A variant reports its own floor, or its unpaced twin's, which is no more: each at most
        // its time, so the least at most the fastest's.)
        const Time least =
            std::min_element(under.reported.begin(), under.reported.end(),
                             [](const auto& x, const auto& y) { return x.second < y.second; })
                ->second;
        EXPECT_LE(least, all.algorithm->claimed_time);
        // What stands for the count claims the least floor (an All-Reduce's is its first variant
        // floored, joined and untimed; the others' is made of nothing).
        EXPECT_EQ(under.algorithm->claimed_time, least);
        if (c.kind != CollectiveKind::AllReduce) {
          EXPECT_EQ(under.algorithm->size(), 0u);
        }
      });
}

TEST(PipelineFlooredAt, JustOverTheFastestItIsStillTheAnswer) {
  for_each_made(
      [&](const topo::Topology& t, const Collective& c, Bytes chunk, const Pipelines& all) {
        const Pipelines over = pipelines(t, c, chunk, all.algorithm->claimed_time + 1);
        ASSERT_TRUE(over.algorithm);
        // (An All-Reduce's first variant, where its floor is over the mark, stood for the count
        // until one was timed, and said so, as one over SynthOptions::to_beat does.)
        if (c.kind != CollectiveKind::AllReduce) {
          EXPECT_FALSE(over.floored);
        }
        EXPECT_EQ(over.algorithm->claimed_time, all.algorithm->claimed_time);
        // Every variant that reports otherwise than before reports a floor over the fastest.
        for (const auto& [v, time] : over.reported)
          if (time != all.reported.at(v)) {
            EXPECT_GE(time, all.algorithm->claimed_time) << "variant " << v;
          }
      });
}

// Each variant's floor at the count before as `time`.
std::map<int, Time> each_before(const Pipelines& run, Time time) {
  std::map<int, Time> before;
  for (const auto& [v, reported] : run.reported) before[v] = time;
  return before;
}

// Each floor reported (on_floor) is at most the variant's time; a variant floored reports its
// floor as its time.
TEST(PipelineFlooredAt, EachFloorReportedIsAtMostItsTime) {
  int floors = 0;
  for_each_made(
      [&](const topo::Topology& t, const Collective& c, Bytes chunk, const Pipelines& all) {
        const std::map<int, Time> under_before = each_before(all, 0);
        const Pipelines timed = pipelines(t, c, chunk, -1, &under_before);
        const Pipelines under = pipelines(t, c, chunk, 1);
        for (const auto& [v, floor] : under.floors) {
          ++floors;
          EXPECT_EQ(floor, under.reported.at(v)) << v;
          ASSERT_TRUE(timed.reported.contains(v)) << v;
          EXPECT_LE(floor, timed.reported.at(v)) << v;
        }
        for (const auto& [v, floor] : all.floors) EXPECT_LE(floor, timed.reported.at(v)) << v;
      });
  EXPECT_GE(floors, 12);
}

// on_timed reports the variants timed, with the times on_variant reports, and no other (the chunk
// search's doubling judges which variants fall behind by their timings alone): every variant
// reported but not timed reports its own floor or its unpaced twin's (on_floor); under every
// floor none is timed.
TEST(PipelineFlooredAt, OnTimedReportsTheVariantsTimedAlone) {
  int timed = 0, untimed = 0;
  for_each_made(
      [&](const topo::Topology& t, const Collective& c, Bytes chunk, const Pipelines& all) {
        for (const auto& [v, time] : all.timed) {
          ++timed;
          ASSERT_TRUE(all.reported.contains(v)) << v;
          EXPECT_EQ(time, all.reported.at(v)) << v;
        }
        for (const auto& [v, time] : all.reported) {
          if (all.timed.contains(v)) continue;
          ++untimed;
          const std::optional<int> twin = detail::unpaced_twin(v);
          const bool own = all.floors.contains(v) && all.floors.at(v) == time;
          const bool twins = twin && all.floors.contains(*twin) && all.floors.at(*twin) == time;
          EXPECT_TRUE(own || twins) << v;
        }
        EXPECT_TRUE(pipelines(t, c, chunk, 1).timed.empty());
      });
  EXPECT_GE(timed, 12);
  EXPECT_GE(untimed, 1);
}

// A variant whose floor at the count before (PipelineOptions::floors_before) was under the mark its
// floor would be held against is timed without that floor: under every floor, with every variant
// under the mark before, nothing is floored, and each reports its time (at least what it reported
// among all, a floor where not timed), the fastest the answer; at the mark before, the floors
// decide as without times before.
TEST(PipelineFlooredAt, AVariantUnderTheMarkAtTheCountBeforeIsTimedNotFloored) {
  for_each_made(
      [&](const topo::Topology& t, const Collective& c, Bytes chunk, const Pipelines& all) {
        const std::map<int, Time> under_before = each_before(all, 0);
        const Pipelines timed = pipelines(t, c, chunk, 1, &under_before);
        ASSERT_TRUE(timed.algorithm);
        EXPECT_FALSE(timed.floored);
        EXPECT_EQ(timed.algorithm->claimed_time, all.algorithm->claimed_time);
        EXPECT_EQ(timed.reported, pipelines(t, c, chunk, -1, &under_before).reported);
        for (const auto& [v, time] : timed.reported) {
          ASSERT_TRUE(all.reported.contains(v)) << v;
          EXPECT_GE(time, all.reported.at(v)) << v;
        }
        const std::map<int, Time> at_mark = each_before(all, 1);
        const Pipelines floored = pipelines(t, c, chunk, 1, &at_mark);
        const Pipelines under = pipelines(t, c, chunk, 1);
        EXPECT_TRUE(floored.floored);
        EXPECT_EQ(floored.reported, under.reported);
        EXPECT_EQ(floored.algorithm->claimed_time, under.algorithm->claimed_time);
      });
}

// A variant left out (PipelineOptions::left_out) is not made: the fastest left out, the answer is
// another's, no faster; every variant left out, nothing is made.
TEST(PipelineLeftOut, AVariantLeftOutIsNotMade) {
  for_each_made(
      [&](const topo::Topology& t, const Collective& c, Bytes chunk, const Pipelines& all) {
        const auto fastest =
            std::min_element(all.reported.begin(), all.reported.end(),
                             [](const auto& x, const auto& y) { return x.second < y.second; });
        ASSERT_EQ(fastest->second, all.algorithm->claimed_time);
        const Pipelines others = pipelines(t, c, chunk, -1, nullptr, uint64_t{1} << fastest->first);
        EXPECT_FALSE(others.reported.contains(fastest->first));
        if (all.reported.size() > 1) {
          ASSERT_TRUE(others.algorithm);
          EXPECT_GE(others.algorithm->claimed_time, all.algorithm->claimed_time);
        }
        uint64_t every = 0;
        for (const auto& [v, time] : all.reported) every |= uint64_t{1} << v;
        const Pipelines none = pipelines(t, c, chunk, -1, nullptr, every);
        EXPECT_TRUE(none.reported.empty());
        EXPECT_FALSE(none.algorithm);
      });
}

// The split variants run where the fastest so far is far from the bound (for_each_pipeline_
// variant); where every other variant was left out, the caller's time to beat stands for the
// fastest: far from the bound, each split variant that ran among all runs again.
TEST(PipelineLeftOut, SplitVariantsRunWhereEveryOtherIsLeftOut) {
  int split_runs = 0;
  for_each_made(
      [&](const topo::Topology& t, const Collective& c, Bytes chunk, const Pipelines& all) {
        uint64_t others = 0, split = 0;
        for (const auto& [v, time] : all.reported)
          (v < detail::kPipelineInTurn && detail::pipeline_variant(v).shape.split > 1 ? split
                                                                                      : others) |=
              uint64_t{1} << v;
        if (split == 0) return;  // (near the bound, or on one speed: none ran)
        ++split_runs;
        const Pipelines alone =
            pipelines(t, c, chunk, -1, nullptr, others, 10 * all.algorithm->claimed_time);
        uint64_t ran = 0;
        for (const auto& [v, time] : alone.reported) ran |= uint64_t{1} << v;
        EXPECT_EQ(ran, split);
      });
  EXPECT_GE(split_runs, 1);
}

}  // namespace
}  // namespace tenet::synth
