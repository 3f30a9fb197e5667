#include "synth/baselines/baseline_memo.hpp"

namespace tenet::synth {
namespace {

// Past this many entries a map starts again: a simulator's sweep over many groups must not keep
// every group's trees and rings.
constexpr size_t kEntries = 64;

}  // namespace

std::shared_ptr<const detail::BlinkPacking> BaselineMemo::blink(
    const topo::Topology& t, const std::vector<topo::NodeId>& ranks,
    const std::function<std::shared_ptr<const detail::BlinkPacking>()>& pack) {
  auto key = std::make_pair(t.fingerprint(), ranks);
  {
    std::lock_guard<std::mutex> guard(mutex_);
    if (auto it = blink_.find(key); it != blink_.end()) return it->second;
  }
  std::shared_ptr<const detail::BlinkPacking> packed = pack();
  std::lock_guard<std::mutex> guard(mutex_);
  if (blink_.size() >= kEntries) blink_.clear();
  return blink_.try_emplace(std::move(key), std::move(packed)).first->second;
}

std::vector<RingChannel> BaselineMemo::rings(
    const topo::Topology& t, const std::vector<topo::NodeId>& members, int wanted, bool both_ways,
    const std::function<std::vector<RingChannel>()>& find) {
  auto key = std::make_tuple(t.fingerprint(), members, wanted, both_ways);
  {
    std::lock_guard<std::mutex> guard(mutex_);
    if (auto it = rings_.find(key); it != rings_.end()) return it->second;
  }
  std::vector<RingChannel> found = find();
  std::lock_guard<std::mutex> guard(mutex_);
  if (rings_.size() >= kEntries) rings_.clear();
  return rings_.try_emplace(std::move(key), std::move(found)).first->second;
}

}  // namespace tenet::synth
