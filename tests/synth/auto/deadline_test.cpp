// The deadline (--time-limit, SIGINT): a search past it answers with the best verified algorithm
// found by then, says so, and that answer is not kept in the cache as the whole search's.
#include "synth/auto/deadline.hpp"

#include <gtest/gtest.h>

#include "synth/auto/portfolio.hpp"
#include "synth/cache/algorithm_cache.hpp"
#include "synth/plans/server_plan.hpp"
#include "synth/producers.hpp"
#include "synth/synthesizer.hpp"
#include "synth/verify/verify.hpp"
#include "tests/topo/test_util.hpp"
#include "topo/generators.hpp"

namespace tenet::synth {
namespace {

constexpr Bytes kSize = Bytes{64} << 20;

// `spec`, its links' per-step costs charged.
topo::Topology stepped(const char* spec) {
  topo::Topology t = topo::generate(spec);
  t.set_charges_steps(true);
  return t;
}

// The All-Reduce search of `t` under `d`, interrupted before it begins.
ChunkingResult interrupted_search(const topo::Topology& t, Deadline& d) {
  d.interrupt();
  SynthOptions o;
  o.deadline = &d;
  return synthesize_auto_chunks(t, Collective::over_all(t, CollectiveKind::AllReduce), kSize, o,
                                16);
}

TEST(Deadline, NoLimitIsNeverReached) {
  const Deadline d;
  EXPECT_FALSE(d.limited());
  EXPECT_FALSE(d.reached(1e6));
  EXPECT_FALSE(d.stopped());
}

TEST(Deadline, ALimitIsReachedByAStepThatWouldEndPastIt) {
  const Deadline d(3600);
  EXPECT_FALSE(d.reached(1));
  EXPECT_FALSE(d.stopped());
  EXPECT_TRUE(d.reached(7200));  // a step expected to take two hours would end past it
  EXPECT_TRUE(d.stopped());
}

// A reserve (the time to verify and write the answer) moves the limit the searches see earlier by
// that much; a reserve of the whole limit or more is a limit reached at once.
TEST(Deadline, AReserveIsKeptBackFromTheSearches) {
  const Deadline d(7200, 3600);
  EXPECT_FALSE(d.reached(1));
  EXPECT_TRUE(d.reached(5400));    // before the limit, but into the reserve
  const Deadline all(3600, 3600);  // the searches' limit is now: any step ends past it
  EXPECT_TRUE(all.limited());
  EXPECT_TRUE(all.reached(1e-3));
  const Deadline more(1, 3600);
  EXPECT_TRUE(more.reached(1e-3));
  const Deadline negative(3600, -7200);  // no reserve: the whole limit
  EXPECT_FALSE(negative.reached(1800));
}

TEST(Deadline, AnInterruptionEndsTheSearchesAtOnce) {
  Deadline d;
  d.interrupt();
  EXPECT_TRUE(d.interrupted());
  EXPECT_TRUE(d.reached());
  EXPECT_TRUE(d.stopped());
}

// A search that would try several counts (a mixed-speed leaf-spine All-Reduce), with and without
// a deadline that has passed: the first count always runs and is verified correct; the search
// stops there and says so.
TEST(Deadline, ASearchPastItAnswersWithItsFirstCount) {
  const topo::Topology t = stepped("leafspine:2x4");
  const Collective c = Collective::over_all(t, CollectiveKind::AllReduce);
  const ChunkingResult whole = synthesize_auto_chunks(t, c, kSize, {}, 16);
  ASSERT_GT(whole.tried.size(), 1u);
  Deadline d;
  const ChunkingResult early = interrupted_search(t, d);
  EXPECT_TRUE(d.stopped());
  EXPECT_LT(early.tried.size(), whole.tried.size());
  EXPECT_EQ(early.tried.front().chunks_per_npu, 1);
  EXPECT_TRUE(verify(t, early.algorithm).correct());
  EXPECT_GE(early.algorithm.claimed_time, whole.algorithm.claimed_time);
}

// A first count made at once says little of the next: 1024 NPUs' All-Reduce at 2 chunks per NPU
// makes about 4.2 million transfers, at least 4.2 s (kSearchSecondsPerTransfer), so with 2 s left
// the search stops after its first count; with an hour left it goes on.
TEST(Deadline, ACountOfMillionsOfTransfersIsNotBegunNearTheLimit) {
  const topo::Topology t = topo::generate("switch:1024");
  const Collective c = Collective::over_all(t, CollectiveKind::AllReduce);
  const ChunkMaker instant = [&](const Collective& at, Bytes chunk) -> ChunkMade {
    Algorithm a = empty_algorithm("instant", t, at, chunk, LinkModel::Pipelined);
    a.claimed_time = 1'000'000'000 / at.chunks_per_npu;  // each count faster
    return a;
  };
  constexpr int64_t kNoBudget = int64_t{1} << 40;
  const Deadline soon(2);
  const ChunkingResult early = best_chunking(c, kSize, 4, instant, 1, {}, kNoBudget, -1, 0, &soon);
  EXPECT_EQ(early.tried.size(), 1u);
  EXPECT_TRUE(soon.stopped());
  const Deadline later(3600);
  const ChunkingResult whole = best_chunking(c, kSize, 4, instant, 1, {}, kNoBudget, -1, 0, &later);
  EXPECT_EQ(whole.tried.size(), 3u);
  EXPECT_FALSE(later.stopped());
}

// With a limit, a baseline races tenet's answer only where its first count is small or would end
// before the limit: on 1024 NPUs halving-doubling's 20,480 transfers, not a ring's 2M within a
// second of it or past it (nvcluster:128x8,net=fattree All-Reduce of 1 GiB at --time-limit 5 took
// 10.1 s of wall time, 6.8 s without them); with an hour left every one, and on 16 NPUs every one
// always.
TEST(Deadline, PastItOnlyQuickBaselinesRace) {
  const topo::Topology t = topo::generate("switch:1024");
  const Collective c = Collective::over_all(t, CollectiveKind::AllReduce);
  const BaselineSpec ring{BaselineKind::Ring, {}}, rhd{BaselineKind::Rhd, {}};
  EXPECT_TRUE(detail::races_in_time(ring, c, nullptr));
  const Deadline later(3600);
  EXPECT_TRUE(detail::races_in_time(ring, c, &later));
  EXPECT_FALSE(later.stopped());
  const Deadline soon(1);  // the ring's 2M transfers would take at least 2 s
  EXPECT_FALSE(detail::races_in_time(ring, c, &soon));
  EXPECT_TRUE(detail::races_in_time(rhd, c, &soon));
  Deadline past;
  past.interrupt();
  EXPECT_FALSE(detail::races_in_time(ring, c, &past));
  EXPECT_TRUE(detail::races_in_time(rhd, c, &past));
  EXPECT_TRUE(past.stopped());
  const topo::Topology small = topo::generate("switch:16");
  EXPECT_TRUE(
      detail::races_in_time(ring, Collective::over_all(small, CollectiveKind::AllReduce), &past));
}

// A step given up midway (GiveUp): due once the limit less the reserve has passed, or at an
// interruption; never without a limit otherwise. A due point throws GivenUp and records the stop.
TEST(GiveUp, IsDueAtTheLimitLessItsReserve) {
  const Deadline hour(3600);
  EXPECT_FALSE(GiveUp(hour, 60).due());
  EXPECT_TRUE(GiveUp(hour, 7200).due());  // its reserve is more than the whole limit
  EXPECT_NO_THROW(GiveUp(hour, 60).point());
  EXPECT_FALSE(hour.stopped());
  EXPECT_THROW(GiveUp(hour, 7200).point(), GivenUp);
  EXPECT_TRUE(hour.stopped());
  Deadline none;
  EXPECT_FALSE(GiveUp(none, 1e9).due());
  none.interrupt();
  EXPECT_TRUE(GiveUp(none, 0).due());
}

// The long loops give up at their points: the server plan (per source) and the matcher (every
// hundredth of its deliveries and every kGiveUpMatches sends), not only between steps. One not
// due changes nothing.
TEST(GiveUp, TheServerPlanAndTheMatcherStopAtTheirPoints) {
  const topo::Topology t = topo::generate("leafspine:4x8");
  Deadline past;
  past.interrupt();
  const GiveUp due(past, 0);
  EXPECT_THROW(plan_servers(t, 1 << 20, LinkModel::Pipelined, 8, &due), GivenUp);
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather);
  SynthOptions o;
  o.method = SynthMethod::Matcher;
  o.give_up = &due;
  EXPECT_THROW(synthesize(t, c, 1 << 20, o), GivenUp);
  const Deadline hour(3600);
  const GiveUp later(hour, 0);
  o.give_up = &later;
  const Algorithm with = synthesize(t, c, 1 << 20, o);
  o.give_up = nullptr;
  const Algorithm without = synthesize(t, c, 1 << 20, o);
  EXPECT_EQ(with.claimed_time, without.claimed_time);
  EXPECT_EQ(with.size(), without.size());
}

// A first count of over kAutoChunkTurnTransfers transfers (384 NPUs' All-Reduce at one chunk per
// NPU: 294,144) is given up for the quick answer made before it (halving-doubling or Bruck at one
// chunk per NPU) once the limit is reached, instead of running past it (leafspine:32x32
// All-Reduce of 64 MiB at --time-limit 5: 9.5 s of wall time, its first count 6.7 s; 3.9 s given
// up). The answer is verified correct, says so, and is not the whole search's.
TEST(GiveUp, ALargeFirstCountIsGivenUpForTheQuickAnswer) {
  const topo::Topology t = stepped("leafspine:16x24");
  Deadline past;
  const ChunkingResult early = interrupted_search(t, past);
  EXPECT_TRUE(past.stopped());
  EXPECT_EQ(early.tried.size(), 1u);
  EXPECT_EQ(early.algorithm.provenance.producer, Producer::Baseline);
  EXPECT_NE(early.algorithm.method.find("interrupted at its first count"), std::string::npos)
      << early.algorithm.method;
  EXPECT_TRUE(verify(t, early.algorithm).correct());
}

TEST(Deadline, AnEarlyAnswerIsNotCached) {
  topo::testing::TempDir tmp;
  const topo::Topology t = stepped("leafspine:2x4");
  const Collective c = Collective::over_all(t, CollectiveKind::AllReduce);
  AlgorithmCache cache(tmp.file("cache"));
  Deadline d;
  d.interrupt();
  SynthOptions o;
  o.cache = &cache;
  o.deadline = &d;
  make_algorithm_auto_chunks("tenet", t, c, kSize, o, 16);
  EXPECT_EQ(cache.stores(), 0);
  o.deadline = nullptr;  // the whole search is kept, and found by the next one
  make_algorithm_auto_chunks("tenet", t, c, kSize, o, 16);
  EXPECT_EQ(cache.stores(), 1);
  make_algorithm_auto_chunks("tenet", t, c, kSize, o, 16);
  EXPECT_EQ(cache.hits(), 1);
}

}  // namespace
}  // namespace tenet::synth
