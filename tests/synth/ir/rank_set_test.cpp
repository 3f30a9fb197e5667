#include "synth/ir/rank_set.hpp"

#include <gtest/gtest.h>

#include <random>
#include <set>

namespace tenet::synth {
namespace {

TEST(RankSet, UnionIncludesIntersectionDifference) {
  RankSet a = RankSet::range(0, 4);
  a.add(RankSet::single(6));
  EXPECT_EQ(a.str(), "{0-3,6}");
  EXPECT_EQ(a.size(), 5);
  EXPECT_TRUE(a.contains(3));
  EXPECT_FALSE(a.contains(5));
  EXPECT_EQ(a.first_common(RankSet::range(5, 8)), 6);
  EXPECT_EQ(a.first_common(RankSet::single(5)), -1);
  a.add(RankSet::range(4, 6));
  EXPECT_TRUE(a.is_range(0, 7));
  EXPECT_TRUE(a.includes(RankSet::range(2, 5)));
  EXPECT_FALSE(RankSet::range(2, 5).includes(a));
  EXPECT_EQ(a.missing_from(9).str(), "{7-8}");
  EXPECT_EQ(a.minus(RankSet::range(2, 4)).str(), "{0-1,4-6}");
  EXPECT_EQ(RankSet().str(), "{}");
}

TEST(RankSet, AgreesWithStdSetOnRandomOperations) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 500; ++round) {
    RankSet a, b;
    std::set<int> sa, sb;
    for (int i = 0; i < 6; ++i) {
      int x = static_cast<int>(rng() % 40), len = 1 + static_cast<int>(rng() % 4);
      RankSet r = RankSet::range(x, x + len);
      (i % 2 ? a : b).add(r);
      for (int k = x; k < x + len; ++k) (i % 2 ? sa : sb).insert(k);
    }
    EXPECT_EQ(a.size(), static_cast<int>(sa.size()));
    int common = -1;
    for (int x : sa)
      if (sb.count(x)) {
        common = x;
        break;
      }
    EXPECT_EQ(a.first_common(b), common);
    bool inc = std::includes(sa.begin(), sa.end(), sb.begin(), sb.end());
    EXPECT_EQ(a.includes(b), inc);
    RankSet d = a.minus(b);
    for (int x = 0; x < 50; ++x) EXPECT_EQ(d.contains(x), sa.count(x) && !sb.count(x)) << x;
  }
}

}  // namespace
}  // namespace tenet::synth
