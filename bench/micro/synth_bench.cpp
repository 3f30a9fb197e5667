// Synthesis speed and quality. Targets (All-Gather, pipelined links, 50 GB/s, 0.5 us):
//   quality: <= 1.02 x (cut bound + one link latency) on meshes, tori and hypercubes of >= 64 NPUs
//            with 4 chunks of 1 MiB per NPU;
//   speed:   32x32 mesh k=1 < 1 s; 16x16 mesh k=4 < 1 s; 32x32 mesh k=4 < 10 s;
//            64x64 torus k=1 < 30 s and 2 GiB; plus the scaling exponent over N from 64 to 4096
//            (all the matcher alone; auto takes the symmetric schedule on tori, timed by
//            Symmetric).
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <chrono>
#include <cmath>

#include "bench/micro/auto_search.hpp"
#include "synth/bounds/lower_bound.hpp"
#include "synth/synthesizer.hpp"
#include "topo/generators.hpp"

namespace {

using namespace tenet;

constexpr Bytes kChunk = 1 << 20;

// Synthesizes `kind` over every NPU of `spec` with k chunks of 1 MiB per NPU, as `o` says.
void run(benchmark::State& state, const std::string& spec, synth::CollectiveKind kind, int k,
         const synth::SynthOptions& o) {
  const auto t = topo::generate(spec);
  const auto c = synth::Collective::over_all(t, kind, k);
  Time time = 0;
  size_t transfers = 0;
  for (auto _ : state) {
    synth::Algorithm a = synth::synthesize(t, c, kChunk, o);
    time = a.claimed_time;
    transfers = a.size();
  }
  const synth::LowerBound b = synth::lower_bound(t, c, kChunk);
  state.counters["npus"] = t.num_npus();
  state.counters["transfers"] = static_cast<double>(transfers);
  state.counters["ratio"] = static_cast<double>(time) / b.total;
}

// The matcher's own speed and quality (auto takes the symmetric schedule on tori: the Symmetric
// cases below).
void run(benchmark::State& state, const std::string& spec, int k, synth::ChunkPriority priority) {
  synth::SynthOptions o;
  o.matcher.priority = priority;
  o.method = synth::SynthMethod::Matcher;
  run(state, spec, synth::CollectiveKind::AllGather, k, o);
}

// Spec strings with ':' cannot be macro tokens; name the cases instead.
void Q(benchmark::State& s, const char* spec, synth::ChunkPriority p) { run(s, spec, 4, p); }
const char* const kFamily[] = {"mesh2d:8x8",   "torus2d:8x8",   "mesh3d:4x4x4",  "torus3d:4x4x4",
                               "hypercube:64", "torus2d:16x16", "hypercube:256", "torus3d:8x8x8"};
int register_quality() {
  for (const char* spec : kFamily)
    for (auto [p, name] : {std::pair{synth::ChunkPriority::Scarce, "scarce"},
                           std::pair{synth::ChunkPriority::Rarest, "rarest"},
                           std::pair{synth::ChunkPriority::Random, "random"}})
      benchmark::RegisterBenchmark(fmt::format("Quality/{}/k4/{}", spec, name).c_str(), Q, spec, p)
          ->Unit(benchmark::kMillisecond)
          ->Iterations(1);
  return 0;
}
const int quality_registered = register_quality();

// Speed targets.
void Speed(benchmark::State& s, const char* spec, int k) {
  run(s, spec, k, synth::ChunkPriority::Scarce);
}
int register_speed() {
  for (auto [spec, k] : {std::pair{"mesh2d:32x32", 1}, std::pair{"mesh2d:16x16", 4},
                         std::pair{"mesh2d:32x32", 4}, std::pair{"torus2d:64x64", 1}})
    benchmark::RegisterBenchmark(fmt::format("Speed/{}/k{}", spec, k).c_str(), Speed, spec, k)
        ->Unit(benchmark::kMillisecond)
        ->Iterations(1);
  return 0;
}
const int speed_registered = register_speed();

// Symmetric schedules (synth/plans/symmetric.hpp), what auto makes on these: a 64x64 torus
// All-Gather (target: the whole command under 10 s and 1 GiB; `tenet synth` measures that, with
// verification and the 2.5 GB file) and a 1024-NPU cluster's All-Reduce on rails (target: planned
// under 5 s).
void Symmetric(benchmark::State& state, const char* spec, synth::CollectiveKind kind) {
  synth::SynthOptions o;
  o.method = synth::SynthMethod::Symmetric;
  run(state, spec, kind, 1, o);
}
BENCHMARK_CAPTURE(Symmetric, torus64x64_allgather_k1, "torus2d:64x64",
                  synth::CollectiveKind::AllGather)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(Symmetric, nvcluster128x8_rail_allreduce_k1, "nvcluster:128x8,net=rail",
                  synth::CollectiveKind::AllReduce)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

// The whole plan `tenet synth -k auto` makes for a 1024-NPU cluster's All-Reduce of 256 MiB on
// rails (target: planned under 5 s): the symmetric schedule at each chunk count, and every
// baseline's chunk search beside it, proving none faster (their counts floored, not timed).
void BM_AutoPlanNvcluster128x8(benchmark::State& state) {
  bench_micro::time_auto_search(state, topo::generate("nvcluster:128x8,net=rail"),
                                synth::CollectiveKind::AllReduce, Bytes{256} << 20);
}
BENCHMARK(BM_AutoPlanNvcluster128x8)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1);

