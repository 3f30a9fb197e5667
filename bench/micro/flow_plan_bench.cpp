// The flow plan's packing (synth/plans/tree_packing.hpp) on the fabrics whose whole `tenet synth`
// it dominated, and `-k auto` on large fabrics (the whole search at 1 GiB): 128 and 256 NPUs
// behind switches and a 128-NPU hypercube; and on the generator families' slowest cases up to 64
// NPUs and the example topologies' (AutoSmall). Counters: whether it packed, the max-flows it took
// (TreePacking::max_flows; the budget is 400,000; a fabric it cannot pack in that gives up early,
// PackingOptions::max_flow_budget), and for auto the ratio to the bound.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <string>

#include "bench/micro/auto_search.hpp"
#include "synth/plans/tree_packing.hpp"
#include "synth/synthesizer.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"

namespace {

using namespace tenet;

void PackingOn(benchmark::State& state, const topo::Topology& t) {
  int64_t spent = 0;
  bool packed = false;
  for (auto _ : state) {
    synth::PackingOptions o;
    o.spent = &spent;
    packed = synth::pack_spanning_trees(t, o).has_value();
  }
  state.counters["packed"] = packed;
  state.counters["max_flows"] = static_cast<double>(spent);
}
void Packing(benchmark::State& state, const char* spec) { PackingOn(state, topo::generate(spec)); }

// The pipelined packing (at most kMostTreesPerRoot trees per root) `-k auto` builds first on
// examples/topologies/cluster16.yaml (16 GPUs, one NIC at half speed: 7 trees per root at the
// optimum), where it is most of a cold `tenet sim -w resnet50`'s synthesis; and on `nvcluster:8x8`,
// where it is a fifth of each 1 GiB `-k auto` search (AutoSmall).
void PipelinedPacking(benchmark::State& state, const std::string& path) {
  const topo::Topology t = topo::load(path);
  size_t trees = 0;
  for (auto _ : state) {
    const std::optional<synth::TreePacking> p = synth::pack_pipelined_trees(t);
    trees = p ? p->trees.size() : 0;
  }
  state.counters["trees"] = static_cast<double>(trees);
}

// As `tenet synth` runs it at its defaults: every transfer pays its route's per-step cost. `spec`:
// a generator spec or a topology file.
void Auto(benchmark::State& state, const std::string& spec, synth::CollectiveKind kind,
          Bytes total) {
  topo::Topology t = topo::load(spec);
  t.set_charges_steps(true);
  bench_micro::time_auto_search(state, t, kind, total);
}

// Up to 64 NPUs, the whole search should take under a second (issue 56's target for the `tenet
// synth` command): the cases of the generator families whose searches ran longest, each ended
// early by a different rule (the flat search's steep turn, its rival, the plans that cannot win
// by doubling alone).
struct SmallCase {
  const char* spec;
  synth::CollectiveKind kind;
  const char* kind_name;
  Bytes total;
  const char* size_name;
};
constexpr SmallCase kSmallCases[] = {
    {"nvcluster:4x8,net=fattree", synth::CollectiveKind::AllGather, "all-gather", Bytes{64} << 20,
     "64MiB"},
    {"nvcluster:4x8,net=fattree", synth::CollectiveKind::AllReduce, "all-reduce", Bytes{1} << 30,
     "1GiB"},
    {"leafspine:4x8,spines=2", synth::CollectiveKind::AllReduce, "all-reduce", Bytes{64} << 20,
     "64MiB"},
    {"hetmesh2d:8x8", synth::CollectiveKind::AllReduce, "all-reduce", Bytes{1} << 30, "1GiB"},
    {"torus2d:8x8", synth::CollectiveKind::AllReduce, "all-reduce", Bytes{1} << 30, "1GiB"},
    {"nvcluster:8x8", synth::CollectiveKind::AllGather, "all-gather", Bytes{1} << 30, "1GiB"},
    {"nvcluster:8x8", synth::CollectiveKind::ReduceScatter, "reduce-scatter", Bytes{1} << 30,
     "1GiB"},
    {"nvcluster:8x8", synth::CollectiveKind::AllReduce, "all-reduce", Bytes{1} << 30, "1GiB"},
    // The random fabrics' slowest: the pipelines doubling alone, far from the bound.
    {"random-fabric:33", synth::CollectiveKind::AllReduce, "all-reduce", Bytes{1} << 30, "1GiB"},
    {"random-fabric:68", synth::CollectiveKind::AllReduce, "all-reduce", Bytes{1} << 30, "1GiB"},
};
// The example topologies' slowest: ForestColl's MI250 box (examples/topologies/mi250-box.yaml),
// whose pipelines double to 1024 chunks per NPU at 1 GiB.
constexpr SmallCase kSmallExamples[] = {
    {"mi250-box.yaml", synth::CollectiveKind::ReduceScatter, "reduce-scatter", Bytes{1} << 30,
     "1GiB"},
    {"mi250-box.yaml", synth::CollectiveKind::AllReduce, "all-reduce", Bytes{1} << 30, "1GiB"},
};

int register_all() {
  for (const char* spec :
       {"leafspine:4x8", "leafspine:8x8", "leafspine:16x8", "nvcluster:4x8,net=fattree",
        "nvcluster:8x8", "nvcluster:16x8", "hypercube:64", "torus2d:8x8", "mesh2d:8x8",
        "hetmesh2d:8x8", "dragonfly:4x4x4"})
    benchmark::RegisterBenchmark(fmt::format("Packing/{}", spec).c_str(), Packing, spec)
        ->Unit(benchmark::kMillisecond)
        ->Iterations(1);
  benchmark::RegisterBenchmark(
      "PipelinedPacking/cluster16", PipelinedPacking,
      std::string(TENET_SOURCE_DIR) + "/examples/topologies/cluster16.yaml")
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("PipelinedPacking/nvcluster:8x8", PipelinedPacking,
                               std::string("nvcluster:8x8"))
      ->Unit(benchmark::kMillisecond);
  for (const char* spec : {"leafspine:16x8", "nvcluster:16x8", "dragonfly:8x8x4", "hypercube:128"})
    for (auto [kind, name] : {std::pair{synth::CollectiveKind::AllGather, "all-gather"},
                              std::pair{synth::CollectiveKind::AllReduce, "all-reduce"}})
      benchmark::RegisterBenchmark(fmt::format("AutoLarge/{}/{}/1GiB", spec, name).c_str(), Auto,
                                   std::string(spec), kind, Bytes{1} << 30)
          ->Unit(benchmark::kSecond)
          ->Iterations(1);
  for (const SmallCase& x : kSmallCases)
    benchmark::RegisterBenchmark(
        fmt::format("AutoSmall/{}/{}/{}", x.spec, x.kind_name, x.size_name).c_str(), Auto,
        std::string(x.spec), x.kind, x.total)
        ->Unit(benchmark::kSecond)
        ->Iterations(1);
  for (const SmallCase& x : kSmallExamples)
    benchmark::RegisterBenchmark(
        fmt::format("AutoSmall/{}/{}/{}", x.spec, x.kind_name, x.size_name).c_str(), Auto,
        std::string(TENET_SOURCE_DIR) + "/examples/topologies/" + x.spec, x.kind, x.total)
        ->Unit(benchmark::kSecond)
        ->Iterations(1);
  return 0;
}
const int registered = register_all();

}  // namespace
