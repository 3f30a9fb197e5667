// Verifier and timing throughput, in transfers per second, on ring All-Gathers of 1 million
// (1024 NPUs) and 10 million (3163 NPUs) transfers (timed in one pass: one link per route) and the
// matcher's All-Reduce on an 8 x 8 and a 16 x 16 mesh (the verifier's reductions), and
// the timing of an algorithm whose routes cross switches (timed event by event, its links shared
// by capacity): the flow plan's pipelined All-Reduce on a leaf-spine fabric, as the chunk search
// times it at every count and variant; and Blink's trees on a mesh, timed and verified.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "synth/cost/timing.hpp"
#include "synth/producers.hpp"
#include "synth/synthesizer.hpp"
#include "synth/verify/verify.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"

namespace {

using namespace tenet;

// Ring All-Gather on a unidirectional ring of n: n(n-1) transfers, each depending on the one that
// brought its chunk.
synth::Algorithm ring_allgather(const topo::Topology& t) {
  const int n = t.num_npus();
  synth::Algorithm a;
  a.collective = synth::Collective::over_all(t, synth::CollectiveKind::AllGather);
  a.chunk_bytes = 1 << 20;
  a.topology_fingerprint = t.fingerprint();
  a.reserve(static_cast<size_t>(n) * (n - 1), static_cast<size_t>(n) * (n - 1),
            static_cast<size_t>(n) * (n - 1));
  std::vector<synth::TransferId> brought(n, -1);
  for (int s = 0; s < n - 1; ++s) {
    std::vector<synth::TransferId> next = brought;
    for (int i = 0; i < n; ++i) {
      const synth::ChunkId c = ((i - s) % n + n) % n;
      const topo::LinkId l = t.out_links(i)[0];
      const synth::TransferId dep = brought[c];
      next[c] = a.add(c, i, (i + 1) % n, std::span(&l, 1), synth::Op::Copy,
                      dep >= 0 ? std::span(&dep, 1) : std::span<const synth::TransferId>());
    }
    brought = next;
  }
  synth::time(t, a);
  return a;
}

// Verifies `a` once per iteration, in transfers per second; `wrong` where it does not verify.
void verify_throughput(benchmark::State& state, const topo::Topology& t, const synth::Algorithm& a,
                       const char* wrong) {
  bool correct = true;
  for (auto _ : state) {
    synth::Report r = synth::verify(t, a, {.max_reported = 10, .lower_bound = false});
    correct = correct && r.correct();
    benchmark::DoNotOptimize(r);
  }
  if (!correct) state.SkipWithError(wrong);
  state.counters["transfers"] = static_cast<double>(a.size());
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * a.size()));
}

// Times `a` once per iteration, in transfers per second.
void timing_throughput(benchmark::State& state, const topo::Topology& t, synth::Algorithm& a) {
  for (auto _ : state) benchmark::DoNotOptimize(synth::time(t, a));
  state.counters["transfers"] = static_cast<double>(a.size());
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * a.size()));
}

// Blink's All-Reduce on `t` at k chunks per NPU of 256 KiB.
synth::Algorithm blink_trees(const topo::Topology& t, int k) {
  return synth::make_algorithm("blink", t,
                               synth::Collective::over_all(t, synth::CollectiveKind::AllReduce, k),
                               Bytes{1} << 18, {});
}

void BM_Verify(benchmark::State& state) {
  const auto t = topo::generate(fmt::format("ring:{},bidir=false", state.range(0)));
  const synth::Algorithm a = ring_allgather(t);
  verify_throughput(state, t, a, "the ring All-Gather did not verify");
}
BENCHMARK(BM_Verify)->Arg(1024)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Verify)->Arg(3163)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

// The matcher's All-Reduce on an n x n mesh: every reduction's partial sums traced rank set by rank
// set (the sets a greedy schedule makes are not the few intervals of a ring's). 8 x 8: 64 ranks,
// each set one machine word; 16 x 16: intervals (synth/ir/rank_set.hpp).
void BM_VerifyAllReduce(benchmark::State& state) {
  const auto t = topo::generate(fmt::format("mesh2d:{}x{}", state.range(0), state.range(0)));
  synth::SynthOptions o;
  o.method = synth::SynthMethod::Matcher;
  const synth::Algorithm a = synth::synthesize(
      t, synth::Collective::over_all(t, synth::CollectiveKind::AllReduce), 1 << 20, o);
  verify_throughput(state, t, a, "the matcher's All-Reduce did not verify");
}
BENCHMARK(BM_VerifyAllReduce)->Arg(8)->Arg(16)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Timing(benchmark::State& state) {
  const auto t = topo::generate(fmt::format("ring:{},bidir=false", state.range(0)));
  synth::Algorithm a = ring_allgather(t);
  timing_throughput(state, t, a);
}
BENCHMARK(BM_Timing)->Arg(1024)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_TimingSwitched(benchmark::State& state) {
  const auto t = topo::generate("leafspine:4x8,spines=2");
  const auto c = synth::Collective::over_all(t, synth::CollectiveKind::AllReduce,
                                             static_cast<int>(state.range(0)));
  synth::SynthOptions o;
  o.method = synth::SynthMethod::PlanPipeline;
  synth::Algorithm a = synth::synthesize(t, c, 1 << 16, o);
  timing_throughput(state, t, a);
}
BENCHMARK(BM_TimingSwitched)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime();

// Blink's packed trees as pipelines (channels: several queues per link, each event-driven) at 64
// chunks per NPU: the All-Reduce `tenet synth` answers mesh2d:8x8 at 1 GiB with (516K transfers,
// an instant's events tens at a time), timed and verified.
void BM_TimingTrees(benchmark::State& state) {
  const auto t = topo::generate("mesh2d:8x8");
  synth::Algorithm a = blink_trees(t, static_cast<int>(state.range(0)));
  timing_throughput(state, t, a);
}
BENCHMARK(BM_TimingTrees)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime();

// The flow plan's pipelines on ForestColl's MI250 box (examples/topologies/mi250-box.yaml) at 1024
// chunks per NPU of 64 KiB, streams on channels of their own: the All-Gather the chunk search of
// a 1 GiB All-Reduce times most often (each count's variants, its drains, its halves joined).
void BM_TimingPipelines(benchmark::State& state) {
  const auto t = topo::load(std::string(TENET_SOURCE_DIR) + "/examples/topologies/mi250-box.yaml");
  synth::SynthOptions o;
  o.method = synth::SynthMethod::PlanPipeline;
  synth::Algorithm a =
      synth::synthesize(t,
                        synth::Collective::over_all(t, synth::CollectiveKind::AllGather,
                                                    static_cast<int>(state.range(0))),
                        Bytes{1} << 16, o);
  timing_throughput(state, t, a);
}
BENCHMARK(BM_TimingPipelines)->Arg(1024)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_VerifyTrees(benchmark::State& state) {
  const auto t = topo::generate("mesh2d:8x8");
  const synth::Algorithm a = blink_trees(t, static_cast<int>(state.range(0)));
  verify_throughput(state, t, a, "Blink's All-Reduce did not verify");
}
BENCHMARK(BM_VerifyTrees)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
