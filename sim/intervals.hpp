// Internal to the simulator (sim/system.cpp): time measured over lists of intervals.
#pragma once

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include "topo/units.hpp"

namespace tenet::sim::detail {

// Measure of the union of intervals (a list of [start, end)).
inline Time measure(std::vector<std::pair<Time, Time>> v) {
  std::sort(v.begin(), v.end());
  Time total = 0, reach = std::numeric_limits<Time>::min();
  for (auto [s, e] : v) {
    if (e <= reach) continue;
    total += e - std::max(s, reach);
    reach = e;
  }
  return total;
}

}  // namespace tenet::sim::detail
