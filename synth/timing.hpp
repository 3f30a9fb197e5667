// Timing: the shared link cost model (../shared/DESIGN.md) applied to an algorithm.
//
// synth::time assigns every transfer its start and end: a transfer starts as soon as its explicit
// dependencies have ended, every earlier-listed arrival of its chunk at its source has ended, and
// every link of its route is free; links serve transfers in list order. Deterministic, one pass,
// O(transfers + route links + dependencies).
#pragma once

#include <span>
#include <vector>

#include "synth/algorithm.hpp"
#include "topo/topology.hpp"

namespace tenet::synth {

struct RouteCost {
  Time occupancy = 0;   // how long each link of the route is busy
  Time duration = 0;    // from start to arrival
  Bandwidth bottleneck = 0;
  Time latency = 0;     // summed over the route
};
// Throws tenet::Error for an empty route or a link id out of range.
RouteCost route_cost(const topo::Topology& t, std::span<const LinkId> route, Bytes bytes,
                     LinkModel model);

struct TimingResult {
  Time collective_time = 0;      // the latest arrival
  std::vector<Time> link_busy;   // per link, summed occupancy
};

// Assigns start/end to every transfer of `a` (overwriting what was there) and sets
// a.claimed_time. Throws tenet::Error when a reference is out of range or a dependency does not
// point to an earlier transfer.
TimingResult time(const topo::Topology& t, Algorithm& a);
// The same, writing the times into `start` and `end` (sized a.size()) and leaving `a` alone.
TimingResult compute_times(const topo::Topology& t, const Algorithm& a, std::span<Time> start,
                           std::span<Time> end);

}  // namespace tenet::synth
