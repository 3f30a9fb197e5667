// The work pool behind tenet bench: every item exactly once, outputs in item order whatever the
// dealing order and thread count, and a failing item named in the error.
#include "bench/pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "topo/error.hpp"

namespace tenet::bench {
namespace {

PoolOptions with(int threads, std::vector<double> cost = {}) {
  PoolOptions o;
  o.threads = threads;
  o.cost = std::move(cost);
  return o;
}

const Processes& alone() {
  static const Processes p{Processes::Alone{}};
  return p;
}

TEST(Pool, RunsEveryItemOnceAndReturnsOutputsInItemOrder) {
  for (int threads : {1, 2, 5}) {
    std::vector<std::atomic<int>> runs(40);
    std::vector<double> cost;
    for (int i = 0; i < 40; ++i) cost.push_back((i * 7919) % 13);  // dealt in a scrambled order
    PoolStats stats;
    const std::vector<std::string> out = run_items(
        alone(), 40,
        [&](size_t i) {
          ++runs[i];
          return "item " + std::to_string(i);
        },
        [](size_t i) { return std::to_string(i); }, with(threads, cost), &stats);
    ASSERT_EQ(out.size(), 40u);
    for (size_t i = 0; i < 40; ++i) {
      EXPECT_EQ(out[i], "item " + std::to_string(i));
      EXPECT_EQ(runs[i], 1) << "item " << i << " with " << threads << " threads";
    }
    EXPECT_EQ(stats.processes, 1);
    ASSERT_EQ(stats.items.size(), 1u);
    EXPECT_EQ(stats.items[0], 40u);
    EXPECT_EQ(stats.threads[0], threads);
  }
}

TEST(Pool, DealsTheMostExpensiveItemsFirst) {
  std::vector<size_t> order;
  run_items(
      alone(), 5,
      [&](size_t i) {
        order.push_back(i);
        return std::string();
      },
      [](size_t i) { return std::to_string(i); }, with(1, {1, 5, 3, 5, 0}));
  EXPECT_EQ(order, (std::vector<size_t>{1, 3, 2, 0, 4}));  // ties keep item order
}

TEST(Pool, AFailingItemIsNamedAndKeepsItsKind) {
  auto run = [](size_t i) -> std::string {
    if (i == 3) throw Error("no such topology");
    if (i == 5) throw std::runtime_error("out of memory");
    return "ok";
  };
  auto describe = [](size_t i) { return "case #" + std::to_string(i); };
  try {
    run_items(alone(), 4, run, describe, with(2));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "case case #3: no such topology");
  }
  try {
    run_items(alone(), 6, run, describe, with(1, {0, 0, 0, 0, 0, 1}));  // item 5 first
    ADD_FAILURE() << "no error";
  } catch (const Error&) {
    ADD_FAILURE() << "an internal failure reported as bad input";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "case case #5: out of memory");
  }
}

TEST(Pool, NoItemsIsNoWork) {
  EXPECT_TRUE(
      run_items(
          alone(), 0, [](size_t) { return std::string("x"); }, [](size_t) { return std::string(); })
          .empty());
}

}  // namespace
}  // namespace tenet::bench
