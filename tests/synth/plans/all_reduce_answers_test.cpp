// An All-Reduce as its halves' own answers in turn (detail::answers_in_turn, and the chunk
// search's PortfolioOptions::halves_answers): each half's search drains its own answer and may
// pick its own method, which the whole's search, whose halves share one method and overlap, cannot
// do. On `hetero-asymmetric.yaml` (links that differ both ways), All-Reduce of 1 MiB, the whole's
// answer takes 45.36 us and its halves' in turn 43.07 us (the Reduce-Scatter the matcher on the
// flow plan, the All-Gather the matcher).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "synth/bounds/lower_bound.hpp"
#include "synth/plans/all_reduce.hpp"
#include "synth/plans/reversed_answer.hpp"
#include "synth/synthesizer.hpp"
#include "synth/verify/verify.hpp"
#include "tests/synth/test_support.hpp"
#include "topo/generators.hpp"

namespace tenet::synth {
namespace {

constexpr Bytes kKiB = Bytes{1} << 10;
constexpr Bytes kMiB = Bytes{1} << 20;

Algorithm made(const topo::Topology& t, CollectiveKind kind, int k, Bytes size) {
  const Collective c = Collective::over_all(t, kind, k);
  return synthesize(t, c, c.chunk_bytes_for(size), SynthOptions{});
}

// Each NPU sends its own chunks' All-Gather (the first copy of a chunk from its origin) only once
// every reduction into it has arrived.
void expect_in_turn(const topo::Topology& t, const Algorithm& a) {
  std::map<NodeId, Time> reduced;  // per NPU, its last reduction's arrival
  for (const Transfer& x : a.transfers())
    if (x.op == Op::Reduce) reduced[x.dst] = std::max(reduced[x.dst], x.end);
  int own = 0;
  for (const Transfer& x : a.transfers()) {
    if (x.op != Op::Copy || x.src != a.collective.ranks[a.collective.origin(x.chunk)]) continue;
    ++own;
    EXPECT_GE(x.start, reduced[x.src]) << "chunk " << x.chunk << " leaves " << t.node(x.src).name;
  }
  EXPECT_GT(own, 0);
}

// Halves made at 2 and 4 chunks per NPU join at 4: the Reduce-Scatter's transfers carry its
// chunks' halves as messages of two (the same bytes), and the All-Reduce verifies
// and claims its timed time.
TEST(AnswersInTurn, JoinHalvesOfDifferentCounts) {
  const topo::Topology t = testing::example_with_steps("hetero-asymmetric.yaml");
  const Bytes size = static_cast<Bytes>(t.num_npus()) * 4 * 64 * kKiB;  // (whole chunks at 2 and 4)
  const Algorithm rs = made(t, CollectiveKind::ReduceScatter, 2, size);
  const Algorithm ag = made(t, CollectiveKind::AllGather, 4, size);
  const Collective c = Collective::over_all(t, CollectiveKind::AllReduce, 1);
  const std::optional<Algorithm> a = detail::answers_in_turn(t, c, rs, ag);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->collective.kind, CollectiveKind::AllReduce);
  EXPECT_EQ(a->collective.chunks_per_npu, 4);
  EXPECT_EQ(a->chunk_bytes, ag.chunk_bytes);
  EXPECT_EQ(a->size(), rs.size() + ag.size());
  EXPECT_TRUE(a->provenance.halves_answers);
  EXPECT_TRUE(a->provenance.halves_in_turn);
  EXPECT_EQ(a->provenance.producer, rs.provenance.producer);
  for (TransferId id = 0; id < static_cast<TransferId>(rs.size()); ++id) {
    EXPECT_EQ((*a)[id].chunk, 2 * rs[id].chunk);
    EXPECT_EQ((*a)[id].count, 2 * rs[id].count);
    EXPECT_EQ(a->bytes(id), rs.bytes(id));
  }
  const Report r = verify(t, *a);
  ASSERT_TRUE(r.correct()) << testing::violation_text(r);
  EXPECT_EQ(r.collective_time, a->claimed_time);
  EXPECT_GE(a->claimed_time, lower_bound(t, a->collective, a->chunk_bytes).total);
  expect_in_turn(t, *a);
}

// Counts that do not divide one another, or chunk sizes that do not, join nothing.
TEST(AnswersInTurn, NothingWhereTheChunksDoNotLineUp) {
  const topo::Topology t = testing::example_with_steps("hetero-asymmetric.yaml");
  const Collective c = Collective::over_all(t, CollectiveKind::AllReduce, 1);
  const Bytes size = static_cast<Bytes>(t.num_npus()) * 6 * 64 * kKiB;
  EXPECT_FALSE(detail::answers_in_turn(t, c, made(t, CollectiveKind::ReduceScatter, 2, size),
                                       made(t, CollectiveKind::AllGather, 3, size))
                   .has_value());
  // 2 chunks of 3 B against 4 of 2 B (the sizes rounded up): a chunk is not two of the others.
  const Bytes odd = static_cast<Bytes>(t.num_npus()) * 5;
  EXPECT_FALSE(detail::answers_in_turn(t, c, made(t, CollectiveKind::ReduceScatter, 2, odd),
                                       made(t, CollectiveKind::AllGather, 4, odd))
                   .has_value());
}

// The chunk search keeps the halves' own answers where they are faster: on hetero-asymmetric.yaml
// at 1 MiB, 43.07 us against the whole's 45.36 us.
TEST(AnswersInTurn, TheChunkSearchTakesTheHalvesWhereFaster) {
  const topo::Topology t = testing::example_with_steps("hetero-asymmetric.yaml");
  const Collective c = Collective::over_all(t, CollectiveKind::AllReduce);
  SynthOptions whole;
  whole.portfolio.halves_answers = false;
  const ChunkingResult alone = synthesize_auto_chunks(t, c, kMiB, whole);
  const ChunkingResult r = synthesize_auto_chunks(t, c, kMiB, SynthOptions{});
  EXPECT_FALSE(alone.algorithm.provenance.halves_answers);
  EXPECT_TRUE(r.algorithm.provenance.halves_answers) << r.algorithm.method;
  EXPECT_LT(r.algorithm.claimed_time, alone.algorithm.claimed_time);
  EXPECT_EQ(r.chunks_per_npu, r.algorithm.collective.chunks_per_npu);
  const Report report = verify(t, r.algorithm);
  ASSERT_TRUE(report.correct()) << testing::violation_text(report);
  EXPECT_EQ(report.collective_time, r.algorithm.claimed_time);
  expect_in_turn(t, r.algorithm);
}

// On a fabric that is its own reverse whose answer is not the flow plan's pipelines
// (`hetmesh2d:8x8`, All-Reduce of 16 MiB, the matcher), the halves' own answers list the
// Reduce-Scatter's first reductions again (its All-Gather's answer reversed in time, spread_head),
// which the whole's finishing passes cannot: 319.4 us against the whole's 324.0 us where measured.
// Without the tails listed again the halves are not searched there (their answers mirror the
// whole's halves).
TEST(AnswersInTurn, OnATwinFabricTheHalvesListTheReduceScattersHeadAgain) {
  const topo::Topology t = testing::charging(topo::generate("hetmesh2d:8x8"));
  ASSERT_TRUE(topo::twin_links(t));
  const Collective c = Collective::over_all(t, CollectiveKind::AllReduce);
  SynthOptions whole;
  whole.portfolio.halves_answers = false;
  const ChunkingResult alone = synthesize_auto_chunks(t, c, 16 * kMiB, whole);
  const ChunkingResult r = synthesize_auto_chunks(t, c, 16 * kMiB, SynthOptions{});
  EXPECT_NE(alone.algorithm.provenance.producer, Producer::FlowPlanPipelines);
  EXPECT_TRUE(r.algorithm.provenance.halves_answers) << r.algorithm.method;
  EXPECT_LT(r.algorithm.claimed_time, alone.algorithm.claimed_time);
  const Report report = verify(t, r.algorithm);
  ASSERT_TRUE(report.correct()) << testing::violation_text(report);
  EXPECT_EQ(report.collective_time, r.algorithm.claimed_time);
  expect_in_turn(t, r.algorithm);
  SynthOptions untailed;
  untailed.portfolio.tail_spread = false;
  EXPECT_FALSE(
      synthesize_auto_chunks(t, c, 16 * kMiB, untailed).algorithm.provenance.halves_answers);
}

// An All-Gather whose channels are serial (the flow plan's pipelines: a transfer of a stream at a
// time) reversed in time is a Reduce-Scatter on channel 0 alone (reduce_scatter_reversed), which
// no setting makes serial: joined in turn it takes the All-Gather's setting, each half served as
// when timed alone, and the join ends no later than the two one after the other. (Before, such a
// pair was joined with each setting and the faster kept: ForestColl's MI250 box at 1 GiB, the
// All-Gather's, 6.503 against 6.638 ms, where measured.)
TEST(AnswersInTurn, AReversedReduceScatterTakesTheAllGathersChannels) {
  const topo::Topology t = testing::example_with_steps("mi250-box.yaml");
  const std::optional<std::vector<LinkId>> twins = topo::twin_links(t);
  ASSERT_TRUE(twins);
  const int k = 64;  // (32 MiB in chunks of 32 KiB: the pipelines' serial variant, where measured)
  const Bytes size = static_cast<Bytes>(t.num_npus()) * k * 32 * kKiB;
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather, k);
  SynthOptions pipelines;
  pipelines.method = SynthMethod::PlanPipeline;
  const Algorithm ag = synthesize(t, c, c.chunk_bytes_for(size), pipelines);
  ASSERT_TRUE(ag.serial_channels);
  const std::optional<Algorithm> rs = detail::reduce_scatter_reversed(t, ag, *twins);
  ASSERT_TRUE(rs.has_value());
  ASSERT_FALSE(rs->serial_channels);
  for (const Transfer& x : rs->transfers()) ASSERT_EQ(x.channel, 0);
  const std::optional<Algorithm> a =
      detail::answers_in_turn(t, Collective::over_all(t, CollectiveKind::AllReduce, k), *rs, ag);
  ASSERT_TRUE(a.has_value());
  EXPECT_TRUE(a->serial_channels);
  EXPECT_LE(a->claimed_time, rs->claimed_time + ag.claimed_time);
  const Report report = verify(t, *a);
  ASSERT_TRUE(report.correct()) << testing::violation_text(report);
  EXPECT_EQ(report.collective_time, a->claimed_time);
  expect_in_turn(t, *a);
}

