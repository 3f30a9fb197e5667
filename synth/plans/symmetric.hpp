// Synthesis by translation on topologies that look the same from every NPU (topo/symmetry.hpp:
// tori, rings, hypercubes, of any bandwidth and latency per dimension; clusters of servers on
// rails, and a switch alone).
//
// An All-Gather's schedule for rank 0's chunks, moved by the translation that takes NPU 0 to NPU
// s, is a schedule for rank s's: each of its transfers over slot j (the j-th link out of an NPU)
// becomes a transfer over slot j of the NPU moved. The moved schedules of all ranks share a link
// exactly when rank 0's schedule uses the link's slot, anywhere: at time t, the link x -> x + d of
// slot j carries rank s's chunk when rank 0's schedule sends over slot j from x - s at t. So the
// moved schedules never meet on a link if and only if rank 0's transfers over any one slot never
// overlap in time. The synthesis is then the TEN link-chunk matcher for one rank, on S serial
// queues (the slots) instead of the N*S links: N times less work, and its one decision per slot
// and instant is every link's. Rank 0's chunks spread from NPU 0; whenever a slot is free it sends
// a chunk some NPU holds over that NPU's link of the slot to an NPU that does not hold it yet.
// Which one: the target the fewest other slots could feed (scarce), the one waiting longest, or
// the one that arrived last; all three are run (each O(N k S log)) and the fastest kept.
//
// A slot busy without a break from the first instant to the last carries (N-1)k/S chunks of rank
// 0, which is the cut bound on a homogeneous torus.
//
// Through switches the same holds with ways (a link to a switch and one on to an NPU) for slots and
// the orbits of links (every move of one link) as the serial queues: rank 0's transfers through any
// NVSwitch share the orbit of "an NPU's link to its NVSwitch".
//
// Reduce-Scatter is the All-Gather reversed in time (sends become reductions over the links back,
// which must exist with the same bandwidth and latency), and All-Reduce is Reduce-Scatter then
// All-Gather (its own channel), each chunk's All-Gather leaving its owner once it is reduced there.
//
// The moved schedules are timed once, on the quotient (rank 0's transfers, each link replaced by
// its orbit's link at NPU 0): every moved copy of a send starts and ends when rank 0's does, as
// synth::time would give the whole algorithm (tests compare the two transfer by transfer). On
// 1024 NPUs that is 2K transfers timed, not 2M.
//
// All-to-All: each of rank 0's chunks goes to its destination along ways of fewest hops, each hop
// over the way whose orbits carry least so far (destinations furthest first), which evens out the
// orbits' loads; as the translations commute, a chunk's ways reach its destination in any order, so
// whenever an orbit is free it takes, of the chunks ready there with a way left in it, the one with
// the most hops still to go. On tori, hypercubes and servers on rails this is the hop-count bound.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "synth/ir/algorithm.hpp"
#include "topo/symmetry.hpp"
#include "topo/topology.hpp"

namespace tenet::synth {

// A schedule by translation, timed on its quotient but not yet written out for every NPU: its time
// is known before its N x transfers are made, which a caller that may not keep it (the portfolio,
// beside faster methods) need not make. Holds a reference to the topology it was planned on.
class SymmetricSchedule {
 public:
  Time time() const;            // the collective time, as the algorithm claims it
  size_t transfers() const;     // how many transfers the algorithm holds
  Algorithm algorithm() const;  // every NPU's transfers, timed: synthesize_symmetric's answer

 private:
  friend std::optional<SymmetricSchedule> plan_symmetric(const topo::Topology&, const Collective&,
                                                         Bytes, LinkModel, std::string*, Bandwidth);
  struct State;
  std::shared_ptr<const State> state_;
};

// synthesize_symmetric's schedule, timed, not yet written out (nothing, with the reason in `why`,
// where it does not apply).
std::optional<SymmetricSchedule> plan_symmetric(const topo::Topology& t, const Collective& c,
                                                Bytes chunk_bytes, LinkModel model,
                                                std::string* why = nullptr,
                                                Bandwidth reduce_bandwidth = 0);

// `c` synthesized by translation, timed under `model`, its method "symmetric (...)". Nothing,
// with the reason in `why`, unless `c` is an All-Gather, Reduce-Scatter, All-Reduce or All-to-All
// (not All-to-Allv) over every NPU of a topology with translations (topo::translation_symmetry;
// for Reduce-Scatter and All-Reduce, every link with one back) in chunks per NPU (not
// all_reduce_chunks). Its reductions take chunk / `reduce_bandwidth` each (Algorithm::
// reduce_bandwidth; 0: no time).
std::optional<Algorithm> synthesize_symmetric(const topo::Topology& t, const Collective& c,
                                              Bytes chunk_bytes, LinkModel model,
                                              std::string* why = nullptr,
                                              Bandwidth reduce_bandwidth = 0);

}  // namespace tenet::synth
