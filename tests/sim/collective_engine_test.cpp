#include "sim/collective_engine.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>

#include "synth/baselines.hpp"
#include "synth/synthesizer.hpp"
#include "tests/synth/test_support.hpp"
#include "topo/generators.hpp"

namespace tenet::sim {
namespace {

// Alone on an uncongested network, any algorithm replays in exactly its timed collective time.
TEST(CollectiveEngine, ReplaysTheTimingModelExactlyOnAnalytical) {
  std::mt19937_64 rng(11);
  int checked = 0;
  for (int i = 0; i < 40; ++i) {
    const auto t = synth::testing::random_topology(rng, 8);
    const synth::Collective c = synth::testing::random_collective(rng, t, 3);
    const synth::Algorithm a = synth::synthesize(t, c, 1 + static_cast<Bytes>(rng() % 1'000'000));
    EXPECT_EQ(replay(t, a, NetworkKind::Analytical), a.claimed_time) << c.describe();
    ++checked;
  }
  for (const char* spec : {"ring:8", "switch:8", "hypercube:8", "ring:4 x switch:2"})
    for (synth::BaselineKind b : synth::all_baselines()) {
      const auto t = topo::generate(spec);
      try {
        const synth::Algorithm a =
            synth::make_baseline({b, {}}, t, synth::Collective::over_all(t, synth::CollectiveKind::AllReduce, 2), 1 << 20);
        EXPECT_EQ(replay(t, a, NetworkKind::Analytical), a.claimed_time) << synth::to_string(b) << " on " << spec;
        ++checked;
      } catch (const synth::NotApplicable&) {
      }
    }
  EXPECT_GE(checked, 50);
}

TEST(CollectiveEngine, RingAllReduceOnARingIsTheClosedFormOnBothBackends) {
  const auto t = topo::generate("ring:8,bw=50GB/s,lat=0.5us");
  const synth::Algorithm a =
      synth::make_baseline({synth::BaselineKind::Ring, {}}, t, synth::Collective::over_all(t, synth::CollectiveKind::AllReduce), 1 << 20);
  const Time closed = 2 * 7 * (500'000 + transfer_time(1 << 20, 50'000'000'000));  // 2(p-1)(alpha + n/p beta)
  EXPECT_EQ(replay(t, a, NetworkKind::Analytical), closed);
  // One message per link at a time: sharing changes nothing (within a picosecond of rounding).
  EXPECT_NEAR(static_cast<double>(replay(t, a, NetworkKind::AnalyticalCongestion)), static_cast<double>(closed), 14.0);
}

}  // namespace
}  // namespace tenet::sim
