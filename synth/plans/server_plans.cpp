#include "synth/plans/server_plans.hpp"

#include <algorithm>

namespace tenet::synth::detail {

ServerPlans::Key ServerPlans::key_of(const topo::Topology& t, Bytes chunk_bytes, LinkModel model,
                                     int ecmp) {
  // The steps are not in the fingerprint (they change what an algorithm costs, not what it may
  // do), but the quickest routes read them.
  return {t.fingerprint(), topo::step_fingerprint(t), chunk_bytes, model, ecmp};
}

ServerPlans::Plan ServerPlans::find(const Key& key) const {
  const auto it = std::find_if(plans_.begin(), plans_.end(),
                               [&](const auto& kept) { return kept.first == key; });
  return it == plans_.end() ? nullptr : it->second;
}

ServerPlans::Plan ServerPlans::kept(const topo::Topology& t, Bytes chunk_bytes, LinkModel model,
                                    int ecmp) const {
  const Key key = key_of(t, chunk_bytes, model, ecmp);
  std::lock_guard lock(mutex_);
  return find(key);
}

ServerPlans::Plan ServerPlans::of(const topo::Topology& t, Bytes chunk_bytes, LinkModel model,
                                  int ecmp, const GiveUp* give_up, topo::RouteMemo* routes) {
  const Key key = key_of(t, chunk_bytes, model, ecmp);
  {
    std::lock_guard lock(mutex_);
    if (Plan plan = find(key)) return plan;
  }
  auto plan = std::make_shared<const std::optional<ServerPlan>>(
      plan_servers(t, chunk_bytes, model, ecmp, give_up, routes));
  std::lock_guard lock(mutex_);
  if (Plan made = find(key)) return made;  // made meanwhile by another thread
  if (plans_.size() == kKept) plans_.pop_front();
  plans_.emplace_back(key, plan);
  return plan;
}

}  // namespace tenet::synth::detail
