// The whole `-k auto` search (synth::synthesize_auto_chunks) as a microbenchmark's body, shared by
// the synthesis benchmarks.
#pragma once

#include <benchmark/benchmark.h>

#include "synth/bounds/lower_bound.hpp"
#include "synth/synthesizer.hpp"
#include "topo/topology.hpp"

namespace tenet::bench_micro {

// `kind` of `total` bytes over every NPU of `t`, searched at default options; counters: the chunks
// per NPU it picked and its ratio to the lower bound.
// With `time_limit` seconds (as --time-limit gives them, none kept back for verifying and
// writing), each iteration's search answers by then: the counter `stopped` says whether it did so
// early.
inline void time_auto_search(benchmark::State& state, const topo::Topology& t,
                             synth::CollectiveKind kind, Bytes total, double time_limit = 0) {
  const auto c = synth::Collective::over_all(t, kind);
  synth::ChunkingResult r;
  bool stopped = false;
  for (auto _ : state) {
    const synth::Deadline deadline =
        time_limit > 0 ? synth::Deadline(time_limit) : synth::Deadline();
    synth::SynthOptions o;
    if (time_limit > 0) o.deadline = &deadline;
    r = synth::synthesize_auto_chunks(t, c, total, o);
    stopped = deadline.stopped();
  }
  state.counters["stopped"] = stopped;
  state.counters["chunks_per_npu"] = r.chunks_per_npu;
  state.counters["ratio"] =
      static_cast<double>(r.algorithm.claimed_time) /
      synth::lower_bound(t, r.algorithm.collective, r.algorithm.chunk_bytes).total;
}

}  // namespace tenet::bench_micro
