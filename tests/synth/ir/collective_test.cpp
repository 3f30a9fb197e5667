#include "synth/ir/collective.hpp"

#include <gtest/gtest.h>

#include "topo/error.hpp"

namespace tenet::synth {
namespace {

TEST(Collective, NamesRoundTripAndAcceptCommonSpellings) {
  for (CollectiveKind k : kAllCollectives) EXPECT_EQ(parse_collective(to_string(k)), k);
  EXPECT_EQ(parse_collective("allreduce"), CollectiveKind::AllReduce);
  EXPECT_EQ(parse_collective("All_Gather"), CollectiveKind::AllGather);
  EXPECT_EQ(parse_collective("ReduceScatter"), CollectiveKind::ReduceScatter);
  EXPECT_THROW(parse_collective("all-sum"), Error);
}

TEST(Collective, RootedOnes) {
  EXPECT_TRUE(is_rooted(CollectiveKind::Broadcast));
  EXPECT_TRUE(is_rooted(CollectiveKind::Scatter));
  EXPECT_FALSE(is_rooted(CollectiveKind::AllReduce));
  EXPECT_FALSE(is_rooted(CollectiveKind::AllToAll));
}

TEST(Collective, NcclBusBandwidthFactors) {
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveKind::AllReduce, 8), 14.0 / 8);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveKind::AllGather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveKind::AllToAll, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveKind::Broadcast, 8), 1.0);
  EXPECT_THROW(bus_bandwidth_factor(CollectiveKind::AllReduce, 0), Error);
}

// A chunk is at least a byte: a count that cuts a size finer is refused, saying the largest count
// that size takes (rounding 0.25-byte chunks up to 1 B timed, and bounded, 4 times the size).
TEST(Collective, ChunksOfLessThanAByteAreRefused) {
  auto error = [](const Collective& c, int64_t total) {
    try {
      c.whole_chunk_bytes_for(total);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  Collective c;
  c.kind = CollectiveKind::AllReduce;
  c.ranks = {0, 1, 2, 3};
  c.chunks_per_npu = 1 << 20;
  EXPECT_EQ(error(c, 1 << 20),
            "1048576 chunks per NPU cut all-reduce of 1 MiB into 4194304 chunks of less than a "
            "byte: at most 262144 chunks per NPU for this size");
  c.chunks_per_npu = 1 << 18;
  EXPECT_EQ(c.whole_chunk_bytes_for(1 << 20), 1);
  c.chunks_per_npu = 3;
  EXPECT_EQ(c.whole_chunk_bytes_for(1 << 20), c.chunk_bytes_for(1 << 20));  // 87382, rounded up
  c.chunks_per_npu = 1;
  EXPECT_EQ(error(c, 3),
            "all-reduce of 3 B is less than a byte for each of its 4 pieces at one chunk per NPU: "
            "give a size of at least 4 B");
  // Broadcast cuts the root's data alone: k pieces.
  c.kind = CollectiveKind::Broadcast;
  c.chunks_per_npu = 8;
  EXPECT_EQ(c.whole_chunk_bytes_for(8), 1);
  EXPECT_NE(error(c, 7).find("at most 7 chunks per NPU"), std::string::npos) << error(c, 7);
}

}  // namespace
}  // namespace tenet::synth

namespace tenet::synth {
namespace {

// --ranks: single NPUs, ranges, strided ranges, in the order given.
TEST(Ranks, ListsRangesAndStrides) {
  EXPECT_EQ(parse_ranks("0-7", 16), (std::vector<topo::NodeId>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(parse_ranks("0,8,16", 17), (std::vector<topo::NodeId>{0, 8, 16}));
  EXPECT_EQ(parse_ranks("8-11,0-3:2", 12), (std::vector<topo::NodeId>{8, 9, 10, 11, 0, 2}));
  const std::vector<topo::NodeId> rail = parse_ranks("0-1023:8", 1024);
  ASSERT_EQ(rail.size(), 128u);
  EXPECT_EQ(rail.back(), 1016);
  EXPECT_EQ(parse_ranks("5-9:10,3", 10),
            (std::vector<topo::NodeId>{5, 3}));  // a stride past the end takes the first
}

TEST(Ranks, BadListsNameTheItem) {
  const auto error = [](std::string_view list, int npus = 16) {
    try {
      parse_ranks(list, npus);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error("0-x"), "--ranks: '0-x' is not a rank, a range a-b or a strided range a-b:step");
  EXPECT_EQ(error("0,,3"), "--ranks: '' is not a rank, a range a-b or a strided range a-b:step");
  EXPECT_EQ(error("1-3:"),
            "--ranks: '1-3:' is not a rank, a range a-b or a strided range a-b:step");
  EXPECT_EQ(error("-3"), "--ranks: '-3' is not a rank, a range a-b or a strided range a-b:step");
  EXPECT_EQ(error("7-3"), "--ranks: '7-3' runs backwards");
  EXPECT_EQ(error("0-8:0"), "--ranks: '0-8:0' has a step below 1");
  EXPECT_EQ(error("0-16"), "--ranks: '0-16' names NPU 16, and the topology has NPUs 0..15");
  EXPECT_EQ(error("0-3,3"), "--ranks: NPU 3 is named twice ('3')");
  EXPECT_EQ(error("5"), "--ranks: '5' names 1 NPU; a collective needs at least 2");
  EXPECT_EQ(
      error("99999999999999999999"),
      "--ranks: '99999999999999999999' is not a rank, a range a-b or a strided range a-b:step");
}

}  // namespace
}  // namespace tenet::synth
