// Blink's All-Reduce (blink): spanning trees packed over the links between the ranks, each tree
// reducing its share of the chunks to its root and broadcasting it back.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "synth/baselines/baselines.hpp"
#include "synth/bounds/lower_bound.hpp"
#include "synth/verify/verify.hpp"
#include "tests/synth/test_support.hpp"
#include "topo/generators.hpp"

namespace tenet::synth {
namespace {

using ::testing::HasSubstr;

constexpr BaselineSpec kBlink{BaselineKind::Blink, {}};

Algorithm blink(const topo::Topology& t, int k, Bytes total) {
  const Collective c = Collective::over_all(t, CollectiveKind::AllReduce, k);
  return make_baseline(kBlink, t, c, c.chunk_bytes_for(total));
}

// Every chunk is reduced up a spanning tree (P - 1 reductions) and broadcast back down it (P - 1
// copies), each over a link between two NPUs; each tree has a channel of its own.
TEST(Blink, EachChunkGoesUpAndDownOneSpanningTree) {
  const auto t = topo::generate("mesh2d:4x4");
  const Algorithm a = blink(t, 2, Bytes{1} << 24);
  const Report r = verify(t, a, {.max_reported = 3});
  ASSERT_TRUE(r.correct()) << testing::violation_text(r);
  const int p = t.num_npus();
  const int64_t chunks = a.collective.num_chunks();
  EXPECT_EQ(static_cast<int64_t>(a.size()), 2 * (p - 1) * chunks);
  std::map<ChunkId, int> reductions, copies;
  std::map<ChunkId, std::set<uint16_t>> channels;
  for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id) {
    const Transfer& x = a[id];
    ASSERT_EQ(a.route(id).size(), 1u);  // NPU to NPU
    ++(x.op == Op::Reduce ? reductions : copies)[x.chunk];
    channels[x.chunk].insert(x.channel);
  }
  std::set<uint16_t> trees;
  for (ChunkId ch = 0; ch < chunks; ++ch) {
    EXPECT_EQ(reductions[ch], p - 1) << ch;
    EXPECT_EQ(copies[ch], p - 1) << ch;
    ASSERT_EQ(channels[ch].size(), 1u) << ch;  // one tree, one channel
    trees.insert(*channels[ch].begin());
  }
  EXPECT_GT(trees.size(), 1u);  // a mesh packs more than one tree
}

// Where NPUs link to each other, the trees reduce below what any Reduce-Scatter + All-Gather needs
// (the mesh's corners receive 2 (P - 1) / P of the data over two links; a tree's leaves receive it
// once): on a 6x6 mesh about 0.76 of it at 16 chunks per NPU, and never below the bound.
TEST(Blink, BeatsEveryReduceScatterAllGatherOnAMesh) {
  const auto t = topo::generate("mesh2d:6x6");
  const Algorithm a = blink(t, 16, Bytes{256} << 20);
  const Report r = verify(t, a, {.max_reported = 3});
  ASSERT_TRUE(r.correct()) << testing::violation_text(r);
  const LowerBound bound = lower_bound(t, a.collective, a.chunk_bytes);
  ASSERT_GT(bound.steering, 0);
  EXPECT_LT(static_cast<double>(a.claimed_time), 0.8 * static_cast<double>(bound.steering));
  EXPECT_GE(a.claimed_time, bound.total);
}

// Over links both ways only, from NPU to NPU or through switches: links one way round leave no
// tree edges, and it says so. Through a switch every pair is an edge (a star of trees), verified.
TEST(Blink, SaysWhyWhereRanksAreNotJoinedBothWays) {
  const auto one_way = topo::generate("ring:5,bidir=false");
  const Made<Algorithm> a = try_baseline(
      kBlink, one_way, Collective::over_all(one_way, CollectiveKind::AllReduce, 1), 1 << 20);
  const NotMade* why = std::get_if<NotMade>(&a);
  ASSERT_NE(why, nullptr);
  EXPECT_THAT(why->why, HasSubstr("do not reach every rank"));
  for (const char* spec : {"switch:8", "leafspine:2x4"}) {
    const auto t = topo::generate(spec);
    const Algorithm s = blink(t, 2, Bytes{1} << 22);
    const Report r = verify(t, s, {.max_reported = 3});
    EXPECT_TRUE(r.correct()) << spec << testing::violation_text(r);
  }
  // Only All-Reduce.
  const auto mesh = topo::generate("mesh2d:3x3");
  const Made<Algorithm> ag =
      try_baseline(kBlink, mesh, Collective::over_all(mesh, CollectiveKind::AllGather, 1), 1024);
  EXPECT_TRUE(std::holds_alternative<NotMade>(ag));
}

// A group of ranks: the trees span the group over the links among its members (a path of a ring),
// and do not apply where those links leave a member out.
TEST(Blink, SpansAGroupOverItsOwnLinks) {
  const auto t = topo::generate("ring:8");
  Collective c = Collective::over_all(t, CollectiveKind::AllReduce, 3);
  c.ranks = {2, 3, 4, 5};
  const Algorithm a = make_baseline(kBlink, t, c, 4096);
  const Report r = verify(t, a, {.max_reported = 3});
  EXPECT_TRUE(r.correct()) << testing::violation_text(r);
  c.ranks = {0, 2, 4, 6};
  EXPECT_TRUE(std::holds_alternative<NotMade>(try_baseline(kBlink, t, c, 4096)));
}

// Uneven links (a heterogeneous mesh, NVLink pairs of two links, random fabrics) at chunk counts
// that do not divide among the trees: verified every time, never below the bound.
TEST(Blink, VerifiedOnUnevenLinksAndOddChunkCounts) {
  std::mt19937_64 rng(7);
  int built = 0;
  for (const char* spec : {"hetmesh2d:4x4", "dgx1", "torus2d:3x5", "hypercube:8", "fc:5"})
    for (int k : {1, 3, 7}) {
      const auto t = topo::generate(spec);
      const Algorithm a = blink(t, k, 1 + static_cast<Bytes>(rng() % (Bytes{64} << 20)));
      const Report r = verify(t, a, {.max_reported = 3});
      EXPECT_TRUE(r.correct()) << spec << " k=" << k << testing::violation_text(r);
      EXPECT_GE(a.claimed_time, lower_bound(t, a.collective, a.chunk_bytes).total) << spec;
      ++built;
    }
  EXPECT_EQ(built, 15);
}

// Blink's load floor is each way's bytes over its links: on a line every chunk crosses each link
// once up and once down, so each link carries the whole buffer, S / B (a floor that put both ways
// of a pair on one link's bandwidth would be twice that); nothing for another collective.
TEST(Blink, LoadFloorIsEveryChunksBytesOverEachLinkItCrosses) {
  for (const char* spec : {"line:2", "line:3", "line:5"}) {
    const auto t = topo::generate(spec);
    for (int k : {1, 3}) {
      const Collective c = Collective::over_all(t, CollectiveKind::AllReduce, k);
      const Bytes chunk = 4096;
      const std::optional<Time> floor = blink_load_floor(t, c, chunk);
      ASSERT_TRUE(floor) << spec;
      const double seconds =
          static_cast<double>(chunk * c.num_chunks()) / static_cast<double>(t.link(0).bandwidth);
      EXPECT_EQ(*floor, static_cast<Time>(seconds * static_cast<double>(kPicosPerSecond)))
          << spec << " k=" << k;
      EXPECT_LE(*floor, blink(t, k, chunk * c.num_chunks()).claimed_time) << spec;
    }
    EXPECT_FALSE(blink_load_floor(t, Collective::over_all(t, CollectiveKind::AllGather, 1), 4096));
  }
}

}  // namespace
}  // namespace tenet::synth
