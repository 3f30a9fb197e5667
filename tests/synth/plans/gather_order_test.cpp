// An All-Reduce's All-Gather sending each owner's chunks in the order its Reduce-Scatter reduces
// them there (synth/plans/gather_order.hpp). Measured when made, `tenet synth -t
// examples/topologies/cluster16.yaml -c all-reduce -s 64MiB`: the server plan's halves, mirrored,
// took 2 x 202.5 us = 405 us joined (no chunk's All-Gather left before the last reduction into its
// owner), 394.4 us renamed.
#include "synth/plans/gather_order.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <array>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "synth/plans/planned.hpp"
#include "synth/synthesizer.hpp"
#include "synth/verify/verify.hpp"
#include "tests/synth/test_support.hpp"
#include "topo/generators.hpp"

namespace tenet::synth {
namespace {

constexpr Bytes kMiB = Bytes{1} << 20;

// On topologies that are their own reverse, where all_reduce_halves mirrors the Reduce-Scatter's
// schedule into the All-Gather: each owner sends first the chunk reduced into it first, and so on;
// the All-Gather is still a correct one, and the All-Reduce joined from the halves verifies.
TEST(GatherOrder, EachOwnerSendsFirstWhatItReducesFirst) {
  for (const std::string spec : {"cluster16.yaml", "nvcluster:2x8", "leafspine:2x4"}) {
    const topo::Topology t = spec.ends_with(".yaml") ? testing::example_with_steps(spec)
                                                     : testing::charging(topo::generate(spec));
    ASSERT_TRUE(topo::twin_links(t)) << spec;  // (its own reverse: the halves are mirrored)
    SynthOptions o;
    o.method = SynthMethod::ServerPlan;
    Collective rs = Collective::over_all(t, CollectiveKind::ReduceScatter, 8);
    Collective ag = rs;
    ag.kind = CollectiveKind::AllGather;
    const Bytes chunk = ag.chunk_bytes_for(64 * kMiB);
    const auto [reduced, gathered] =
        detail::all_reduce_halves(t, rs, ag, chunk, o, SynthMethod::ServerPlan);
    ASSERT_TRUE(reduced && gathered) << spec;
    EXPECT_TRUE(testing::each_owner_sends_as_reduced(*reduced, *gathered)) << spec;
    Algorithm alone = *gathered;
    const Report r = verify(t, alone, {.max_reported = 3});
    EXPECT_TRUE(r.correct()) << spec << ": " << testing::violation_text(r);
    const Collective all = Collective::over_all(t, CollectiveKind::AllReduce, 8);
    const Algorithm joined = synthesize(t, all, chunk, o);
    const Report j = verify(t, joined, {.max_reported = 3});
    EXPECT_TRUE(j.correct()) << spec << ": " << testing::violation_text(j);
  }
}

// Over seeded fabrics that are their own reverse (meshes, tori, leaf-spines, servers on rails, of
// random shapes) and random chunk counts, the plain matcher's and the server plan's halves: each
// owner sends first what it reduced first, and the All-Reduce joined from them verifies.
TEST(GatherOrder, MirroredHalvesOnRandomShapesStayCorrect) {
  std::mt19937_64 rng(71);
  int checked = 0;
  auto pick = [&](int lo, int hi) { return lo + static_cast<int>(rng() % (hi - lo + 1)); };
  for (int i = 0; i < 20; ++i) {
    // (Drawn one at a time: the order a call's arguments are evaluated in is the compiler's.)
    const int a = pick(2, 3), b = pick(2, 4);
    const std::string spec = std::array<std::string, 4>{
        fmt::format("mesh2d:{}x{}", a + 1, b), fmt::format("torus2d:{}x{}", a + 1, b + 1),
        fmt::format("leafspine:{}x{}", a, b), fmt::format("nvcluster:{}x{}", a, b)}[i % 4];
    const topo::Topology t = testing::charging(topo::generate(spec));
    ASSERT_TRUE(topo::twin_links(t)) << spec;
    const int k = pick(2, 6);
    for (const SynthMethod m : {SynthMethod::Matcher, SynthMethod::ServerPlan}) {
      SynthOptions o;
      o.method = m;
      Collective rs = Collective::over_all(t, CollectiveKind::ReduceScatter, k);
      Collective ag = rs;
      ag.kind = CollectiveKind::AllGather;
      const Bytes chunk = ag.chunk_bytes_for(8 * kMiB);
      const auto [reduced, gathered] = detail::all_reduce_halves(t, rs, ag, chunk, o, m);
      if (!reduced || !gathered) continue;  // (no server plan there)
      // (Left as it was where a message's chunks would not stay consecutive: nothing to check.)
      if (Algorithm again = *gathered; !detail::gather_as_reduced(*reduced, again)) continue;
      ++checked;
      EXPECT_TRUE(testing::each_owner_sends_as_reduced(*reduced, *gathered)) << spec << " k " << k;
      const Algorithm joined =
          synthesize(t, Collective::over_all(t, CollectiveKind::AllReduce, k), chunk, o);
      const Report r = verify(t, joined, {.max_reported = 3});
      EXPECT_TRUE(r.correct()) << spec << " k " << k << ": " << testing::violation_text(r);
    }
  }
  EXPECT_GE(checked, 30);
}

// On the 16-GPU cluster a user wrote, the halves now overlap: the All-Reduce ends before twice its
// All-Gather's time (before: exactly twice, each chunk's All-Gather waiting for the reduction into
// its owner that ended last).
TEST(GatherOrder, TheHalvesOverlapOnTheUsersCluster) {
  const topo::Topology t = testing::example_with_steps("cluster16.yaml");
  SynthOptions o;
  o.method = SynthMethod::ServerPlan;
  const Collective ag = Collective::over_all(t, CollectiveKind::AllGather, 8);
  const Collective ar = Collective::over_all(t, CollectiveKind::AllReduce, 8);
  const Bytes chunk = ar.chunk_bytes_for(64 * kMiB);
  const Algorithm gathered = synthesize(t, ag, chunk, o);
  const Algorithm reduced = synthesize(t, ar, chunk, o);
  EXPECT_LT(static_cast<double>(reduced.claimed_time),
            0.99 * 2 * static_cast<double>(gathered.claimed_time));
}

// The renaming keeps a message's chunks consecutive, or leaves the All-Gather as it is: owner 0's
// chunks 0 and 1 leave as one message; where the Reduce-Scatter reduces 1 first, then 2, then 0,
// they become 1 and 2 (the message carries 1..2), and chunk 2 becomes 0; where it reduces 0, 2, 1,
// the message would carry 0 and 2, and nothing is renamed.
TEST(GatherOrder, MessagesKeepTheirChunksConsecutiveOrNothingIsRenamed) {
  const topo::Topology t = topo::generate("line:2");
  const LinkId right = testing::link_between(t, 0, 1), left = testing::link_between(t, 1, 0);
  Collective ag = Collective::over_all(t, CollectiveKind::AllGather, 3);
  Collective rs = ag;
  rs.kind = CollectiveKind::ReduceScatter;
  auto gathered = [&] {
    Algorithm a = empty_algorithm("test", t, ag, 1024, LinkModel::Pipelined);
    a.add(0, 0, 1, std::vector<LinkId>{right}, Op::Copy, {}, -1, -1, 0, 0, false, 2);
    a.add(2, 0, 1, std::vector<LinkId>{right});
    a.add(3, 1, 0, std::vector<LinkId>{left}, Op::Copy, {}, -1, -1, 0, 0, false, 3);
    return a;
  };
  auto reduced = [&](std::vector<ChunkId> order) {
    Algorithm a = empty_algorithm("test", t, rs, 1024, LinkModel::Pipelined);
    for (ChunkId ch : order) a.add(ch, 1, 0, std::vector<LinkId>{left}, Op::Reduce);
    a.add(3, 0, 1, std::vector<LinkId>{right}, Op::Reduce, {}, -1, -1, 0, 0, false, 3);
    return a;
  };
  Algorithm a = gathered();
  EXPECT_TRUE(detail::gather_as_reduced(reduced({1, 2, 0}), a));
  EXPECT_EQ(a[0].chunk, 1);
  EXPECT_EQ(a[0].count, 2);
  EXPECT_EQ(a[1].chunk, 0);
  EXPECT_EQ(a[2].chunk, 3);
  EXPECT_TRUE(verify(t, a).correct());
  Algorithm b = gathered();
  EXPECT_FALSE(detail::gather_as_reduced(reduced({0, 2, 1}), b));
  EXPECT_EQ(b[0].chunk, 0);
  EXPECT_EQ(b[1].chunk, 2);
}

// A group of ranks (rank r on NPU ranks[r]): each owner is found through its NPU. Over NPUs 1 and
// 2 of line:3, NPU 1 reduces its chunk 1 before its chunk 0, so it sends 1 first; NPU 2 reduces 2
// before 3, as it sends them. With one chunk per NPU there is nothing to rename.
TEST(GatherOrder, AGroupsOwnersAreTheirNpus) {
  const topo::Topology t = topo::generate("line:3");
  const LinkId right = testing::link_between(t, 1, 2), left = testing::link_between(t, 2, 1);
  Collective ag = Collective::over_all(t, CollectiveKind::AllGather, 2);
  ag.ranks = {1, 2};
  Collective rs = ag;
  rs.kind = CollectiveKind::ReduceScatter;
  Algorithm a = empty_algorithm("test", t, ag, 1024, LinkModel::Pipelined);
  for (ChunkId ch : {0, 1}) a.add(ch, 1, 2, std::vector<LinkId>{right});
  for (ChunkId ch : {2, 3}) a.add(ch, 2, 1, std::vector<LinkId>{left});
  Algorithm r = empty_algorithm("test", t, rs, 1024, LinkModel::Pipelined);
  for (ChunkId ch : {1, 0}) r.add(ch, 2, 1, std::vector<LinkId>{left}, Op::Reduce);
  for (ChunkId ch : {2, 3}) r.add(ch, 1, 2, std::vector<LinkId>{right}, Op::Reduce);
  EXPECT_TRUE(detail::gather_as_reduced(r, a));
  EXPECT_EQ((std::vector<ChunkId>{a[0].chunk, a[1].chunk, a[2].chunk, a[3].chunk}),
            (std::vector<ChunkId>{1, 0, 2, 3}));
  EXPECT_TRUE(verify(t, a).correct());

  Collective one = ag;
  one.chunks_per_npu = 1;
  Algorithm single = empty_algorithm("test", t, one, 1024, LinkModel::Pipelined);
  single.add(0, 1, 2, std::vector<LinkId>{right});
  single.add(1, 2, 1, std::vector<LinkId>{left});
  Collective one_rs = one;
  one_rs.kind = CollectiveKind::ReduceScatter;
  Algorithm single_r = empty_algorithm("test", t, one_rs, 1024, LinkModel::Pipelined);
  single_r.add(0, 2, 1, std::vector<LinkId>{left}, Op::Reduce);
  single_r.add(1, 1, 2, std::vector<LinkId>{right}, Op::Reduce);
  EXPECT_TRUE(detail::gather_as_reduced(single_r, single));
  EXPECT_EQ(single[0].chunk, 0);
  EXPECT_EQ(single[1].chunk, 1);
}

}  // namespace
}  // namespace tenet::synth
