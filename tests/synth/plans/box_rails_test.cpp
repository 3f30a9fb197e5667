// Boxes on rails (synth/plans/box_rails.hpp): on random boxes of meshes whose NPUs each have a NIC
// into a switched network, the lifted trees are real spanning trees over real routes, fit every
// link at their fluid rates, never beat the cut bound and reach it where the NICs are the limit;
// what the flow plan makes of them verifies; anything else is not boxes on rails.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <numeric>
#include <random>
#include <set>
#include <tuple>
#include <vector>

#include "synth/bounds/lower_bound.hpp"
#include "synth/memo.hpp"
#include "synth/plans/box_rails.hpp"
#include "synth/plans/flow_plans.hpp"
#include "synth/synthesizer.hpp"
#include "synth/verify/verify.hpp"
#include "tests/synth/plans/flow_plan_support.hpp"
#include "tests/synth/test_support.hpp"
#include "topo/bounds.hpp"
#include "topo/generators.hpp"

namespace tenet::synth {
namespace {

using testing::expect_well_formed;
using testing::plan_ratio;

constexpr Bandwidth GBps(double x) { return static_cast<Bandwidth>(x * 1e9); }

// `boxes` boxes of `per` NPUs, each the same random connected mesh (a ring and random chords of
// 50, 100 or 200 GB/s, both ways), every NPU a NIC of `nic` both ways into one switch, or into a
// leaf switch that `per_leaf` boxes share, the leaves joined by a spine of `spine` per leaf. The
// shape of ForestColl's MI250 boxes (`topologies.py`, `mi250_topology`: 16 GCDs a box meshed at
// 200, 100 and 50 GB/s, a 16 GB/s NIC each), small.
topo::Topology boxes_on_rails(std::mt19937_64& rng, int boxes, int per, Bandwidth nic,
                              int per_leaf = 0, Bandwidth spine = 0) {
  const std::array<Bandwidth, 3> speeds{GBps(50), GBps(100), GBps(200)};
  std::set<std::pair<int, int>> mesh;
  for (int i = 0; i < per; ++i) mesh.insert(std::minmax(i, (i + 1) % per));
  for (int extra = static_cast<int>(rng() % per); extra > 0; --extra) {
    const int a = static_cast<int>(rng() % per), b = static_cast<int>(rng() % per);
    if (a != b) mesh.insert(std::minmax(a, b));
  }
  std::vector<Bandwidth> bw;
  for (size_t i = 0; i < mesh.size(); ++i) bw.push_back(speeds[rng() % speeds.size()]);
  topo::TopologyBuilder b("boxes");
  for (int v = 0; v < boxes * per; ++v) b.add_npu();
  const Time lat = 500'000;  // 0.5 us
  std::vector<NodeId> leaf;
  const NodeId top = b.add_switch("top");
  for (int x = 0; per_leaf > 0 && x < (boxes + per_leaf - 1) / per_leaf; ++x) {
    leaf.push_back(b.add_switch(fmt::format("leaf{}", x)));
    b.add_bidirectional(leaf.back(), top, spine, lat);
  }
  for (int x = 0; x < boxes; ++x) {
    size_t i = 0;
    for (const auto& [u, v] : mesh) b.add_bidirectional(x * per + u, x * per + v, bw[i++], lat);
    for (int v = 0; v < per; ++v)
      b.add_bidirectional(x * per + v, per_leaf > 0 ? leaf[x / per_leaf] : top, nic, lat);
  }
  return b.build();
}

std::vector<NodeId> all_npus(const topo::Topology& t) {
  std::vector<NodeId> roots(t.num_npus());
  std::iota(roots.begin(), roots.end(), 0);
  return roots;
}

// Whether every tree of `p` enters each other box once, on the rail of its root's position (from
// the root, or from the box that handed it on in its pod).
bool lifted(const topo::Topology& t, const TreePacking& p, int per) {
  for (const PackedTree& tr : p.trees)
    for (NodeId v = 0; v < t.num_npus(); ++v)
      if (v != tr.root && tr.parent[v] / per != v / per &&
          (v % per != tr.root % per || tr.parent[v] % per != v % per))
        return false;
  return true;
}

TEST(BoxesOnRails, LiftedTreesFitTheLinksAndNeverBeatTheCutBound) {
  std::mt19937_64 rng(58);
  for (int i = 0; i < 60; ++i) {
    const int boxes = 2 + static_cast<int>(rng() % 4), per = 2 + static_cast<int>(rng() % 6);
    const Bandwidth nic = std::array{GBps(12.5), GBps(16), GBps(50), GBps(100)}[rng() % 4];
    const int per_leaf = i % 3 == 0 ? 0 : i % 3;  // one switch, a leaf a box, two boxes a leaf
    const topo::Topology t =
        boxes_on_rails(rng, boxes, per, nic, per_leaf, GBps(25) * per * (1 + rng() % 2));
    const std::string where = fmt::format("case {}: {} boxes of {}", i, boxes, per);
    const std::optional<TreePacking> p = pack_boxes_on_rails(t);
    ASSERT_TRUE(p) << where;
    expect_well_formed(t, *p, all_npus(t), where);
    EXPECT_TRUE(lifted(t, *p, per)) << where;
    EXPECT_GE(plan_ratio(*p) / topo::allgather_cut_bound(t).ratio(), 1 - 1e-9) << where;
    // Behind one switch: each root's data leaves its NIC once per other box.
    if (per_leaf == 0) {
      EXPECT_GE(plan_ratio(*p), (boxes - 1) / static_cast<double>(nic) * (1 - 1e-9)) << where;
    }
  }
}

// Where the NICs are the limit (a box's mesh is many times faster), the lifted trees' fluid rate is
// the cut bound itself: (B - 1) / NIC per byte from each root.
TEST(BoxesOnRails, ReachTheCutBoundWhereTheNicsAreTheLimit) {
  std::mt19937_64 rng(59);
  for (int i = 0; i < 20; ++i) {
    const int boxes = 2 + static_cast<int>(rng() % 6), per = 2 + static_cast<int>(rng() % 6);
    const topo::Topology t = boxes_on_rails(rng, boxes, per, GBps(4));
    const std::optional<TreePacking> p = pack_boxes_on_rails(t);
    ASSERT_TRUE(p) << "case " << i;
    EXPECT_NEAR(plan_ratio(*p) / topo::allgather_cut_bound(t).ratio(), 1, 1e-9) << "case " << i;
    EXPECT_NEAR(plan_ratio(*p) * static_cast<double>(GBps(4)), boxes - 1, 1e-9) << "case " << i;
  }
}

// Servers under leaves of an oversubscribed spine (examples/topologies/pod-2spine.yaml: two
// servers of 4 GPUs a leaf, one 25 GB/s NIC per GPU, 100 GB/s from a leaf to the spines): a chunk
// crosses the spines once, to the server at its root's place in the other leaf, which hands it on
// to its leaf mate. So the NICs are the limit (each sends its own chunks to two servers and hands
// on one other's), not the spines, and the lifted trees reach the cut bound; from every root to
// every other server, the spines would carry twice as much (8 roots a leaf x 2 servers each over
// 100 GB/s: 4/3 of the bound).
TEST(BoxesOnRails, PodsAreCrossedOnce) {
  const topo::Topology t =
      topo::load(std::string(TENET_SOURCE_DIR) + "/examples/topologies/pod-2spine.yaml");
  const std::optional<TreePacking> p = pack_boxes_on_rails(t);
  ASSERT_TRUE(p);
  expect_well_formed(t, *p, all_npus(t), "pod-2spine");
  EXPECT_TRUE(lifted(t, *p, 4));
  EXPECT_NEAR(plan_ratio(*p) / topo::allgather_cut_bound(t).ratio(), 1, 1e-9);
}

TEST(BoxesOnRails, OnlyEqualBoxesOnRails) {
  std::mt19937_64 rng(60);
  // NVSwitch servers (no NPU-to-NPU links), one mesh, a torus: no boxes.
  for (const char* spec : {"nvcluster:2x8", "mesh2d:4x4", "torus2d:4x4", "switch:8"})
    EXPECT_FALSE(pack_boxes_on_rails(topo::generate(spec))) << spec;
  // NPUs joined by `mesh` (both ways), `nics` of them with a 10 GB/s NIC into one switch.
  auto fabric = [](int npus, std::vector<std::tuple<NodeId, NodeId, double>> mesh,
                   std::vector<NodeId> nics) {
    topo::TopologyBuilder b("fixture");
    for (int v = 0; v < npus; ++v) b.add_npu();
    const NodeId s = b.add_switch("s");
    for (const auto& [u, v, gbps] : mesh) b.add_bidirectional(u, v, GBps(gbps), 1000);
    for (NodeId v : nics) b.add_bidirectional(v, s, GBps(10), 1000);
    return b.build();
  };
  // One box's link slower than the other's same link; boxes of 2 and 3; position 1 of the second
  // box without a NIC (its rail does not reach it).
  EXPECT_FALSE(pack_boxes_on_rails(fabric(4, {{0, 1, 100}, {2, 3, 50}}, {0, 1, 2, 3})));
  EXPECT_FALSE(
      pack_boxes_on_rails(fabric(5, {{0, 1, 100}, {2, 3, 100}, {3, 4, 100}}, {0, 1, 2, 3, 4})));
  EXPECT_FALSE(pack_boxes_on_rails(fabric(4, {{0, 1, 100}, {2, 3, 100}}, {0, 1, 2})));
  EXPECT_TRUE(pack_boxes_on_rails(fabric(4, {{0, 1, 100}, {2, 3, 100}}, {0, 1, 2, 3})));
  // A box of the random shape behind one switch is.
  EXPECT_TRUE(pack_boxes_on_rails(boxes_on_rails(rng, 3, 4, GBps(16))));
}

// The flow plan takes the lifted trees where they reach the bound, and what its pipelines and its
// matcher make of them verifies, never under the lower bound.
TEST(BoxesOnRails, TheFlowPlanOnThemVerifies) {
  std::mt19937_64 rng(61);
  int made = 0;
  for (int i = 0; i < 12; ++i) {
    const int boxes = 2 + static_cast<int>(rng() % 3), per = 2 + static_cast<int>(rng() % 4);
    const topo::Topology t = boxes_on_rails(rng, boxes, per, GBps(8));
    detail::FlowPlans plans;
    const TreePacking* p = plans.of(t);
    ASSERT_NE(p, nullptr) << "case " << i;
    EXPECT_TRUE(lifted(t, *p, per)) << "case " << i;
    const CollectiveKind kind = std::array{CollectiveKind::AllGather, CollectiveKind::ReduceScatter,
                                           CollectiveKind::AllReduce}[i % 3];
    const Collective c = Collective::over_all(t, kind, 1 + static_cast<int>(rng() % 4));
    const Bytes chunk = Bytes{1} << (12 + rng() % 8);
    for (SynthMethod m : {SynthMethod::PlanPipeline, SynthMethod::PlanMatcher}) {
      SynthOptions o;
      o.method = m;
      const std::string where = fmt::format("case {} {} {}", i, to_string(kind), to_string(m));
      const Algorithm a = synthesize(t, c, chunk, o);
      ++made;
      const Report r = verify(t, a, {.max_reported = 3});
      EXPECT_TRUE(r.correct()) << where << testing::violation_text(r);
      EXPECT_GE(a.claimed_time, lower_bound(t, c, chunk).total) << where;
    }
  }
  EXPECT_EQ(made, 24);
}

}  // namespace
}  // namespace tenet::synth
