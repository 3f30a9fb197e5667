// The matcher's output: one Raw per transfer it decided, held in large blocks (RawList).
#pragma once

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
// the threshold had grown, and stayed. Raw is trivial, so a block's pages are touched only as it
// fills.
class RawList {
 public:
  static constexpr int kShift = 20;
  static constexpr size_t kBlock = size_t{1} << kShift;
  size_t size() const { return size_; }
  Raw& operator[](size_t i) { return blocks_[i >> kShift][i & (kBlock - 1)]; }
  const Raw& operator[](size_t i) const { return blocks_[i >> kShift][i & (kBlock - 1)]; }
  Raw& back() { return (*this)[size_ - 1]; }
  void push_back(const Raw& r) {
    if ((size_ >> kShift) == blocks_.size())
      blocks_.push_back(std::make_unique_for_overwrite<Raw[]>(kBlock));
    (*this)[size_++] = r;
  }
  // Frees the block that ends with element i (call once i is the last of its block, or of all).
  void release_through(size_t i) {
    if ((i + 1) % kBlock == 0 || i + 1 == size_) blocks_[i >> kShift].reset();
  }
  template <typename F>
  void for_each(F&& f) const {
    for (size_t i = 0; i < size_; ++i) f((*this)[i]);
  }

 private:
  std::vector<std::unique_ptr<Raw[]>> blocks_;
  size_t size_ = 0;
};

}  // namespace tenet::synth::detail
