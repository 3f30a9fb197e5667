// What the flow plan's pipeline variants made against what they were predicted to make, kept over a
// chunk search's counts (PipelineOptions::calibration).
//
// A variant is made only where a share of its predicted end (pipeline_prediction; an All-Reduce's
// halves joined) is under the time to beat: kPipelinePredictedSure, or kAllReducePredictedSure,
// low enough for every fabric measured, as made variants end at 0.69 to 1.7 times their
// prediction (0.72 to 3.1 for an All-Reduce). The prediction leaves out about a fill of a few
// chunk times per tree, so where the trees stream many chunks each a single collective's share is
// higher (uncalibrated). Where its trees stream many chunks each (at least
// kPipelineCalibratedFrom), a variant's own ratio on one fabric moves little from count to count
// (`nvcluster:8x8` All-Gather of 1 GiB: 0.977 at 32 chunks per NPU, 0.987 at 64); with a chunk or
// two per tree it swings with the fill (`pod-2spine.yaml` Reduce-Scatter of 1 MiB: 1.317 at one
// chunk per NPU, 0.829 at two). So once a variant was made at such a count, its share at the
// counts after is its last ratio by kPipelineCalibratedSure, where that is more: a variant its own
// ratio predicts to lose by over that margin is not made. A heuristic, as the shares are: the
// figures are in docs/tuning.md.
//
// A variant that ended exactly at its prediction there (to the picosecond: its schedule is the one
// the prediction times, the fluid schedule and its fill, as a serial variant's is where no stream
// waits on another) keeps no margin: at the counts after it is made only where it is predicted to
// beat the time to beat.
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "synth/plans/pipeline_variants.hpp"
#include "synth/tuning.hpp"
#include "topo/units.hpp"

namespace tenet::synth {

class PipelineCalibration {
 public:
  // Variant `v` (an All-Reduce's, its halves joined, where `joined`) made and timed at `made`, or
  // made and left untimed at its floor `made` (`floor`: at most its time, a ratio at most its own),
  // predicted to end at `predicted`, its trees streaming `chunks_per_tree` chunks each on average.
  void record(int v, bool joined, Time made, Time predicted, double chunks_per_tree,
              bool floor = false) {
    if (made > 0 && predicted > 0 && chunks_per_tree >= kPipelineCalibratedFrom)
      ratio_[{v, joined}] = {static_cast<double>(made) / static_cast<double>(predicted),
                             made == predicted, floor};
  }
  // The share of variant `v`'s predicted end that must be under the time to beat for it to be
  // made: `sure`, or where it was made at a count before, kPipelineCalibratedSure of its last
  // ratio, the larger (over 1 for a variant that ran slower than predicted: left unmade only where
  // that ratio says it would lose by the margin); where it ended exactly at its prediction there,
  // 1: made only where predicted to win.
  // A paced variant with nothing recorded takes its unpaced twin's share where the twin's record is
  // a floor: pacing only adds waits to the same transfers, so its floor at that count was at least
  // the twin's, over the same prediction (detail::unpaced_twin).
  double sure(int v, bool joined, double sure) const {
    auto it = ratio_.find({v, joined});
    if (const std::optional<int> twin = detail::unpaced_twin(v); it == ratio_.end() && twin)
      if (const auto lost = ratio_.find({*twin, joined});
          lost != ratio_.end() && lost->second.floor)
        it = lost;
    if (it == ratio_.end()) return sure;
    if (it->second.exact) return 1;
    return std::max(sure, kPipelineCalibratedSure * it->second.ratio);
  }
  // Whether variant `v` ended exactly at its prediction at the last count it was recorded at.
  bool exact(int v, bool joined) const {
    const auto it = ratio_.find({v, joined});
    return it != ratio_.end() && it->second.exact;
  }
  // The share of a variant's predicted end that must be under the time to beat for it to be made
  // where nothing was recorded for it, its trees streaming `chunks_per_tree` chunks each on
  // average: kPipelinePredictedSure, or, where that is more, 1 - kPipelinePredictionFill /
  // chunks_per_tree up to kPipelinePredictedSureMost. What the prediction leaves out is about a
  // fill of a few chunk times per tree, a smaller part of each stream the more chunks it carries.
  static double uncalibrated(double chunks_per_tree) {
    return std::clamp(1 - kPipelinePredictionFill / chunks_per_tree, kPipelinePredictedSure,
                      kPipelinePredictedSureMost);
  }
  // The same through a calibration that may be absent (PipelineOptions::calibration): `sure`, or
  // nothing recorded.
  static double sure(const PipelineCalibration* c, int v, bool joined, double sure) {
    return c ? c->sure(v, joined, sure) : sure;
  }
  static void record(PipelineCalibration* c, int v, bool joined, Time made, Time predicted,
                     double chunks_per_tree, bool floor = false) {
    if (c) c->record(v, joined, made, predicted, chunks_per_tree, floor);
  }

 private:
  struct Made {
    double ratio;  // made over predicted
    bool exact;    // made == predicted
    bool floor;    // made is its floor, untimed
  };
  std::map<std::pair<int, bool>, Made> ratio_;  // per variant, at the last count it was made
};

}  // namespace tenet::synth
