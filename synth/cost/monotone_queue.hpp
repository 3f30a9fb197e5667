// A priority queue whose keys never fall below the least key looked at so far (a radix heap): the
// timing's events, each at or after the instant being replayed. Bucket 0 holds the elements whose
// key is the last least key taken; bucket i > 0 those whose key first differs from it at bit i - 1
// (from the top). Taking the least key, where bucket 0 is empty, empties the first non-empty
// bucket into lower ones around its least key: an element moves down at most 64 times in all, and
// usually once or twice, instead of sifting through a binary heap at every pop.
// Elements of equal keys come out in no particular order.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace tenet::synth {

// `Key` maps an element to its key, a non-negative integer (a time in ps).
template <typename T, typename Key>
class MonotoneQueue {
 public:
  explicit MonotoneQueue(Key key = Key()) : key_(std::move(key)) {}

  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  // Adds `v`, whose key is at least the last least key (least()).
  void push(T v) {
    const uint64_t k = key_of(v);
    buckets_[bucket(k)].push_back(std::move(v));
    ++size_;
  }
  // The least key; the queue is not empty. Keys pushed from then on are at least this one.
  uint64_t least() {
    if (buckets_[0].empty()) refill();
    return last_;
  }
  // Moves every element of the least key into `out` (emptied first): an instant's events, all
  // taken before least() moves on to the next. least() was asked since the last were taken.
  void take_least(std::vector<T>& out) {
    out.clear();
    std::swap(out, buckets_[0]);
    size_ -= out.size();
  }

 private:
  uint64_t key_of(const T& v) const { return static_cast<uint64_t>(key_(v)); }
  size_t bucket(uint64_t k) const { return static_cast<size_t>(std::bit_width(k ^ last_)); }
  // Bucket 0 is empty and the queue is not: the first non-empty bucket's least key becomes the
  // last one, and its elements go down to the buckets they now belong to (all lower: they share
  // every bit above the one that put them there).
  void refill() {
    size_t i = 1;
    while (buckets_[i].empty()) ++i;
    std::vector<T>& from = buckets_[i];
    uint64_t least = key_of(from.front());
    for (const T& v : from) least = std::min(least, key_of(v));
    last_ = least;
    for (T& v : from) buckets_[bucket(key_of(v))].push_back(std::move(v));
    from.clear();
  }

  Key key_;
  std::array<std::vector<T>, 65> buckets_;
  uint64_t last_ = 0;
  size_t size_ = 0;
};

}  // namespace tenet::synth
