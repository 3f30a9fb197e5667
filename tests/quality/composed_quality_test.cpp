// Quality pins of All-Reduces composed per level (moved from tests/synth/groups/composed_test.cpp):
// how close to the lower bound a composition comes once its phases overlap. That compositions
// verify stays in tenet_tests (Composed).
#include <gtest/gtest.h>

#include "synth/bounds/lower_bound.hpp"
#include "synth/synthesizer.hpp"
#include "topo/generators.hpp"

namespace tenet::synth {
namespace {

// The phases overlap chunk by chunk: with many chunks the composition on a rail cluster comes
// within 1.1x of the bound (its parts alone add up to about twice it), and is faster than with few.
TEST(ComposedQuality, PhasesOverlap) {
  const auto t = topo::generate("nvcluster:4x8,net=rail");
  SynthOptions o;
  o.method = SynthMethod::Composed;
  auto at = [&](int k) {
    const Collective c =
        composed_collective(t, Collective::over_all(t, CollectiveKind::AllReduce, k));
    return synthesize(t, c, c.chunk_bytes_for(int64_t{1} << 28), o);
  };
  const Algorithm few = at(1), many = at(64);
  const Time bound = lower_bound(t, many.collective, many.chunk_bytes).total;
  const double ratio = static_cast<double>(many.claimed_time) / static_cast<double>(bound);
  EXPECT_LT(ratio, 1.1) << many.method;
  EXPECT_LT(many.claimed_time, few.claimed_time);
}

}  // namespace
}  // namespace tenet::synth
