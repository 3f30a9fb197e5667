// The server plan (synth/plans/server_plan.hpp) made at one chunk count, as `-k auto` makes it at
// each count of its search: on examples/topologies/cluster16.yaml, where it answers every
// All-Reduce of a cold `tenet sim -w resnet50` and its counts are half of that run's synthesis
// (issue 56's target: the simulator at most 3x the ring run's CPU). ResNet-50's 57.07 MiB bucket,
// every transfer paying its route's per-step cost as `tenet synth` and `tenet sim` charge them.
// Counters: transfers, and the time the plan claims.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <string>

#include "synth/memo.hpp"
#include "synth/synthesizer.hpp"
#include "topo/io.hpp"

namespace {

using namespace tenet;

void ServerPlanAt(benchmark::State& state, int k) {
  topo::Topology t =
      topo::load(std::string(TENET_SOURCE_DIR) + "/examples/topologies/cluster16.yaml");
  t.set_charges_steps(true);
  const auto c = synth::Collective::over_all(t, synth::CollectiveKind::AllReduce, k);
  const Bytes total = 59'840'000;  // ResNet-50's largest gradient bucket
  // One memo for every iteration, as the simulator keeps one for its run: the routes, channel
  // graphs and plans the counts share are made once.
  synth::SynthMemo memo;
  synth::SynthOptions o;
  o.method = synth::SynthMethod::ServerPlan;
  o.memo = &memo;
  size_t transfers = 0;
  Time time = 0;
  for (auto _ : state) {
    const synth::Algorithm a = synth::synthesize(t, c, c.chunk_bytes_for(total), o);
    transfers = a.size();
    time = a.claimed_time;
  }
  state.counters["transfers"] = static_cast<double>(transfers);
  state.counters["time_us"] = static_cast<double>(time) / 1e6;
}

int register_all() {
  for (int k : {1, 2, 4, 8})
    benchmark::RegisterBenchmark(fmt::format("ServerPlan/cluster16/all-reduce/k{}", k).c_str(),
                                 ServerPlanAt, k)
        ->Unit(benchmark::kMillisecond);
  return 0;
}
const int registered = register_all();

}  // namespace
