// The answer's last deliveries listed again (synth/plans/tail_spread.hpp), on a large answer: the
// flow plan's pipelines for an All-Reduce of 1 GiB on `random-fabric:68` (15 NPUs behind
// switches, 512 chunks per NPU, about 160,000 transfers, steps charged as `tenet synth` does:
// what `-k auto` answers there, before its tail is listed again), its last 2, 5 and 8 % listed
// again (spread_from: the list scheduling and the timing of what it makes). Counters: the
// deliveries listed again and the time gained (negative: lost).
#include <benchmark/benchmark.h>

#include <optional>

#include "synth/plans/full_rate_drain.hpp"
#include "synth/plans/tail_spread.hpp"
#include "synth/synthesizer.hpp"
#include "topo/generators.hpp"

namespace {

using namespace tenet;

void BM_TailSpread(benchmark::State& state) {
  topo::Topology t = topo::generate("random-fabric:68");
  t.set_charges_steps(true);
  synth::Collective c = synth::Collective::over_all(t, synth::CollectiveKind::AllReduce, 512);
  synth::SynthOptions o;
  o.method = synth::SynthMethod::PlanPipeline;
  const synth::Algorithm made = synth::synthesize(t, c, c.chunk_bytes_for(Bytes{1} << 30), o);
  const double tail = static_cast<double>(state.range(0)) / 100;
  const Time cut = synth::detail::drain_cut(made.makespan(), tail);
  std::optional<synth::Algorithm> spread;
  for (auto _ : state) spread = synth::detail::spread_from(t, made, cut);
  int64_t kept = 0;
  for (const synth::Transfer& x : made.transfers()) kept += x.start < cut ? 1 : 0;
  state.counters["listed"] = spread ? static_cast<double>(spread->size() - kept) : 0;
  state.counters["gain_us"] =
      spread ? static_cast<double>(made.claimed_time - spread->claimed_time) / 1e6 : 0;
}
BENCHMARK(BM_TailSpread)->Arg(2)->Arg(5)->Arg(8)->Unit(benchmark::kMillisecond);

}  // namespace
