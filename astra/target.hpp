// The best algorithm ASTRA-sim runs (`tenet synth --target astra-sim`): Tenet's search finds the
// fastest schedule in its own model, which ASTRA-sim may be unable to run (in-network reduction,
// relays through NPUs outside the ranks) or may run slower (its analytical network is
// congestion-unaware and starts each message when its Chakra dependencies allow). Every runtime
// candidate (synth::for_each_runtime_candidate) is timed as its bundle runs in ASTRA-sim
// (astra::astra_sim_time: the analytical network's time, or ns-3's estimate); the fastest there
// wins, and the candidates ASTRA-sim cannot run are listed with why.
#pragma once

#include "astra/bundle.hpp"
#include "synth/auto/runtime_target.hpp"

namespace tenet::astra {

// NotMade when ASTRA-sim runs no candidate (why for the first), or the collective is one a custom
// collective cannot be (Broadcast, Reduce, Gather, Scatter).
synth::Made<synth::RuntimeChoice> best_for_astra_sim(const topo::Topology& t,
                                                     const synth::Collective& c, Bytes total_bytes,
                                                     const synth::SynthOptions& options,
                                                     const AstraBundleOptions& bundle = {},
                                                     int max_chunks_per_npu = 64);

}  // namespace tenet::astra
