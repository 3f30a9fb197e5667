// A large search's quick answer: the baselines of log P steps (halving-doubling, Bruck: P log P
// transfers) at one chunk per NPU, made before a first count of millions of transfers.
#pragma once

#include <functional>
#include <optional>

#include "synth/synthesizer.hpp"
#include "topo/topology.hpp"

namespace tenet::synth::detail {

struct LogStepsAnswer {
  ChunkingResult result;  // tried: one chunk per NPU alone
  bool at_bound = false;  // `at_bound` holds of it: nothing else need be made
};

// Where `auto` races the baselines and `c`'s first count (one chunk per NPU) is over
// kAutoChunkTurnTransfers transfers, the fastest of halving-doubling and Bruck at one chunk per NPU
// (the first that `at_bound` holds of, where one does); nothing elsewhere, or where neither
// applies. Its algorithm is named "tenet", a baseline's provenance, and its method says why it
// was made first.
std::optional<LogStepsAnswer> log_steps_answer(
    const topo::Topology& t, const Collective& c, Bytes total_bytes, const SynthOptions& o,
    const std::function<bool(const Algorithm&)>& at_bound);

}  // namespace tenet::synth::detail
