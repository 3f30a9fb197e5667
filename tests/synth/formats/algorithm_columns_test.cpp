// An algorithm's transfers as protobuf columns (the algorithm cache's form): read back into the
// algorithm's head they are exactly the transfers written, every field; bytes that are not such
// columns, or whose transfers do not check against the head, are refused, never half read.
#include "synth/formats/algorithm_columns.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "tests/synth/test_support.hpp"
#include "topo/generators.hpp"

namespace tenet::synth {
namespace {

// `a`'s transfers through the columns, into a copy of its head.
std::optional<Algorithm> through_columns(const Algorithm& a, const Algorithm& head) {
  Algorithm b = with_transfers(head, {});
  if (!add_transfers_from_columns(transfers_to_columns(a), b)) return std::nullopt;
  return b;
}

void expect_same_transfers(const Algorithm& a, const Algorithm& b) {
  ASSERT_EQ(a.size(), b.size());
  for (TransferId i = 0; i < static_cast<TransferId>(a.size()); ++i)
    EXPECT_EQ(a.spec(i), b.spec(i)) << "transfer " << i;
  EXPECT_EQ(a.has_rates(), b.has_rates());
}

// Random trees on random topologies, timed or not, some with channels and rates; and one of every
// field off its default: messages of several chunks, inputs sent, reductions, a dependency on a
// later transfer, a transfer of no route.
TEST(AlgorithmColumns, GiveBackEveryTransferExactly) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 40; ++i) {
    const topo::Topology t = testing::random_topology(rng);
    const Collective c = testing::random_collective(rng, t);
    Algorithm a = testing::tree_algorithm(t, c, 1 + static_cast<Bytes>(rng() % 1000000),
                                          i % 2 ? LinkModel::Hold : LinkModel::Pipelined);
    if (i % 3 == 0) a.clear_times();
    if (i % 4 == 1) {
      for (TransferId id = 0; id < static_cast<TransferId>(a.size()); id += 3)
        a.set_channel(id, static_cast<uint16_t>(id % 5));
      if (a.size() > 0) a.set_rate(0, 1'000'000);
    }
    const std::optional<Algorithm> b = through_columns(a, a);
    ASSERT_TRUE(b) << "algorithm " << i;
    expect_same_transfers(a, *b);
  }
  const topo::Topology t = topo::generate("ring:4");
  Collective c = Collective::over_all(t, CollectiveKind::AllReduce, 2);
  const Algorithm empty = empty_algorithm("hand", t, c, 1024, LinkModel::Pipelined);
  std::vector<TransferSpec> specs(3);
  specs[0] = {.chunk = 0,
              .src = 0,
              .dst = 1,
              .op = Op::Reduce,
              .route = {0},
              .deps = {2},
              .start = 5,
              .end = 9,
              .rate = 7'000'000'000,
              .channel = 65535,
              .from_input = true,
              .count = 8};
  specs[1] = {.chunk = 7, .src = 1, .dst = 1, .route = {}, .deps = {0, 2}};
  specs[2] = {.chunk = 3, .src = 2, .dst = 3, .route = {2, 3}, .deps = {}, .count = 2};
  const Algorithm hand = with_transfers(empty, specs);
  const std::optional<Algorithm> back = through_columns(hand, hand);
  ASSERT_TRUE(back);
  expect_same_transfers(hand, *back);
}

// Every cut short of the whole (but none at all: no transfers), bytes of another kind, and
// transfers that do not fit the head (chunks past its collective's, a message past its last chunk)
// are refused.
TEST(AlgorithmColumns, RefuseWhatIsNotTheirsOrDoesNotCheck) {
  const topo::Topology t = topo::generate("ring:4");
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather, 2);
  const Algorithm a = testing::tree_algorithm(t, c, 4096, LinkModel::Pipelined);
  ASSERT_GT(a.size(), 4U);
  const std::string bytes = transfers_to_columns(a);
  for (size_t cut = 1; cut < bytes.size(); ++cut) {
    Algorithm b = with_transfers(a, {});
    EXPECT_FALSE(add_transfers_from_columns(std::string_view(bytes).substr(0, cut), b))
        << "cut at " << cut << " of " << bytes.size();
  }
  for (const std::string& other :
       {std::string("not columns"), std::string(64, '\xff'), std::string("{\"transfers\": []}")}) {
    Algorithm b = with_transfers(a, {});
    EXPECT_FALSE(add_transfers_from_columns(other, b)) << other;
  }
  // The same transfers into the head of a collective of one chunk per NPU: chunk ids past it.
  Collective fewer = c;
  fewer.chunks_per_npu = 1;
  Algorithm small = empty_algorithm("small", t, fewer, 4096, LinkModel::Pipelined);
  EXPECT_FALSE(add_transfers_from_columns(bytes, small));
  // A message of two chunks from the last chunk.
  Algorithm last = empty_algorithm("last", t, c, 4096, LinkModel::Pipelined);
  last.add(static_cast<ChunkId>(c.num_chunks() - 1), 0, 1, std::vector<LinkId>{0}, Op::Copy, {}, -1,
           -1, 0, 0, false, 1);
  std::string one = transfers_to_columns(last);
  Algorithm two = with_transfers(last, {});
  two.add(static_cast<ChunkId>(c.num_chunks() - 1), 0, 1, std::vector<LinkId>{0}, Op::Copy, {}, -1,
          -1, 0, 0, false, 2);
  Algorithm head = with_transfers(last, {});
  EXPECT_TRUE(add_transfers_from_columns(one, head));
  head = with_transfers(last, {});
  EXPECT_FALSE(add_transfers_from_columns(transfers_to_columns(two), head));
}

}  // namespace
}  // namespace tenet::synth
