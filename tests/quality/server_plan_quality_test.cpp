// Quality pins of the server plan (moved from tests/synth/plans/server_plan_test.cpp): how close to
// the lower bound the matcher on a cluster's server plan comes. The thresholds are tuning outcomes;
// that the same algorithms verify and are no faster than the bound stays in tenet_tests
// (ServerPlanSynthesis).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "synth/bounds/lower_bound.hpp"
#include "synth/plans/server_plan.hpp"
#include "synth/synthesizer.hpp"
#include "synth/tuning.hpp"
#include "tests/synth/plans/server_plan_support.hpp"
#include "tests/synth/test_support.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"

namespace tenet::synth {
namespace {

// The clusters of the issue: All-Gather, Reduce-Scatter and All-Reduce within 2 % of the bound
// (4x8: 1.0041-1.0043).
TEST(ServerPlanQuality, NearTheBoundOnRailAndFatTreeClusters) {
  testing::for_each_cluster_collective([](const char* spec, const topo::Topology& t,
                                          CollectiveKind kind, const Collective& c, Bytes chunk,
                                          const Algorithm& a) {
    const double ratio = static_cast<double>(a.claimed_time) / lower_bound(t, c, chunk).total;
    EXPECT_LT(ratio, 1.02) << spec << " " << to_string(kind) << ": " << a.method;
  });
}

// The staggered rails' estimate (staggered_estimate) follows the matcher's All-Gather on the
// server plan within kServerPlanTrust on rail clusters of 16 and 32 servers (2.6 us NIC steps),
// where the chunk search trusts it to leave out counts that cannot win; the estimate at one count
// against the time at the same count: measured within 3 %.
TEST(ServerPlanQuality, StaggeredEstimateFollowsTheMatcher) {
  for (const char* spec : {"nvcluster:16x8,net=rail", "nvcluster:32x8,net=rail"}) {
    topo::Topology t = topo::generate(spec);
    t.set_charges_steps(true);
    SynthOptions o;
    o.method = SynthMethod::ServerPlan;
    for (int k : {1, 2, 4}) {
      const Collective c = Collective::over_all(t, CollectiveKind::AllGather, k);
      const Bytes chunk = c.chunk_bytes_for(Bytes{64} << 20);
      const std::optional<ServerPlan> plan = plan_servers(t, chunk, LinkModel::Pipelined);
      ASSERT_TRUE(plan) << spec;
      const std::optional<Time> estimate =
          staggered_estimate(t, *plan, k, chunk, LinkModel::Pipelined);
      ASSERT_TRUE(estimate) << spec;
      const double ratio = static_cast<double>(synthesize(t, c, chunk, o).claimed_time) /
                           static_cast<double>(*estimate);
      EXPECT_NEAR(ratio, 1, kServerPlanTrust) << spec << " k=" << k;
    }
  }
}

// The rails in messages (synth/plans/rail_messages.hpp) on nvcluster:8x8,net=rail with its 2.6 us
// NIC steps, All-Gather of 256 MiB: the estimate (staggered_estimate, the less of the staggered
// rails and the messages) follows the plan at 16 and 32 chunks per NPU within kServerPlanTrust
// (by hand 654 and 650 us, against 651.5 and 647.7 made), and -k auto reaches them: 1.1155x at
// k = 2 before (the count search stopped where 4 and 8 chunks did not gain, and messages begin
// past 8), now under 1.10x.
TEST(ServerPlanQuality, InMessagesTheEstimateFollowsAndTheSearchReachesThem) {
  topo::Topology t = topo::generate("nvcluster:8x8,net=rail");
  t.set_charges_steps(true);
  const Bytes total = Bytes{256} << 20;
  SynthOptions o;
  o.method = SynthMethod::ServerPlan;
  for (int k : {16, 32}) {
    const Collective c = Collective::over_all(t, CollectiveKind::AllGather, k);
    const Bytes chunk = c.chunk_bytes_for(total);
    const std::optional<ServerPlan> plan = plan_servers(t, chunk, LinkModel::Pipelined);
    ASSERT_TRUE(plan);
    const std::optional<Time> estimate =
        staggered_estimate(t, *plan, k, chunk, LinkModel::Pipelined);
    ASSERT_TRUE(estimate);
    const double ratio = static_cast<double>(synthesize(t, c, chunk, o).claimed_time) /
                         static_cast<double>(*estimate);
    EXPECT_NEAR(ratio, 1, kServerPlanTrust) << "k=" << k;
  }
  const ChunkingResult r =
      synthesize_auto_chunks(t, Collective::over_all(t, CollectiveKind::AllGather), total);
  const double ratio =
      static_cast<double>(r.algorithm.claimed_time) /
      static_cast<double>(lower_bound(t, r.algorithm.collective, r.algorithm.chunk_bytes).total);
  EXPECT_LT(ratio, 1.10) << "k=" << r.chunks_per_npu << ": " << r.algorithm.method;
}

// Broadcast and Reduce: the root's chunks dealt over its server, each slice along its rail and
// on over each server's NVSwitch (every NIC sends a slice once). 4096 chunks of 64 KiB, any root:
// within 3 % of the bound on rail and fat-tree clusters (the rails' chain of servers costs its
// latency; the flow plan's deep trees were 1.025x and 1.039x at their best).
TEST(ServerPlanQuality, BroadcastAndReduceNearTheBound) {
  testing::for_each_cluster_rooted([](const char* spec, const topo::Topology& t,
                                      CollectiveKind kind, int root, const Collective& c,
                                      Bytes chunk, const Algorithm& a) {
    const double ratio = static_cast<double>(a.claimed_time) / lower_bound(t, c, chunk).total;
    EXPECT_LT(ratio, 1.03) << fmt::format("{} {} from {}", spec, to_string(kind), root) << ": "
                           << a.method;
  });
}

// The 16-GPU cluster a user wrote (examples/topologies/cluster16.yaml, one NIC of 50 GB/s among
// fifteen of 100), 64 MiB at -k auto as `tenet synth` runs it: with the server plan's chunks dealt
// over its unequal rails (synth/plans/rail_deal.hpp) and relayed over its two leaves' pods of
// servers (relayed_over_pods), All-Gather and Reduce-Scatter within 1.105x of the bound and
// All-Reduce within 1.25x (measured 1.0992, 1.0977 and 1.2419; 1.1230 and 1.1214 before the
// answer's tail, the Reduce-Scatter's head, was listed again, synth/plans/tail_spread.hpp; the
// All-Reduce 1.2751 before each owner's All-Gather sent first what it reduced first,
// synth/plans/gather_order.hpp; direct rails 1.1467, 1.1451 and 1.3440; before the deal the flow
// plan's pipelines won at 1.5366, 1.5166 and 1.5422).
TEST(ServerPlanQuality, DegradedNicClusterNearTheBound) {
  const topo::Topology t = testing::charging(
      topo::load(std::string(TENET_SOURCE_DIR) + "/examples/topologies/cluster16.yaml"));
  for (const auto& [kind, most] : {std::pair{CollectiveKind::AllGather, 1.105},
                                   std::pair{CollectiveKind::ReduceScatter, 1.105},
                                   std::pair{CollectiveKind::AllReduce, 1.25}}) {
    const ChunkingResult r =
        synthesize_auto_chunks(t, Collective::over_all(t, kind), Bytes{64} << 20);
    const Algorithm& a = r.algorithm;
    const double ratio = static_cast<double>(a.claimed_time) /
                         static_cast<double>(lower_bound(t, a.collective, a.chunk_bytes).total);
    EXPECT_LT(ratio, most) << to_string(kind) << ": " << a.method;
  }
}

}  // namespace
}  // namespace tenet::synth
