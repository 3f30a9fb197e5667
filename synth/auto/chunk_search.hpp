// The flat chunk search (chunk_search.cpp): what `auto` makes at each chunk count over the whole
// topology. synthesize_auto_chunks (auto_chunks.cpp) runs it, and the composition per level beside
// it where a cluster of servers is too large for it (composed_search.hpp).
#pragma once

#include "synth/synthesizer.hpp"
#include "topo/topology.hpp"

namespace tenet::synth::detail {

// The team relay first (a group with idle server mates), or Blink's trees where they end far under
// the Reduce-Scatter plus All-Gather figure; else the count search over the portfolio (1, 2, 4, ...
// chunks per NPU, each method left out where it is predicted not to win), every baseline's own
// search raced against its answer, and the flow plan's pipelines, the server plan and the
// matcher doubling alone past its last count.
Made<ChunkingResult> flat_auto_chunks(const topo::Topology& t, Collective c, Bytes total_bytes,
                                      const SynthOptions& o, int max_chunks_per_npu);

}  // namespace tenet::synth::detail
