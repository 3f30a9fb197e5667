// Algorithms by name, as the CLI, the simulator and the benchmark harness take them: "tenet"
// (the synthesizer) or a baseline name (see baselines.hpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "synth/baselines.hpp"
#include "synth/synthesizer.hpp"

namespace tenet::synth {

// Builds `name` for `c` on `t`. Baselines use options.link_model; the synthesizer all of
// `options`. Throws NotApplicable when a baseline cannot run it, tenet::Error for an unknown name.
Algorithm make_algorithm(std::string_view name, const topo::Topology& t, const Collective& c, Bytes chunk_bytes,
                         const SynthOptions& options = {});

// "tenet", then every baseline that has the collective (what "all" means).
std::vector<std::string> algorithm_names(CollectiveKind kind);

}  // namespace tenet::synth
