#include "synth/plans/reversed_topologies.hpp"

#include <algorithm>
#include <functional>
#include <string>

namespace tenet::synth::detail {

std::shared_ptr<const topo::Topology> ReversedTopologies::find(const Key& key) const {
  const auto it = std::find_if(kept_.begin(), kept_.end(),
                               [&](const auto& entry) { return entry.first == key; });
  return it == kept_.end() ? nullptr : it->second;
}

std::shared_ptr<const topo::Topology> ReversedTopologies::of(const topo::Topology& t) {
  // (Names are not in the fingerprint; a reverse's messages name its nodes and links.)
  uint64_t names = 0;
  auto add = [&](const std::string& s) {
    names = names * 0x100000001b3ULL ^ std::hash<std::string>{}(s);
  };
  add(t.name());
  add(t.applied() ? t.applied()->name : std::string());
  for (topo::NodeId v = 0; v < t.num_nodes(); ++v) add(t.node(v).name);
  for (const topo::Link& l : t.links()) add(l.name);
  const Key key{t.fingerprint(), topo::step_fingerprint(t), names};
  {
    std::lock_guard lock(mutex_);
    if (auto made = find(key)) return made;
  }
  auto made = std::make_shared<const topo::Topology>(topo::reversed(t));
  std::lock_guard lock(mutex_);
  if (auto first = find(key)) return first;  // made meanwhile by another thread
  if (kept_.size() == kKept) kept_.pop_front();
  kept_.emplace_back(std::move(key), made);
  return made;
}

}  // namespace tenet::synth::detail
