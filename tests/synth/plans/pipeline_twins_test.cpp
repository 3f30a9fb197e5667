// A paced pipeline variant is its unpaced twin's transfers with one more dependency for some
// (detail::unpaced_twin): its floor (synth::time_floor) is never under the twin's, so where the
// twin's floor lost to the time to beat the paced one is not made, and the pipelines' answer is the
// same as with every variant made.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>

#include "synth/cost/timing.hpp"
#include "synth/memo.hpp"
#include "synth/plans/all_reduce.hpp"
#include "synth/plans/pipeline_variants.hpp"
#include "synth/synthesizer.hpp"
#include "topo/generators.hpp"

namespace tenet::synth {
namespace {

using detail::kPipelineInTurn;
using detail::unpaced_twin;

// The flow plan's pipelines for `c`, the variants in `mask` alone (0: every one), `to_beat` as the
// caller's time to beat; `reported` receives each variant's reported time.
std::optional<Algorithm> pipelines(const topo::Topology& t, const Collective& c, Bytes chunk,
                                   uint64_t mask, Time to_beat = -1,
                                   std::map<int, Time>* reported = nullptr) {
  SynthOptions o;
  o.pipelines.variants = mask;
  o.pipelines.predicted = false;  // every variant made unless its floor loses
  o.to_beat = to_beat;
  if (reported) o.pipelines.on_variant = [reported](int v, Time time) { (*reported)[v] = time; };
  return detail::synthesize_with(t, c, chunk, o, SynthMethod::PlanPipeline);
}

TEST(PipelineTwins, OnlyPacedVariantsHaveATwinAndItIsTheSameShapeUnpaced) {
  int paced = 0;
  for (int v = 0; v < kPipelineInTurn; ++v) {
    const detail::PipelineVariant pv = detail::pipeline_variant(v);
    const std::optional<int> twin = unpaced_twin(v);
    EXPECT_EQ(twin.has_value(), pv.paced) << v;
    if (!twin) continue;
    ++paced;
    const detail::PipelineVariant tv = detail::pipeline_variant(*twin);
    EXPECT_FALSE(tv.paced) << v;
    EXPECT_EQ(tv.sped_up, pv.sped_up) << v;
    EXPECT_EQ(tv.shape.lanes, pv.shape.lanes) << v;
    EXPECT_EQ(tv.shape.split, pv.shape.split) << v;
    EXPECT_EQ(tv.shape.serial, pv.shape.serial) << v;
  }
  EXPECT_EQ(paced, 8);  // lanes x split x sped up
  EXPECT_FALSE(unpaced_twin(-1));
  EXPECT_FALSE(unpaced_twin(kPipelineInTurn + 1));  // an All-Reduce's halves in turn
}

// On random fabrics of mixed speeds (where the paced variants run), with and without per-step
// costs, every paced variant made alone has a floor at least its twin's.
TEST(PipelineTwins, APacedVariantsFloorIsAtLeastItsUnpacedTwins) {
  int compared = 0;
  for (int seed = 1; seed <= 6; ++seed)
    for (const bool steps : {true, false}) {
      topo::Topology t = topo::generate("random-fabric:" + std::to_string(seed));
      t.set_charges_steps(steps);
      for (const CollectiveKind kind : {CollectiveKind::AllGather, CollectiveKind::AllReduce}) {
        SCOPED_TRACE(fmt::format("{} {}{}", seed, to_string(kind), steps ? " steps" : ""));
        const Collective c = Collective::over_all(t, kind, 4);
        const Bytes chunk = c.chunk_bytes_for(Bytes{64} << 20);
        for (int v = 0; v < detail::kPipelineSerial; ++v) {
          const std::optional<int> twin = unpaced_twin(v);
          if (!twin) continue;
          const std::optional<Algorithm> a = pipelines(t, c, chunk, uint64_t{1} << v);
          const std::optional<Algorithm> b = pipelines(t, c, chunk, uint64_t{1} << *twin);
          if (!a || !b) continue;  // the variant does not apply here
          ASSERT_EQ(a->size(), b->size()) << v;
          EXPECT_GE(time_floor(t, *a), time_floor(t, *b)) << "variant " << v;
          ++compared;
        }
      }
    }
  EXPECT_GE(compared, 24);
}

// Against a time to beat just over the fastest variant's time (as the chunk search's doubling
// sets it), where the paced variants whose twins' floors lose are not made, the answer is the
// fastest variant all the same, and every variant still reports a time.
TEST(PipelineTwins, LeavingOutPacedVariantsWhoseTwinsLostKeepsTheAnswer) {
  for (int seed = 1; seed <= 6; ++seed) {
    topo::Topology t = topo::generate("random-fabric:" + std::to_string(seed));
    t.set_charges_steps(true);
    for (const CollectiveKind kind : {CollectiveKind::AllGather, CollectiveKind::AllReduce}) {
      SCOPED_TRACE(fmt::format("{} {}", seed, to_string(kind)));
      const Collective c = Collective::over_all(t, kind, 4);
      const Bytes chunk = c.chunk_bytes_for(Bytes{64} << 20);
      std::map<int, Time> every, against_fastest;
      const std::optional<Algorithm> all = pipelines(t, c, chunk, 0, -1, &every);
      ASSERT_TRUE(all);
      const std::optional<Algorithm> against =
          pipelines(t, c, chunk, 0, all->claimed_time + 1, &against_fastest);
      ASSERT_TRUE(against);
      EXPECT_EQ(against->claimed_time, all->claimed_time);
      EXPECT_EQ(against->size(), all->size());
      EXPECT_EQ(against->method, all->method);
      EXPECT_EQ(against_fastest.size(), every.size());
    }
  }
}

}  // namespace
}  // namespace tenet::synth
