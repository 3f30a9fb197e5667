// The flow plans (packed spanning trees, synth/plans/tree_packing.hpp) a run has packed, computed
// once per topology and root.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "synth/plans/tree_packing.hpp"
#include "topo/topology.hpp"

namespace tenet::synth::detail {

// Owned by the run that packs them (SynthMemo); keyed on the topology's fingerprint, so one serves
// the several topologies a run works on (the topology, its reverse, a group's part). Safe to share
// between threads: one packing at a time.
//
// The packing reads of a topology only its nodes' kinds and, per ordered pair of nodes, the
// bandwidths of the links joining them in id order (its `Shape`); two topologies of the same shape
// pack the same trees, the k-th link of a pair in one standing for the k-th of the same pair in the
// other. So a topology whose links come both ways alike (most fabrics) and its reverse, which an
// All-Reduce's Reduce-Scatter half plans on, share one packing, its routes renamed link for link.
class FlowPlans {
 public:
  // The flow plan of `t` (trees for All-Gather over every NPU, or for Broadcast from `root`), or
  // nothing where none packs. The pointer lives as long as this object.
  const TreePacking* of(const topo::Topology& t, NodeId root = -1);

  struct Shape {
    std::vector<std::tuple<topo::NodeKind, bool, bool, bool>> nodes;  // kind and switch flags
    std::vector<std::tuple<NodeId, NodeId, Bandwidth>> links;         // in pair order
    bool operator==(const Shape&) const = default;
  };

 private:
  struct Packed {
    std::optional<TreePacking> packing;
    Shape shape;
    std::vector<LinkId> order;  // the topology's links in pair order (source, destination, id)
  };
  std::mutex mutex_;
  std::map<std::pair<uint64_t, NodeId>, Packed> plans_;
};

}  // namespace tenet::synth::detail
