// The plain matcher's All-Reduce in waves (synth/plans/all_reduce.hpp): where Reduce-Scatter then
// All-Gather holds an NPU's links twice as long as the bound allows (a mesh's corners send every
// contribution out, then take the whole result in), each wave's All-Gather runs beside the next
// wave's Reduce-Scatter. On `mesh3d:4x4x4`, All-Reduce of 64 MiB, the halves joined took 896.4 us
// at one chunk per NPU and 907.0 us at two; in waves two take 855.1 us.
#include "synth/plans/all_reduce.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "synth/bounds/lower_bound.hpp"
#include "synth/synthesizer.hpp"
#include "synth/verify/verify.hpp"
#include "tests/synth/test_support.hpp"
#include "topo/generators.hpp"

namespace tenet::synth {
namespace {

constexpr Bytes kMiB = Bytes{1} << 20;

SynthOptions matcher() {
  SynthOptions o;
  o.method = SynthMethod::Matcher;
  return o;
}

TEST(AllReduceWaves, ApplyWhereTheHalvesFigureIsFarOverTheBound) {
  const SynthOptions o;
  for (const char* spec : {"mesh2d:4x4", "mesh3d:3x3x3", "line:6"}) {
    const topo::Topology t = topo::generate(spec);
    const Collective two = Collective::over_all(t, CollectiveKind::AllReduce, 2);
    EXPECT_TRUE(detail::waves_apply(t, two, kMiB, o)) << spec;
    // One chunk per NPU is one wave: the halves joined.
    EXPECT_FALSE(
        detail::waves_apply(t, Collective::over_all(t, CollectiveKind::AllReduce, 1), kMiB, o))
        << spec;
    Collective gather = two;
    gather.kind = CollectiveKind::AllGather;
    EXPECT_FALSE(detail::waves_apply(t, gather, kMiB, o)) << spec;
  }
  // Where Reduce-Scatter then All-Gather can reach the bound (every NPU's links alike), no waves.
  for (const char* spec : {"torus2d:4x4", "switch:8", "hypercube:16", "nvcluster:2x4"}) {
    const topo::Topology t = topo::generate(spec);
    EXPECT_FALSE(
        detail::waves_apply(t, Collective::over_all(t, CollectiveKind::AllReduce, 2), kMiB, o))
        << spec;
  }
}

// More chunks now pay on a mesh: the matcher's All-Reduce at two chunks per NPU, in two waves, is
// faster than at one (joined, 896.4 us), where joined it was slower (907.0 us).
TEST(AllReduceWaves, OverlapTheHalvesOnAMesh) {
  const topo::Topology t = topo::generate("mesh3d:4x4x4");
  const Bytes size = 64 * kMiB;
  const Collective one = Collective::over_all(t, CollectiveKind::AllReduce, 1);
  const Collective two = Collective::over_all(t, CollectiveKind::AllReduce, 2);
  const Algorithm joined = synthesize(t, one, one.chunk_bytes_for(size), matcher());
  const Algorithm waved = synthesize(t, two, two.chunk_bytes_for(size), matcher());
  EXPECT_EQ(joined.provenance.waves, 0);
  EXPECT_EQ(waved.provenance.waves, 2);
  EXPECT_NE(waved.method.find("in 2 waves"), std::string::npos) << waved.method;
  EXPECT_LT(waved.claimed_time, joined.claimed_time);
  const Report r = verify(t, waved);
  EXPECT_TRUE(r.correct()) << testing::violation_text(r);
  EXPECT_EQ(r.collective_time, waved.claimed_time);
}

// How many times `method` says that it ran in waves.
int waves_said(const std::string& method) {
  int n = 0;
  for (size_t at = method.find(" waves ("); at != std::string::npos;
       at = method.find(" waves (", at + 1))
    ++n;
  return n;
}

// On meshes, lines and random fabrics where waves apply, the matcher's All-Reduce (in waves or
// joined, whichever is faster), alone and in `auto`'s portfolio (where on mixed speeds the
// matcher also runs under hold), verifies, claims its timed time, never ends under the bound, and
// says once that it ran in waves where it did.
TEST(AllReduceWaves, VerifyAndKeepToTheBound) {
  std::vector<topo::Topology> fabrics;
  for (const char* spec : {"mesh2d:4x4", "mesh3d:3x3x3", "line:6", "mesh2d:3x5"})
    fabrics.push_back(topo::generate(spec));
  std::mt19937_64 rng(61);
  for (int i = 0; i < 30; ++i) fabrics.push_back(testing::random_topology(rng, 10, i % 2 == 0));
  SynthOptions any;
  any.portfolio.baselines = false;  // (what the synthesizer makes, not what a baseline does)
  int waved = 0;
  for (const topo::Topology& t : fabrics)
    for (int k : {2, 4}) {
      const Collective c = Collective::over_all(t, CollectiveKind::AllReduce, k);
      const Bytes chunk = 1 + static_cast<Bytes>(rng() % (4 * kMiB));
      if (!detail::waves_apply(t, c, chunk, matcher())) continue;
      for (const SynthOptions& o : {matcher(), any}) {
        const std::string what =
            t.name() + " k=" + std::to_string(k) + " " + std::string(to_string(o.method));
        const Algorithm a = synthesize(t, c, chunk, o);
        waved += a.provenance.waves > 0;
        EXPECT_EQ(waves_said(a.method), a.provenance.waves > 0 ? 1 : 0) << what << ": " << a.method;
        const Report r = verify(t, a);
        ASSERT_TRUE(r.correct()) << what << testing::violation_text(r);
        EXPECT_EQ(r.collective_time, a.claimed_time) << what;
        EXPECT_GE(a.claimed_time, lower_bound(t, c, chunk).total) << what;
      }
    }
  EXPECT_GE(waved, 4);  // waves won somewhere
}

}  // namespace
}  // namespace tenet::synth
