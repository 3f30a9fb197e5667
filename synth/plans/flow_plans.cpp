#include "synth/plans/flow_plans.hpp"

namespace tenet::synth::detail {

const TreePacking* FlowPlans::of(const topo::Topology& t, NodeId root) {
  std::lock_guard<std::mutex> guard(mutex_);
  auto it = plans_.find({t.fingerprint(), root});
  if (it == plans_.end())
    it = plans_
             .emplace(std::pair(t.fingerprint(), root),
                      root < 0 ? pack_pipelined_trees(t) : pack_broadcast_trees(t, root))
             .first;
  return it->second ? &*it->second : nullptr;
}

}  // namespace tenet::synth::detail
