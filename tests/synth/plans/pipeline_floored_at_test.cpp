// The flow plan's pipelines under PipelineOptions::floored_at (the chunk search's doubling sets it
// where a count's time, whatever it is, ends the doubling): a variant whose floor
// (synth::time_floor) is at least it is not timed, and reports that floor. Over every variant's
// time nothing changes; under every floor nothing is timed, and what stands for the count is a
// floor, said so (SynthOptions::floored); just over the fastest variant's time it is still the
// answer.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>

#include "synth/plans/all_reduce.hpp"
#include "synth/synthesizer.hpp"
#include "topo/generators.hpp"

namespace tenet::synth {
namespace {

struct Pipelines {
  std::optional<Algorithm> algorithm;
  bool floored = false;
  std::map<int, Time> reported;  // per variant, its time (or floor, where not timed)
};

// Every variant of the pipelines for `c` made (none left out by its prediction), under
// `floored_at`.
Pipelines pipelines(const topo::Topology& t, const Collective& c, Bytes chunk, Time floored_at) {
  Pipelines run;
  SynthOptions o;
  o.pipelines.predicted = false;
  o.pipelines.floored_at = floored_at;
  o.floored = &run.floored;
  o.pipelines.on_variant = [&run](int v, Time time) { run.reported[v] = time; };
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

}  // namespace
}  // namespace tenet::synth
