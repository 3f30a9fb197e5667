// An algorithm at another size, its structure kept.
#pragma once

#include "synth/ir/algorithm.hpp"
#include "topo/topology.hpp"
#include "topo/units.hpp"

namespace tenet::synth {

// `a` for a collective of `size` bytes (Collective::chunk_bytes_for's convention): the same
// transfers, routes, channels, rates and dependencies, with chunks of size / pieces bytes rounded
// up to a whole byte, re-timed on `t` under a's link model (claimed_time set). This is how the
// MSCCL runtime runs an XML algorithm at every size in its range. Its time is the model's for that
// schedule, not a synthesis at `size`: a schedule made for large chunks pipelines less well at
// small ones (latency and per-step costs weigh more), and the other way round. Throws tenet::Error
// where `size` is fewer bytes than the algorithm has chunks (its chunks would round up to a byte,
// a larger collective), or where `a` does not fit `t` (as synth::time).
Algorithm rescaled(const topo::Topology& t, Algorithm a, Bytes size);

}  // namespace tenet::synth
