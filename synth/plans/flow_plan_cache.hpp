// The flow plan (packed spanning trees, synth/plans/tree_packing.hpp) of a topology, computed once
// per topology and root.
#pragma once

#include "synth/plans/tree_packing.hpp"
#include "topo/topology.hpp"

namespace tenet::synth::detail {

// The flow plan of a topology (trees for All-Gather over every NPU, or for Broadcast from `root`),
// computed once per topology and root.
const TreePacking* plan_of(const topo::Topology& t, NodeId root = -1);

}  // namespace tenet::synth::detail
