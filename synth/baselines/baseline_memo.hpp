// What the baselines keep between builds (SynthMemo::baselines, try_baseline's `memo`): Blink's
// packed trees (blink.cpp), which depend on the topology and the ranks alone, not on the chunks or
// their size. A chunk search builds Blink at every count it tries, and a simulator at every size
// of a collective; with a memo each packs its trees once. Safe to share between threads.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

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

 private:
  std::mutex mutex_;
  std::map<std::pair<uint64_t, std::vector<topo::NodeId>>,
           std::shared_ptr<const detail::BlinkPacking>>
      blink_;
};

}  // namespace tenet::synth
