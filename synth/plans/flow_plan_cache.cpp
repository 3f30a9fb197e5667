#include "synth/plans/flow_plan_cache.hpp"

#include <map>
#include <mutex>
#include <optional>
#include <utility>

namespace tenet::synth::detail {

const TreePacking* plan_of(const topo::Topology& t, NodeId root) {
  static std::mutex lock;
  static std::map<std::pair<uint64_t, NodeId>, std::optional<TreePacking>> cache;
  std::lock_guard<std::mutex> guard(lock);
  auto it = cache.find({t.fingerprint(), root});
  if (it == cache.end())
    it = cache
             .emplace(std::pair(t.fingerprint(), root),
                      root < 0 ? pack_spanning_trees(t) : pack_broadcast_trees(t, root))
             .first;
  return it->second ? &*it->second : nullptr;
}

}  // namespace tenet::synth::detail
