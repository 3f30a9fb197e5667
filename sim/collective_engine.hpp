// Replays an Algorithm on a simulated network. A transfer is issued when its explicit
// dependencies and every earlier-listed arrival of its chunk at its source have arrived, and when
// the transfer listed before it on each link of its route has released that link (links keep the
// algorithm's order, as MSCCL thread blocks do). On the analytical network this is exactly the
// timing model, so an algorithm replays in its synthesized time; on a congested network the same
// order holds and the network decides the times.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "sim/network.hpp"
#include "synth/algorithm.hpp"

namespace tenet::sim {

class CollectiveRun {
 public:
  // `on_done` runs when the last transfer has arrived (right away for an empty algorithm).
  CollectiveRun(const synth::Algorithm& a, Network& net, EventQueue& events, std::function<void()> on_done);
  void start();
  bool done() const { return remaining_ == 0; }

 private:
  void satisfied(synth::TransferId id);  // one dependency of `id` is met
  void issue(synth::TransferId id);

  const synth::Algorithm& a_;
  Network& net_;
  EventQueue& events_;
  std::function<void()> on_done_;
  std::vector<int> waiting_;  // unmet dependencies per transfer
  // Who waits for each transfer's arrival and for its release of its links (CSR lists).
  std::vector<int32_t> arrive_offset_, release_offset_;
  std::vector<synth::TransferId> arrive_users_, release_users_;
  size_t remaining_ = 0;
};

// Replays `a` alone on a fresh network of the given kind and returns the time its last transfer
// arrived. Throws tenet::Error when the network deadlocks (see Network::check_drained).
Time replay(const topo::Topology& t, const synth::Algorithm& a, NetworkKind kind, const PacketConfig& packet = {});

}  // namespace tenet::sim
