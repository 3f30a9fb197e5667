// Network backends of the simulator, behind one interface (chosen by `--network`):
//   analytical             no contention: a message of b bytes keeps its route's links for
//                          b / (the narrowest bandwidth) and arrives the summed latency after that
//                          (ASTRA-sim's congestion-unaware backend, and the shared link model).
//   analytical-congestion  flow level: concurrent messages share every link of their routes
//                          max-min fairly, recomputed whenever a message starts or ends; the
//                          summed latency is added once, after the last byte (pipelined across
//                          hops, not store-and-forward).
// A packet-level backend slots in behind the same interface.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "sim/event_queue.hpp"
#include "topo/topology.hpp"

namespace tenet::sim {

struct Message {
  topo::NodeId src = 0, dst = 0;
  Bytes bytes = 0;
  std::span<const topo::LinkId> route;  // valid during send(); a backend copies what it keeps
};

class Network {
 public:
  Network(const topo::Topology& t, EventQueue& events) : topo_(t), events_(events), busy_(t.num_links(), 0) {}
  virtual ~Network() = default;
  virtual std::string_view name() const = 0;
  // Starts `m` now. `on_release` runs when its last byte has left the route's links (the next
  // message in order may use them); `on_arrival` when it has fully arrived at m.dst.
  virtual void send(Message m, std::function<void()> on_release, std::function<void()> on_arrival) = 0;
  // Per link, the time it carried data (for a shared link: the bytes it carried over its bandwidth).
  virtual std::vector<Time> link_busy() const { return busy_; }
  size_t num_links() const { return busy_.size(); }

 protected:
  const topo::Topology& topo_;
  EventQueue& events_;
  std::vector<Time> busy_;
};

enum class NetworkKind { Analytical, AnalyticalCongestion };
NetworkKind parse_network(std::string_view name);
std::string_view to_string(NetworkKind k);
std::unique_ptr<Network> make_network(NetworkKind kind, const topo::Topology& t, EventQueue& events);

}  // namespace tenet::sim
