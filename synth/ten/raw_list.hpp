// The matcher's output: one Raw per transfer it decided, held in large blocks (RawList).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "synth/ir/algorithm.hpp"
#include "synth/ten/channel_graph.hpp"

namespace tenet::synth::detail {

// One transfer as the matcher decides it. `dep` is the transfer that brought the chunk to the
// source (-1 when the source held it from the start); for a message, the one of its chunks that
// arrived last.
struct Raw {
  ChunkId chunk;
  ChannelId channel;
  int32_t dep;
  uint16_t queue;  // its channel in the IR (a stream of the pipeline), or 0
  uint16_t more;   // the chunks it carries past `chunk` (a message of more + 1: Transfer::count)
  Time start, end;
  Bandwidth rate;  // its own rate (a pinned flow-plan pipeline), or 0
};
static_assert(sizeof(Raw) <= 40 && std::is_trivial_v<Raw>,
              "the matcher holds one per transfer (16.8M on a 64x64 torus)");

// The matcher's transfers, in blocks of 1M that build() gives back one by one as it turns them
// into the algorithm, so that the two are never held whole at once (the build is the command's
// peak in memory). A block is 40 MB, over the largest threshold at which glibc's malloc maps a
// block of its own (32 MiB), so a freed block leaves memory: smaller ones came from the heap once
// the threshold had grown, and stayed. The first block grows as a vector does, from kFirst up to
// the full block: most lists are small (a 16-NPU search makes hundreds of them, of thousands of
// transfers), and a block mapped and unmapped for each cost its system calls and freshly zeroed
// pages every time, where a small one is the heap's, reused. Raw is trivial, so a block's pages
// are touched only as it fills.
class RawList {
 public:
  static constexpr int kShift = 20;
  static constexpr size_t kBlock = size_t{1} << kShift;
  static constexpr size_t kFirst = size_t{1} << 10;  // the first block's first capacity
  size_t size() const { return size_; }
  Raw& operator[](size_t i) { return blocks_[i >> kShift][i & (kBlock - 1)]; }
  const Raw& operator[](size_t i) const { return blocks_[i >> kShift][i & (kBlock - 1)]; }
  Raw& back() { return (*this)[size_ - 1]; }
  void push_back(const Raw& r) {
    if (size_ < kBlock) {
      if (size_ == first_) grow_first();
    } else if ((size_ >> kShift) == blocks_.size()) {
      blocks_.push_back(std::make_unique_for_overwrite<Raw[]>(kBlock));
    }
    (*this)[size_++] = r;
  }
  // Frees the block that ends with element i (call once i is the last of its block, or of all).
  void release_through(size_t i) {
    if ((i + 1) % kBlock == 0 || i + 1 == size_) blocks_[i >> kShift].reset();
  }
  // A copy (the list holds its blocks alone, so it is not copied implicitly).
  RawList copy() const {
    RawList out;
    for (size_t i = 0; i < size_; ++i) out.push_back((*this)[i]);
    return out;
  }
  template <typename F>
  void for_each(F&& f) const {
    for (size_t i = 0; i < size_; ++i) f((*this)[i]);
  }

 private:
  // The first block, full (size_ == first_ < kBlock), doubled (at most to kBlock).
  void grow_first() {
    const size_t capacity = first_ == 0 ? kFirst : std::min(kBlock, 2 * first_);
    auto grown = std::make_unique_for_overwrite<Raw[]>(capacity);
    if (blocks_.empty()) {
      blocks_.push_back(std::move(grown));
    } else {
      std::copy_n(blocks_[0].get(), size_, grown.get());
      blocks_[0] = std::move(grown);
    }
    first_ = capacity;
  }

  std::vector<std::unique_ptr<Raw[]>> blocks_;
  size_t size_ = 0;
  size_t first_ = 0;  // the first block's capacity
};

}  // namespace tenet::synth::detail
