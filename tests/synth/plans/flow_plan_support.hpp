// Setup shared by the flow plan's correctness tests (tests/synth/plans/flow_plan_test.cpp,
// box_rails_test.cpp) and its quality pins (tests/quality/flow_plan_quality_test.cpp): a packing's
// trees checked, the pipelines alone, and their variants run one by one.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "synth/bounds/lower_bound.hpp"
#include "synth/plans/tree_packing.hpp"
#include "synth/synthesizer.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"

namespace tenet::synth::testing {

// Every tree spans every NPU from its root without a cycle, and each tree arc's routes are paths
// of physical links from the parent to the child; each root has k tree units in all.
inline void expect_well_formed(const topo::Topology& t, const TreePacking& p,
                               const std::vector<NodeId>& roots, const std::string& where) {
  std::map<NodeId, int> units;
  for (const PackedTree& tr : p.trees) {
    units[tr.root] += tr.copies;
    ASSERT_GT(tr.copies, 0) << where;
    ASSERT_EQ(tr.parent[tr.root], -1) << where;
    for (NodeId v = 0; v < t.num_npus(); ++v) {
      if (v == tr.root) continue;
      // Up the parents to the root in fewer than N steps.
      NodeId x = v;
      for (int steps = 0; x != tr.root; ++steps) {
        ASSERT_LT(steps, t.num_npus()) << where << ": cycle above NPU " << v;
        x = tr.parent[x];
        ASSERT_GE(x, 0) << where << ": NPU " << v << " is not in the tree of root " << tr.root;
      }
      ASSERT_FALSE(tr.routes[v].empty()) << where;
      for (const std::vector<LinkId>& route : tr.routes[v]) {
        NodeId at = tr.parent[v];
        std::set<LinkId> seen;
        for (LinkId l : route) {
          ASSERT_EQ(t.link(l).src, at) << where << ": route to " << v << " is not a path";
          ASSERT_TRUE(seen.insert(l).second)
              << where << ": route to " << v << " crosses a link twice";
          at = t.link(l).dst;
        }
        ASSERT_EQ(at, v) << where;
      }
    }
  }
  for (NodeId r : roots) EXPECT_EQ(units[r], p.k) << where << ": root " << r;
  EXPECT_EQ(units.size(), roots.size()) << where;
  // The lanes: per tree and arc, its own parts of the arc's routes, summing to 1; streamed at
  // copies x unit / U times their lanes, the trees fit every physical link at once.
  std::vector<double> load(t.num_links(), 0.0);
  for (const PackedTree& tr : p.trees)
    for (NodeId v = 0; v < t.num_npus(); ++v) {
      if (v == tr.root) continue;
      ASSERT_EQ(tr.lanes[v].size(), tr.routes[v].size()) << where;
      double sum = 0;
      for (size_t r = 0; r < tr.lanes[v].size(); ++r) {
        ASSERT_GE(tr.lanes[v][r], 0) << where;
        sum += tr.lanes[v][r];
        for (LinkId l : tr.routes[v][r])
          load[l] += tr.copies * tr.lanes[v][r] * static_cast<double>(p.unit) / p.congestion;
      }
      EXPECT_NEAR(sum, 1, 1e-9) << where << ": lanes to " << v;
    }
  for (LinkId l = 0; l < t.num_links(); ++l)
    EXPECT_LE(load[l], static_cast<double>(t.link(l).bandwidth) * (1 + 1e-6))
        << where << ": link " << l;
}

// U / (k x unit): the plan's seconds per byte from each root, to compare with the cut bound.
inline double plan_ratio(const TreePacking& p) {
  return p.congestion / (p.k * static_cast<double>(p.unit));
}

// The flow plan's pipelines alone: `kind` of 256 MiB on `spec` in `chunks` per NPU (Broadcast and
// Reduce: the root's), on `topology`; with its ratio to the lower bound.
struct Pipelines {
  topo::Topology topology;
  Algorithm algorithm;
  double ratio;
};
inline Pipelines pipelines(const std::string& spec, CollectiveKind kind, int chunks) {
  topo::Topology t = topo::generate(spec);
  SynthOptions o;
  o.method = SynthMethod::PlanPipeline;
  const Collective c = Collective::over_all(t, kind, chunks);
  Algorithm a = synthesize(t, c, c.chunk_bytes_for(Bytes{256} << 20), o);
  const double ratio = static_cast<double>(a.claimed_time) /
                       static_cast<double>(lower_bound(t, c, a.chunk_bytes).total);
  return {std::move(t), std::move(a), ratio};
}

// The flow plan's pipelines for `c` (the variants in `mask`; 0: all), with each variant's time as
// on_pipeline_variant reports it, the last one reported, and how many were reported twice.
struct VariantRun {
  Algorithm algorithm;
  std::map<int, Time> times;
  int last = -1;
  int repeated = 0;
};
inline VariantRun run_variants(const topo::Topology& t, const Collective& c, Bytes chunk,
                               uint64_t mask = 0) {
  SynthOptions o;
  o.method = SynthMethod::PlanPipeline;
  o.pipelines.variants = mask;
  VariantRun r;
  o.pipelines.on_variant = [&](int v, Time time) {
    r.repeated += r.times.emplace(v, time).second ? 0 : 1;
    r.last = v;
  };
  r.algorithm = synthesize(t, c, chunk, o);
  return r;
}

// The pipelines for `c` with every variant but the fastest, while the fastest left is in serial
// channels (four rounds at the most).
inline Algorithm without_the_fastest_serial(const topo::Topology& t, const Collective& c,
                                            Bytes chunk) {
  std::map<int, Time> all = run_variants(t, c, chunk).times;
  uint64_t mask = 0;
  for (const auto& [v, time] : all) mask |= uint64_t{1} << v;
  Algorithm a;
  for (int round = 0; round < 4; ++round) {
    int fastest = all.begin()->first;
    for (const auto& [v, time] : all)
      if (time < all.at(fastest)) fastest = v;
    mask &= ~(uint64_t{1} << fastest);
    all.erase(fastest);
    a = run_variants(t, c, chunk, mask).algorithm;
    if (!a.serial_channels) break;
  }
  return a;
}

// Broadcast and Reduce of 256 MiB with -k auto on a pod whose servers reach each other only through
// 25 GB/s NICs (examples/topologies/pod-1spine.yaml): f(t, kind, r, b), b the lower bound of r.
template <typename F>
void for_each_rooted_on_a_pod(F f) {
  const auto t = topo::load(std::string(TENET_SOURCE_DIR) + "/examples/topologies/pod-1spine.yaml");
  for (CollectiveKind kind : {CollectiveKind::Broadcast, CollectiveKind::Reduce}) {
    const ChunkingResult r = synthesize_auto_chunks(t, Collective::over_all(t, kind), 256 << 20);
    const LowerBound b = lower_bound(t, r.algorithm.collective, r.algorithm.chunk_bytes);
    f(t, kind, r, b);
  }
}

// All-to-All of 64 MiB with -k auto on regular topologies, a DGX-1, a rail cluster and a 2:1
// leaf-spine: f(spec, t, r).
template <typename F>
void for_each_all_to_all(F f) {
  for (const char* spec : {"mesh2d:4x4", "dgx1", "torus2d:4x4", "hypercube:16",
                           "nvcluster:2x8,net=rail", "leafspine:2x8,spines=1"}) {
    const topo::Topology t = topo::generate(spec);
    const Collective c = Collective::over_all(t, CollectiveKind::AllToAll);
    const ChunkingResult r = synthesize_auto_chunks(t, c, Bytes{64} << 20);
    f(spec, t, r);
  }
}

}  // namespace tenet::synth::testing
