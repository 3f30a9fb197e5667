// The reverses of the topologies one run plans on (topo::reversed), each made once: a reversed
// plan (a Reduce-Scatter as an All-Gather on the reversed topology, reversed in time) is asked for
// at every chunk count, method and pipeline variant, and each reverse made afresh is a new
// topology to build and to search routes on again.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <tuple>
#include <utility>

#include "topo/topology.hpp"

namespace tenet::synth::detail {

// Owned by the run that plans (SynthMemo); keyed on everything topo::reversed copies: the
// fingerprint, the per-step costs and whether they are charged (topo::step_fingerprint), and a
// hash of the rest (names, buffers, levels and grid, protocols, calibrated efficiencies).
// Keeps the last kKept, oldest out first. Safe to share between threads (two may reverse one
// topology at once; the first kept stays, and both get a whole reverse).
class ReversedTopologies {
 public:
  std::shared_ptr<const topo::Topology> of(const topo::Topology& t);

 private:
  static constexpr size_t kKept = 4;
  using Key = std::tuple<uint64_t, uint64_t, uint64_t>;
  std::shared_ptr<const topo::Topology> find(const Key& key) const;  // (the mutex held)
  std::mutex mutex_;
  std::deque<std::pair<Key, std::shared_ptr<const topo::Topology>>> kept_;  // oldest first
};

}  // namespace tenet::synth::detail
