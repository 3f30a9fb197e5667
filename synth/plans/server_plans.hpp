// The server plans (synth/plans/server_plan.hpp) one run has made, so that a plan is made once per
// topology and chunk size: an All-Gather half and the chunk search's estimate at the next count
// ask for the same plan, and on 1024 NPUs a flat plan is a second of work (a million ways).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>
#include <utility>

#include "synth/plans/server_plan.hpp"

namespace tenet::synth::detail {

// Owned by the run that plans (SynthMemo); keyed on everything plan_servers reads: the topology's
// fingerprint (nodes, links in id order with their bandwidths and latencies), its links' per-step
// costs and whether they are charged, the chunk size, the link model and the routes per pair.
// Keeps the last kKept plans made, oldest out first (a flat plan of 1024 NPUs holds about 80 MB).
// Safe to share between threads (two may make one plan at once; the first kept stays).
class ServerPlans {
 public:
  using Plan = std::shared_ptr<const std::optional<ServerPlan>>;
  // plan_servers(t, chunk_bytes, model, ecmp), made (given up at `give_up`: nothing kept; its
  // route searches shared in `routes`, where given) or kept.
  Plan of(const topo::Topology& t, Bytes chunk_bytes, LinkModel model, int ecmp,
          const GiveUp* give_up = nullptr, topo::RouteMemo* routes = nullptr);
  // The plan kept for those arguments, or null where none is (nothing is made).
  Plan kept(const topo::Topology& t, Bytes chunk_bytes, LinkModel model, int ecmp) const;

 private:
  static constexpr size_t kKept = 4;
  using Key = std::tuple<uint64_t, uint64_t, Bytes, LinkModel, int>;
  static Key key_of(const topo::Topology& t, Bytes chunk_bytes, LinkModel model, int ecmp);
  Plan find(const Key& key) const;  // (the mutex held)
  mutable std::mutex mutex_;
  std::deque<std::pair<Key, Plan>> plans_;  // oldest first
};

}  // namespace tenet::synth::detail