// On seeded random fabrics (switches, router NPUs, links that differ both ways; half with steps),
// the chunk search's All-Reduce with its halves' answers beside it is never slower than without,
// verifies, claims its timed time and keeps to the bound.
TEST(AnswersInTurn, NeverSlowerOnRandomFabrics) {
  std::mt19937_64 rng(58);
  int taken = 0;
  for (int i = 0; i < 40; ++i) {
    const topo::Topology t = testing::random_topology(rng, 8, i % 2 == 0);
    const Collective c = Collective::over_all(t, CollectiveKind::AllReduce);
    const Bytes size = kMiB + static_cast<Bytes>(rng() % (8 * kMiB));
    SynthOptions whole;
    whole.portfolio.halves_answers = false;
    const ChunkingResult alone = synthesize_auto_chunks(t, c, size, whole, 8);
    const ChunkingResult r = synthesize_auto_chunks(t, c, size, SynthOptions{}, 8);
    const std::string what = t.name() + " " + std::to_string(size) + " B";
    EXPECT_LE(r.algorithm.claimed_time, alone.algorithm.claimed_time) << what;
    taken += r.algorithm.provenance.halves_answers;
    const Report report = verify(t, r.algorithm);
    ASSERT_TRUE(report.correct()) << what << testing::violation_text(report);
    EXPECT_EQ(report.collective_time, r.algorithm.claimed_time) << what;
    EXPECT_GE(r.algorithm.claimed_time,
              lower_bound(t, r.algorithm.collective, r.algorithm.chunk_bytes).total)
        << what;
  }
  EXPECT_GE(taken, 1);  // (2 of the 40 where measured: the halves' path is exercised)
  RecordProperty("halves_taken", taken);
}

