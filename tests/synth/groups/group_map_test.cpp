// Same-shape process groups (synth/groups/group_map.hpp): an algorithm renamed to another group is
// correct and takes its original's time, or no renaming is returned.
#include "synth/groups/group_map.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "synth/synthesizer.hpp"
#include "synth/verify/verify.hpp"
#include "tests/synth/test_support.hpp"
#include "topo/generators.hpp"

namespace tenet::synth {
namespace {

Collective group(CollectiveKind kind, std::vector<topo::NodeId> ranks, int chunks_per_npu) {
  Collective c;
  c.kind = kind;
  c.ranks = std::move(ranks);
  c.chunks_per_npu = chunks_per_npu;
  return c;
}

std::vector<topo::NodeId> stride(int first, int count, int step) {
  std::vector<topo::NodeId> r;
  for (int i = 0; i < count; ++i) r.push_back(first + i * step);
  return r;
}

// The renamed algorithm is correct over its new ranks, and its schedule is the original's.
void expect_runs_as_made(const topo::Topology& t, const Algorithm& made, const Algorithm& renamed,
                         const std::vector<topo::NodeId>& ranks, const std::string& what) {
  EXPECT_EQ(renamed.collective.ranks, ranks) << what;
  const Report r = verify(t, renamed);
  ASSERT_TRUE(r.correct()) << what << ": " << testing::violation_text(r);
  EXPECT_EQ(r.collective_time, made.claimed_time) << what;
  EXPECT_EQ(r.model_time, made.claimed_time) << what;
}

// Every tensor-parallel group of a rail cluster (a server's GPUs) and every data-parallel group
// (one GPU per server, on one rail) is one shape: the first group's synthesized algorithm runs on
// every other, in the same time. The data-parallel one borrows server mates
// (synth/groups/team_relay.hpp), so relays and NICs off the group are renamed too.
TEST(GroupMap, RailClusterGroupsAreOneShape) {
  const auto t = topo::generate("nvcluster:4x8,net=rail");
  for (CollectiveKind kind : {CollectiveKind::AllGather, CollectiveKind::AllReduce}) {
    const Algorithm tp = synthesize(t, group(kind, stride(0, 8, 1), 2), 1 << 20);
    for (int server = 1; server < 4; ++server) {
      const auto ranks = stride(8 * server, 8, 1);
      const auto renamed = map_to_group(t, tp, ranks);
      ASSERT_TRUE(renamed) << to_string(kind) << " server " << server;
      expect_runs_as_made(t, tp, *renamed, ranks,
                          fmt::format("{} TP server {}", to_string(kind), server));
    }
    const Algorithm dp = synthesize(t, group(kind, stride(0, 4, 8), 8), 1 << 20);
    EXPECT_EQ(dp.provenance.producer, Producer::TeamRelay) << dp.method;
    for (int rail = 1; rail < 8; ++rail) {
      const auto ranks = stride(rail, 4, 8);
      const auto renamed = map_to_group(t, dp, ranks);
      ASSERT_TRUE(renamed) << to_string(kind) << " rail " << rail;
      expect_runs_as_made(t, dp, *renamed, ranks,
                          fmt::format("{} DP rail {}", to_string(kind), rail));
    }
  }
}

// Members may be renamed in any order: a group listed backwards, or rotated along a ring.
TEST(GroupMap, RanksInAnotherOrder) {
  const auto t = topo::generate("ring:8");
  const Algorithm a = synthesize(t, group(CollectiveKind::AllGather, {0, 1, 2}, 1), 1 << 20);
  const std::vector<topo::NodeId> shifted{5, 6, 7}, backwards{6, 5, 4};
  for (const auto& ranks : {shifted, backwards}) {
    const auto renamed = map_to_group(t, a, ranks);
    ASSERT_TRUE(renamed);
    expect_runs_as_made(t, a, *renamed, ranks, fmt::format("ranks {}", fmt::join(ranks, ",")));
  }
}

// No renaming: another group size, members that are not NPUs, a group whose links are slower, and
// a group whose members sit further apart.
TEST(GroupMap, NoRenamingWhereTheShapeDiffers) {
  topo::TopologyBuilder b("two servers");
  const topo::NodeId spine = b.add_switch("spine");
  for (int s = 0; s < 2; ++s) {
    const topo::NodeId nvswitch = b.add_switch(fmt::format("nvs{}", s));
    for (int g = 0; g < 4; ++g) {
      const topo::NodeId npu = b.add_npu(fmt::format("s{}g{}", s, g));
      b.add_bidirectional(npu, nvswitch, s == 0 ? 100e9 : 50e9, 1000);  // server 1 is slower
      b.add_bidirectional(npu, spine, 10e9, 2000);
    }
  }
  const topo::Topology t = b.build();
  const Algorithm a = synthesize(t, group(CollectiveKind::AllReduce, {0, 1, 2, 3}, 1), 1 << 20);
  EXPECT_FALSE(map_to_group(t, a, std::vector<topo::NodeId>{4, 5, 6, 7}));  // slower NVSwitch links
  EXPECT_FALSE(map_to_group(t, a, std::vector<topo::NodeId>{4, 5, 6}));     // another size
  EXPECT_FALSE(map_to_group(t, a, std::vector<topo::NodeId>{0, 1, 2, 8}));  // 8 is a switch
  EXPECT_TRUE(map_to_group(t, a, std::vector<topo::NodeId>{3, 2, 1, 0}));

  const auto ring = topo::generate("ring:8");
  const Algorithm near = synthesize(ring, group(CollectiveKind::AllGather, {0, 1, 2}, 1), 1 << 20);
  EXPECT_FALSE(map_to_group(ring, near, std::vector<topo::NodeId>{0, 2, 4}));
}

// Random topologies and groups: whenever a renaming is returned, the renamed algorithm is correct
// and takes its original's time; a group renamed to itself always is; and on tori, which look the
// same from every NPU, shifted groups are found.
TEST(GroupMap, RandomGroupsRenameCorrectlyOrNotAtAll) {
  std::mt19937_64 rng(20261126);
  int renamed_count = 0;
  for (int trial = 0; trial < 120; ++trial) {
    const topo::Topology t = testing::random_topology(rng, 8);
    const Collective c = testing::random_collective(rng, t, 2);
    const Algorithm a =
        trial % 2 ? synthesize(t, c, 1 << 16) : testing::tree_algorithm(t, c, 1 << 16);
    const std::string what = fmt::format("trial {}: {} on {}", trial, c.describe(), t.name());
    const auto self = map_to_group(t, a, c.ranks);
    ASSERT_TRUE(self) << what;
    expect_runs_as_made(t, a, *self, c.ranks, what + " (itself)");
    std::vector<topo::NodeId> npus(static_cast<size_t>(t.num_npus()));
    std::iota(npus.begin(), npus.end(), 0);
    std::shuffle(npus.begin(), npus.end(), rng);
    npus.resize(c.ranks.size());
    if (const auto other = map_to_group(t, a, npus)) {
      expect_runs_as_made(t, a, *other, npus, what + fmt::format(" to {}", fmt::join(npus, ",")));
      ++renamed_count;
    }
  }
  EXPECT_GT(renamed_count, 0);
  const auto torus = topo::generate("torus2d:4x4");
  for (CollectiveKind kind :
       {CollectiveKind::AllGather, CollectiveKind::ReduceScatter, CollectiveKind::AllReduce}) {
    const Algorithm a = synthesize(torus, group(kind, {0, 1, 4, 5}, 2), 1 << 20);
    for (int dx : {1, 2, 3})
      for (int dy : {0, 2}) {
        std::vector<topo::NodeId> ranks;
        for (topo::NodeId v : a.collective.ranks)
          ranks.push_back((v / 4 + dy) % 4 * 4 + (v % 4 + dx) % 4);
        const auto renamed = map_to_group(torus, a, ranks);
        const std::string what = fmt::format("{} shifted by {},{}", to_string(kind), dx, dy);
        ASSERT_TRUE(renamed) << what;
        expect_runs_as_made(torus, a, *renamed, ranks, what);
      }
  }
}

// A server's group in a 32-server cluster works in its part: its 8 GPUs, its NVSwitch and the 8
// rail switches its NICs plug into. The result is verified on the whole cluster and uses no other
// NPU.
TEST(GroupPart, AServersGroupWorksInItsServer) {
  const auto t = topo::generate("nvcluster:32x8,net=rail");
  const Collective c = group(CollectiveKind::AllReduce, stride(40, 8, 1), 4);
  const auto part = group_part(t, c);
  ASSERT_TRUE(part);
  EXPECT_EQ(part->topology.num_npus(), 8);
  EXPECT_EQ(part->topology.num_switches(), 1 + 8);
  EXPECT_EQ(part->collective.ranks, stride(0, 8, 1));
  for (size_t v = 0; v < part->nodes.size(); ++v) {
    EXPECT_EQ(part->topology.node(static_cast<topo::NodeId>(v)).name, t.node(part->nodes[v]).name);
    EXPECT_EQ(t.is_npu(part->nodes[v]), part->topology.is_npu(static_cast<topo::NodeId>(v)));
  }
  for (size_t l = 0; l < part->links.size(); ++l) {
    const topo::Link &mine = part->topology.link(static_cast<topo::LinkId>(l)),
                     &whole = t.link(part->links[l]);
    EXPECT_EQ(part->nodes[mine.src], whole.src);
    EXPECT_EQ(part->nodes[mine.dst], whole.dst);
    EXPECT_EQ(mine.bandwidth, whole.bandwidth);
  }
  const Algorithm a = synthesize(t, c, 1 << 20);
  EXPECT_TRUE(a.provenance.in_group_part) << a.method;
  const Report r = verify(t, a);
  ASSERT_TRUE(r.correct()) << testing::violation_text(r);
  EXPECT_EQ(r.collective_time, a.claimed_time);
  const Algorithm alone = synthesize(part->topology, part->collective, 1 << 20);
  EXPECT_EQ(a.claimed_time, alone.claimed_time);
  for (const Transfer& x : a.transfers()) {
    EXPECT_TRUE(x.src >= 40 && x.src < 48) << x.src;
    EXPECT_TRUE(x.dst >= 40 && x.dst < 48) << x.dst;
  }
}

// No part: every NPU in the group, a cluster too small for the part to pay, members that reach
// each other only through other NPUs (GPUs on different rails of different servers), members
// linked to other NPUs (a 2x2 block of a torus, whose other NPUs are its fabric).
TEST(GroupPart, NoPartWhereItDoesNotApply) {
  const auto big = topo::generate("nvcluster:32x8,net=rail");
  EXPECT_FALSE(group_part(big, Collective::over_all(big, CollectiveKind::AllGather, 1)));
  EXPECT_FALSE(group_part(big, group(CollectiveKind::AllGather, {0, 9}, 1)));     // rails 0 and 1
  EXPECT_TRUE(group_part(big, group(CollectiveKind::AllGather, {0, 8, 16}, 1)));  // rail 0
  const auto small = topo::generate("nvcluster:4x8,net=rail");
  EXPECT_FALSE(group_part(small, group(CollectiveKind::AllGather, stride(0, 8, 1), 1)));
  const auto torus = topo::generate("torus2d:16x16");
  EXPECT_FALSE(group_part(torus, group(CollectiveKind::AllGather, {0, 1, 16, 17}, 1)));
}

// Random groups in large clusters (rails and a fat-tree): whatever the synthesizer makes is
// correct on the whole cluster, and where the group has a part, no NPU outside it takes part.
TEST(GroupPart, RandomGroupsAreCorrectAndStayInTheirPart) {
  std::mt19937_64 rng(17);
  int parts = 0;
  for (const char* spec : {"nvcluster:32x8,net=rail", "nvcluster:32x8,net=fattree"}) {
    const auto t = topo::generate(spec);
    for (int trial = 0; trial < 8; ++trial) {
      const int server = static_cast<int>(rng() % 32), size = 2 + static_cast<int>(rng() % 7);
      std::vector<topo::NodeId> ranks;
      if (trial % 2 == 0) {  // inside one server
        for (int g = 0; g < 8; ++g) ranks.push_back(8 * server + g);
        std::shuffle(ranks.begin(), ranks.end(), rng);
      } else {  // one rail, across servers
        const int rail = static_cast<int>(rng() % 8);
        for (int s = 0; s < 32; ++s) ranks.push_back(8 * s + rail);
        std::shuffle(ranks.begin(), ranks.end(), rng);
      }
      ranks.resize(static_cast<size_t>(size));
      const CollectiveKind kinds[] = {CollectiveKind::AllGather, CollectiveKind::ReduceScatter,
                                      CollectiveKind::AllReduce, CollectiveKind::Broadcast};
      Collective c = group(kinds[trial % 4], ranks, 1 + trial % 2);
      c.root = static_cast<int>(rng() % ranks.size());
      const std::string what =
          fmt::format("{} over {} on {}", c.describe(), fmt::join(ranks, ","), spec);
      const Algorithm a = synthesize(t, c, 1 << 18);
      const Report r = verify(t, a);
      ASSERT_TRUE(r.correct()) << what << ": " << testing::violation_text(r);
      if (!group_part(t, c)) continue;
      ++parts;
      for (const Transfer& x : a.transfers())
        for (topo::NodeId v : {x.src, x.dst})
          EXPECT_NE(std::find(ranks.begin(), ranks.end(), v), ranks.end()) << what << ": NPU " << v;
    }
  }
  EXPECT_GE(parts, 8);
}

}  // namespace
}  // namespace tenet::synth
