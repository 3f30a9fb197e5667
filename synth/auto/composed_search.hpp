// The composition per level's own chunk search (synthesize_auto_chunks in synth/synthesizer.hpp
// runs it beside the flat search, chunk_search.cpp).
#pragma once

#include "synth/synthesizer.hpp"
#include "topo/topology.hpp"

namespace tenet::synth::detail {

// The composition per level at 1, 2, 4, ... chunks per NPU inside the servers: as best_chunking
// does, up to the transfer budget, stopping within kChunkSearchSlack of the bound or once doubling
// stops helping (twice for small algorithms, once past 1M transfers). `to_beat`: the flat search's
// time, when there is one (-1: none): far behind it, the counts stop where the last doubling's
// gain, gained again, would not reach it (gains shrink as the chunks do), and at the first count
// where that is over twice kPipelinesContend of it (a doubling at most halves a count's time).
Made<ChunkingResult> composed_auto_chunks(const topo::Topology& t, const Collective& c,
                                          Bytes total_bytes, const SynthOptions& o,
                                          int max_chunks_per_npu, Time to_beat = -1);

}  // namespace tenet::synth::detail
