// `tenet export` of a synthesized All-Gather of about a million transfers (torus2d:32x32, one chunk
// per NPU: 1,047,552 transfers), by phase: reading the algorithm JSON, planning the collective
// graph, building and serializing every rank's ET (one at a time, and on every core into an output
// folder, as the export does), and running it as ASTRA-sim runs it (what every export prints).
#include <benchmark/benchmark.h>

#include "astra/analytical.hpp"
#include "chakra/collective_graph.hpp"
#include "chakra/et.hpp"
#include "synth/cost/timing.hpp"
#include "synth/formats/algorithm_json.hpp"
#include "synth/producers.hpp"
#include "topo/generators.hpp"
#include "topo/output_folder.hpp"

#include <filesystem>

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

// The algorithm file read back (about 158 MB of JSON): the fast reader (simdjson, in slices).
void BM_AlgorithmJsonRead(benchmark::State& state) {
  const Case& c = the_case();
  const std::string text = synth::to_json(c.a);
  for (auto _ : state) benchmark::DoNotOptimize(synth::parse_algorithm_json(text).size());
  state.counters["MB"] = static_cast<double>(text.size()) / 1e6;
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(c.a.size()));
}
BENCHMARK(BM_AlgorithmJsonRead)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1);

// The same with the reference reader alone (nlohmann's SAX parser), which the fast one replaces.
void BM_AlgorithmJsonReadReference(benchmark::State& state) {
  const Case& c = the_case();
  const std::string text = synth::to_json(c.a);
  for (auto _ : state) benchmark::DoNotOptimize(synth::parse_algorithm_json_reference(text).size());
  state.counters["MB"] = static_cast<double>(text.size()) / 1e6;
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(c.a.size()));
}
BENCHMARK(BM_AlgorithmJsonReadReference)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1);

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
    for (int r = 0; r < plan.num_ranks(); ++r) bytes += plan.rank_bytes(r).size();
    state.counters["MB"] = static_cast<double>(bytes) / 1e6;
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(c.a.size()));
}
BENCHMARK(BM_ChakraRanks)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1);

// The export's way: ranks built on every core, written into an output folder, committed.
void BM_ChakraStageFolder(benchmark::State& state) {
  const Case& c = the_case();
  const chakra::CollectiveGraphPlan plan(c.a, c.t);
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "tenet_chakra_bench";
  for (auto _ : state) {
    topo::OutputFolder out(dir.string());
    chakra::stage_et_set(
        plan.num_ranks(), [&](int r) { return plan.rank_bytes(r); }, out, "algorithm");
    out.commit();
  }
  std::filesystem::remove_all(dir);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(c.a.size()));
}
BENCHMARK(BM_ChakraStageFolder)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1);

// What ASTRA-sim will report (every export prints it): the plan's graph, emulated.
void BM_ChakraAstraEmulation(benchmark::State& state) {
  const Case& c = the_case();
  const chakra::CollectiveGraphPlan plan(c.a, c.t);
  for (auto _ : state)
    benchmark::DoNotOptimize(astra::run_as_astra_sim(plan.node_graph(), c.t).time);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(c.a.size()));
}
BENCHMARK(BM_ChakraAstraEmulation)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1);

}  // namespace
