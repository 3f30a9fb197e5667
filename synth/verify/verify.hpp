// The verifier: symbolic execution of an algorithm that trusts nothing it claims.
//
// It checks every route against the topology, every dependency, every link's load (at every instant
// the rates on a link sum to at most its bandwidth; under `hold` one transfer at a time) and every
// transfer's rate and duration under the link model, then replays the transfers in time order
// tracking, for every node and chunk, whose contributions the node holds: a source must hold its
// chunk when the transfer starts; a reduction must not count a rank twice; a copy must not destroy
// a partial result that was never sent on; at the end every postcondition must hold. Each violation
// names the transfer, chunk, link, node and time, with a sentence a person understands.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "synth/bounds/lower_bound.hpp"
#include "synth/ir/algorithm.hpp"
#include "synth/ir/import_problem.hpp"
#include "topo/topology.hpp"

namespace tenet::synth {

enum class ViolationKind : uint8_t {
  BadReference,        // a chunk, node, link or transfer id out of range; a negative time
  BrokenRoute,         // empty, not contiguous, wrong ends, or through an NPU that is no router
  SwitchCapability,    // a switch holds or reduces data without the capability
  WrongOperation,      // a reduction in a collective that does not reduce
  DependencyCycle,     // dependencies form a cycle
  DependencyOrder,     // a dependency on a transfer listed later (the IR lists in dependency order)
  DependencyViolated,  // starts before a dependency has ended
  SourceLacksData,     // the source does not hold the chunk when the transfer starts
  LinkOverbooked,  // at some instant a link carries more than its bandwidth (hold: two transfers)
  TooShort,        // shorter than the link model allows
  DoubleCount,     // a reduction counts some rank twice
  Overwrite,       // a copy destroys a partial result that was never sent on
  ReduceIntoNothing,   // a reduction into a node that holds no copy of the chunk
  PostconditionUnmet,  // a rank lacks a chunk, or holds it not fully reduced
  TimeMismatch,        // the claimed collective time differs from the schedule's
  BadRate,             // a transfer's own rate is negative or above its route's narrowest link
  BufferSlotWrong,     // MSCCL-XML: an output slot ends holding the wrong chunk or none
                       // (import_msccl_xml)
  ChannelOverlap,  // serial channels: starts before the one before it in its channel has left the
                   // link
  // Imported programs (synth::ImportProblem): the runtime would compute something else.
  ReduceMismatch,   // a reduction combines two different chunks
  UnorderedAccess,  // an access not ordered after a conflicting one (MSCCL thread blocks racing on
                    // a slot; a Chakra send not waiting for the receive that brought its data)
  OutOfBounds,      // an MSCCL step accesses a buffer past the size its GPU declares
  UnpairedMessage,  // a send or receive with no partner (Chakra: of the same tag, peers and
                    // size; MSCCL-XML: the k-th on its channel, of the same cnt)
  NeverReady,       // a node or step that never runs: it waits on a node not in its file, on a
                    // cycle, or on an unpaired receive
};
inline constexpr int kViolationKinds = 23;
std::string_view to_string(ViolationKind k);

enum class WarningKind : uint8_t {
  Redundant,            // a copy brings what the destination already holds
  FingerprintMismatch,  // made for another topology
  TimesComputed,        // the algorithm had no times; the verifier computed them
  Idle,                 // the schedule finishes later than the timing model would
};
std::string_view to_string(WarningKind k);

struct Violation {
  ViolationKind kind;
  TransferId transfer = -1;
  ChunkId chunk = -1;
  LinkId link = -1;
  NodeId node = -1;
  Time time = -1;
  std::string message;
};

struct Warning {
  WarningKind kind;
  TransferId transfer = -1;
  std::string message;
};

struct VerifyOptions {
  size_t max_reported = 200;  // violations and warnings kept with messages; all are counted
  bool lower_bound = true;    // compute the topology's lower bound (a max-flow; skip in hot loops)
  // Where the bound is kept between calls (owned by the caller: the one its synthesis used, whose
  // last bound is usually this one; none: computed afresh).
  BoundMemo* bounds = nullptr;
  // Replay the transfers under the timing model too (Report::model_time, and the warning where the
  // schedule is slower than the model would run it). A caller that has just timed the algorithm
  // with the model (synth::time) knows the answer: the same replay again, as long as the first.
  bool model_time = true;
};

struct Report {
  std::vector<Violation> violations;             // the first max_reported
  std::array<size_t, kViolationKinds> counts{};  // every violation, by kind
  size_t violation_count = 0;
  std::vector<Warning> warnings;
  size_t warning_count = 0;

  size_t transfers = 0;
  Time collective_time = 0;  // the schedule's: the latest arrival
  Time claimed_time = -1;    // what the algorithm claims, or -1
  Time model_time = -1;      // the timing model's (synth::time) for the same transfers, or -1 (not
                             // computed: VerifyOptions::model_time)
  LowerBound bound;          // when computed
  std::vector<Time> link_busy;  // per link, occupancy weighted by the share of bandwidth held
  int links_used = 0;
  double mean_utilization = 0, max_utilization = 0;  // over used links, busy / collective time

  bool correct() const { return violation_count == 0; }
  size_t count(ViolationKind k) const { return counts[static_cast<int>(k)]; }
  double ratio() const {
    return bound.total > 0 ? static_cast<double>(collective_time) / bound.total : 0.0;
  }
};

Report verify(const topo::Topology& t, const Algorithm& a, const VerifyOptions& options = {});

// What an importer found wrong in the program it read, added to `r` as violations (a slot that
// ends wrong: buffer-slot-wrong; a reduction of different chunks: reduce-mismatch; a rank counted
// twice: double-count; an access nothing orders: unordered-access; out-of-bounds).
void add_import_problems(Report& r, const std::vector<ImportProblem>& problems,
                         const VerifyOptions& options = {});

}  // namespace tenet::synth
