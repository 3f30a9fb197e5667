#include "synth/baselines/baseline_memo.hpp"

namespace tenet::synth {
namespace {

// Past this many entries a map starts again: a simulator's sweep over many groups must not keep
// every group's trees and rings.
constexpr size_t kEntries = 64;

// The value of `key` in `map`, else what `make` makes (without the lock held), kept.
template <typename Map, typename Make>
typename Map::mapped_type kept(std::mutex& mutex, Map& map, typename Map::key_type key,
                               const Make& make) {
  {
    std::lock_guard<std::mutex> guard(mutex);
    if (auto it = map.find(key); it != map.end()) return it->second;
  }
  typename Map::mapped_type made = make();
  std::lock_guard<std::mutex> guard(mutex);
  if (map.size() >= kEntries) map.clear();
  return map.try_emplace(std::move(key), std::move(made)).first->second;
}

}  // namespace

std::shared_ptr<const detail::BlinkPacking> BaselineMemo::blink(
    const topo::Topology& t, const std::vector<topo::NodeId>& ranks,
    const std::function<std::shared_ptr<const detail::BlinkPacking>()>& pack) {
  return kept(mutex_, blink_, std::make_pair(t.fingerprint(), ranks), pack);
}

std::vector<RingChannel> BaselineMemo::rings(
    const topo::Topology& t, const std::vector<topo::NodeId>& members, int wanted, bool both_ways,
    const std::function<std::vector<RingChannel>()>& find) {
  return kept(mutex_, rings_, std::make_tuple(t.fingerprint(), members, wanted, both_ways), find);
}

}  // namespace tenet::synth
