// Lower bounds on a collective's time on a topology, for "percent of ideal".
//   All-Gather: the cut bound (topo/bounds.hpp) on the member NPUs.
//   Reduce-Scatter: the cut bound on the reversed topology.
//   All-Reduce: the narrowest cut around any set of ranks carries the whole buffer each way ("cut
//   bound (every byte both ways)": at least a Broadcast and a Reduce of it), or every byte arrives
//   2(P - 1) times at NPUs or reducing switches ("arrivals bound"); see lower_bound.cpp.
//   Broadcast: the cut bound from the root (topo::broadcast_cut_bound); Reduce: the same reversed.
//   Gather, Scatter: what each member must receive over its incoming links and send over its
//   outgoing links, or what a group of NPUs ("group cut bound", below) must let in or out on the
//   root's side. All-to-All: the same, or the distance bound where larger (every byte crosses the
//   links of a path: "hop-count bound", bytes x hops over the total bandwidth, or "link-time
//   bound", bytes x link time (1 / bandwidth) along shortest paths over the number of links), or
//   the cut around a group of NPUs ("group cut bound": the components of the links at least b wide,
//   for each width b, and each switch with the NPUs linked to it). Gather, Scatter and All-to-All
//   also get the maximum-concurrent-flow bound (topo/flow_bound.hpp), of which every bound
//   above is a special case: exact where the LP is small enough to solve ("max-concurrent-flow
//   bound (LP)"), else the best link weights multiplicative weights find in a second's work
//   ("max-concurrent-flow bound (multiplicative weights, R rounds)"); the largest bound wins.
// To the bandwidth term, the latency the last byte still travels is added: for the cut bounds
// (All-Gather, Reduce-Scatter, Broadcast, Reduce) from the critical set to the member that needs
// it (lower_bound.cpp, past_cut, says why this holds), otherwise one link's (the cheapest); the
// result is never below the latency bound (the farthest pair that must communicate; but for
// All-to-All followed by the bytes that depend on the pair's one end entering the other:
// LowerBound::latency_bytes).
// Where transfers pay their routes' per-step costs (topo::Link::step), both terms count them: no
// byte crosses a cut's links before the least step among them has passed (its transfer holds its
// share of the links for the step before any byte moves), and a chain of transfers between two
// nodes pays at least the step of the narrowest-step way that joins them (lower_bound.cpp).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "synth/ir/collective.hpp"
#include "topo/topology.hpp"

namespace tenet::synth {

struct LowerBound {
  Time bandwidth = 0;  // the bandwidth term
  Time step = 0;       // the per-step cost paid before the bandwidth term's bytes flow: the least
                       // step of the links they cross (0 where steps are not charged)
  Time latency = 0;    // the farthest pair that must communicate (latency-weighted; over 4,096
                       // sources, the farthest found from a sample of them: still a bound), and
                       // latency_bytes after it
  Time latency_bytes = 0;  // (all but All-to-All) the bytes that depend on the pair's one end
                           // entering the other through the widest links in it may have
                           // (lower_bound.cpp, bytes_after_latency)
  Time cut_latency =
      0;  // how far the last byte still travels once across: past the binding cut (All-Gather,
          // Reduce-Scatter, Broadcast, Reduce), otherwise the cheapest link's latency
  bool past_the_cut = false;  // cut_latency is the latency past the binding cut
  Time total = 0;             // max(bandwidth + step + cut_latency, latency)
  // max(bandwidth + the cheapest link's latency, latency without steps): the bound as it was
  // before the latency past the cut and the per-step costs counted. The synthesizer's thresholds
  // for how far to search (kChunkSearchSlack, kPipelinesPersist, ...) were tuned against it and
  // keep to it, so that the tighter bound changes what is reported, not what is built (All-Reduce:
  // with `steering` as its bandwidth term).
  Time coarse = 0;
  // All-Reduce: the Reduce-Scatter plus All-Gather figure (a bound on that family only; a tree of
  // reductions can beat it), which `coarse` keeps to; 0 for the others.
  Time steering = 0;
  // What limits the bandwidth term, in words: a cut's links in the topology's names
  // (topo::describe_cut: "the links into server3/npu3 from the rest: 350 GB/s = ..."), or the
  // arrivals bound's islands ("2 islands of links of 300 GB/s or more hold the ranks: every byte
  // enters them 2 x (2 - 1) times, through 400 GB/s in all ..."); else empty.
  std::string limit;
  std::string protocol;  // the protocol (topo::Protocol) it holds under, the least of all; or empty
  std::string label;     // "cut bound", "cut bound (every byte both ways)", "arrivals bound",
                         // "cut bound (from the root)", "ingress/egress
                         // bound", "hop-count bound", "link-time bound", "group cut bound",
                         // "max-concurrent-flow bound (LP)", "max-concurrent-flow bound
                         // (multiplicative weights, R rounds)"
};

// What lower_bound keeps between calls: the farthest pair's latency (the same at every chunk count
// a search tries), the last bound (the portfolio's steps ask for it again, and the verifier for
// the algorithm the search ended on: at 1024 NPUs a max-flow pass each), the max-concurrent-flow
// bound per group (linear in the bytes), and the cut bounds per group and root (topo::
// allgather_cut_bound, broadcast_cut_bound, on the topology and its reverse: they do not depend on
// the bytes, which change at every count).
// Owned by whoever makes the calls (a synthesis run, a command, a benchmark); every entry is keyed
// on the topology's fingerprint (and its links' steps where charged), so one memo serves the
// several topologies a run works on. Safe to share between threads.
class BoundMemo {
 public:
  BoundMemo();
  ~BoundMemo();
  BoundMemo(const BoundMemo&) = delete;
  BoundMemo& operator=(const BoundMemo&) = delete;

