// All-to-All and All-to-Allv: how tight the All-to-All bound is and how close synthesis comes:
//   AllToAllQuality   -k auto at 64 MiB per rank on the regular families, uniform and Zipf(1.2)
//                     (a mixture-of-experts layer), ratio to the bound per case as counters and
//                     the worst of each; every result verified ("incorrect" counts failures).
//   AllToAllScale     the whole synthesis as `tenet synth -c all-to-all -s 512MiB` runs it on a
//                     512-NPU 3D torus (1024 NPUs, 10 GB: run `tenet synth --topo torus3d:16x8x8
//                     -c all-to-all -s 1GiB` instead).
//   FlowBound         the maximum-concurrent-flow bound alone: the LP (8x8 mesh) and
//                     multiplicative weights (8x8x8 torus).
//   tenet_micro_bench --benchmark_filter=AllToAll
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <string>
#include <vector>

#include "synth/bounds/lower_bound.hpp"
#include "synth/ir/traffic.hpp"
#include "synth/synthesizer.hpp"
#include "synth/verify/verify.hpp"
#include "topo/flow_bound.hpp"
#include "topo/generators.hpp"

namespace {

using namespace tenet;

const char* const kFamilies[] = {
    "torus2d:8x8", "torus3d:4x4x4",          "mesh2d:8x8", "hypercube:64",
    "switch:16",   "leafspine:4x8,spines=2", "dgx1",       "nvcluster:4x8,net=rail"};

void BM_AllToAllQuality(benchmark::State& state) {
  const bool zipf = state.range(0) == 1;
  constexpr Bytes kPerRank = Bytes{64} << 20;
  int incorrect = 0;
  double worst = 0;
  for (auto _ : state) {
    for (const char* spec : kFamilies) {
      const topo::Topology t = topo::generate(spec);
      synth::Collective c = synth::Collective::over_all(t, synth::CollectiveKind::AllToAll);
      Bytes size = kPerRank;
      if (zipf) {
        const synth::TrafficUnits u =
            synth::to_units(synth::generate_traffic("zipf:1.2", t.num_npus(), kPerRank, 1),
                            synth::default_max_units(t.num_npus()));
        c.set_pair_units(u.units);
        size = u.unit_bytes;
      }
      const synth::Algorithm a = synth::synthesize_auto_chunks(t, c, size).algorithm;
      if (!synth::verify(t, a, {.max_reported = 1, .lower_bound = false}).correct()) ++incorrect;
      const double ratio =
          static_cast<double>(a.claimed_time) /
          static_cast<double>(synth::lower_bound(t, a.collective, a.chunk_bytes).total);
      state.counters[spec] = ratio;
      worst = std::max(worst, ratio);
    }
  }
  state.counters["worst"] = worst;
  state.counters["incorrect"] = incorrect;
}
BENCHMARK(BM_AllToAllQuality)
    ->ArgName("zipf")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kSecond)
    ->Iterations(1);

void BM_AllToAllScale(benchmark::State& state) {
  const topo::Topology t = topo::generate("torus3d:8x8x8");
  const Bytes size = Bytes{512} << 20;
  double ratio = 0;
  for (auto _ : state) {
    const synth::Algorithm a =
        synth::synthesize_auto_chunks(
            t, synth::Collective::over_all(t, synth::CollectiveKind::AllToAll), size)
            .algorithm;
    ratio = static_cast<double>(a.claimed_time) /
            static_cast<double>(synth::lower_bound(t, a.collective, a.chunk_bytes).total);
  }
  state.counters["ratio"] = ratio;
}
BENCHMARK(BM_AllToAllScale)->Unit(benchmark::kSecond)->Iterations(1);

void BM_AllToAllFlowBound(benchmark::State& state) {
  const bool lp = state.range(0) == 0;
  const topo::Topology t = topo::generate(lp ? "mesh2d:8x8" : "torus3d:8x8x8");
  std::vector<topo::Demand> demands;
  for (topo::NodeId s = 0; s < t.num_npus(); ++s)
    for (topo::NodeId d = 0; d < t.num_npus(); ++d)
      if (s != d) demands.push_back({s, d, Bytes{1} << 20});
  topo::FlowBound b;
  for (auto _ : state) b = topo::concurrent_flow_bound(t, demands);
  state.SetLabel(topo::describe(b));
  state.counters["bound_ms"] = static_cast<double>(b.time) / 1e9;
}
BENCHMARK(BM_AllToAllFlowBound)->ArgName("mw")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace
