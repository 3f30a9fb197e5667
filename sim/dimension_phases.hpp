// Internal to the simulator: ASTRA-sim's native multi-dimensional collectives as the phases its
// streams run, and the order its dimension queues run them in.
//
// ASTRA-sim splits a native collective into pieces (streams), and each piece runs one phase per
// dimension (astra-sim/system/Sys.cc, Sys::generate_collective): Reduce-Scatter over dimensions
// 1, 2, ..., N; All-Gather over N, ..., 1; All-Reduce (localBWAware) Reduce-Scatter over 1..N-1,
// All-Reduce over N, All-Gather over N-1..1; All-to-All over 1, 2, ..., N. Each phase waits on its
// dimension's queue, which runs `active-chunks-per-dimension` streams at once (SchedulerUnit's
// queue threshold, one queue per dimension); waiting streams are ordered by priority behind the
// running ones (insert_stream: the newest piece first under the LIFO policy, the oldest under
// FIFO). A piece moves to its next phase's queue when a phase ends (proceed_to_next_vnet_baseline),
// so one piece's second dimension overlaps the next piece's first.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "synth/ir/algorithm.hpp"
#include "topo/topology.hpp"

namespace tenet::sim::detail {

struct DimensionPhase {
  int dimension = 0;           // the queue it waits on
  synth::Algorithm algorithm;  // its transfers, with the dependencies among them
};

// The phases of `a`, the hierarchical baseline's Reduce-Scatter, All-Gather, All-Reduce or
// All-to-All over the topology's dimensions (Topology::levels, NPU ids in mixed radix: each
// transfer moves along one), in the order a piece runs them; empty when `a` is anything else or
// spans fewer than two dimensions (it then runs whole).
std::vector<DimensionPhase> dimension_phases(const synth::Algorithm& a, const topo::Topology& t);

// The pieces of one collective through their phases' queues. `run(piece, phase, done)` replays a
// phase and calls `done` when it is over; `finished` is called once every piece has run every
// phase.
class PieceQueues {
 public:
  using Run = std::function<void(size_t piece, size_t phase, std::function<void()> done)>;
  PieceQueues(size_t pieces, std::vector<int> dimension_of_phase, int active, bool newest_first,
              Run run, std::function<void()> finished);
  void start();

 private:
  struct Waiting {
    size_t piece;
    size_t phase;
  };
  void enqueue(size_t piece, size_t phase);
  void fill(int dimension);

  size_t pieces_;
  std::vector<int> dimension_of_phase_;
  int active_;
  bool newest_first_;
  Run run_;
  std::function<void()> finished_;
  std::vector<std::vector<Waiting>> waiting_;  // per dimension, in the order they will run
  std::vector<int> running_;                   // per dimension
  size_t done_ = 0;                            // pieces through every phase
};

}  // namespace tenet::sim::detail
