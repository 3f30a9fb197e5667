// The timing's event queue (synth/cost/monotone_queue.hpp): replayed as the timing does (the least
// key, every element at it, then pushes at or after it: an instant's events, then what they start),
// with random pushes at the instant, near it or far off, the elements come out in key order, as a
// std::priority_queue's do.
#include "synth/cost/monotone_queue.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <queue>
#include <random>
#include <vector>

namespace tenet::synth {
namespace {

TEST(MonotoneQueue, PopsInKeyOrderAsTheTimingReplays) {
  const auto identity = [](uint64_t v) { return v; };
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    std::mt19937_64 rng(seed);
    MonotoneQueue<uint64_t, decltype(identity)> queue(identity);
    std::priority_queue<uint64_t, std::vector<uint64_t>, std::greater<uint64_t>> reference;
    auto push_after = [&](uint64_t now, int n) {
      for (int i = 0; i < n; ++i) {
        // Repeats of the instant, near it, or up to 2^40 after it.
        const uint64_t ahead = rng() % 4 == 0   ? 0
                               : rng() % 2 == 0 ? rng() % 64
                                                : rng() >> (24 + rng() % 40);
        queue.push(now + ahead);
        reference.push(now + ahead);
      }
    };
    push_after(0, 1 + static_cast<int>(rng() % 8));
    for (int instants = 0; !reference.empty(); ++instants) {
      const uint64_t now = queue.least();
      ASSERT_EQ(now, reference.top()) << "seed " << seed;
      std::vector<uint64_t> instant;
      queue.take_least(instant);
      for (const uint64_t key : instant) {
        ASSERT_EQ(key, now) << "seed " << seed;
        ASSERT_EQ(reference.top(), now) << "seed " << seed;
        reference.pop();
      }
      EXPECT_GT(instant.size(), 0u);
      ASSERT_TRUE(reference.empty() || reference.top() > now) << "seed " << seed;
      if (instants < 300) push_after(now, static_cast<int>(rng() % 4));
      ASSERT_EQ(queue.size(), reference.size());
    }
    EXPECT_TRUE(queue.empty());
    EXPECT_TRUE(reference.empty());
  }
}

TEST(MonotoneQueue, KeepsRecordsWhole) {
  // Events of one instant come out together, each once, in any order among themselves.
  struct Event {
    int64_t at;
    int id;
  };
  const auto at = [](const Event& e) { return e.at; };
  MonotoneQueue<Event, decltype(at)> queue(at);
  for (int id = 0; id < 64; ++id) queue.push(Event{(id * 37) % 8 * 1000, id});
  std::vector<int> seen(64, 0);
  int64_t last = 0;
  std::vector<Event> instant;
  while (!queue.empty()) {
    queue.least();
    queue.take_least(instant);
    for (const Event& e : instant) {
      EXPECT_GE(e.at, last);
      EXPECT_EQ(e.at, (e.id * 37) % 8 * 1000);
      last = e.at;
      ++seen[static_cast<size_t>(e.id)];
    }
  }
  for (int id = 0; id < 64; ++id) EXPECT_EQ(seen[static_cast<size_t>(id)], 1) << id;
}

}  // namespace
}  // namespace tenet::synth
