// Quality pins under the rate-shared link model (moved from tests/synth/cost/rate_model_test.cpp):
// how close to the bound the synthesizer comes where one fat spine replaces thin ones, and how its
// times on the two compare. That the same algorithms verify, and that a fat spine is never slower
// for a fixed schedule, stays in tenet_tests (RateShared).
#include <gtest/gtest.h>

#include <string>

#include "synth/bounds/lower_bound.hpp"
#include "synth/synthesizer.hpp"
#include "synth/verify/verify.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"

namespace tenet::synth {
namespace {

// The case: on an 8-NPU leaf-spine with one 100 GB/s spine (the capacity of four 25 GB/s
// ones), the synthesizer reaches the cut bound (plus latencies), as ring does.
TEST(RateSharedQuality, SynthesizerReachesTheCutBoundOnOneFatSpine) {
  const auto fat = topo::generate("leafspine:2x4,spines=1,bw=25GB/s/100GB/s");
  Collective ag = Collective::over_all(fat, CollectiveKind::AllGather, 4);
  const Algorithm a = synthesize(fat, ag, ag.chunk_bytes_for(Bytes{64} << 20));
  EXPECT_LT(static_cast<double>(a.claimed_time) / lower_bound(fat, ag, a.chunk_bytes).total, 1.001)
      << a.method;
}

// The 16-GPU pod of examples/: its two 50 GB/s spines merged into one 100 GB/s spine are not
// slower for the synthesizer (chunks per NPU picked as `tenet synth` does; before the rate model,
// 45 % slower), and both reach the bound's neighbourhood. Both are at the same bound, so the
// heuristics (chunk count, tree shapes) may land either side of each other by a hair: 0.2 %.
TEST(RateSharedQuality, ThePodWithOneFatSpineIsNoSlowerThanWithTwoThinOnes) {
  const std::string dir = std::string(TENET_SOURCE_DIR) + "/examples/topologies/";
  const auto two = topo::load(dir + "pod-2spine.yaml");
  const auto one = topo::load(dir + "pod-1spine.yaml");
  for (CollectiveKind kind :
       {CollectiveKind::AllGather, CollectiveKind::ReduceScatter, CollectiveKind::AllReduce}) {
    const Collective c = Collective::over_all(two, kind);
    const ChunkingResult a1 = synthesize_auto_chunks(one, c, Bytes{64} << 20);
    const ChunkingResult a2 = synthesize_auto_chunks(two, c, Bytes{64} << 20);
    EXPECT_LE(static_cast<double>(a1.algorithm.claimed_time),
              1.002 * static_cast<double>(a2.algorithm.claimed_time))
        << to_string(kind);
    const Report r = verify(one, a1.algorithm, {.max_reported = 3});
    EXPECT_LT(r.ratio(), 1.05) << to_string(kind) << " " << a1.algorithm.method;
  }
}

}  // namespace
}  // namespace tenet::synth
