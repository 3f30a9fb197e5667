// Internal to the simulator (sim/system.cpp): collectives meeting per communicator group, and
// replaying their algorithms on the network once every member has arrived.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "chakra/et.hpp"
#include "sim/algorithm_source.hpp"
#include "sim/call_log.hpp"
#include "sim/collective_engine.hpp"
#include "sim/comm_groups.hpp"
#include "sim/dimension_phases.hpp"
#include "sim/event_queue.hpp"
#include "sim/network.hpp"
#include "sim/system.hpp"

namespace tenet::sim::detail {

// One collective of one group: the k-th that group's members reach.
struct Meeting : CollectiveCall {
  std::vector<std::pair<int, size_t>> arrived;  // (rank, node)
  std::vector<int> present;             // the members with a file (Group::present): who must arrive
  const chakra::Node* first = nullptr;  // the first member's node (what the rest must match)
  int k = 0;                            // the group's k-th collective
  bool barrier = false;
  Bytes size = 0;
  std::vector<std::unique_ptr<CollectiveRun>> runs;  // one per dataset split (and phase)
  size_t started = 0, finished = 0;
  std::unique_ptr<PieceQueues> queues;  // the splits through the dimensions' queues, if phased
  int group = 0;                        // its group's id
  std::string group_kind;               // the first member's tenet_group, or its ranks
  Time first_arrival = 0, began = 0;
  size_t row = 0;  // its row in the CallLog
};

// COMM_COLL nodes meet in order per group: when every member has reached its k-th collective of
// that group, the group's algorithm replays on the network (in ASTRA-sim's dataset splits when
// configured), and every member finishes when it is done.
class Meetings {
 public:
  // Called for every member of a collective that is done, in the order they arrived, with the
  // collective's row (null for a barrier or a collective that moves nothing).
  using Finish = std::function<void(int rank, size_t node, const CollectiveRow* row)>;
  // `ranks`: the workload's ranks. All but `config` are used for the run.
  Meetings(const topo::Topology& t, const SimConfig& config, int ranks, CommGroups& groups,
           AlgorithmSource& source, Network& net, EventQueue& events, Finish finish)
      : t_(t),
        calls_(t),
        cfg_(config),
        p_(ranks),
        groups_(groups),
        source_(source),
        net_(net),
        events_(events),
        finish_(std::move(finish)) {}

  // Rank `r` reached collective node `i` (`n`). Throws tenet::Error when `n` is not the collective
  // the group's first member to reach it described (type, comm_size, root).
  void arrive(int r, size_t i, const chakra::Node& n);
  // Collectives whose every member has arrived.
  int collectives() const { return collectives_; }
  // The per-collective breakdown (SimResult::collective_rows), once the run is over; `compute`:
  // per rank, its compute stream's busy intervals.
  std::vector<CollectiveRow> rows(
      const std::vector<std::vector<std::pair<Time, Time>>>& compute) const {
    return calls_.rows(compute);
  }

 private:
  Meeting& meeting_of(int r, const chakra::Node& n);
  void check_same(const Meeting& m, int r, const chakra::Node& n) const;
  void start(Meeting* m);
  void done(Meeting& m);
  // The phases of a native collective's algorithm, found once (dimension_phases).
  const std::vector<DimensionPhase>& phases_of(const synth::Algorithm& a);
  // What every run of `a` on this network reads, made once (ReplayList).
  const ReplayList& list_of(const synth::Algorithm& a);

  const topo::Topology& t_;
  CallLog calls_;
  const SimConfig& cfg_;
  const int p_;
  CommGroups& groups_;
  AlgorithmSource& source_;
  Network& net_;
  EventQueue& events_;
  Finish finish_;
  std::map<std::pair<int, int>, int> seen_;  // (group id, rank) -> its collectives so far
  std::map<std::pair<int, int>, std::unique_ptr<Meeting>> meetings_;  // (group id, k)
  int collectives_ = 0;
  std::map<const synth::Algorithm*, std::vector<DimensionPhase>> phases_;
  std::map<const synth::Algorithm*, std::unique_ptr<ReplayList>> lists_;
};

// The analytical network lets concurrent messages overrun a link: what to say about where, and
// how far (nothing when no link was overrun).
std::optional<std::string> overload_warning(const NetworkReport& n);

}  // namespace tenet::sim::detail
