// What the pipelines' and the plain matcher's doublings alone past the chunk search read from the
// counts before (synth/auto/pipeline_doubling.hpp).
#include "synth/auto/pipeline_doubling.hpp"

#include <gtest/gtest.h>

#include <map>

#include "synth/auto/count_leave_outs.hpp"
#include "synth/plans/pipeline_variants.hpp"
#include "synth/tuning.hpp"

namespace tenet::synth::detail {
namespace {

// The MI250 box (mi250-box.yaml, steps charged), All-Reduce of 1 GiB: the pipeline variants timed
// at the search's last count (64 chunks per GCD) and at the doubling's first (128).
const std::map<int, Time> kAt64 = {{0, 7'846'900'747}, {1, 7'892'034'294},  {8, 7'756'919'418},
                                   {9, 7'850'496'014}, {16, 7'807'533'973}, {18, 7'753'824'172}};
const std::map<int, Time> kAt128 = {{0, 7'190'531'205}, {1, 7'128'664'263},  {8, 7'061'306'840},
                                    {9, 7'114'673'746}, {16, 7'341'498'604}, {18, 7'778'643'287}};

// The doubling's second count reads the search's last count as the count before its first: the
// serial variant sped up (18), the fastest at 64 but 1.10x the fastest at 128 and losing ground,
// is left out of 256; without the search's timings it had no trend and was made again (7.773 ms
// there, against 6.859 ms). Its sibling (16), 1.04x the fastest at 128 but gaining fast, stays.
TEST(PipelineDoubling, TheSecondCountsTrendReadsTheSearchsLastCount) {
  SearchedVariants searched;
  searched.timed = {{64, kAt64}};
  EXPECT_EQ(searched.timed_at(64), kAt64);
  EXPECT_TRUE(searched.timed_at(128).empty());
  const uint64_t out = variants_falling_behind(kAt128, searched.timed_at(64));
  EXPECT_EQ(out, uint64_t{1} << 18);
  EXPECT_EQ(variants_falling_behind(kAt128, {}), 0U);
}

// A doubling goes on where its gain, gained again, beats the fastest by more than kDoublingGain:
// the plain matcher on the MI250 box (All-Reduce of 1 GiB: 6.765 ms at 64 chunks per GCD, 6.71 ms
// at 128) gains 0.8 % on itself but not enough on the pipelines' 6.674 ms at 512, while against its
// own 6.71 ms as the fastest it would go on; a gain under 0.5 % never does.
TEST(PipelineDoubling, ADoublingGoesOnWhereItsGainGainedAgainBeatsTheFastest) {
  EXPECT_FALSE(doubling_promises(6'710'000'000, 6'765'000'000, 6'674'000'000));
  EXPECT_TRUE(doubling_promises(6'710'000'000, 6'765'000'000, 6'710'000'000));
  EXPECT_FALSE(doubling_promises(1'000'000, 1'004'000, 1'000'000));
  EXPECT_TRUE(doubling_promises(1'000'000, 1'006'000, 1'000'000));
  // Saturated floors (2^63 - 1 ps) are no overflow.
  const Time huge = Time{9'000'000'000'000'000'000};
  EXPECT_FALSE(doubling_promises(huge, huge - 1, huge));
}

// The pipelines' doubling alone ends where its own times at four counts in a row follow fill and
// steps (T(k) = A + B / k + C k: the model's time at the last from the three before within
// kPipelinesModelTrust of the one made) and the model's next count does not beat the fastest by
// more than kDoublingGain, however far from the bound. random-fabric:33, All-Reduce of 1 GiB (to
// 0.1 us): 6.8466, 6.4978, 6.3401 and 6.2845 ms at 256 to 2048 chunks per NPU; the model says
// 6.2946 at 2048 and 6.303 at 4096 (made before: 6.2635 ms, 0.33 % faster, 0.27 s of the command's
// 1.55 s of CPU).
TEST(PipelineDoubling, EndsWhereItsOwnTimesFollowTheModel) {
  const std::map<int, Time> times = {
      {256, 6'846'600'000}, {512, 6'497'800'000}, {1024, 6'340'100'000}, {2048, 6'284'500'000}};
  EXPECT_TRUE(model_ends_doubling(times, 2048, 6'284'500'000));
  // Not where the model's next count still beats the fastest by 0.5 % (a fastest elsewhere that
  // is slower), nor without four counts in a row to fit and trust it.
  EXPECT_FALSE(model_ends_doubling(times, 2048, 6'400'000'000));
  EXPECT_FALSE(model_ends_doubling(times, 1024, 6'340'100'000));
  std::map<int, Time> gap = times;
  gap.erase(512);
  EXPECT_FALSE(model_ends_doubling(gap, 2048, 6'284'500'000));
  // The doubling's own record of them, where steps are charged.
  DoublingModel model(true), bytes_only(false);
  for (const auto& [k, time] : times) {
    EXPECT_EQ(model.ends_at(k, time, time), k == 2048) << k;
    EXPECT_FALSE(bytes_only.ends_at(k, time, time)) << k;
  }
}

// Times that stray from the model do not end the doubling. random-fabric:81, All-Reduce of 1 GiB:
// 7.137, 6.984, 6.798, 6.748 and 6.717 ms at 128 to 2048 chunks per NPU: the gain grew from 256 to
// 512 (no fill term to fit at 1024), and at 2048 the model said 6.809 ms (1.4 % off). Fit to the
// search's counts before, which the doubling's did not follow, the model ended it at 128: 6.656 ->
// 6.924 ms (tried, not kept). Nor do times with no step term (bytes only: T(k) = A + B / k).
TEST(PipelineDoubling, TimesOffTheModelDoNotEndIt) {
  const std::map<int, Time> times = {{128, 7'137'000'000},
                                     {256, 6'984'000'000},
                                     {512, 6'798'000'000},
                                     {1024, 6'748'000'000},
                                     {2048, 6'717'000'000}};
  EXPECT_FALSE(model_ends_doubling(times, 1024, 6'656'000'000));
  EXPECT_FALSE(model_ends_doubling(times, 2048, 6'656'000'000));
  std::map<int, Time> bytes_only;
  for (int k = 64; k <= 512; k *= 2) bytes_only[k] = 5'000'000'000 + 64'000'000'000 / k;
  EXPECT_FALSE(model_ends_doubling(bytes_only, 512, bytes_only[512]));
}

}  // namespace
}  // namespace tenet::synth::detail
