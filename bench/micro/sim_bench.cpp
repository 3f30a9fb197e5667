// Simulator speed: a 1024-rank 1 GiB ring All-Reduce replayed on the analytical network (the
// target: under 0.3 s; SimGrid needs about 33 s for the equivalent here), and a
// data-parallel ResNet-50 iteration.
#include <benchmark/benchmark.h>

#include "sim/collective_engine.hpp"
#include "sim/packet_network.hpp"
#include "sim/system.hpp"
#include "sim/workload.hpp"
#include "synth/baselines/baselines.hpp"
#include "synth/synthesizer.hpp"
#include "topo/generators.hpp"
#include "topo/routing.hpp"

namespace {

using namespace tenet;

void BM_RingAllReduce1024(benchmark::State& state) {
  const auto t = topo::generate("ring:1024,bw=50GB/s,lat=0.5us");
  const auto c = synth::Collective::over_all(t, synth::CollectiveKind::AllReduce);
  const synth::Algorithm a = synth::make_baseline({synth::BaselineKind::Ring, {}}, t, c,
                                                  c.chunk_bytes_for(Bytes{1} << 30));
  uint64_t events = 0;
  Time finish = 0;
  for (auto _ : state) {
    sim::EventQueue q;
    auto net = sim::make_network(sim::NetworkKind::Analytical, t, q);
    sim::CollectiveRun run(a, *net, q, [&] { finish = q.now(); });
    run.start();
    q.run();
    events = q.executed();
  }
  state.counters["transfers"] = static_cast<double>(a.size());
  state.counters["events"] = static_cast<double>(events);
  state.counters["simulated_ms"] = static_cast<double>(finish) / 1e9;
}
BENCHMARK(BM_RingAllReduce1024)->Unit(benchmark::kMillisecond)->UseRealTime();

// What `tenet sim -w <one 1 GiB All-Reduce over every rank> --coll all-reduce=ring -k 1` waits for:
// building the ring (finding it on the topology included) and replaying it. On a switch, the ring
// search once scanned every member's ways per step (switch:1024: 11.5 s of CPU for the command).
// `lazy`: replayed from its plan (SimConfig::lazy_rings, the default), transfers computed as they
// run; else materialized first (the *_listed rows), as before it.
void BM_RingAllReduceSimulate(benchmark::State& state, const char* spec, bool lazy) {
  const auto t = topo::generate(spec);
  const auto w = sim::collective_microbenchmark(synth::CollectiveKind::AllReduce, Bytes{1} << 30,
                                                t.num_npus());
  sim::SimConfig cfg;
  cfg.algorithms[synth::CollectiveKind::AllReduce] = "ring";
  cfg.chunks_per_npu = 1;
  cfg.lazy_rings = lazy;
  Time iteration = 0;
  for (auto _ : state) iteration = sim::simulate(t, w, cfg).iteration;
  state.counters["simulated_ms"] = static_cast<double>(iteration) / 1e9;
}
BENCHMARK_CAPTURE(BM_RingAllReduceSimulate, ring1024, "ring:1024", true)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_RingAllReduceSimulate, ring1024_listed, "ring:1024", false)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_RingAllReduceSimulate, switch1024, "switch:1024", true)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_RingAllReduceSimulate, switch1024_listed, "switch:1024", false)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
// The 4096-rank target (under 10 s and 1 GiB): one iteration, it takes seconds.
BENCHMARK_CAPTURE(BM_RingAllReduceSimulate, ring4096, "ring:4096", true)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1);