  struct State;  // lower_bound.cpp
  State& state() { return *state_; }

 private:
  std::unique_ptr<State> state_;
};

// `steps`: whether the algorithms bounded pay per-step costs (Algorithm::step_costs); the form
// without takes the topology's (topo::Topology::charges_steps). `memo`: where answers are kept
// between calls (none: computed afresh).
LowerBound lower_bound(const topo::Topology& t, const Collective& c, Bytes chunk_bytes, bool steps,
                       BoundMemo* memo = nullptr);
LowerBound lower_bound(const topo::Topology& t, const Collective& c, Bytes chunk_bytes,
                       BoundMemo* memo = nullptr);

// An All-Reduce run as a Reduce-Scatter and then an All-Gather begun once the first has ended
// (each half's bound with its own steps and latency, over the same ranks and chunks, summed): a
// bound on that family only, not on every All-Reduce. An algorithm that starts a chunk's
// All-Gather as soon as that chunk is reduced may end sooner (the first half can keep an NPU's
// links out busy while the second uses its links in), and so may one that reduces along trees or
// gives the NPUs unequal shares. It tells a user what the usual two-phase shape can reach where
// the lower bound is below it (an NPU with a slow NIC takes in its share of both halves through
// it). Nothing for the other kinds, or an All-Reduce in C chunks in all (no chunk per rank).
struct HalvesInTurn {
  LowerBound reduce_scatter, all_gather;
  Time total() const { return reduce_scatter.total + all_gather.total; }
  // Whether the halves' bandwidth terms come to over 1.001x the All-Reduce bound's (`bound`):
  // where only their second step and latency set them above it, they tell nothing it does not.
  bool above(const LowerBound& bound) const;
};
std::optional<HalvesInTurn> halves_in_turn_bound(const topo::Topology& t, const Collective& c,
                                                 Bytes chunk_bytes, bool steps,
                                                 BoundMemo* memo = nullptr);
// The halves' terms in words: "180.6 us (cut bound (reversed) ...) + 180.3 us (cut bound ...)".
std::string describe(const HalvesInTurn& h);
// What limits each half, in the topology's names ("Reduce-Scatter: the links out of ...;
// All-Gather: the links into ..."), once where both say the same; empty where neither says.
std::string describe_limit(const HalvesInTurn& h);

// The terms that make up `b.total`, in words whose numbers add up: "arrivals bound 1.2 ms + 700 ns
// latency", "cut bound 1.321 ms + 2.6 us step + 500 ns latency past the cut", or, when the
// farthest pair's latency (with its steps) is larger, "latency of the farthest pair that must
// communicate; arrivals bound 240 ps + 700 ns latency is less".
std::string describe(const LowerBound& b);

}  // namespace tenet::synth
