#include "synth/plans/reversed_topologies.hpp"

#include <algorithm>
#include <functional>
#include <string>
#include <type_traits>

namespace tenet::synth::detail {

std::shared_ptr<const topo::Topology> ReversedTopologies::find(const Key& key) const {
  const auto it = std::find_if(kept_.begin(), kept_.end(),
                               [&](const auto& entry) { return entry.first == key; });
  return it == kept_.end() ? nullptr : it->second;
}

std::shared_ptr<const topo::Topology> ReversedTopologies::of(const topo::Topology& t) {
  // Beside the fingerprint and the steps, what topo::reversed copies: the names (a reverse's
  // messages name its nodes and links), the links' buffers, the structure it was made with, its
  // protocols and the one applied, and a preset's calibrated efficiencies.
  // (Each value hashed and folded in, FNV-style: no text built per call, as a plan asks per count.)
  uint64_t rest = 0xcbf29ce484222325ULL;
  auto add = [&rest](const auto&... v) {
    ((rest = (rest ^ std::hash<std::decay_t<decltype(v)>>{}(v)) * 0x100000001b3ULL), ...);
  };
  auto add_all = [&add](const auto& values) {
    add(values.size());
    for (const auto& v : values) add(v);
  };
  add(t.name());
  for (topo::NodeId v = 0; v < t.num_nodes(); ++v) add(t.node(v).name);
  for (const topo::Link& l : t.links()) add(l.name, l.buffer);
  add_all(t.levels());
  add_all(t.grid());
  auto add_protocol = [&](const topo::Protocol& p) {
    add(p.name, p.bandwidth, p.step, p.step_scale, p.in_network);
    add_all(p.excludes);
  };
  add(t.protocols().size());
  for (const topo::Protocol& p : t.protocols()) add_protocol(p);
  add(t.applied() != nullptr);
  if (const topo::Protocol* p = t.applied()) add_protocol(*p);
  for (const auto& [algorithm, efficiency] : t.calibration().algorithm_efficiency)
    add(algorithm, efficiency);
  const Key key{t.fingerprint(), topo::step_fingerprint(t), rest};
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
