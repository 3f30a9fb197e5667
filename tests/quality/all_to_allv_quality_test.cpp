// Quality pins of All-to-Allv (moved from tests/synth/ir/all_to_allv_test.cpp): how close to the
// bound a skewed exchange comes. That it verifies stays in tenet_tests (AllToAllv.ZipfVerifies).
#include <gtest/gtest.h>

#include "synth/bounds/lower_bound.hpp"
#include "synth/ir/traffic.hpp"
#include "synth/synthesizer.hpp"
#include "topo/generators.hpp"

namespace tenet::synth {
namespace {

// A mixture-of-experts layer's Zipf(1.2) routing, 16 MiB per rank, within 1.15x of the bound.
TEST(AllToAllvQuality, ZipfNearTheBound) {
  for (const char* spec :
       {"switch:8", "torus2d:4x4", "nvcluster:2x4,net=rail", "leafspine:2x4,spines=1"}) {
    const topo::Topology t = topo::generate(spec);
    const Traffic traffic = generate_traffic("zipf:1.2", t.num_npus(), Bytes{16} << 20, 1);
    const TrafficUnits u = to_units(traffic, 8 * t.num_npus() * t.num_npus());
    Collective c = Collective::over_all(t, CollectiveKind::AllToAll);
    c.set_pair_units(u.units);
    const ChunkingResult r = synthesize_auto_chunks(t, c, u.unit_bytes, {}, 8);
    const Time bound = lower_bound(t, r.algorithm.collective, r.algorithm.chunk_bytes).total;
    EXPECT_LE(static_cast<double>(r.algorithm.claimed_time), 1.15 * static_cast<double>(bound))
        << spec << ": " << r.algorithm.method;
  }
}

}  // namespace
}  // namespace tenet::synth