// The 1024-NPU searches the time-to-answer target names (at most 10 s of CPU for the whole `tenet
// synth` command, per-step costs charged as the CLI charges them): the switch answered by
// halving-doubling at the bound before any search, the leaf-spine's flat plan without the
// baselines' race, the fat-tree cluster's server plan with the baselines floored in closed form.
void BM_Auto1024(benchmark::State& state, const char* spec, synth::CollectiveKind kind,
                 Bytes total) {
  topo::Topology t = topo::generate(spec);
  t.set_charges_steps(true);
  bench_micro::time_auto_search(state, t, kind, total);
}
BENCHMARK_CAPTURE(BM_Auto1024, switch1024_allreduce_1GiB, "switch:1024",
                  synth::CollectiveKind::AllReduce, Bytes{1} << 30)
    ->Unit(benchmark::kSecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_Auto1024, leafspine32x32_allreduce_64MiB, "leafspine:32x32",
                  synth::CollectiveKind::AllReduce, Bytes{64} << 20)
    ->Unit(benchmark::kSecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_Auto1024, nvcluster128x8_fattree_allreduce_1GiB, "nvcluster:128x8,net=fattree",
                  synth::CollectiveKind::AllReduce, Bytes{1} << 30)
    ->Unit(benchmark::kSecond)
    ->Iterations(1);

// A leaf-spine's All-to-All (64 NPUs, 64 MiB): the ways spread like the flow optimum reweigh a
// switch link once per change of its load, not every channel whose route crosses it (5.2 -> 2.0 s
// for the whole command; the rest is mostly the flow bound's LP).
void BM_AutoAllToAll64(benchmark::State& state) {
  topo::Topology t = topo::generate("leafspine:8x8");
  t.set_charges_steps(true);
  bench_micro::time_auto_search(state, t, synth::CollectiveKind::AllToAll, Bytes{64} << 20);
}
BENCHMARK(BM_AutoAllToAll64)->Unit(benchmark::kSecond)->Iterations(1);

// The same searches under a 5 s limit (`tenet synth --time-limit 5`, the search alone): the
// leaf-spine's first count (6.7 s alone) is given up for halving-doubling at the limit less the
// time kept for verifying and writing its 2.1M chunk moves (about 2.9 s); the fat-tree cluster's
// first count ends before that point and is kept.
void BM_Auto1024Within5s(benchmark::State& state, const char* spec, synth::CollectiveKind kind,
                         Bytes total) {
  topo::Topology t = topo::generate(spec);
  t.set_charges_steps(true);
  bench_micro::time_auto_search(state, t, kind, total, 5);
}
BENCHMARK_CAPTURE(BM_Auto1024Within5s, leafspine32x32_allreduce_64MiB, "leafspine:32x32",
                  synth::CollectiveKind::AllReduce, Bytes{64} << 20)
    ->Unit(benchmark::kSecond)
    ->UseRealTime()
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_Auto1024Within5s, nvcluster128x8_fattree_allreduce_1GiB,
                  "nvcluster:128x8,net=fattree", synth::CollectiveKind::AllReduce, Bytes{1} << 30)
    ->Unit(benchmark::kSecond)
    ->UseRealTime()
    ->Iterations(1);

// Scaling: 2-D tori of 64 .. 4096 NPUs, k = 1, and the exponent of synthesis time over N fitted
// by least squares on log-log (reported as the counter "exponent").
void BM_ScalingExponent(benchmark::State& state) {
  std::vector<double> xs, ys;
  for (auto _ : state) {
    xs.clear();
    ys.clear();
    for (int side = 8; side <= 64; side *= 2) {
      const auto t = topo::generate(fmt::format("torus2d:{}x{}", side, side));
      const auto c = synth::Collective::over_all(t, synth::CollectiveKind::AllGather, 1);
      const auto begin = std::chrono::steady_clock::now();
      synth::SynthOptions o;
      o.method = synth::SynthMethod::Matcher;
      benchmark::DoNotOptimize(synth::synthesize(t, c, kChunk, o));
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
      xs.push_back(std::log(static_cast<double>(side * side)));
      ys.push_back(std::log(seconds));
      state.counters[fmt::format("s_at_N{}", side * side)] = seconds;
    }
  }
  const double n = static_cast<double>(xs.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    sx += xs[i];
    sy += ys[i];
    sxx += xs[i] * xs[i];
    sxy += xs[i] * ys[i];
  }
  state.counters["exponent"] = (n * sxy - sx * sy) / (n * sxx - sx * sx);
}
BENCHMARK(BM_ScalingExponent)->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace
