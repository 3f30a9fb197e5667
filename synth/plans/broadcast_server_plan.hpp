// Broadcast (and Reduce, reversed) over every NPU of a cluster of servers, on its hierarchical
// plan: the root's chunks dealt over its server, each slice along its rail, then over each server's
// NVSwitch, matched in time by the spread matcher.
#pragma once

#include <optional>

#include "synth/synthesizer.hpp"
#include "synth/ten/forward.hpp"
#include "topo/topology.hpp"

namespace tenet::synth::detail {

// The plan above with a chain along the rails and with double binary trees, the faster kept: the
// chain's every hop costs a chunk of the whole slice, the trees' a chunk of half of it, over
// log2 of the servers (few servers favour the chain, many the trees). Both on one server plan's
// routes; nothing where there is none.
std::optional<Algorithm> broadcast_server_plan(const topo::Topology& t, const topo::Topology& ft,
                                               const ForwardPlan& plan, const Collective& c,
                                               const Collective& forward, Bytes chunk_bytes,
                                               const SynthOptions& o);

}  // namespace tenet::synth::detail
