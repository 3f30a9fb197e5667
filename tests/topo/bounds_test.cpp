#include "topo/bounds.hpp"

#include <gtest/gtest.h>

#include <random>

#include "tests/topo/test_util.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"

namespace tenet::topo {
namespace {

constexpr Bytes kM = 1LL << 30;  // All-Gather output per NPU
constexpr Bandwidth kB = 50'000'000'000;

// ceil(M * a * 1e12 / (n * b)), the hand formula.
Time expect_time(Bytes m, int64_t a, int64_t n, Bandwidth b) {
  Int128 num = static_cast<Int128>(m) * a * kPicosPerSecond;
  Int128 den = static_cast<Int128>(n) * b;
  return static_cast<Time>((num + den - 1) / den);
}

TEST(CutBound, UnidirectionalRing) {
  const Topology t = generate("ring:8,bidir=false,bw=50GB/s");
  // S = all but one NPU: 7 members drain through one link.
  EXPECT_EQ(allgather_cut_bound(t).time(kM), expect_time(kM, 7, 8, kB));
  EXPECT_EQ(allgather_ingress_bound(t).time(kM), expect_time(kM, 7, 8, kB));
}

TEST(CutBound, BidirectionalRing) {
  const Topology t = generate("ring:8,bw=50GB/s");
  EXPECT_EQ(allgather_cut_bound(t).time(kM), expect_time(kM, 7, 8, 2 * kB));
}

TEST(CutBound, FullyConnected) {
  const Topology t = generate("fc:8,bw=50GB/s");
  // Best set: all but one NPU, draining through that NPU's 7 incoming links: M / (N b).
  EXPECT_EQ(allgather_cut_bound(t).time(kM), expect_time(kM, 7, 8, 7 * kB));
  EXPECT_EQ(allgather_cut_bound(t).time(kM), expect_time(kM, 1, 8, kB));
}

TEST(CutBound, Star) {
  const Topology t = generate("switch:8,bw=50GB/s");
  const CutBound c = allgather_cut_bound(t);
  EXPECT_EQ(c.time(kM), expect_time(kM, 7, 8, kB));
  EXPECT_EQ(c.time(kM), allgather_ingress_bound(t).time(kM));
}

TEST(CutBound, TwoIslandsFarAboveIngress) {
  // Islands of 4 fully connected at 100 GB/s, one 25 GB/s bridge. The island drains through the
  // bridge: (M/8) * 4 / 25 GB/s. The ingress bound sees only (7/8) M / 300 GB/s.
  const Topology t = load(testing::examples_dir() + "/two-islands.yaml");
  const CutBound cut = allgather_cut_bound(t), ingress = allgather_ingress_bound(t);
  EXPECT_EQ(cut.time(kM), expect_time(kM, 4, 8, 25'000'000'000));
  EXPECT_EQ(ingress.time(kM), expect_time(kM, 7, 8, 300'000'000'000));
  EXPECT_GT(static_cast<double>(cut.time(kM)) / ingress.time(kM), 6.8);
  EXPECT_EQ(cut.members_inside, 4);
  EXPECT_EQ(cut.set.size(), 4u);
}

TEST(CutBound, SwitchesCountAsNodes) {
  // Hierarchy: rings of 8 at 300 GB/s joined per position by switches at 50 GB/s. A whole ring
  // cut off receives through 8 switch links: (M/32) * 24 / 400 GB/s.
  const Topology t = generate("ring:8,bw=300GB/s x switch:4,bw=50GB/s");
  EXPECT_EQ(allgather_cut_bound(t).time(kM), expect_time(kM, 24, 32, 8 * kB));
}

TEST(CutBound, Communicator) {
  // Members 0 and 4 of a unidirectional ring of 8: each must pass 1 chunk through one link.
  const Topology t = generate("ring:8,bidir=false");
  std::vector<NodeId> members{0, 4};
  EXPECT_EQ(allgather_cut_bound(t, members).time(kM), expect_time(kM, 1, 2, kB));
  EXPECT_THROW(allgather_cut_bound(t, std::vector<NodeId>{3}), Error);
  EXPECT_THROW(allgather_cut_bound(t, std::vector<NodeId>{3, 3}), Error);
}

// Broadcast: the cut around the root, not just the root's egress or a member's ingress.
TEST(BroadcastCutBound, TwoIslands) {
  // Two fully connected islands of 4 joined by one 10 GB/s link each way: everything the far
  // island gets crosses it.
  TopologyBuilder b;
  for (int i = 0; i < 8; ++i) b.add_npu();
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j)
      if (i != j && i / 4 == j / 4) b.add_link(i, j, kB, 0);
  b.add_link(3, 4, 10'000'000'000, 0);
  b.add_link(4, 3, 10'000'000'000, 0);
  const Topology t = b.build();
  const CutBound c = broadcast_cut_bound(t, 0);
  EXPECT_EQ(c.out_bandwidth, 10'000'000'000);
  EXPECT_EQ(c.time(kM), expect_time(kM, 1, 1, 10'000'000'000));
  // A communicator inside the first island only needs the island's links: 3 ways out of the root.
  const std::vector<NodeId> island{0, 1, 2, 3};
  EXPECT_EQ(broadcast_cut_bound(t, 0, island).out_bandwidth, 3 * kB);
  EXPECT_THROW(broadcast_cut_bound(t, 5, island), Error);
}

// Exhaustive check: on small random digraphs (NPUs, switches, random bandwidths, asymmetric), the
// parametric min-cut finds the same maximum ratio as enumerating every node set, and the Broadcast
// bound the same least cut around the root.
TEST(CutBound, EqualsBruteForceOnRandomTopologies) {
  std::mt19937_64 rng(20261122);
  int checked = 0;
  for (int seed = 0; seed < 300; ++seed) {
    const int npus = 2 + static_cast<int>(rng() % 5), switches = static_cast<int>(rng() % 3);
    TopologyBuilder b;
    for (int i = 0; i < npus; ++i) b.add_npu();
    std::vector<NodeId> nodes;
    for (int i = 0; i < npus; ++i) nodes.push_back(i);
    for (int j = 0; j < switches; ++j) nodes.push_back(b.add_switch());
    // A random cycle through every node keeps everything reachable; then random extra links.
    std::vector<NodeId> order = nodes;
    std::shuffle(order.begin(), order.end(), rng);
    auto bw = [&] { return Bandwidth{1'000'000'000} * static_cast<Bandwidth>(1 + rng() % 100); };
    for (size_t i = 0; i < order.size(); ++i)
      b.add_link(order[i], order[(i + 1) % order.size()], bw(), 0);
    const int extra = static_cast<int>(rng() % (2 * nodes.size()));
    for (int k = 0; k < extra; ++k) {
      NodeId x = nodes[rng() % nodes.size()], y = nodes[rng() % nodes.size()];
      if (x != y) b.add_link(x, y, bw(), 0);
    }
    const Topology t = b.build();
    // Brute force over every set S of nodes holding some but not all NPUs.
    const int n = t.num_nodes();
    int best_a = 0;
    Bandwidth best_b = 1;
    for (uint32_t mask = 1; mask < (1u << n); ++mask) {
      int a = 0;
      for (int v = 0; v < npus; ++v) a += (mask >> v) & 1;
      if (a == 0 || a == npus) continue;
      Bandwidth out = 0;
      for (const Link& l : t.links())
        if (((mask >> l.src) & 1) && !((mask >> l.dst) & 1)) out += l.bandwidth;
      if (static_cast<Int128>(a) * best_b > static_cast<Int128>(best_a) * out) {
        best_a = a;
        best_b = out;
      }
    }
    // Broadcast from a random root: the least out-bandwidth of a set holding the root but not
    // every NPU.
    const NodeId root = static_cast<NodeId>(rng() % npus);
    Bandwidth least = 0;
    for (uint32_t mask = 1; mask < (1u << n); ++mask) {
      int a = 0;
      for (int v = 0; v < npus; ++v) a += (mask >> v) & 1;
      if (!((mask >> root) & 1) || a == npus) continue;
      Bandwidth out = 0;
      for (const Link& l : t.links())
        if (((mask >> l.src) & 1) && !((mask >> l.dst) & 1)) out += l.bandwidth;
      if (least == 0 || out < least) least = out;
    }
    ASSERT_EQ(broadcast_cut_bound(t, root).out_bandwidth, least)
        << "seed " << seed << ", root " << root;
    const CutBound c = allgather_cut_bound(t);
    ASSERT_EQ(c.search, CutSearch::Exact);
    ASSERT_EQ(static_cast<Int128>(c.members_inside) * best_b,
              static_cast<Int128>(best_a) * c.out_bandwidth)
        << "seed " << seed << ": got " << c.members_inside << "/" << c.out_bandwidth
        << ", brute force " << best_a << "/" << best_b;
    // Past the work budget the islands' bound is still a bound: one of the sets, never above
    // the largest, never below the ingress bound.
    const CutBound islands = allgather_cut_bound(t, {}, 0);
    ASSERT_EQ(islands.search, CutSearch::Islands);
    ASSERT_LE(static_cast<Int128>(islands.members_inside) * best_b,
              static_cast<Int128>(best_a) * islands.out_bandwidth)
        << "seed " << seed;
    ASSERT_GE(islands.time(kM), allgather_ingress_bound(t).time(kM)) << "seed " << seed;
    std::vector<char> in(static_cast<size_t>(n), 0);
    for (NodeId v : islands.set) in[v] = 1;
    Bandwidth out = 0;
    int inside = 0;
    for (NodeId v = 0; v < npus; ++v) inside += in[v];
    for (const Link& l : t.links())
      if (in[l.src] && !in[l.dst]) out += l.bandwidth;
    ASSERT_EQ(islands.members_inside, inside) << "seed " << seed;
    ASSERT_EQ(islands.out_bandwidth, out) << "seed " << seed;
    ++checked;
  }
  EXPECT_EQ(checked, 300);
}

// Past the work budget, the islands of wide links find the cut the exact search finds on clusters
// of servers (the NICs of one server, or of one island), in time linear in the links.
TEST(CutBound, IslandsFindTheServerCut) {
  for (const char* spec : {"nvcluster:4x8,net=fattree", "nvcluster:8x8,net=rail",
                           "leafspine:4x4,spines=2", "torus2d:4x4", "switch:16"}) {
    const Topology t = generate(spec);
    const CutBound exact = allgather_cut_bound(t), islands = allgather_cut_bound(t, {}, 0);
    EXPECT_EQ(exact.search, CutSearch::Exact) << spec;
    EXPECT_EQ(islands.search, CutSearch::Islands) << spec;
    EXPECT_EQ(islands.time(kM), exact.time(kM)) << spec;
  }
  const Topology two = load(testing::examples_dir() + "/two-islands.yaml");
  EXPECT_EQ(allgather_cut_bound(two, {}, 0).time(kM), allgather_cut_bound(two).time(kM));
}

}  // namespace
}  // namespace tenet::topo
