// Internal to the simulator (sim/meetings.cpp): every collective call of a run, for the
// per-collective breakdown (SimResult::collective_rows).
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "sim/system.hpp"
#include "synth/ir/algorithm.hpp"
#include "synth/ir/ring_plan.hpp"
#include "topo/topology.hpp"

namespace tenet::sim::detail {

// What ran a call: the algorithm, or the ring plan (SimConfig::lazy_rings), and how many times
// (ASTRA-sim's dataset splits run it once per piece).
struct RanWith {
  const synth::Algorithm* algorithm = nullptr;
  const synth::RingPlan* plan = nullptr;
  size_t pieces = 1;
};

// Calls are kept by row (group kind, collective, size and what ran them) as they end; rows() adds
// up their exposed time against the ranks' compute streams once the run is over.
class CallLog {
 public:
  explicit CallLog(const topo::Topology& t) : t_(t) {}

  // The row of a call of `kind` and `bytes` over group `group_id` (`group`: its kind, or its
  // ranks), run with `with`.
  size_t row(const std::string& group, int group_id, synth::CollectiveKind kind, Bytes bytes,
             const RanWith& with);
  // A call of row `row` over `members`: its first member arrived at `first`, its last at `began`,
  // and it ended at `end`.
  void add(size_t row, const std::vector<int>& members, Time first, Time began, Time end);
  // Row `row` as it stands (its calls so far).
  const CollectiveRow& at(size_t row) const { return rows_[row]; }
  // The rows, in the order first called; `compute`: per rank, its compute stream's busy intervals.
  std::vector<CollectiveRow> rows(
      const std::vector<std::vector<std::pair<Time, Time>>>& compute) const;

 private:
  // The link `with` keeps busiest, by its bytes over the link's bandwidth, and for how long (per
  // call: every piece).
  std::pair<topo::LinkId, Time> busiest(const RanWith& with);

  const topo::Topology& t_;
  std::vector<CollectiveRow> rows_;
  std::vector<std::set<int>> groups_;  // per row, the groups its calls ran in
  // (group, collective, size, producer, method, chunks per NPU, protocol) -> row
  std::map<std::tuple<std::string, synth::CollectiveKind, Bytes, std::string, std::string, int,
                      std::string>,
           size_t>
      index_;
  std::map<const void*, std::pair<topo::LinkId, Time>> busiest_;  // per algorithm or plan
  struct Call {
    size_t row;
    const std::vector<int>* members;
    Time began, end;
  };
  std::vector<Call> calls_;
};

// The receives of a run's point-to-point messages, by group kind, for SimResult::message_rows.
class MessageLog {
 public:
  // Rank `rank` waited from `start` to `end` for a message of `bytes` of group kind `group`.
  void add(const std::string& group, int rank, Bytes bytes, Time start, Time end);
  // `compute`: as CallLog::rows takes it.
  std::vector<MessageRow> rows(
      const std::vector<std::vector<std::pair<Time, Time>>>& compute) const;

 private:
  std::vector<MessageRow> rows_;
  std::map<std::string, size_t> index_;
  struct Receive {
    size_t row;
    int rank;
    Time start, end;
  };
  std::vector<Receive> receives_;
};

}  // namespace tenet::sim::detail
