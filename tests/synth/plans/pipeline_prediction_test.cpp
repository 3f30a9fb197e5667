// The flow plan's pipelines predicted before they are made (pipeline_prediction): a tree's fill
// plus a chunk time at its rate per chunk dealt to it after the first. Exact where nothing
// contends; a variant predicted no faster than what it must beat, by kPipelinePredictedSure, is
// left unmade (PipelineOptions::predicted), and that leaves the pipelines' answer as it was; a
// variant made at a count before, by its own ratio (PipelineCalibration).
#include <gtest/gtest.h>

#include <array>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "synth/cost/timing.hpp"
#include "synth/memo.hpp"
#include "synth/plans/all_reduce.hpp"
#include "synth/plans/pipeline_calibration.hpp"
#include "synth/plans/pipeline_variants.hpp"
#include "synth/plans/pipelines.hpp"
#include "synth/plans/planned.hpp"
#include "synth/plans/tree_packing.hpp"
#include "synth/synthesizer.hpp"
#include "synth/tuning.hpp"
#include "synth/verify/verify.hpp"
#include "tests/synth/test_support.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"

namespace tenet::synth {
namespace {

using detail::pipeline_fill;
using detail::pipeline_prediction;
using detail::PipelineShape;
using detail::StreamSpeedup;

constexpr Time kMicro = kPicosPerSecond / 1'000'000;

// A chain 0 -> 1 -> 2 at 100 GB/s, 1 us a hop, one tree from 0 at the whole bandwidth: its first
// chunk of 1 MB reaches NPU 2 after two hops of 10 us + 1 us; each other chunk 10 us later. Dealt
// 50 chunks: 22 + 49 x 10 = 512 us. A tree dealt none adds nothing.
TEST(PipelinePrediction, IsTheFillPlusAChunkTimePerChunk) {
  const topo::Topology t = topo::parse_yaml(
      "npus: 3\ndefaults: {bw: 100GB/s, lat: 1us}\nlinks:\n"
      "  - {src: 0, dst: 1}\n  - {src: 1, dst: 2}\n");
  PackedTree tr;
  tr.root = 0;
  tr.copies = 1;
  tr.parent = {-1, 0, 1};
  tr.routes = {{}, {{testing::link_between(t, 0, 1)}}, {{testing::link_between(t, 1, 2)}}};
  tr.shares = {{}, {1.0}, {1.0}};
  tr.lanes = tr.shares;
  TreePacking packing;
  packing.k = 1;
  packing.congestion = 1;
  packing.unit = t.link(0).bandwidth;
  packing.trees = {tr, tr};
  const PipelineShape shape;
  const StreamSpeedup at_rates(t, packing, false, false);
  const detail::PipelineFill fill = pipeline_fill(t, packing, 1'000'000, shape, at_rates, 50);
  ASSERT_EQ(fill.last.size(), 2u);
  EXPECT_EQ(fill.last[0], 22 * kMicro);
  EXPECT_EQ(fill.chunk_time[0], 10 * kMicro);
  EXPECT_EQ(pipeline_prediction(fill, std::vector<int>(50, 0), 2).end, 512 * kMicro);
  EXPECT_EQ(pipeline_prediction(fill, std::vector<int>(50, 0), 2).first, 22 * kMicro);
  std::vector<int> dealing(50, 0);
  dealing[7] = -1;  // a chunk of no tree
  EXPECT_EQ(pipeline_prediction(fill, dealing, 2).end, 502 * kMicro);
}

// Down a line nothing contends: a Broadcast from its end streams one chain at the links' whole
// bandwidth, and the pipelines take exactly their prediction, with steps charged (in messages) or
// not.
TEST(PipelinePrediction, IsExactWhereNothingContends) {
  topo::Topology t = topo::generate("line:5");
  for (const bool steps : {false, true}) {
    SCOPED_TRACE(steps ? "steps charged" : "bytes only");
    t.set_charges_steps(steps);
    Collective c = Collective::over_all(t, CollectiveKind::Broadcast, 64);
    const Bytes chunk = c.chunk_bytes_for(Bytes{64} << 20);
    const SynthOptions o;
    const std::optional<detail::PipelinePrediction> predicted =
        detail::predict_pipeline(t, c, chunk, o, 0);
    ASSERT_TRUE(predicted);
    std::optional<Algorithm> a =
        detail::synthesize_plan(t, c, chunk, o, SynthMethod::PlanPipeline, false, 0, 0);
    ASSERT_TRUE(a);
    time(t, *a);
    EXPECT_EQ(a->claimed_time, predicted->end);
    EXPECT_EQ(a->claimed_time, predicted->likely);
  }
}

// Against a time to beat no variant can come near, none is made: each reports its likely time, the
// answer is an algorithm of no transfers claiming the first of them (over the time to beat, said
// by SynthOptions::floored), which the chunk search takes as "cannot beat". Not predicted, they
// are made (an All-Reduce's then floored, untimed, by time_floor).
TEST(PipelinePrediction, VariantsThatCannotBeatAreNotMade) {
  topo::Topology t = topo::generate("random-fabric:142");
  t.set_charges_steps(true);  // (else an All-Reduce's halves also run in turn, each its fastest)
  for (const CollectiveKind kind : {CollectiveKind::AllGather, CollectiveKind::AllReduce}) {
    SCOPED_TRACE(to_string(kind));
    const Collective c = Collective::over_all(t, kind, 4);
    const Bytes chunk = c.chunk_bytes_for(Bytes{64} << 20);
    SynthMemo memo;  // the All-Reduce predicts from the flow plans the run keeps
    for (const bool predicted : {true, false}) {
      SynthOptions o;
      o.memo = &memo;
      o.to_beat = 1;  // 1 ps
      o.pipelines.predicted = predicted;
      bool floored = false;
      o.floored = &floored;
      std::map<int, Time> reported;
      o.pipelines.on_variant = [&](int v, Time time) { reported.emplace(v, time); };
      const std::optional<Algorithm> a =
          detail::synthesize_with(t, c, chunk, o, SynthMethod::PlanPipeline);
      ASSERT_TRUE(a);
      ASSERT_FALSE(reported.empty());
      if (predicted) {
        EXPECT_TRUE(floored);
        EXPECT_GE(a->claimed_time, o.to_beat);
        EXPECT_EQ(a->size(), 0) << a->method;
        EXPECT_EQ(a->claimed_time, reported.begin()->second);
      } else {
        EXPECT_GT(a->size(), 0);
      }
    }
  }
}

// Against a fastest found elsewhere (PipelineOptions::predicted_against, the chunk search's at the
// counts before) under what the caller has (SynthOptions::to_beat), variants predicted to lose to
// it are not made either; the answer of no transfers that stands for them claims at least the
// caller's time to beat, so it never replaces what the caller has.
TEST(PipelinePrediction, APredictionAgainstAFastestFoundElsewhereCannotReplaceWhatTheCallerHas) {
  topo::Topology t = topo::generate("random-fabric:142");
  t.set_charges_steps(true);
  for (const CollectiveKind kind : {CollectiveKind::AllGather, CollectiveKind::AllReduce}) {
    SCOPED_TRACE(to_string(kind));
    const Collective c = Collective::over_all(t, kind, 4);
    const Bytes chunk = c.chunk_bytes_for(Bytes{64} << 20);
    SynthMemo memo;
    SynthOptions o;
    o.memo = &memo;
    o.to_beat = Time{1} << 40;          // about a second: every variant beats it
    o.pipelines.predicted_against = 1;  // 1 ps: no variant does
    bool floored = false;
    o.floored = &floored;
    int reported = 0;
    o.pipelines.on_variant = [&](int, Time time) {
      ++reported;
      EXPECT_GE(time, o.to_beat);
    };
    const std::optional<Algorithm> a =
        detail::synthesize_with(t, c, chunk, o, SynthMethod::PlanPipeline);
    ASSERT_TRUE(a);
    EXPECT_GT(reported, 0);
    EXPECT_EQ(a->size(), 0) << a->method;
    EXPECT_GE(a->claimed_time, o.to_beat);
  }
}

// What a prediction is measured against (made_both_ways).
enum class Against : uint8_t {
  Nothing,         // no time: every variant is made
  ToBeat,          // SynthOptions::to_beat 2 % over the fastest
  FoundElsewhere,  // PipelineOptions::predicted_against 2 % over the fastest
};

// The flow plan's pipelines of `c`: [0] every variant made and timed, [1] variants left unmade on
// their prediction, against a time 2 % over [0]'s as `against` says.
std::array<std::optional<Algorithm>, 2> made_both_ways(const topo::Topology& t, const Collective& c,
                                                       Bytes chunk, Against against) {
  std::array<std::optional<Algorithm>, 2> made;
  for (const bool predicted : {false, true}) {
    SynthMemo memo;
    SynthOptions o;
    o.memo = &memo;
    o.pipelines.predicted = predicted;
    if (predicted && made[0]) {
      const Time over = made[0]->claimed_time + made[0]->claimed_time / 50;
      if (against == Against::ToBeat) o.to_beat = over;
      if (against == Against::FoundElsewhere) o.pipelines.predicted_against = over;
    }
    made[predicted] = detail::synthesize_with(t, c, chunk, o, SynthMethod::PlanPipeline);
  }
  return made;
}

// On random fabrics (steps charged on two in three, 1 to 256 chunks per NPU, 16 MiB to 4 GiB), the
// pipelines' fastest variant is the same with and without the prediction leaving variants unmade
// (200 fabrics when written): it verifies, and no variant left out would have been faster, also
// where the trees stream many chunks each (PipelineCalibration::uncalibrated).
TEST(PipelinePrediction, LeavesTheFastestVariantMade) {
  std::mt19937_64 rng(36);
  int compared = 0;
  for (int i = 0; i < 50; ++i) {
    topo::Topology t = testing::random_topology(rng, 8, /*steps=*/true);
    t.set_charges_steps(i % 3 != 0);
    const CollectiveKind kind = i % 2 == 0 ? CollectiveKind::AllGather : CollectiveKind::AllReduce;
    const Collective c = Collective::over_all(t, kind, 1 << (i / 2 % 5 * 2));
    const Bytes chunk = c.chunk_bytes_for(Bytes{16} << (20 + i % 5 * 2));
    const auto made = made_both_ways(t, c, chunk, Against::Nothing);
    ASSERT_EQ(made[0].has_value(), made[1].has_value()) << "topology " << i;
    if (!made[0]) continue;
    ++compared;
    EXPECT_EQ(made[1]->claimed_time, made[0]->claimed_time) << "topology " << i;
    const Report r = verify(t, *made[1], {.max_reported = 3});
    EXPECT_TRUE(r.correct()) << "topology " << i << ": " << testing::violation_text(r);
  }
  EXPECT_GE(compared, 20);
}

// Against a time to beat, or a fastest found elsewhere, just over the fastest variant's time, an
// All-Reduce's prediction (joined_prediction, scaled by kAllReducePredictedSure) leaves the fastest
// variant made: on random fabrics (steps charged on two in three; 1 to 16 chunks per NPU; 1 MiB to
// 1 GiB) the answer is the fastest of every variant made and timed. (Single variants may end under
// the scaled prediction, the serial ones on these fabrics at 0.65 of it, where they are not the
// fastest.)
TEST(PipelinePrediction, AnAllReduceKeepsItsFastestVariantAgainstATimeToBeat) {
  for (const Against against : {Against::ToBeat, Against::FoundElsewhere}) {
    SCOPED_TRACE(against == Against::ToBeat ? "to beat" : "found elsewhere");
    std::mt19937_64 rng(58);
    int compared = 0;
    for (int i = 0; i < 40; ++i) {
      topo::Topology t = testing::random_topology(rng, 8, /*steps=*/true);
      t.set_charges_steps(i % 3 != 0);
      const Collective c = Collective::over_all(t, CollectiveKind::AllReduce, 1 << (i % 5));
      const Bytes chunk = c.chunk_bytes_for(Bytes{1} << (20 + i % 11));
      const auto made = made_both_ways(t, c, chunk, against);
      ASSERT_EQ(made[0].has_value(), made[1].has_value()) << "topology " << i;
      if (!made[0]) continue;
      ++compared;
      EXPECT_EQ(made[1]->claimed_time, made[0]->claimed_time) << "topology " << i;
      EXPECT_GT(made[1]->size(), 0) << "topology " << i;
    }
    EXPECT_GE(compared, 20);
  }
}

// A paced variant not made before takes its unpaced twin's ratio where the twin was left untimed
// at its floor: the paced one's floor there was at least the twin's (unpaced_twin), over the same
// prediction. ForestColl's 8 MI250 boxes, All-Reduce of 1 GiB: at 32 chunks per NPU variant 0
// floored at 12.86 ms against a joined prediction of 10.57 ms; at 64 its paced twin (1), predicted
// at 8.14 ms, was made for a floor of 10.12 ms against the fastest 7.57 ms. A twin's timed ratio
// says nothing of the paced variant's (pacing may be faster), nor a paced variant's of its twin.
TEST(PipelinePrediction, APacedVariantTakesItsFlooredTwinsRatio) {
  const int whole = 0, paced = 1;
  ASSERT_EQ(detail::unpaced_twin(paced), whole);
  PipelineCalibration floored;
  floored.record(whole, true, 12'864'255'696, 10'571'146'032, kPipelineCalibratedFrom, true);
  const double from_twin = floored.sure(paced, true, kAllReducePredictedSure);
  EXPECT_DOUBLE_EQ(from_twin, kPipelineCalibratedSure * 12'864'255'696 / 10'571'146'032.0);
  EXPECT_GT(from_twin * 8'138'976'048, 7'570'832'640.0);  // left unmade
  EXPECT_EQ(floored.sure(paced, false, kAllReducePredictedSure), kAllReducePredictedSure);
  // Its own record first.
  floored.record(paced, true, 5'000'000'000, 10'000'000'000, kPipelineCalibratedFrom);
  EXPECT_EQ(floored.sure(paced, true, kAllReducePredictedSure), kAllReducePredictedSure);
  PipelineCalibration timed;
  timed.record(whole, true, 12'864'255'696, 10'571'146'032, kPipelineCalibratedFrom);
  EXPECT_EQ(timed.sure(paced, true, kAllReducePredictedSure), kAllReducePredictedSure);
  PipelineCalibration twin_of_paced;
  twin_of_paced.record(paced, true, 12'864'255'696, 10'571'146'032, kPipelineCalibratedFrom, true);
  EXPECT_EQ(twin_of_paced.sure(whole, true, kAllReducePredictedSure), kAllReducePredictedSure);
}

// Once a variant was made in a chunk search, it is predicted by its own ratio of made over
// predicted time (PipelineCalibration): against a time to beat under the fastest variant made,
// but not by kPipelineCalibratedSure, no variant is made again, where kPipelinePredictedSure alone
// makes one. The calibration's ratios come from a first run that made every variant.
TEST(PipelinePrediction, AVariantMadeBeforeIsPredictedByItsOwnRatio) {
  topo::Topology t = topo::generate("nvcluster:2x8");
  t.set_charges_steps(true);
  for (const CollectiveKind kind : {CollectiveKind::AllGather, CollectiveKind::AllReduce}) {
    SCOPED_TRACE(to_string(kind));
    const Collective c = Collective::over_all(t, kind, 16);
    const Bytes chunk = c.chunk_bytes_for(Bytes{64} << 20);
    SynthMemo memo;
    SynthOptions o;
    o.memo = &memo;
    PipelineCalibration calibration;
    o.pipelines.calibration = &calibration;
    o.pipelines.predicted = false;  // every variant made
    const std::optional<Algorithm> every =
        detail::synthesize_with(t, c, chunk, o, SynthMethod::PlanPipeline);
    ASSERT_TRUE(every);
    o.pipelines.predicted = true;
    o.to_beat = static_cast<Time>(0.88 * static_cast<double>(every->claimed_time));
    bool predicted = false, floored = false;
    o.predicted = &predicted;
    o.floored = &floored;
    const std::optional<Algorithm> calibrated =
        detail::synthesize_with(t, c, chunk, o, SynthMethod::PlanPipeline);
    ASSERT_TRUE(calibrated);
    EXPECT_TRUE(predicted);
    EXPECT_EQ(calibrated->size(), 0) << calibrated->method;
    EXPECT_GE(calibrated->claimed_time, o.to_beat);
    o.pipelines.calibration = nullptr;
    predicted = false;
    const std::optional<Algorithm> uncalibrated =
        detail::synthesize_with(t, c, chunk, o, SynthMethod::PlanPipeline);
    ASSERT_TRUE(uncalibrated);
    EXPECT_FALSE(predicted);
    EXPECT_GT(uncalibrated->size(), 0) << uncalibrated->method;
  }
}

// A variant's share (PipelineCalibration::sure): the default until it was made at a count whose
// trees stream kPipelineCalibratedFrom chunks each; then kPipelineCalibratedSure of its ratio where
// that is more; and 1 where it ended exactly at its prediction (no margin: it runs the schedule
// the prediction times). An All-Reduce's joined variant is kept apart from the half's of that id.
TEST(PipelineCalibration, AVariantThatEndedAtItsPredictionKeepsNoMargin) {
  PipelineCalibration c;
  c.record(0, false, 1100, 1000, kPipelineCalibratedFrom);
  c.record(1, false, 500, 1000, kPipelineCalibratedFrom);
  c.record(2, false, 1000, 1000, kPipelineCalibratedFrom - 1);  // too few chunks per tree
  c.record(16, false, 1000, 1000, kPipelineCalibratedFrom);
  EXPECT_DOUBLE_EQ(c.sure(0, false, 0.65), kPipelineCalibratedSure * 1.1);
  EXPECT_DOUBLE_EQ(c.sure(1, false, 0.65), 0.65);
  EXPECT_DOUBLE_EQ(c.sure(2, false, 0.65), 0.65);
  EXPECT_TRUE(c.exact(16, false));
  EXPECT_FALSE(c.exact(0, false));
  EXPECT_DOUBLE_EQ(c.sure(16, false, 0.65), 1.0);
  EXPECT_DOUBLE_EQ(c.sure(16, true, 0.7), 0.7);
  c.record(16, false, 1001, 1000, kPipelineCalibratedFrom);  // the last count made decides
  EXPECT_DOUBLE_EQ(c.sure(16, false, 0.65), kPipelineCalibratedSure * 1.001);
}

// Before a variant is made, its share grows with the chunks its trees stream each (what the
// prediction leaves out is a fill, a smaller part of a longer stream): kPipelinePredictedSure for a
// few, never over kPipelinePredictedSureMost, and never less for more.
TEST(PipelineCalibration, AVariantNeverMadeIsPredictedSurerWhereTreesStreamMany) {
  EXPECT_DOUBLE_EQ(PipelineCalibration::uncalibrated(1), kPipelinePredictedSure);
  EXPECT_DOUBLE_EQ(PipelineCalibration::uncalibrated(kPipelineCalibratedFrom),
                   kPipelinePredictedSure);
  EXPECT_DOUBLE_EQ(PipelineCalibration::uncalibrated(1e9), kPipelinePredictedSureMost);
  EXPECT_GT(PipelineCalibration::uncalibrated(32), kPipelinePredictedSure);
  double last = 0;
  for (double per_tree = 0.5; per_tree < 1e4; per_tree *= 1.5) {
    const double sure = PipelineCalibration::uncalibrated(per_tree);
    EXPECT_GE(sure, last) << per_tree << " chunks per tree";
    EXPECT_LE(sure, kPipelinePredictedSureMost);
    last = sure;
  }
}

// The time a variant must beat is the fastest made so far or the caller's, the less (either where
// the other is unset).
TEST(PipelinePrediction, AVariantMustBeatTheCallersTimeToo) {
  EXPECT_EQ(detail::under_callers(100, 90), 90);
  EXPECT_EQ(detail::under_callers(90, 100), 90);
  EXPECT_EQ(detail::under_callers(-1, 100), 100);
  EXPECT_EQ(detail::under_callers(100, -1), 100);
  EXPECT_EQ(detail::under_callers(-1, -1), -1);
}

// On random fabrics (steps charged; 8 then 16, or 16 then 32, chunks per NPU; 64 MiB to 1 GiB) a
// chunk search's calibration from one count (every variant made there) leaves, at twice the
// count, the pipelines' answer that of every variant made, against a time to beat just over it,
// wherever the variant that made it ended exactly at its prediction at the count before (those
// keep no margin: PipelineCalibration).
TEST(PipelinePrediction, AVariantExactBeforeIsMadeWhereItWins) {
  std::mt19937_64 rng(61);
  int exact_fastest = 0;
  for (int i = 0; i < 60; ++i) {
    topo::Topology t = testing::random_topology(rng, 8, /*steps=*/true);
    t.set_charges_steps(true);
    const CollectiveKind kind =
        i % 2 == 0 ? CollectiveKind::AllGather : CollectiveKind::ReduceScatter;
    const int count = 8 << (i % 2);
    const Bytes total = Bytes{64} << (20 + i % 3 * 2);
    SynthMemo memo;
    PipelineCalibration calibration;
    std::map<int, Time> every;  // per variant, made at twice `count`
    SynthOptions o;
    o.memo = &memo;
    o.pipelines.calibration = &calibration;
    o.pipelines.predicted = false;
    Collective c = Collective::over_all(t, kind, count);
    if (!detail::synthesize_with(t, c, c.chunk_bytes_for(total), o, SynthMethod::PlanPipeline))
      continue;
    c.chunks_per_npu = 2 * count;
    const Bytes chunk = c.chunk_bytes_for(total);
    PipelineCalibration unchanged = calibration;  // (the run of every variant records too)
    o.pipelines.on_variant = [&](int v, Time time) { every[v] = time; };
    const std::optional<Algorithm> all =
        detail::synthesize_with(t, c, chunk, o, SynthMethod::PlanPipeline);
    ASSERT_TRUE(all) << "topology " << i;
    o.pipelines.calibration = &unchanged;
    o.pipelines.predicted = true;
    o.pipelines.on_variant = nullptr;
    o.to_beat = all->claimed_time + 1;
    const std::optional<Algorithm> calibrated =
        detail::synthesize_with(t, c, chunk, o, SynthMethod::PlanPipeline);
    ASSERT_TRUE(calibrated) << "topology " << i;
    // The variant that made the fastest, and whether it ended at its prediction the count before.
    const auto fastest =
        std::min_element(every.begin(), every.end(),
                         [](const auto& x, const auto& y) { return x.second < y.second; });
    ASSERT_NE(fastest, every.end());
    if (!unchanged.exact(fastest->first, false)) continue;
    ++exact_fastest;
    EXPECT_EQ(calibrated->claimed_time, all->claimed_time) << "topology " << i;
  }
  EXPECT_GE(exact_fastest, 3);
}

// On a topology that is its own reverse (topo::twin_links), an All-Reduce's two halves stream the
// same trees, each link renamed to its twin: their predictions are the same, so the All-Reduce's
// joined prediction asks one (synthesize_with). Every variant at 1, 8 and 64 chunks per NPU, on
// fabrics with and without switches, at mixed speeds.
TEST(PipelinePrediction, AnAllReducesHalvesArePredictedAlikeWhereTheTopologyIsItsOwnReverse) {
  for (const char* spec :
       {"cluster16.yaml", "mi250-box.yaml", "pod-2spine.yaml", "nvcluster:2x8"}) {
    const std::string name(spec);
    const topo::Topology t =
        name.ends_with(".yaml") ? testing::example_with_steps(name) : topo::generate(name);
    ASSERT_TRUE(topo::twin_links(t)) << spec;
    SynthMemo memo;
    SynthOptions o;
    o.memo = &memo;
    for (int k : {1, 8, 64}) {
      Collective rs = Collective::over_all(t, CollectiveKind::ReduceScatter);
      Collective ag = Collective::over_all(t, CollectiveKind::AllGather);
      rs.chunks_per_npu = ag.chunks_per_npu = k;
      const Bytes chunk = ag.chunk_bytes_for(Bytes{64} << 20);
      for (int v = 0; v < detail::kPipelineInTurn; ++v) {
        const std::optional<detail::PipelinePrediction> reduced =
            detail::predict_pipeline(t, rs, chunk, o, v);
        const std::optional<detail::PipelinePrediction> gathered =
            detail::predict_pipeline(t, ag, chunk, o, v);
        ASSERT_EQ(reduced.has_value(), gathered.has_value()) << spec << " k=" << k << " v=" << v;
        if (!reduced) continue;
        EXPECT_EQ(reduced->end, gathered->end) << spec << " k=" << k << " v=" << v;
        EXPECT_EQ(reduced->first, gathered->first) << spec << " k=" << k << " v=" << v;
        EXPECT_EQ(reduced->likely, gathered->likely) << spec << " k=" << k << " v=" << v;
      }
    }
  }
}

}  // namespace
}  // namespace tenet::synth
