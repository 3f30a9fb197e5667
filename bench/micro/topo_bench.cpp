// Topology-layer microbenchmarks: building large generated topologies and computing the
// All-Gather cut bound (LEMON max-flow) on them.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "topo/bounds.hpp"
#include "topo/generators.hpp"
#include "topo/symmetry.hpp"

namespace {

void BM_BuildTorus2d(benchmark::State& state) {
  const auto side = state.range(0);
  const std::string spec = fmt::format("torus2d:{}x{}", side, side);
  for (auto _ : state) benchmark::DoNotOptimize(tenet::topo::generate(spec));
  state.counters["npus"] = static_cast<double>(side * side);
}
BENCHMARK(BM_BuildTorus2d)->Arg(16)->Arg(32)->Arg(64)->Unit(benchmark::kMillisecond);

void BM_CutBoundTorus2d(benchmark::State& state) {
  const auto side = state.range(0);
  const auto topo = tenet::topo::generate(fmt::format("torus2d:{}x{}", side, side));
  for (auto _ : state) benchmark::DoNotOptimize(tenet::topo::allgather_cut_bound(topo));
  state.counters["npus"] = static_cast<double>(side * side);
}
BENCHMARK(BM_CutBoundTorus2d)->Arg(16)->Arg(32)->Arg(64)->Unit(benchmark::kMillisecond);

// Switches force the per-member fallback when the cheapest cut cuts off only switches; this
// measures the general path on a rail-optimised cluster.
void BM_CutBoundNvCluster(benchmark::State& state) {
  const auto nodes = state.range(0);
  const auto topo = tenet::topo::generate(fmt::format("nvcluster:{}x8,net=rail", nodes));
  for (auto _ : state) benchmark::DoNotOptimize(tenet::topo::allgather_cut_bound(topo));
  state.counters["npus"] = static_cast<double>(nodes * 8);
}
BENCHMARK(BM_CutBoundNvCluster)->Arg(4)->Arg(16)->Arg(64)->Unit(benchmark::kMillisecond);

// Growth with size: a ring, a hypercube and one switch past the exact search's budget
// (kCutSearchWork: the islands of wide links then), time per NPU should stay flat.
void BM_CutBoundScaling(benchmark::State& state, const char* family) {
  const auto npus = state.range(0);
  const auto topo = tenet::topo::generate(fmt::format("{}:{}", family, npus));
  for (auto _ : state) benchmark::DoNotOptimize(tenet::topo::allgather_cut_bound(topo));
  state.counters["npus"] = static_cast<double>(npus);
  state.counters["us_per_npu"] =
      benchmark::Counter(static_cast<double>(npus), benchmark::Counter::kIsIterationInvariantRate |
                                                        benchmark::Counter::kInvert);
}
BENCHMARK_CAPTURE(BM_CutBoundScaling, ring, "ring")
    ->RangeMultiplier(4)
    ->Range(4096, 262144)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CutBoundScaling, hypercube, "hypercube")
    ->RangeMultiplier(4)
    ->Range(4096, 65536)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CutBoundScaling, switch, "switch")
    ->RangeMultiplier(4)
    ->Range(4096, 262144)
    ->Unit(benchmark::kMillisecond);

// Translation symmetry of one switch of many NPUs (its links' ways back were quadratic in the
// switch's degree).
void BM_TranslationsOneSwitch(benchmark::State& state) {
  const auto topo = tenet::topo::generate(fmt::format("switch:{}", state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(tenet::topo::translation_symmetry(topo));
  state.counters["npus"] = static_cast<double>(state.range(0));
}
BENCHMARK(BM_TranslationsOneSwitch)
    ->RangeMultiplier(4)
    ->Range(4096, 262144)
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
