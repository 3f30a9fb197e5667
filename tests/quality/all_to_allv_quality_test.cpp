// Quality pins of All-to-Allv (moved from tests/synth/ir/all_to_allv_test.cpp): how close to the
// bound a skewed exchange comes. That it verifies stays in tenet_tests (AllToAllv.ZipfVerifies).
#include <gtest/gtest.h>

#include "synth/bounds/lower_bound.hpp"
#include "synth/synthesizer.hpp"
#include "tests/synth/ir/all_to_allv_support.hpp"
#include "topo/generators.hpp"

namespace tenet::synth {
namespace {

// A mixture-of-experts layer's Zipf(1.2) routing, 16 MiB per rank, within 1.15x of the bound.
TEST(AllToAllvQuality, ZipfNearTheBound) {
  for (const char* spec :
       {"switch:8", "torus2d:4x4", "nvcluster:2x4,net=rail", "leafspine:2x4,spines=1"}) {
    const topo::Topology t = topo::generate(spec);
    const ChunkingResult r = testing::zipf_all_to_allv(t);
    const Time bound = lower_bound(t, r.algorithm.collective, r.algorithm.chunk_bytes).total;
    EXPECT_LE(static_cast<double>(r.algorithm.claimed_time), 1.15 * static_cast<double>(bound))
        << spec << ": " << r.algorithm.method;
  }
}

}  // namespace
}  // namespace tenet::synth
