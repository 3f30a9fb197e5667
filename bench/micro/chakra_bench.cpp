// Chakra export of a synthesized All-Gather of about a million transfers (torus2d:32x32, one chunk
// per NPU: 1,047,552 transfers), by phase: building the collective graph (one ET per rank), running
// it as ASTRA-sim runs it (what every export prints), and serializing every rank's file.
#include <benchmark/benchmark.h>

#include "chakra/astra_analytical.hpp"
#include "chakra/collective_graph.hpp"
#include "chakra/et.hpp"
#include "synth/producers.hpp"
#include "synth/timing.hpp"
#include "topo/generators.hpp"

namespace {

using namespace tenet;

struct Case {
  topo::Topology t = topo::generate("torus2d:32x32");
  synth::Algorithm a;
  Case() {
    const synth::Collective c = synth::Collective::over_all(t, synth::CollectiveKind::AllGather);
    a = synth::make_algorithm("tenet", t, c, 1 << 20);
    synth::time(t, a);
  }
};
const Case& the_case() {
  static const Case c;
  return c;
}

void BM_ChakraBuild(benchmark::State& state) {
  const Case& c = the_case();
  for (auto _ : state) benchmark::DoNotOptimize(chakra::to_collective_graph(c.a, c.t));
  state.counters["transfers"] = static_cast<double>(c.a.size());
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(c.a.size()));
}
BENCHMARK(BM_ChakraBuild)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1);

void BM_ChakraAstraEmulation(benchmark::State& state) {
  const Case& c = the_case();
  const auto files = chakra::to_collective_graph(c.a, c.t);
  for (auto _ : state) benchmark::DoNotOptimize(chakra::run_as_astra_sim(files, c.t).time);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(c.a.size()));
}
BENCHMARK(BM_ChakraAstraEmulation)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1);

void BM_ChakraSerialize(benchmark::State& state) {
  const Case& c = the_case();
  const auto files = chakra::to_collective_graph(c.a, c.t);
  for (auto _ : state) {
    size_t bytes = 0;
    for (const chakra::EtFile& f : files) bytes += chakra::serialize_et(f).size();
    state.counters["MB"] = static_cast<double>(bytes) / 1e6;
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(c.a.size()));
}
BENCHMARK(BM_ChakraSerialize)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1);

}  // namespace
