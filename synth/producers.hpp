// Algorithms by name, as the CLI, the simulator and the benchmark harness take them: "tenet"
// (the synthesizer) or a baseline name (see baselines.hpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "synth/baselines/baselines.hpp"
#include "synth/synthesizer.hpp"

namespace tenet::synth {

// Builds `name` for `c` on `t`. Baselines use options.link_model and options.reduce_bandwidth; the
// synthesizer all of `options`. Throws NotApplicable when a baseline cannot run it, tenet::Error
// for an unknown name.
Algorithm make_algorithm(std::string_view name, const topo::Topology& t, const Collective& c,
                         Bytes chunk_bytes, const SynthOptions& options = {});

// make_algorithm with the chunks per NPU picked as synthesize_auto_chunks does (1, 2, 4, ...).
ChunkingResult make_algorithm_auto_chunks(std::string_view name, const topo::Topology& t,
                                          const Collective& c, Bytes total_bytes,
                                          const SynthOptions& options = {},
                                          int max_chunks_per_npu = 64);

// `name` with `channels` (a count or "auto") when it is a baseline that takes channels and names
// none itself: with_channels("ring", "8") is "ring:8".
std::string with_channels(std::string_view name, std::string_view channels);

// "tenet", then every baseline that has the collective (what "all" means).
std::vector<std::string> algorithm_names(CollectiveKind kind);

}  // namespace tenet::synth
