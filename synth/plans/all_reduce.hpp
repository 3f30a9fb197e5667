// An All-Reduce as a Reduce-Scatter and an All-Gather synthesized by one method and joined; the
// other collectives by that method alone.
#pragma once

#include <optional>
#include <string>

#include "synth/plans/pipelines.hpp"
#include "synth/synthesizer.hpp"
#include "synth/ten/forward.hpp"
#include "topo/topology.hpp"

namespace tenet::synth::detail {

// One method: the plain matcher, or the matcher on the flow plan. Nothing when the plan does not
// apply.
std::optional<Algorithm> synthesize_with(const topo::Topology& t, const Collective& c,
                                         Bytes chunk_bytes, const SynthOptions& o, Method planned,
                                         double work_budget = 0);

// The All-Reduce `c` (over P k chunks: all_reduce_chunks 0) as the answers `rs` and `ag` of its
// Reduce-Scatter and All-Gather (over c's ranks, of the same size) in turn: each NPU sends its own
// chunks' All-Gather once every reduction into it has arrived, joined again while the All-Gather's
// traffic holds a reduction back past such a send (as the pipelines' halves in turn), and where
// that ends after the two one after the other (each as timed alone), the All-Gather also after the
// Reduce-Scatter's end; the joined channels serial where the first's are, else also where the
// second's are (the faster kept).
// Timed. Over the finer half's chunks per NPU, the other's chunks cut into as many (a transfer a
// message of their pieces: the same bytes, routes, rates and times). Nothing where the counts do
// not divide one another, the chunk bytes do not, or the halves differ in protocol, link model or
// reduction bandwidth.
std::optional<Algorithm> answers_in_turn(const topo::Topology& t, const Collective& c,
                                         const Algorithm& rs, const Algorithm& ag);

// Whether the plain matcher's All-Reduce of `c` also runs in waves (its Reduce-Scatter and
// All-Gather of one chunk per NPU, the j-th wave carrying each rank's j-th chunk, each wave's
// All-Gather beside the next wave's Reduce-Scatter): two chunks per NPU or more, where the
// Reduce-Scatter plus All-Gather figure (LowerBound::steering) is at least kWavesFrom of the
// bound's bandwidth term (a mesh's corners send every contribution out, then take the whole result
// in: in waves the one overlaps the other), and the count within kWavesTransferBudget. In waves it
// may end under that figure, which then says nothing of what more chunks can gain.
bool waves_apply(const topo::Topology& t, const Collective& c, Bytes chunk_bytes,
                 const SynthOptions& o);
// What the method's words add for an All-Reduce in `waves` waves (Provenance::waves).
std::string in_waves_words(int waves);

// The flow plan's pipelines of an All-Reduce, one variant, predicted from its halves'
// (pipeline_prediction): the later half's end after the other's least fill (a chunk's All-Gather
// leaves once its reduction is done), plus kHalvesShare of the shorter half's stream (its end past
// its fill), as the halves take turns on the links the flow plan fills in both directions with
// either half alone. A variant is made against a time to beat only where kAllReducePredictedSure
// of it is under that time: a heuristic, not a floor (single variants may end under it; the
// fastest did not where measured: docs/tuning.md).
Time joined_prediction(const PipelinePrediction& reduced, const PipelinePrediction& gathered);

}  // namespace tenet::synth::detail
