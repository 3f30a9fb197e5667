// The flow plan followed: by the matcher (along the plan's trees, a server plan's ways, or ways
// spread like the flow optimum) or as pipelines at the plan's rates.
#pragma once

#include <optional>
#include <utility>

#include "synth/plans/pipelines.hpp"
#include "synth/synthesizer.hpp"
#include "synth/ten/forward.hpp"
#include "topo/topology.hpp"

namespace tenet::synth::detail {

// The forward problem of `c` run on `ft` (t or its reverse), under the flow plan when `planned`.
// Nothing when planned but no plan applies (a subset of NPUs, not a spread, no plan found), or
// for the plain matcher when its work is over `work_budget` (0: none). The pipelines run
// `variant` (or, at -1, every variant, the fastest kept; nothing where a variant in lanes would
// be the one without).
std::optional<Algorithm> synthesize_plan(const topo::Topology& t, const Collective& c,
                                         Bytes chunk_bytes, const SynthOptions& o, Method method,
                                         bool last_first = false, double work_budget = 0,
                                         int variant = -1);

// An All-Reduce's halves by one method other than the pipelines (synthesize_plan): its
// Reduce-Scatter `rs` (its matcher's work within `work_budget`, 0: none) and All-Gather `ag`. Where
// `t` is its own reverse (topo::twin_links), the Reduce-Scatter's forward problem (an All-Gather on
// the reversed topology) is the All-Gather's with every link renamed to its twin: the matcher's
// schedule (the plain matcher's, on the flow plan's trees, or on the server plan) is made once,
// for the Reduce-Scatter, and mirrored into the All-Gather (the same schedule, the same time, its
// method's words), each owner's chunks renamed so that it sends first what the Reduce-Scatter
// reduces into it first (gather_as_reduced, gather_order.hpp). Both nothing where the
// Reduce-Scatter is not made; the All-Gather nothing where it is not.
std::pair<std::optional<Algorithm>, std::optional<Algorithm>> all_reduce_halves(
    const topo::Topology& t, const Collective& rs, const Collective& ag, Bytes chunk_bytes,
    const SynthOptions& o, Method method, double work_budget = 0);

// The flow plan's pipelines of `variant` for `c`, predicted before they are made
// (pipeline_prediction: the order a tree streams its chunks in does not change it); nothing where
// they do not apply.
std::optional<PipelinePrediction> predict_pipeline(const topo::Topology& t, const Collective& c,
                                                   Bytes chunk_bytes, const SynthOptions& o,
                                                   int variant);

// The time a pipeline variant is predicted against: the least of `to_beat` (the fastest made so
// far, or the caller's SynthOptions::to_beat) and PipelineOptions::predicted_against, of those
// set; -1 where neither is.
Time predicted_against(Time to_beat, const PipelineOptions& o);
// The time a pipeline variant must beat to be made: the fastest variant made so far (`fastest`),
// or the caller's time to beat (SynthOptions::to_beat) where that is less (a variant that cannot
// beat it is of no use, however it compares with the variants made before it); either where the
// other is unset (0 or less).
Time under_callers(Time fastest, Time to_beat);

// What stands for the flow plan's pipelines where each variant was predicted no faster than a
// time to beat and none was made: no transfers, claiming `likely` (over that time).
Algorithm unmade_pipelines(const topo::Topology& t, const Collective& c, Bytes chunk_bytes,
                           LinkModel model, Time likely);

// A pipeline variant left unmade, predicted to take `likely`: reported (PipelineOptions::
// on_variant) and, where nothing stands for the count yet (`best` empty), made its stand-in
// (unmade_pipelines), the caller told (SynthOptions::floored and ::predicted). Whether it became
// the stand-in.
bool stand_in_unmade(const topo::Topology& t, const Collective& c, Bytes chunk_bytes,
                     const SynthOptions& o, int variant, Time likely,
                     std::optional<Algorithm>& best);

}  // namespace tenet::synth::detail
