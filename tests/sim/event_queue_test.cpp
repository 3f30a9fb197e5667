#include "sim/event_queue.hpp"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace tenet::sim
