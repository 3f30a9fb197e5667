// The algorithm IR's storage: each transfer's route and dependencies share one pool, rates sit in a
// list made only once some transfer has its own rate.
#include "synth/ir/algorithm.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace tenet::synth {
namespace {

TEST(Algorithm, TransfersGiveBackWhatWasAdded) {
  static_assert(sizeof(Transfer) <= 40, "an N-rank All-Gather holds N^2 transfers");
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    Algorithm a;
    std::vector<TransferSpec> want;
    const bool rated = trial % 2 == 1;
    for (int i = 0; i < 40; ++i) {
      TransferSpec s;
      s.chunk = static_cast<ChunkId>(rng() % 9);
      s.src = static_cast<NodeId>(rng() % 5);
      s.dst = static_cast<NodeId>(rng() % 5);
      s.op = rng() % 2 ? Op::Reduce : Op::Copy;
      for (int k = static_cast<int>(rng() % 4); k > 0; --k)
        s.route.push_back(static_cast<LinkId>(rng() % 30));
      for (int k = static_cast<int>(rng() % 4); k > 0 && i > 0; --k)
        s.deps.push_back(static_cast<TransferId>(rng() % i));
      s.start = static_cast<Time>(rng() % 100) - 1;
      s.end = s.start + 5;
      s.rate = rated && rng() % 3 == 0 ? static_cast<Bandwidth>(1 + rng() % 1000) : 0;
      s.channel = static_cast<uint16_t>(rng() % 3);
      want.push_back(s);
      a.add(s);
    }
    ASSERT_EQ(a.size(), want.size());
    bool any_rate = false;
    for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id) {
      EXPECT_TRUE(a.spec(id) == want[id])
          << "transfer " << id;  // route, dependencies, rate and the rest
      EXPECT_EQ(a.rate(id), want[id].rate);
      any_rate = any_rate || want[id].rate != 0;
    }
    EXPECT_EQ(a.has_rates(), any_rate);

    // Renaming touches routes (and ends), never the dependencies that share their pool.
    std::vector<NodeId> nodes(5);
    std::vector<LinkId> links(30);
    for (int i = 0; i < 5; ++i) nodes[i] = 4 - i;
    for (int i = 0; i < 30; ++i) links[i] = 100 + i;
    a.rename(nodes, links);
    for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id) {
      std::vector<LinkId> route;
      for (LinkId l : want[id].route) route.push_back(100 + l);
      EXPECT_EQ(a.spec(id).route, route) << id;
      EXPECT_EQ(a.spec(id).deps, want[id].deps) << id;
      EXPECT_EQ(a[id].src, 4 - want[id].src);
    }
  }
}

TEST(Algorithm, RatesAreSetOneByOne) {
  Algorithm a;
  const LinkId l = 0;
  for (int i = 0; i < 3; ++i) a.add(0, 0, 1, std::span(&l, 1));
  EXPECT_FALSE(a.has_rates());
  a.set_rate(1, 0);  // still none
  EXPECT_FALSE(a.has_rates());
  a.set_rate(2, 25);
  EXPECT_TRUE(a.has_rates());
  EXPECT_EQ(a.rate(0), 0);
  EXPECT_EQ(a.rate(2), 25);
  a.add(0, 0, 1, std::span(&l, 1));  // a transfer added after keeps its own (none)
  EXPECT_EQ(a.rate(3), 0);
  a.set_rate(2, 0);
  EXPECT_FALSE(a.has_rates());
}

}  // namespace
}  // namespace tenet::synth
