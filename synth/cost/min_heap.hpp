// A binary min-heap in a std::vector, for link admission's queues (its candidates and waiters, in
// list order; the timing's events, always at or after the instant replayed, are a radix heap:
// monotone_queue.hpp): the layout std::push_heap keeps with std::greater (every element
// at most its children, by `key`), popped by sifting the hole down to the lesser child without a
// branch. Which child is lesser is unpredictable, and std::pop_heap's branch on it was most of a
// replay's time where routes cross switches (the figures: docs/tuning.md, `synth/cost/`).
// Elements of equal keys pop in no particular order.
#pragma once

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace tenet::synth {

// Adds `v`.
template <typename T, typename Key>
void push_min(std::vector<T>& h, T v, Key key) {
  h.push_back(std::move(v));
  std::push_heap(h.begin(), h.end(), [&](const T& a, const T& b) { return key(a) > key(b); });
}

// Removes and returns an element of least key; `h` is not empty.
template <typename T, typename Key>
T pop_min(std::vector<T>& h, Key key) {
  T top = std::move(h.front());
  T last = std::move(h.back());
  h.pop_back();
  const size_t n = h.size();
  if (n == 0) return top;
  T* a = h.data();
  const auto last_key = key(last);
  size_t hole = 0;
  for (size_t child = 1; child < n; child = 2 * hole + 1) {
    child += static_cast<size_t>(child + 1 < n && key(a[child + 1]) < key(a[child]));
    if (!(key(a[child]) < last_key)) break;
    a[hole] = std::move(a[child]);
    hole = child;
  }
  a[hole] = std::move(last);
  return top;
}

}  // namespace tenet::synth
