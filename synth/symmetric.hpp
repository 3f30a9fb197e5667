// Synthesis by translation on topologies that look the same from every NPU (topo/symmetry.hpp:
// tori, rings, hypercubes, of any bandwidth and latency per dimension).
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
// 0, which is the cut bound on a homogeneous torus: a 64x64 torus All-Gather is made at 1.000x.
//
// Reduce-Scatter is the All-Gather reversed in time (sends become reductions over the links back,
// which must exist with the same bandwidth and latency), and All-Reduce is Reduce-Scatter then
// All-Gather (its own channel), each chunk's All-Gather leaving its owner once it is reduced there.
#pragma once

#include <optional>
#include <string>

#include "synth/algorithm.hpp"
#include "topo/symmetry.hpp"
#include "topo/topology.hpp"

namespace tenet::synth {

// `c` synthesized by translation, timed under `model`, its method "symmetric (...)". Nothing,
// with the reason in `why`, unless `c` is an All-Gather, Reduce-Scatter or All-Reduce over every
// NPU of a topology with translations (topo::translation_symmetry; for Reduce-Scatter and
// All-Reduce, every slot with one back) in chunks per NPU (not all_reduce_chunks).
std::optional<Algorithm> synthesize_symmetric(const topo::Topology& t, const Collective& c, Bytes chunk_bytes,
                                              LinkModel model, std::string* why = nullptr);

}  // namespace tenet::synth
