#include "synth/ten/raw_list.hpp"

#include <gtest/gtest.h>

#include <cstddef>

namespace tenet::synth::detail {
namespace {

Raw numbered(size_t i) {
  return {.chunk = static_cast<ChunkId>(i),
          .channel = static_cast<ChannelId>(i % 7),
          .dep = static_cast<int32_t>(i) - 1,
          .queue = static_cast<uint16_t>(i % 65536),
          .more = 0,
          .start = static_cast<Time>(3 * i),
          .end = static_cast<Time>(3 * i + 2),
          .rate = 0};
}

// The first block grows (kFirst, doubling to kBlock) and later blocks are whole: every element
// pushed is read back where it was put, across each growth and each block boundary.
TEST(RawList, KeepsEveryTransferAcrossTheFirstBlocksGrowthAndTheBlocks) {
  for (const size_t n : {size_t{0}, size_t{1}, RawList::kFirst - 1, RawList::kFirst,
                         RawList::kFirst + 1, 5 * RawList::kFirst + 3, RawList::kBlock - 1,
                         RawList::kBlock, RawList::kBlock + 1, 2 * RawList::kBlock + 5}) {
    RawList raw;
    for (size_t i = 0; i < n; ++i) {
      raw.push_back(numbered(i));
      // What the matchers do: set the end of the transfer just pushed.
      raw.back().end = static_cast<Time>(3 * i + 1);
    }
    ASSERT_EQ(raw.size(), n);
    size_t i = 0;
    raw.for_each([&](const Raw& r) {
      ASSERT_EQ(r.chunk, static_cast<ChunkId>(i)) << "n " << n;
      EXPECT_EQ(r.dep, static_cast<int32_t>(i) - 1);
      EXPECT_EQ(r.start, static_cast<Time>(3 * i));
      EXPECT_EQ(r.end, static_cast<Time>(3 * i + 1));
      ++i;
    });
    EXPECT_EQ(i, n);
  }
}

// build() gives the blocks back as it reads them: what it has not given back stays readable.
TEST(RawList, ReleasingABlockLeavesTheNextOnesReadable) {
  RawList raw;
  const size_t n = RawList::kBlock + 10;
  for (size_t i = 0; i < n; ++i) raw.push_back(numbered(i));
  for (size_t i = 0; i < RawList::kBlock; ++i) raw.release_through(i);
  for (size_t i = RawList::kBlock; i < n; ++i) EXPECT_EQ(raw[i].chunk, static_cast<ChunkId>(i));
}

}  // namespace
}  // namespace tenet::synth::detail