// Simulator events per second per network backend: a 2-D torus All-Reduce by the synthesizer
// (many concurrent messages sharing links, so the congestion model re-shares often).
void BM_SimEventsPerSecond(benchmark::State& state) {
  const auto kind = static_cast<sim::NetworkKind>(state.range(0));
  const auto t = topo::generate("torus2d:8x8");
  const auto c = synth::Collective::over_all(t, synth::CollectiveKind::AllReduce, 4);
  const synth::Algorithm a = synth::synthesize(t, c, c.chunk_bytes_for(Bytes{256} << 20));
  uint64_t events = 0;
  for (auto _ : state) {
    sim::EventQueue q;
    auto net = sim::make_network(kind, t, q);
    sim::CollectiveRun run(a, *net, q, [] {});
    run.start();
    q.run();
    events += q.executed();
  }
  state.SetLabel(std::string(sim::to_string(kind)));
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["transfers"] = static_cast<double>(a.size());
}
BENCHMARK(BM_SimEventsPerSecond)
    ->Arg(static_cast<int>(sim::NetworkKind::Analytical))
    ->Arg(static_cast<int>(sim::NetworkKind::AnalyticalCongestion))
    ->Arg(static_cast<int>(sim::NetworkKind::Packet))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_ResNet50DataParallel(benchmark::State& state) {
  const auto t = topo::generate("nvcluster:8x8,net=rail");
  const auto w = sim::data_parallel(sim::model_preset("resnet50"), t.num_npus());
  sim::SimConfig cfg;
  cfg.algorithms[synth::CollectiveKind::AllReduce] = "ring";
  for (auto _ : state) benchmark::DoNotOptimize(sim::simulate(t, w, cfg));
}
BENCHMARK(BM_ResNet50DataParallel)->Unit(benchmark::kMillisecond)->UseRealTime();

// A collective called many times with one algorithm: moe-gpt's 48 All-to-Alls of 32 MiB over an
// 8x8 mesh (direct, one chunk per NPU; Zipf-skewed traffic) and its All-Reduces (ring). Every call
// replays the list its first made (sim::ReplayList).
void BM_MoeAllToAllCalls(benchmark::State& state) {
  auto t = topo::generate("mesh2d:8x8");
  t.set_charges_steps(true);  // as `tenet sim` runs it
  const auto w = sim::data_parallel(sim::model_preset("moe-gpt"), t.num_npus());
  sim::SimConfig cfg;
  cfg.algorithms[synth::CollectiveKind::AllToAll] = "direct";
  cfg.algorithms[synth::CollectiveKind::AllReduce] = "ring";
  cfg.chunks_per_npu = 1;
  uint64_t events = 0;
  for (auto _ : state) events = sim::simulate(t, w, cfg).events;
  state.counters["events"] = static_cast<double>(events);
}
BENCHMARK(BM_MoeAllToAllCalls)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1);

}  // namespace

namespace {

// One GPT-3-style hybrid-parallel iteration on 1024 NPUs (128 NVSwitch nodes of 8 on rails;
// tensor 8 x pipeline 8 x data 16, 4 micro-batches, 1F1B), ring collectives with one chunk per
// NPU, on the flow-level congestion network. The target: under 30 s.
void BM_Gpt3Hybrid1024Congestion(benchmark::State& state) {
  const auto t = topo::generate("nvcluster:128x8,net=rail");
  const auto w = sim::training_iteration(sim::model_preset("gpt3-175b"),
                                         {16, 8, 8, 4, sim::PipelineSchedule::OneFOneB});
  sim::SimConfig cfg;
  cfg.network = sim::NetworkKind::AnalyticalCongestion;
  cfg.algorithms[synth::CollectiveKind::AllReduce] = "ring";
  cfg.chunks_per_npu = 1;
  sim::SimResult r;
  for (auto _ : state) r = sim::simulate(t, w, cfg);
  state.counters["events"] = static_cast<double>(r.events);
  state.counters["collectives"] = r.collectives;
  state.counters["simulated_ms"] = static_cast<double>(r.iteration) / 1e9;
}
BENCHMARK(BM_Gpt3Hybrid1024Congestion)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1);

