// Baseline algorithms: what collective libraries run today, as producers of the same IR, on any
// topology, so that the verifier, timing, exporters and benchmarks treat them exactly like
// synthesized ones.
//
//   ring          All-Gather, Reduce-Scatter, All-Reduce; Broadcast and Reduce as a pipelined chain
//   bidir-ring    two rings in opposite directions, each with half the chunks (an odd chunk count
//                 gives the first ring one more)
//   direct        every pair talks directly: Reduce-Scatter by sending each block to its owner,
//                 All-Gather by sending one's block to everyone; pairwise All-to-All; flat Gather
//                 and Scatter
//   rhd           recursive halving-doubling (Rabenseifner): Reduce-Scatter and All-Gather for a
//                 power-of-two count, All-Reduce for any count (MPICH: the first 2r ranks pair up)
//   dbt           double binary tree All-Reduce (two complementary trees, half the chunks each,
//                 pipelined); binomial-tree Broadcast and Reduce
//   bruck         Bruck All-Gather
//   hierarchical  multi-dimensional: Reduce-Scatter dimension by dimension, then All-Gather back,
//                 with an algorithm per dimension: hierarchical:ring,direct
//
// Logical sends between NPUs that are not linked follow a route through switches and router
// NPUs, or else explicit relays through NPUs. A relay holds one copy per chunk, so a partial
// reduction cannot pass through an NPU that has its own contribution: such a baseline does not
// apply, and says why. Step-synchronous algorithms (halving-doubling, Bruck, binomial trees, the
// phases of hierarchical) start a step only when the previous one has arrived, and a node sends
// its steps in order, as their MPI implementations do.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "synth/algorithm.hpp"
#include "topo/topology.hpp"

namespace tenet::synth {

enum class BaselineKind : uint8_t { Ring, BidirRing, Direct, Rhd, Dbt, Bruck, Hierarchical };

struct BaselineSpec {
  BaselineKind kind = BaselineKind::Ring;
  std::vector<BaselineKind> per_dimension;  // hierarchical only: ring, direct or rhd per level
  std::string name() const;                 // "ring", "hierarchical:ring,direct"
};

std::string_view to_string(BaselineKind k);
// "ring", "bidir-ring", "direct", "rhd", "dbt", "bruck", "hierarchical[:a,b,...]".
BaselineSpec parse_baseline(std::string_view text);
const std::vector<BaselineKind>& all_baselines();
bool supports(BaselineKind b, CollectiveKind c);

// Thrown when a baseline cannot run the collective on the topology; the message says why.
class NotApplicable : public Error {
 public:
  using Error::Error;
};

// The baseline's algorithm, timed by synth::time.
Algorithm make_baseline(const BaselineSpec& spec, const topo::Topology& t, const Collective& c,
                        Bytes chunk_bytes, LinkModel model = LinkModel::Pipelined);

// An order of `npus` around a ring that follows the topology: consecutive NPUs (and the last and
// the first) linked or joined through switches/routers when possible (a Hamiltonian cycle from
// the grid the generator recorded, or a bounded search), else an order that keeps neighbours
// close.
std::vector<NodeId> ring_order(const topo::Topology& t, const std::vector<NodeId>& npus);

}  // namespace tenet::synth
