// Synthesis of an All-Reduce over a cluster of servers composed per level (synth/groups/
// composed.hpp): each level made once, in its part of the cluster, and renamed for the others.
#pragma once

#include <vector>

#include "synth/synthesizer.hpp"
#include "topo/topology.hpp"

namespace tenet::synth::detail {

// The servers `c` composes over (composed_servers), or why there are none.
Made<std::vector<std::vector<topo::NodeId>>> servers_to_compose(const topo::Topology& t,
                                                                const Collective& c,
                                                                Bandwidth* joined = nullptr);

// `c` composed per level (SynthMethod::Composed, or an All-Reduce given in chunks in all).
Made<Algorithm> synthesize_composed(const topo::Topology& t, const Collective& c, Bytes chunk_bytes,
                                    const SynthOptions& o);

}  // namespace tenet::synth::detail
