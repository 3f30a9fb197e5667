// An All-Reduce as a Reduce-Scatter and an All-Gather synthesized by one method and joined; the
// other collectives by that method alone.
#pragma once

#include <optional>

#include "synth/synthesizer.hpp"
#include "synth/ten/forward.hpp"
#include "topo/topology.hpp"

namespace tenet::synth::detail {

// One method: the plain matcher, or the matcher on the flow plan. Nothing when the plan does not
// apply.
std::optional<Algorithm> synthesize_with(const topo::Topology& t, const Collective& c,
                                         Bytes chunk_bytes, const SynthOptions& o, Method planned,
                                         double work_budget = 0);

}  // namespace tenet::synth::detail
