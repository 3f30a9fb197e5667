// Quality pins of the baselines (moved from tests/synth/baselines/baselines_test.cpp): how close to
// the bound a baseline's schedule comes where its shape was tuned. That the double binary trees are
// complementary stays in tenet_tests (Baselines.DoubleBinaryTreesAreComplementary).
#include <gtest/gtest.h>

#include "synth/baselines/baselines.hpp"
#include "synth/bounds/lower_bound.hpp"
#include "topo/generators.hpp"

namespace tenet::synth {
namespace {

// The two trees of dbt are complementary (no rank has more than two children in both together): on
// a 512-rank switch, the tree All-Reduce is within 1.3x of the bound (was 1.53x with a second tree
// shifted by one).
TEST(BaselinesQuality, DoubleBinaryTreesOnALargeSwitch) {
  const auto t = topo::generate("switch:512");
  const Collective c = Collective::over_all(t, CollectiveKind::AllReduce);
  const Algorithm a = make_baseline({BaselineKind::Dbt, {}}, t, c, c.chunk_bytes_for(32 << 20));
  EXPECT_LT(static_cast<double>(a.claimed_time) /
                static_cast<double>(lower_bound(t, c, a.chunk_bytes).total),
            1.3);
}

}  // namespace
}  // namespace tenet::synth
