// The verifier's replay order: transfers' times (their starts, or when their data is usable where
// they land) with their ids, in time order, ties by id.
#pragma once

#include <vector>

#include "synth/ir/algorithm.hpp"

namespace tenet::synth {

struct TimedTransfer {
  Time at;
  TransferId id;
  bool operator<(const TimedTransfer& o) const { return at != o.at ? at < o.at : id < o.id; }
};

// Sorts `events` (ids at least 0) in time order, ties by id. Where the times' spread and the ids
// fit in 64 bits together, each event is the key (at - earliest) << id_bits | id, distinct from
// every other, which Boost's spreadsort sorts by radix; else by comparison.
void sort_by_time(std::vector<TimedTransfer>& events);

}  // namespace tenet::synth