// The same iteration with synthesized collectives for every group (Tenet's default producer, -k
// auto) on the analytical network, as `tenet sim -w gpt3-175b --tp 8 --pp 8 --microbatches 4
// --topo nvcluster:128x8,net=rail` runs it: synthesis included (one algorithm per group shape,
// the others renamed). The target: under 30 s.
void BM_Gpt3Hybrid1024Synthesized(benchmark::State& state) {
  const auto t = topo::generate("nvcluster:128x8,net=rail");
  const auto w = sim::training_iteration(sim::model_preset("gpt3-175b"),
                                         {16, 8, 8, 4, sim::PipelineSchedule::OneFOneB});
  sim::SimConfig cfg;
  cfg.chunks_per_npu = 0;  // auto
  sim::SimResult r;
  for (auto _ : state) r = sim::simulate(t, w, cfg);
  state.counters["events"] = static_cast<double>(r.events);
  state.counters["algorithms_made"] = static_cast<double>(r.algorithms_made);
  state.counters["algorithms_renamed"] = static_cast<double>(r.algorithms_renamed);
  state.counters["simulated_ms"] = static_cast<double>(r.iteration) / 1e9;
}
BENCHMARK(BM_Gpt3Hybrid1024Synthesized)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1);

}  // namespace

namespace {

// The packet backend's speed on the case ns-3 was timed on (cost-models.md: 19.9 s over UDP,
// 78.3 s over TCP): a ring of 1024 NPUs at 100 Gb/s, every NPU streaming 4 MB to its neighbour
// (1024 packets of 4 KiB each way per NPU). The target: under 5 s, and at least 5 million
// packet-hop events per second.
void BM_PacketRingStream1024(benchmark::State& state) {
  const auto t = topo::generate("ring:1024,bw=100Gbps,lat=1us");
  const topo::Router router(t);
  std::vector<std::vector<topo::LinkId>> routes;
  for (int i = 0; i < 1024; ++i) routes.push_back(router.route(i, (i + 1) % 1024)->links);
  uint64_t hops = 0;
  Time finish = 0;
  for (auto _ : state) {
    sim::EventQueue q;
    sim::PacketNetwork net(t, q, {});
    for (int i = 0; i < 1024; ++i)
      net.send(
          {i, (i + 1) % 1024, 4'000'000, routes[i]}, [] {}, [] {});
    q.run();
    finish = q.now();
    hops += net.report().packet_hops;
  }
  state.counters["packet_hops_per_s"] =
      benchmark::Counter(static_cast<double>(hops), benchmark::Counter::kIsRate);
  state.counters["simulated_us"] = static_cast<double>(finish) / 1e6;
}
BENCHMARK(BM_PacketRingStream1024)->Unit(benchmark::kMillisecond)->UseRealTime();

// Packet-hop events per second on multi-hop traffic: a synthesized All-to-All across a
// leaf-spine fabric (4 hops between racks, ECMP) and a synthesized All-Reduce on an 8x8 torus.
void BM_PacketHopsPerSecond(benchmark::State& state) {
  const bool fabric = state.range(0) == 0;
  const auto t = topo::generate(fabric ? "leafspine:4x8,spines=4" : "torus2d:8x8");
  const auto c = synth::Collective::over_all(
      t, fabric ? synth::CollectiveKind::AllToAll : synth::CollectiveKind::AllReduce, 2);
  const synth::Algorithm a = synth::synthesize(t, c, c.chunk_bytes_for(Bytes{256} << 20));
  uint64_t hops = 0;
  for (auto _ : state) {
    sim::EventQueue q;
    sim::PacketNetwork net(t, q, {});
    sim::CollectiveRun run(a, net, q, [] {});
    run.start();
    q.run();
    hops += net.report().packet_hops;
  }
  state.SetLabel(fabric ? "all-to-all leafspine:4x8,spines=4" : "all-reduce torus2d:8x8");
  state.counters["packet_hops_per_s"] =
      benchmark::Counter(static_cast<double>(hops), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PacketHopsPerSecond)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
