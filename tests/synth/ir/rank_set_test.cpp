#include "synth/ir/rank_set.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <string>

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

// Ranks below 64 are kept as a word, others as intervals (rank_set.hpp): the operations must agree
// with std::set in either form and across them, and equal sets compare equal however made.
void agrees_with_std_set(int universe, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto str_of = [](const std::set<int>& s) {
    std::string out = "{";
    for (auto it = s.begin(); it != s.end();) {
      const int first = *it;
      int last = first;
      while (++it != s.end() && *it == last + 1) ++last;
      if (out.size() > 1) out += ',';
      out += std::to_string(first);
      if (last != first) out += '-' + std::to_string(last);
    }
    return out + '}';
  };
  for (int round = 0; round < 500; ++round) {
    RankSet a, b;
    std::set<int> sa, sb;
    for (int i = 0; i < 6; ++i) {
      int x = static_cast<int>(rng() % universe), len = 1 + static_cast<int>(rng() % 4);
      RankSet r = RankSet::range(x, x + len);
      (i % 2 ? a : b).add(r);
      for (int k = x; k < x + len; ++k) (i % 2 ? sa : sb).insert(k);
    }
    EXPECT_EQ(a.size(), static_cast<int>(sa.size()));
    EXPECT_EQ(a.str(), str_of(sa));
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
    std::set<int> sd;
    for (int x : sa)
      if (!sb.count(x)) sd.insert(x);
    EXPECT_EQ(d.str(), str_of(sd));
    for (int x = -1; x < universe + 5; ++x) EXPECT_EQ(d.contains(x), sd.count(x) == 1) << x;
    RankSet u = a;
    u.add(b);
    std::set<int> su = sa;
    su.insert(sb.begin(), sb.end());
    EXPECT_EQ(u.str(), str_of(su));
    RankSet rebuilt;  // the same set made rank by rank, from the top
    for (auto it = su.rbegin(); it != su.rend(); ++it) rebuilt.add(RankSet::single(*it));
    EXPECT_TRUE(rebuilt == u) << rebuilt.str() << " vs " << u.str();
    const int n = universe + 4;
    std::set<int> missing;
    for (int x = 0; x < n; ++x)
      if (!su.count(x)) missing.insert(x);
    EXPECT_EQ(u.missing_from(n).str(), str_of(missing));
    EXPECT_EQ(u.is_range(*su.begin(), *su.rbegin() + 1),
              static_cast<int>(su.size()) == *su.rbegin() + 1 - *su.begin());
  }
}

TEST(RankSet, AgreesWithStdSetOnRandomOperationsInOneWord) { agrees_with_std_set(60, 7); }

TEST(RankSet, AgreesWithStdSetOnRandomOperationsAcrossTheWordsEdge) {
  agrees_with_std_set(130, 11);
}

TEST(RankSet, TheWordsEdge) {
  RankSet a = RankSet::range(60, 64);
  EXPECT_TRUE(a.is_range(60, 64));
  EXPECT_EQ(a.str(), "{60-63}");
  a.add(RankSet::single(64));  // leaves the word form
  EXPECT_TRUE(a.is_range(60, 65));
  EXPECT_EQ(a.size(), 5);
  RankSet back = a.minus(RankSet::single(64));  // and comes back to it
  EXPECT_TRUE(back == RankSet::range(60, 64));
  EXPECT_EQ(a.first_common(RankSet::range(63, 200)), 63);
  EXPECT_TRUE(a.includes(RankSet::single(63)));
  EXPECT_FALSE(RankSet::range(0, 64).includes(a));
  EXPECT_TRUE(RankSet::range(0, 64).is_range(0, 64));
  EXPECT_EQ(RankSet::range(0, 64).missing_from(66).str(), "{64-65}");
  EXPECT_EQ(RankSet::range(0, 64).size(), 64);
}

TEST(RankSet, MissingFromIgnoresRanksPastN) {
  RankSet a = RankSet::single(6);
  a.add(RankSet::single(10));
  EXPECT_EQ(a.missing_from(5).str(), "{0-4}");
  a.add(RankSet::single(100));  // as intervals
  EXPECT_EQ(a.missing_from(5).str(), "{0-4}");
  EXPECT_EQ(a.missing_from(8).str(), "{0-5,7}");
}

}  // namespace
}  // namespace tenet::synth
