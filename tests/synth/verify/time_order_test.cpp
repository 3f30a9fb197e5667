// The verifier's replay order (synth/verify/time_order.hpp): sort_by_time puts any events in the
// order std::sort gives (time, then id), whether their times' spread and ids fit a 64-bit key
// (sorted by radix) or not (by comparison): many at one instant, times near each other or
// spread up to 2^62 ps, negative ones, ids in any order.
#include "synth/verify/time_order.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace tenet::synth {
namespace {

TEST(TimeOrder, SortsAsComparisonDoesAtAnySpread) {
  for (uint32_t seed = 1; seed <= 400; ++seed) {
    std::mt19937_64 rng(seed);
    const int n = static_cast<int>(rng() % 300);
    const int shift = static_cast<int>(rng() % 63);  // times up to 2^shift apart
    const Time base = rng() % 4 == 0 ? -static_cast<Time>(rng() % 1000) : 0;
    const Time instants = 1 + static_cast<Time>(rng() % 20);
    std::vector<TimedTransfer> events;
    for (int i = 0; i < n; ++i) {
      const Time at = rng() % 2 == 0 ? base + static_cast<Time>(rng() % instants)
                                     : base + static_cast<Time>(rng() >> (63 - shift) >> 1);
      events.push_back({at, static_cast<TransferId>(rng() % 100'000)});
    }
    std::vector<TimedTransfer> expected = events;
    std::sort(expected.begin(), expected.end());
    sort_by_time(events);
    ASSERT_EQ(events.size(), expected.size());
    for (size_t i = 0; i < events.size(); ++i) {
      ASSERT_EQ(events[i].at, expected[i].at) << "seed " << seed << " at " << i;
      ASSERT_EQ(events[i].id, expected[i].id) << "seed " << seed << " at " << i;
    }
  }
}

}  // namespace
}  // namespace tenet::synth
