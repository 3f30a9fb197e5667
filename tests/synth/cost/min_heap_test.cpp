// The replay's min-heap (synth/cost/min_heap.hpp): pops come out in key order, whatever the mix of
// pushes and pops, and the layout stays the one std::push_heap keeps (a std heap check holds).
#include "synth/cost/min_heap.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <queue>
#include <random>
#include <utility>
#include <vector>

namespace tenet::synth {
namespace {

TEST(MinHeap, PopsInKeyOrderUnderRandomPushesAndPops) {
  const auto identity = [](int v) { return v; };
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    std::mt19937 rng(seed);
    std::vector<int> heap;
    std::priority_queue<int, std::vector<int>, std::greater<int>> reference;
    const int steps = 1 + static_cast<int>(rng() % 400);
    for (int i = 0; i < steps; ++i) {
      if (reference.empty() || rng() % 3 != 0) {
        const int v = static_cast<int>(rng() % 50);  // repeats: equal keys too
        push_min(heap, v, identity);
        reference.push(v);
      } else {
        ASSERT_EQ(pop_min(heap, identity), reference.top()) << "seed " << seed << " step " << i;
        reference.pop();
      }
      ASSERT_TRUE(std::is_heap(heap.begin(), heap.end(), std::greater<int>())) << "seed " << seed;
      ASSERT_EQ(heap.size(), reference.size());
    }
    while (!reference.empty()) {
      ASSERT_EQ(pop_min(heap, identity), reference.top()) << "seed " << seed;
      reference.pop();
    }
    EXPECT_TRUE(heap.empty());
  }
}

TEST(MinHeap, OrdersRecordsByTheirKeyAlone) {
  // Events of one instant come out together, in any order among themselves.
  struct Event {
    long at;
    int id;
  };
  std::vector<Event> heap;
  const auto at = [](const Event& e) { return e.at; };
  for (int id = 0; id < 64; ++id) push_min(heap, Event{(id * 37) % 8, id}, at);
  std::vector<std::pair<long, int>> popped;
  while (!heap.empty()) {
    const Event e = pop_min(heap, at);
    popped.emplace_back(e.at, e.id);
  }
  ASSERT_EQ(popped.size(), 64u);
  EXPECT_TRUE(std::is_sorted(popped.begin(), popped.end(),
                             [](const auto& a, const auto& b) { return a.first < b.first; }));
  std::vector<int> ids;
  for (const auto& [time, id] : popped) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  for (int id = 0; id < 64; ++id) EXPECT_EQ(ids[static_cast<size_t>(id)], id);  // each once
}

}  // namespace
}  // namespace tenet::synth
