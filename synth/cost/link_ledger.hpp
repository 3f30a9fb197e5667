// The rate-shared link model's bookkeeping (see algorithm.hpp and docs/design.md).
//
// Per link, the transfers admitted so far that still hold part of its bandwidth. A link admits
// transfers in non-decreasing time (list order), so after its latest admission a link's load only
// falls as holders finish: the earliest instant with `rate` to spare is found by retiring the
// earliest-ending holders until enough is free. Each admission and retirement is O(log holders);
// a transfer that takes a link's whole bandwidth (every transfer on a homogeneous topology) simply
// waits for the last holder to finish, which is exactly back-to-back streaming.
//
// Used by synth::time (one pass over the list) and by the simulator's replay (event by event); the
// synthesizer keeps the same rule with a running sum per link.
#pragma once

#include <algorithm>
#include <vector>

#include "topo/topology.hpp"
#include "topo/units.hpp"

namespace tenet::synth {

class LinkLedger {
 public:
  explicit LinkLedger(const topo::Topology& t);

  // The earliest time >= `t` at which link `l` has `rate` of its bandwidth to spare and has
  // admitted nothing later. Retires holders that end by then: the caller must admit its transfer
  // no earlier than the time returned (taking the latest over a route's links is enough).
  Time earliest(topo::LinkId l, Time t, Bandwidth rate) {
    if (rate < capacity_[l] || lane_of_[l] >= 0) return earliest_shared(l, t, rate);
    return std::max(t, busy_until_[l]);  // the whole link, never shared so far
  }
  // Admits a transfer holding `rate` of `l` over [start, end); `start` is at least every earlier
  // admission's and `rate` fits at `start` (as earliest() found).
  Bandwidth capacity(topo::LinkId l) const { return capacity_[l]; }
  void admit(topo::LinkId l, Time start, Time end, Bandwidth rate) {
    busy_until_[l] = std::max(busy_until_[l], end);
    if (rate >= capacity_[l])
      whole_until_[l] = std::max(whole_until_[l], end);
    else
      admit_shared(l, start, end, rate);
  }

 private:
  struct Holder {
    Time end;
    Bandwidth rate;
  };
  // What a link holds in transfers below its whole bandwidth (only links that ever carry one get
  // a lane: homogeneous topologies never do).
  struct Lane {
    Bandwidth used = 0;           // summed rates of the holders
    Time last_admit = 0;          // of a partial transfer
    std::vector<Holder> holders;  // a min-heap by end
  };
  void retire_until(Lane& lane, Time t);
  Time earliest_shared(topo::LinkId l, Time t, Bandwidth rate);
  void admit_shared(topo::LinkId l, Time start, Time end, Bandwidth rate);

  // Hot, per link: its bandwidth, the latest end of anything it admitted, the latest end of a
  // transfer that took all of it, and its lane (-1: none yet).
  std::vector<Bandwidth> capacity_;
  std::vector<Time> busy_until_, whole_until_;
  std::vector<int32_t> lane_of_;
  std::vector<Lane> lanes_;
};

}  // namespace tenet::synth
