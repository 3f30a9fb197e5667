// What the baselines keep between builds (SynthMemo::baselines, try_baseline's `memo`): Blink's
// packed trees (blink.cpp) and the channel rings (search_ring_channels), which depend on the
// topology and the ranks alone, not on the chunks or their size. A chunk search builds each
// baseline at every count it tries, and a simulator at every size of a collective; with a memo
// each finds its trees and rings once. Safe to share between threads.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <utility>
#include <vector>

#include "synth/baselines/ring_channels.hpp"
#include "topo/topology.hpp"

namespace tenet::synth {

namespace detail {
struct BlinkPacking;  // blink.cpp
}  // namespace detail

class BaselineMemo {
 public:
  // The packing of `ranks` on `t` (keyed by the topology's fingerprint, as the flow plans are): the
  // one kept, else what `pack` makes, kept. `pack` runs without the lock held: two threads may
  // both pack the same ranks at once, and the first kept is the one both return.
  std::shared_ptr<const detail::BlinkPacking> blink(
      const topo::Topology& t, const std::vector<topo::NodeId>& ranks,
      const std::function<std::shared_ptr<const detail::BlinkPacking>()>& pack);

  // search_ring_channels's rings over (t, members, wanted, both_ways): kept, else what `find`
  // finds, kept (as `blink`).
  std::vector<RingChannel> rings(const topo::Topology& t, const std::vector<topo::NodeId>& members,
                                 int wanted, bool both_ways,
                                 const std::function<std::vector<RingChannel>()>& find);

 private:
  std::mutex mutex_;
  std::map<std::tuple<uint64_t, std::vector<topo::NodeId>, int, bool>, std::vector<RingChannel>>
      rings_;
  std::map<std::pair<uint64_t, std::vector<topo::NodeId>>,
           std::shared_ptr<const detail::BlinkPacking>>
      blink_;
};

}  // namespace tenet::synth
