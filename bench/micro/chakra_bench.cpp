// Chakra export of a synthesized All-Gather of about a million transfers (torus2d:32x32, one chunk
// per NPU: 1,047,552 transfers), by phase: planning the collective graph, building and serializing
// every rank's ET one at a time, and running it as ASTRA-sim runs it (what every export prints).
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

// Planning: node ids, sizes (with link waits) and dependencies of every transfer.
void BM_ChakraPlan(benchmark::State& state) {
  const Case& c = the_case();
  for (auto _ : state) benchmark::DoNotOptimize(chakra::CollectiveGraphPlan(c.a, c.t));
  state.counters["transfers"] = static_cast<double>(c.a.size());
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(c.a.size()));
}
BENCHMARK(BM_ChakraPlan)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1);

// Every rank's ET built from the plan and serialized, one at a time (as an export writes them).
void BM_ChakraRanks(benchmark::State& state) {
  const Case& c = the_case();
  const chakra::CollectiveGraphPlan plan(c.a, c.t);
  for (auto _ : state) {
    size_t bytes = 0;
    for (int r = 0; r < plan.num_ranks(); ++r) bytes += chakra::serialize_et(plan.rank(r)).size();
    state.counters["MB"] = static_cast<double>(bytes) / 1e6;
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(c.a.size()));
}
BENCHMARK(BM_ChakraRanks)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1);

// What ASTRA-sim will report (every export prints it): the plan's graph, emulated.
void BM_ChakraAstraEmulation(benchmark::State& state) {
  const Case& c = the_case();
  const chakra::CollectiveGraphPlan plan(c.a, c.t);
  for (auto _ : state) benchmark::DoNotOptimize(chakra::run_as_astra_sim(plan.astra_graph(), c.t).time);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(c.a.size()));
}
BENCHMARK(BM_ChakraAstraEmulation)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1);

}  // namespace
