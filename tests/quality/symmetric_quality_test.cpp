// Quality pins of synthesis by translation (moved from tests/synth/plans/symmetric_test.cpp): how
// close to the lower bound the symmetric schedules come on tori, hypercubes and servers on rails.
// That they verify, and are timed as the whole algorithm would be, stays in tenet_tests
// (Symmetric).
#include <gtest/gtest.h>

#include "synth/bounds/lower_bound.hpp"
#include "synth/plans/symmetric.hpp"
#include "topo/generators.hpp"
#include "topo/symmetry.hpp"

namespace tenet::synth {
namespace {

constexpr Bytes kChunk = 1 << 20;

// Where a slot's share of a rank's chunks is whole, and there are chunks enough to send while
// others are on their way (a link's latency), every slot stays busy from the first instant to the
// last: the cut bound (plus, for All-Reduce, a few link latencies between its halves).
TEST(SymmetricQuality, ReachesTheBoundOnTori) {
  for (const char* spec : {"torus2d:16x16", "torus3d:4x4x4", "ring:9", "hypercube:32"}) {
    const auto t = topo::generate(spec);
    const int slots = topo::translation_symmetry(t)->num_out_slots();
    // k chunks per NPU with (N-1)k a multiple of the slots.
    int k = 4;
    while ((t.num_npus() - 1) * k % slots != 0) ++k;
    for (CollectiveKind kind : {CollectiveKind::AllGather, CollectiveKind::AllReduce}) {
      const Collective c = Collective::over_all(t, kind, k);
      const std::optional<Algorithm> a = synthesize_symmetric(t, c, kChunk, LinkModel::Pipelined);
      ASSERT_TRUE(a) << spec;
      const Time bound = lower_bound(t, c, kChunk).total;
      const double slack = kind == CollectiveKind::AllGather ? 1.001 : 1.002;
      EXPECT_LE(static_cast<double>(a->claimed_time), slack * static_cast<double>(bound))
          << spec << " " << c.describe() << ": " << a->claimed_time << " against " << bound;
    }
  }
}

// All-to-All: rank 0's chunks each along a way of fewest hops, the orbits' loads evened out, the
// hops taken in whichever order keeps the orbits busy: at the bound (the hop-count bound) on tori
// and hypercubes, and on servers on rails (NCCL's PXN: rail then NVSwitch, or NVSwitch then rail).
TEST(SymmetricQuality, AllToAllReachesTheBound) {
  for (const char* spec :
       {"torus2d:8x8", "torus2d:3x5", "torus3d:4x4x4", "hypercube:64", "nvcluster:16x8,net=rail"}) {
    const auto t = topo::generate(spec);
    const Collective c = Collective::over_all(t, CollectiveKind::AllToAll);
    const std::optional<Algorithm> a = synthesize_symmetric(t, c, kChunk, LinkModel::Pipelined);
    ASSERT_TRUE(a) << spec;
    const Time bound = lower_bound(t, c, kChunk).total;
    EXPECT_LE(static_cast<double>(a->claimed_time), 1.001 * static_cast<double>(bound)) << spec;
  }
}

}  // namespace
}  // namespace tenet::synth
