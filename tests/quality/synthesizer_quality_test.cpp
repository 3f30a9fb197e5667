// Quality pins of the synthesizer (moved from tests/synth/synthesizer_test.cpp): how close to the
// lower bound, or to another producer's time, its results come. The thresholds are tuning outcomes,
// not correctness properties (those stay in tenet_tests); a change that moves one fails here, under
// the ctest label `quality`.
#include <gtest/gtest.h>

#include "synth/bounds/lower_bound.hpp"
#include "synth/synthesizer.hpp"
#include "tests/synth/synthesizer_support.hpp"
#include "topo/generators.hpp"

namespace tenet::synth {
namespace {

using testing::TacosMesh;

constexpr Bytes kChunk = 1 << 20;

// The quality target: <= 1.02 x the lower bound on meshes, tori and hypercubes of 64 NPUs with 4
// chunks of 1 MiB at 50 GB/s and 0.5 us (the benchmark covers larger ones).
TEST(SynthesizerQuality, WithinTwoPercentOfTheBoundOnRegularTopologies) {
  for (const char* spec :
       {"mesh2d:8x8", "torus2d:8x8", "mesh3d:4x4x4", "torus3d:4x4x4", "hypercube:64"}) {
    const auto t = topo::generate(spec);
    const Collective c = Collective::over_all(t, CollectiveKind::AllGather, 4);
    const Algorithm a = synthesize(t, c, kChunk);
    const LowerBound b = lower_bound(t, c, kChunk);
    EXPECT_LE(static_cast<double>(a.claimed_time) / b.total, 1.02) << spec << ": " << a.method;
  }
}

// The public TACOS code's own heterogeneous-mesh tests (astra-sim/tacos,
// tests/test_tacos_mesh_2d_hetero.cpp): All-Gather of a 1 GiB (4 GiB) output over a WxH mesh with
// one bandwidth (GiB/s) along x and another along y, k chunks per NPU, under its hold model, where
// it expects 8005.0, 8595.43 and 44612.47 us. Ours is as fast on each (that the results verify:
// Synthesizer.TacosHeterogeneousMeshesVerify).
// The random choice among the scarcest spreads slow links over different chunks; on the 7x10
// mesh the slow links also yield the last ones (SynthOptions::matcher.slow_links_yield).
// Under the pipelined model (links stream back to back, never more constrained than hold), each is
// no slower than under hold (issue 15: the 5x5 mesh once took 10400.5 us pipelined, 8005.0 hold).
TEST(SynthesizerQuality, AsFastAsTacosOnItsHeterogeneousMeshes) {
  for (const TacosMesh& x : testing::kTacosMeshes) {
    const auto t = topo::generate(x.spec);
    const auto [c, a] = testing::tacos_hold_run(t, x);
    EXPECT_LE(a.claimed_time, x.tacos + 10'000) << x.spec << ": " << a.method;
    const Algorithm pipelined = synthesize(t, c, c.chunk_bytes_for(x.output));
    EXPECT_LE(pipelined.claimed_time, a.claimed_time) << x.spec << ": " << pipelined.method;
  }
}

}  // namespace
}  // namespace tenet::synth