// On seeded random fabrics of up to 16 NPUs (half with steps) at 4 to 16 chunks per NPU, the
// halves' answers joined in turn never end after the halves one after the other (each as timed
// alone) where the two serve their channels alike (Algorithm::serial_channels: the joined
// algorithm has one setting): where their traffic slows each other more than it overlaps, the
// All-Gather waits for the Reduce-Scatter's end. (ForestColl's 4 MI250 boxes at 1 GiB, where
// measured: 6.841 ms in turn, 6.623 ms one after the other. Here, joined in turn alone, one of the
// 40 ended after its halves by 5.2 %.) The joined All-Reduce verifies and claims its timed time.
TEST(AnswersInTurn, NeverAfterTheHalvesOneAfterTheOther) {
  std::mt19937_64 rng(87);
  int alike = 0;
  for (int i = 0; i < 40; ++i) {
    const topo::Topology t = testing::random_topology(rng, 16, i % 2 == 0);
    const int k = 4 << (rng() % 3);
    const Bytes size = static_cast<Bytes>(t.num_npus()) * k * (64 + rng() % 512) * kKiB;
    const Algorithm rs = made(t, CollectiveKind::ReduceScatter, k, size);
    const Algorithm ag = made(t, CollectiveKind::AllGather, k, size);
    const std::optional<Algorithm> a =
        detail::answers_in_turn(t, Collective::over_all(t, CollectiveKind::AllReduce, k), rs, ag);
    const std::string what = t.name() + " " + std::to_string(k) + " chunks per NPU";
    ASSERT_TRUE(a.has_value()) << what;
    if (rs.serial_channels == ag.serial_channels) {
      ++alike;
      EXPECT_LE(a->claimed_time, rs.claimed_time + ag.claimed_time) << what;
    }
    const Report report = verify(t, *a);
    ASSERT_TRUE(report.correct()) << what << testing::violation_text(report);
    EXPECT_EQ(report.collective_time, a->claimed_time) << what;
    expect_in_turn(t, *a);
  }
  EXPECT_GE(alike, 30);
}

}  // namespace
}  // namespace tenet::synth
