// What the baselines keep between builds (synth/baselines/baseline_memo.hpp: Blink's packed trees,
// the channel rings) never changes an algorithm: one memo shared by every build below gives each
// baseline the algorithm it makes without one, transfer by transfer, and finds each packing and
// each set of rings once per topology and ranks.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "synth/baselines/baseline_memo.hpp"
#include "synth/baselines/baselines.hpp"
#include "tests/synth/test_support.hpp"
#include "topo/generators.hpp"

namespace tenet::synth {
namespace {

// Whether two algorithms are the same, transfer by transfer, timing included.
bool same(const Algorithm& a, const Algorithm& b) {
  if (a.claimed_time != b.claimed_time || a.size() != b.size()) return false;
  for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id)
    if (a[id].chunk != b[id].chunk || a[id].src != b[id].src || a[id].dst != b[id].dst ||
        a[id].channel != b[id].channel || a[id].op != b[id].op || a[id].count != b[id].count ||
        a[id].start != b[id].start || a[id].end != b[id].end ||
        !std::ranges::equal(a.route(id), b.route(id)) ||
        !std::ranges::equal(a.deps(id), b.deps(id)))
      return false;
  return true;
}

// Every baseline, every collective it has, on servers, switches, uneven links, one-way rings and
// random fabrics (with per-step costs and without), over all NPUs and over a group, at chunk counts
// and sizes in turn: with one memo for them all, the same algorithm, or the same reason it does not
// apply.
TEST(BaselineMemo, NeverChangesAnAlgorithm) {
  std::mt19937_64 rng(17);
  BaselineMemo memo;
  std::vector<topo::Topology> ts;
  for (const char* spec : {"nvcluster:2x4", "hetmesh2d:4x4", "dgx1", "switch:8", "leafspine:2x4",
                           "ring:5,bidir=false"})
    ts.push_back(topo::generate(spec));
  for (int i = 0; i < 8; ++i) ts.push_back(testing::random_topology(rng, 8, i % 2 == 0));
  int compared = 0, rings = 0, blinks = 0;
  for (const topo::Topology& t : ts)
    for (CollectiveKind kind : {CollectiveKind::AllReduce, CollectiveKind::AllGather,
                                CollectiveKind::ReduceScatter, CollectiveKind::Broadcast})
      for (bool group : {false, true})
        for (int k : {1, 3, 8}) {
          Collective c = Collective::over_all(t, kind, k);
          if (group) c.ranks.resize(std::max<size_t>(2, c.ranks.size() / 2));
          const Bytes chunk = 1 + static_cast<Bytes>(rng() % (Bytes{1} << 20));
          for (BaselineKind b : all_baselines()) {
            const BaselineSpec spec{b, {}};
            const Made<Algorithm> alone = try_baseline(spec, t, c, chunk);
            const Made<Algorithm> kept =
                try_baseline(spec, t, c, chunk, LinkModel::Pipelined, 0, true, &memo);
            const std::string what = fmt::format("{} {} {} group {} k={}", t.name(), spec.name(),
                                                 to_string(kind), group, k);
            ASSERT_EQ(alone.index(), kept.index()) << what;
            if (const NotMade* why = std::get_if<NotMade>(&alone)) {
              EXPECT_EQ(why->why, std::get<NotMade>(kept).why) << what;
              continue;
            }
            EXPECT_TRUE(same(std::get<Algorithm>(alone), std::get<Algorithm>(kept))) << what;
            ++compared;
            rings += b == BaselineKind::Ring || b == BaselineKind::BidirRing;
            blinks += b == BaselineKind::Blink;
          }
        }
  EXPECT_GT(compared, 500);
  EXPECT_GT(rings, 200);
  EXPECT_GT(blinks, 40);
}

// Each is found once per topology (its fingerprint) and ranks (and, for rings, the channels asked
// for and both ways or not): another group, another topology or another question finds again; the
// same topology made again does not.
TEST(BaselineMemo, FindsOncePerTopologyAndRanks) {
  BaselineMemo memo;
  int packed = 0, found = 0;
  auto pack = [&] {
    ++packed;
    return std::shared_ptr<const detail::BlinkPacking>();
  };
  auto find = [&] {
    ++found;
    return std::vector<RingChannel>(1);
  };
  const auto ring = topo::generate("ring:8"), mesh = topo::generate("mesh2d:2x4");
  const std::vector<NodeId> all{0, 1, 2, 3, 4, 5, 6, 7}, some{2, 3, 4, 5};
  for (int twice = 0; twice < 2; ++twice) {
    memo.blink(ring, all, pack);
    EXPECT_EQ(memo.rings(ring, all, 0, false, find).size(), 1u);
  }
  EXPECT_EQ(packed, 1);
  EXPECT_EQ(found, 1);
  memo.blink(ring, some, pack);
  memo.blink(mesh, all, pack);
  memo.blink(topo::generate("ring:8"), all, pack);  // the same topology, made again
  EXPECT_EQ(packed, 3);
  memo.rings(ring, some, 0, false, find);
  memo.rings(mesh, all, 0, false, find);
  memo.rings(ring, all, 2, false, find);
  memo.rings(ring, all, 0, true, find);
  memo.rings(topo::generate("ring:8"), all, 0, false, find);
  EXPECT_EQ(found, 5);
}

}  // namespace
}  // namespace tenet::synth
