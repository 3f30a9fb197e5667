// Internal to the simulator: the analytical network backends, made by make_network
// (sim/network.cpp). Each lives in a file of its own: sim/analytical_network.cpp and
// sim/congestion_network.cpp.
#pragma once

#include <memory>
#include <span>

#include "sim/event_queue.hpp"
#include "sim/network.hpp"
#include "topo/topology.hpp"

namespace tenet::sim::detail {

// The summed latency of a route's links.
inline Time route_latency(const topo::Topology& t, std::span<const topo::LinkId> route) {
  Time l = 0;
  for (topo::LinkId id : route) l += t.link(id).latency;
  return l;
}

// `--network analytical`: no contention.
std::unique_ptr<Network> make_analytical_network(const topo::Topology& t, EventQueue& events);
// `--network analytical-congestion`: flow-level max-min fair sharing.
std::unique_ptr<Network> make_congestion_network(const topo::Topology& t, EventQueue& events,
                                                 PacketConfig::Routing routing);

}  // namespace tenet::sim::detail
