#include "synth/collective.hpp"

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

}  // namespace
}  // namespace tenet::synth
