// The flow plans (packed spanning trees, synth/plans/tree_packing.hpp) a run has packed, computed
// once per topology and root.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <utility>

#include "synth/plans/tree_packing.hpp"
#include "topo/topology.hpp"

namespace tenet::synth::detail {

// Owned by the run that packs them (SynthMemo); keyed on the topology's fingerprint, so one serves
// the several topologies a run works on (the topology, its reverse, a group's part). Safe to share
// between threads: one packing at a time.
class FlowPlans {
 public:
  // The flow plan of `t` (trees for All-Gather over every NPU, or for Broadcast from `root`), or
  // nothing where none packs. The pointer lives as long as this object.
  const TreePacking* of(const topo::Topology& t, NodeId root = -1);

 private:
  std::mutex mutex_;
  std::map<std::pair<uint64_t, NodeId>, std::optional<TreePacking>> plans_;
};

}  // namespace tenet::synth::detail
