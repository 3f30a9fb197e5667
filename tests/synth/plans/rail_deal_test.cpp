// The deal of a server plan's chunks over unequal rails (synth/plans/rail_deal.hpp): even where
// the rails are equal (the plan as it was), in proportion to the rails' narrowest links where they
// are not, every chunk still reaching every NPU from its root through its own server; and on the
// 16-GPU cluster a user wrote, whose one NIC of 50 GB/s held the even plan's All-Gather of 64 MiB
// at 291.6 us (277.1 us at auto, by the flow plan's pipelines), the dealt one ends at 206.8 us
// (bound 180.3 us).
#include "synth/plans/rail_deal.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "synth/synthesizer.hpp"
#include "synth/verify/verify.hpp"
#include "tests/synth/plans/server_plan_support.hpp"
#include "tests/synth/test_support.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"
#include "topo/topology.hpp"

namespace tenet::synth {
namespace {

constexpr Bandwidth kGB = 1'000'000'000;

Bandwidth narrowest(const topo::Topology& t, const ServerWay& w) {
  Bandwidth least = std::numeric_limits<Bandwidth>::max();
  for (LinkId l : w.route) least = std::min(least, t.link(l).bandwidth);
  return least;
}

TEST(RailDeal, EvenWhereTheRailsAreEqual) {
  for (const char* spec :
       {"nvcluster:4x8,net=rail", "nvcluster:4x8,net=fattree", "nvcluster:2x8", "leafspine:2x4"}) {
    const topo::Topology t = topo::generate(spec);
    const std::optional<ServerPlan> p = plan_servers(t, 1 << 20, LinkModel::Pipelined);
    ASSERT_TRUE(p) << spec;
    EXPECT_TRUE(even_rails(t, *p)) << spec;
    const RailDeal deal(t, *p, 3);
    ASSERT_TRUE(deal.even()) << spec;
    for (NodeId r = 0; r < t.num_npus(); ++r)
      for (int j = 0; j < 3; ++j)
        for (NodeId v = 0; v < t.num_npus(); ++v)
          if (v != r) {
            EXPECT_EQ(deal.way(r, j, v), p->way(r, v)) << spec;
          }
  }
}

// On random clusters (NICs of 10-100 GB/s each) and counts: each chunk reaches every NPU along
// ways that lead back to its root (a mate from the root, an NPU of another server from the root's
// server, a mate of that one from it); between each pair of servers the chunks cross at each
// position in the deal's share, between even and in proportion to the rails' narrowest links,
// within one chunk; each way's load is the chunks dealt to it.
TEST(RailDeal, EveryChunkReachesEveryNpuInProportionToTheRails) {
  std::mt19937_64 rng(2611);
  int uneven = 0;
  for (int i = 0; i < 60; ++i) {
    const topo::Topology t = testing::random_cluster(rng);
    const std::optional<ServerPlan> p = plan_servers(t, 1 << 16, LinkModel::Pipelined);
    ASSERT_TRUE(p) << i;
    const int k = 1 + static_cast<int>(rng() % 9);
    const RailDeal deal(t, *p, k);
    EXPECT_EQ(deal.even(), even_rails(t, *p)) << i;
    uneven += !deal.even();
    const auto& servers = p->servers();
    const size_t count = servers.size(), per = servers[0].size();
    // crossings[a][b][q]: chunks of server a's roots entering server b at position q.
    std::vector<double> crossings(count * count * per, 0);
    std::vector<double> load(p->ways().size(), 0);
    for (NodeId r = 0; r < t.num_npus(); ++r)
      for (int j = 0; j < k; ++j)
        for (NodeId v = 0; v < t.num_npus(); ++v) {
          if (v == r) continue;
          const std::string where =
              fmt::format("cluster {} k={} root {} chunk {} to {}", i, k, r, j, v);
          const int w = deal.way(r, j, v);
          ASSERT_GE(w, 0) << where;
          ++load[static_cast<size_t>(w)];
          ASSERT_EQ(p->ways()[static_cast<size_t>(w)].dst, v) << where;
          int hops = 0;
          for (NodeId at = v; at != r; at = p->ways()[static_cast<size_t>(deal.way(r, j, at))].src)
            ASSERT_LE(++hops, 3) << where;
          const int a = p->server_of(r), b = p->server_of(v);
          const NodeId from = p->ways()[static_cast<size_t>(w)].src;
          if (a != b && p->server_of(from) == a)
            ++crossings[(static_cast<size_t>(a) * count + b) * per + p->position(v)];
        }
    EXPECT_EQ(deal.loads(), load) << i;
    for (size_t a = 0; a < count; ++a)
      for (size_t b = 0; b < count; ++b) {
        if (a == b) continue;
        double sum = 0;
        for (size_t q = 0; q < per; ++q)
          sum += static_cast<double>(narrowest(
              t, p->ways()[static_cast<size_t>(p->way_between(servers[a][q], servers[b][q]))]));
        for (size_t q = 0; q < per; ++q) {
          const double rail = static_cast<double>(narrowest(
              t, p->ways()[static_cast<size_t>(p->way_between(servers[a][q], servers[b][q]))]));
          const double got = crossings[(a * count + b) * per + q];
          const double f = deal.towards();  // 0 when even
          const double share =
              static_cast<double>(per) * k * ((1 - f) / static_cast<double>(per) + f * rail / sum);
          EXPECT_LT(std::abs(got - share), 1)
              << fmt::format("cluster {} k={} {} -> {} at {}", i, k, a, b, q);
        }
      }
  }
  EXPECT_GE(uneven, 20);  // the NICs are drawn per NPU: many deals leave the even shares
}

// Two servers of G NPUs on a 300 GB/s NVSwitch each, NPU i of both on rail i, half the rails 200
// GB/s and half 25 (G = 8), or one of each at 100 and 25 (G = 2).
topo::Topology two_servers(int per, const std::vector<Bandwidth>& rails) {
  topo::TopologyBuilder b("two servers");
  std::vector<std::vector<NodeId>> npu(2);
  for (auto& server : npu)
    for (int i = 0; i < per; ++i) server.push_back(b.add_npu());
  for (const auto& server : npu) {
    const NodeId nvswitch = b.add_switch();
    for (NodeId v : server) b.add_bidirectional(v, nvswitch, Bandwidth{300} * kGB, 1'000'000);
  }
  for (int i = 0; i < per; ++i) {
    const NodeId rail = b.add_switch();
    for (const auto& server : npu)
      b.add_bidirectional(server[i], rail, rails[static_cast<size_t>(i)] * kGB, 1'000'000);
  }
  return b.build();
}

// The deal goes only as far towards the rails' proportions as unloads the busiest link. With 8
// NPUs a server, proportional shares would bring 1.78 k chunks in at each 200 GB/s rail, each
// forwarded to 7 mates: 12.4 k + 7 k over a 300 GB/s NVSwitch port, busier than the even plan's 7
// k + 7 k, and every step towards them too: the deal stays even. With 2 NPUs a server the ports
// have room: all the way, 4/5 of the chunks on the 100 GB/s rail and 1/5 on the 25 GB/s one.
TEST(RailDeal, GoesOnlyAsFarAsTheBusiestLinkGains) {
  {
    const topo::Topology t = two_servers(8, {200, 200, 200, 200, 25, 25, 25, 25});
    const std::optional<ServerPlan> p = plan_servers(t, 1 << 20, LinkModel::Pipelined);
    ASSERT_TRUE(p);
    EXPECT_TRUE(RailDeal(t, *p, 8).even());
  }
  const topo::Topology t = two_servers(2, {100, 25});
  const std::optional<ServerPlan> p = plan_servers(t, 1 << 20, LinkModel::Pipelined);
  ASSERT_TRUE(p);
  const RailDeal deal(t, *p, 10);
  ASSERT_FALSE(deal.even());
  EXPECT_EQ(deal.towards(), 1.0);
  // Of server 0's 20 chunks, 16 cross on the 100 GB/s rail (straight to server 1's NPU there) and
  // 4 on the 25 GB/s one (to that NPU from its mate).
  const NodeId there = p->servers()[1][0];
  int fast = 0;
  for (NodeId r : p->servers()[0])
    for (int j = 0; j < 10; ++j)
      fast += p->server_of(p->ways()[static_cast<size_t>(deal.way(r, j, there))].src) == 0;
  EXPECT_EQ(fast, 16);
}

// The 16-GPU cluster a user wrote (examples/topologies/cluster16.yaml): server0/npu0's NIC is 50
// GB/s, the others 100. Kept on its rail, each of the 3 other servers' chunks of server0/npu0's
// position and its own 3 x 4 MiB cross that NIC (3 x 4 MiB / 50 GB/s = 251.7 us at 64 MiB); dealt,
// the All-Gather verifies and ends well before that, as does the Reduce-Scatter (the reversed
// plan).
TEST(RailDeal, ADegradedNicCarriesItsShare) {
  const topo::Topology t = testing::charging(
      topo::load(std::string(TENET_SOURCE_DIR) + "/examples/topologies/cluster16.yaml"));
  SynthOptions o;
  o.method = SynthMethod::ServerPlan;
  for (CollectiveKind kind : {CollectiveKind::AllGather, CollectiveKind::ReduceScatter}) {
    const Collective c = Collective::over_all(t, kind, 8);
    const Algorithm a = synthesize(t, c, c.chunk_bytes_for(Bytes{64} << 20), o);
    const Report r = verify(t, a, {.max_reported = 3});
    EXPECT_TRUE(r.correct()) << to_string(kind) << testing::violation_text(r);
    EXPECT_LT(a.claimed_time, Time{230'000'000}) << to_string(kind);  // 230 us, in ps
  }
}

}  // namespace
}  // namespace tenet::synth
