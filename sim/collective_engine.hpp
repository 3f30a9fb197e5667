// Replays an Algorithm on a simulated network. A transfer is issued when its explicit
// dependencies and every earlier-listed arrival of its chunk at its source have arrived, and when
// every link of its route has admitted the transfers listed before it there and has its rate to
// spare: the rates of the transfers a link carries (issued, not yet released) sum to at most its
// bandwidth; under the hold model a link carries one transfer at a time. Links keep the
// algorithm's order, as MSCCL thread blocks do. On the analytical network this is exactly the
// timing model (synth::time), so an algorithm replays in its synthesized time; on a congested
// network the same order and admission hold and the network decides the times.
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
  void released(synth::TransferId id);   // `id` has left its links
  void try_issue(synth::TransferId id);  // issues `id` if its links admit it now
  void drain();                          // tries the transfers in `candidates_`
  void next_on(topo::LinkId l);          // offers the next transfer `l` admits
  void issue(synth::TransferId id);
  Bandwidth rate(synth::TransferId id) const;  // what it moves at: its own rate, or its route's narrowest

  const synth::Algorithm& a_;
  Network& net_;
  EventQueue& events_;
  std::function<void()> on_done_;
  bool hold_ = false;
  std::vector<int> waiting_;  // unmet dependencies per transfer
  // Who waits for each transfer's arrival (CSR lists).
  std::vector<int32_t> arrive_offset_;
  std::vector<synth::TransferId> arrive_users_;
  // Per link, its transfers in list order (CSR) and how many it has admitted; its bandwidth and
  // the rates its issued, unreleased transfers hold.
  std::vector<int32_t> link_offset_;
  std::vector<synth::TransferId> on_link_;
  std::vector<int32_t> admitted_;
  std::vector<Bandwidth> capacity_, used_;
  std::vector<synth::TransferId> candidates_;
  bool draining_ = false;
  size_t remaining_ = 0;
};

// Replays `a` alone on a fresh network of the given kind and returns the time its last transfer
// arrived. Throws tenet::Error when the network deadlocks (see Network::check_drained).
Time replay(const topo::Topology& t, const synth::Algorithm& a, NetworkKind kind, const PacketConfig& packet = {});

}  // namespace tenet::sim
