// The flow plan's pipeline variants: how plan_pipeline may stream (lanes, paced, split, sped up,
// serial), numbered so that a caller can ask for some alone (SynthOptions::pipelines.variants).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

#include "synth/plans/pipelines.hpp"
#include "synth/synthesizer.hpp"
#include "topo/topology.hpp"

namespace tenet::synth::detail {

// Whether the topology's links differ in bandwidth.
bool mixed_speeds(const topo::Topology& t);

// The pipelines' variants (plan_pipeline): lanes x 2 + paced, then the same split in quarters
// (variant v: lanes when v % 4 >= 2, paced when v is odd, split when v >= 4). The first four only
// on mixed speeds, where trees share links at uneven rates; elsewhere they gain little for a
// timing of the whole algorithm each. The split ones only where the whole ones end over
// kPipelinesPersist of the bound: near it they lose a little to their longer fill.
// Each of the eight also *sped up* (v + kPipelineSpedUp; StreamSpeedup), on mixed speeds only
// (where links the plan leaves room on lie beside saturated ones). Neither way wins everywhere
// (sped up, the paced ones can lose badly), so both are timed. The measurements: docs/tuning.md.
inline constexpr int kPipelineVariants = 4;
inline constexpr int kPipelineSplit = 4;
inline constexpr int kPipelineSpedUp = 2 * kPipelineVariants;
// Then, on mixed speeds, in serial channels (v = kPipelineSerial + w; Algorithm::serial_channels):
// each stream sends one chunk at a time, so it never runs over its rate, and where the plan's
// rates fit a link's bandwidth no stream waits on another's: the fluid schedule, bar the fill (a
// chunk time per level). Lanes exact there (no kLeastLane, which can put more on a route than its
// links carry), whole or in lanes (w odd), at the plan's rates or sped up (w >= 2); neither paced
// (a stream cannot run ahead) nor split.
inline constexpr int kPipelineSerial = 4 * kPipelineVariants;
// An All-Reduce's halves in turn, each its own fastest variant (synthesize_with), where together
// they end over kInTurnOver of the RS+AG figure (LowerBound::coarse) (the project's 1.02x quality
// mark) and steps are not charged.
inline constexpr int kPipelineInTurn = kPipelineSerial + 4;
// The halves in turn report their own variants as these plus v (Reduce-Scatter, then All-Gather),
// and run those whose bits are set (SynthOptions::pipelines.variants; none set: every one).
inline constexpr int kInTurnHalf[2] = {kPipelineInTurn + 1, 2 * kPipelineInTurn + 1};
inline constexpr uint64_t kWholeVariants = (uint64_t{1} << kPipelineInTurn) - 1;
inline int pipeline_variants(const topo::Topology& t) {
  return mixed_speeds(t) ? kPipelineVariants : 1;
}
// What variant v streams.
struct PipelineVariant {
  PipelineShape shape;
  bool paced = false, sped_up = false;
};
PipelineVariant pipeline_variant(int v);
// The unpaced variant a paced variant `v` streams as (v - 1: the same shape and speed-up), or
// nothing where `v` is not paced. Pacing only adds a dependency to some transfers (plan_pipeline's
// `pace`: one more transfer each waits for), over the same transfers, so the paced variant's floor
// (synth::time_floor, whose terms only grow with a transfer's waits) is at least its twin's: where
// the twin's floor could not beat a time, the paced variant need not be made to say so.
std::optional<int> unpaced_twin(int v);
// Whether variant `v`'s floor may decide against `mark` (the least time its floor is held
// against): not where its floor (or time) at the count before was under the mark
// (PipelineOptions::floors_before), nor where there is no mark.
bool floor_may_decide(const PipelineOptions& p, int v, Time mark);
// Calls made(v) for each pipeline variant of `c` in chunks of `chunk_bytes` that applies: the
// whole ones (at the plan's rates, then sped up); then, where they made `best` over
// kPipelinesPersist of the bound (where the caller left every one out, its time to beat,
// SynthOptions::to_beat, stands for theirs; and SynthOptions::pipelines.split), the split ones;
// then, on mixed speeds, the serial ones (last, so that the split ones are tried wherever they were
// before them). None left out (PipelineOptions::left_out).
void for_each_pipeline_variant(const topo::Topology& t, const Collective& c, Bytes chunk_bytes,
                               const SynthOptions& o, const std::optional<Algorithm>& best,
                               const std::function<void(int)>& made);

}  // namespace tenet::synth::detail
