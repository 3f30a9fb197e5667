#include "sim/event_queue.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <tuple>

#include "topo/error.hpp"

namespace tenet::sim {
namespace {

TEST(EventQueue, RunsInTimeOrderAndSameTimeInScheduleOrder) {
  EventQueue q;
  std::vector<int> order;
  q.schedule(30, [&] { order.push_back(3); });
  q.schedule(10, [&] { order.push_back(1); });
  q.schedule(10, [&] { order.push_back(2); });
  q.schedule(10, [&] {
    order.push_back(20);
    q.schedule_after(0, [&] { order.push_back(21); });  // same time, after those already queued
  });
  EXPECT_EQ(q.run(), 30);
  EXPECT_EQ(order, (std::vector<int>{1, 2, 20, 21, 3}));
  EXPECT_EQ(q.executed(), 5u);
}

TEST(EventQueue, StopsAtAHorizonAndRefusesThePast) {
  EventQueue q;
  int ran = 0;
  q.schedule(5, [&] { ++ran; });
  q.schedule(50, [&] { ++ran; });
  EXPECT_EQ(q.run(10), 5);
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(q.pending(), 1u);
  EXPECT_THROW(q.schedule(4, [] {}), Error);
  q.run();
  EXPECT_EQ(ran, 2);
  EXPECT_FALSE(q.step());
}

// Events scheduled from inside events, with more distinct delays than there are FIFOs and bursts
// that make the FIFOs wrap around and grow, run exactly in (time, schedule order).
TEST(EventQueue, MatchesAReferenceOrderOnRandomSchedules) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    EventQueue q;
    std::vector<std::tuple<Time, int>> expected;  // (time, schedule index)
    std::vector<std::tuple<Time, int>> ran;
    int scheduled = 0;
    auto add = [&](auto& self, Time delay) -> void {
      const int index = scheduled++;
      const Time at = q.now() + delay;
      expected.emplace_back(at, index);
      q.schedule(at, [&, index, at] {
        EXPECT_EQ(q.now(), at);
        ran.emplace_back(at, index);
        if (scheduled >= 6000) return;
        if (rng() % 40 == 0) {  // a burst at one delay
          const auto delay = static_cast<Time>(rng() % 5);
          for (int c = 0; c < 150; ++c) self(self, delay);
          return;
        }
        const int children = static_cast<int>(rng() % 2);
        for (int c = 0; c < children; ++c)
          self(self, static_cast<Time>(rng() % 40) * (seed % 3 + 1));
      });
    };
    for (int i = 0; i < 200; ++i) add(add, static_cast<Time>(rng() % 7));
    q.run();
    std::sort(expected.begin(), expected.end());
    ASSERT_EQ(ran, expected) << "seed " << seed;
  }
}

}  // namespace
}  // namespace tenet::sim
