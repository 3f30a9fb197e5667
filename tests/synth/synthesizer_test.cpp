#include "synth/synthesizer.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <random>

#include "synth/baselines/baselines.hpp"
#include "synth/bounds/lower_bound.hpp"
#include "synth/cost/timing.hpp"
#include "synth/formats/algorithm_json.hpp"
#include "synth/producers.hpp"
#include "synth/tuning.hpp"
#include "synth/verify/verify.hpp"
#include "tests/synth/synthesizer_support.hpp"
#include "tests/synth/test_support.hpp"
#include "topo/bounds.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"

namespace tenet::synth {
namespace {

using testing::TacosMesh;

// The chunk-search tests' times: T(k) = A + B/k + C k, with A, B (a multiple of every count, so
// exact) and C drawn from `rng` in that order.
struct TimeCurve {
  Time a, b, per;
  Time operator()(int k) const { return a + b / k + per * k; }
};
TimeCurve random_curve(std::mt19937_64& rng) {
  const Time a = static_cast<Time>(rng() % 1'000'000), b = static_cast<Time>(rng() % 1000) << 12,
             per = static_cast<Time>(rng() % 2000);
  return {a, b, per};
}

// An algorithm for `c` that claims `time` (the chunk-search tests' makers).
Algorithm claiming(const Collective& c, Time time) {
  Algorithm x;
  x.collective = c;
  x.claimed_time = time;
  return x;
}

constexpr Bytes kChunk = 1 << 20;
constexpr Bandwidth kBw = 50'000'000'000;
constexpr Time kLat = 500'000;
const Time kSer = transfer_time(kChunk, kBw);

// A random communicator: all NPUs, or (half the time) a random subset of at least two.
Collective random_communicator(std::mt19937_64& rng, const topo::Topology& t, CollectiveKind kind,
                               int k) {
  Collective c = Collective::over_all(t, kind, k);
  if (t.num_npus() > 2 && rng() % 2) {
    std::shuffle(c.ranks.begin(), c.ranks.end(), rng);
    c.ranks.resize(2 + rng() % (t.num_npus() - 1));
  }
  c.root = static_cast<int>(rng() % c.ranks.size());
  return c;
}

// 200 random topologies (heterogeneous, asymmetric, some switches, some router NPUs) x every
// collective x 1-4 chunks per NPU x both link models: every algorithm verifies, and its claimed
// time is the timing model's.
TEST(SynthesizerProperty, EveryAlgorithmOnRandomTopologiesVerifies) {
  std::mt19937_64 rng(4242);
  int checked = 0;
  for (int i = 0; i < 200; ++i) {
    const auto t = testing::random_topology(rng, 10);
    for (CollectiveKind kind : kAllCollectives) {
      const int k = 1 + (i + static_cast<int>(kind)) % 4;
      const Collective c = random_communicator(rng, t, kind, k);
      SynthOptions o;
      o.seed = rng();
      o.link_model = (i + static_cast<int>(kind)) % 3 == 0 ? LinkModel::Hold : LinkModel::Pipelined;
      const Bytes chunk = 1 + static_cast<Bytes>(rng() % 2'000'000);
      Algorithm a = synthesize(t, c, chunk, o);
      const Report r = verify(t, a, {.max_reported = 5, .lower_bound = false});
      ASSERT_TRUE(r.correct()) << "topology " << i << ", " << c.describe() << ", ranks "
                               << fmt::format("{}", fmt::join(c.ranks, " "))
                               << testing::violation_text(r);
      // The synthesizer sends nothing twice; a baseline it picked (faster) may relay through an
      // NPU that already holds the chunk.
      if (a.provenance.producer != Producer::Baseline) {
        EXPECT_EQ(r.warning_count, 0u) << "topology " << i << ", " << c.describe() << " ("
                                       << a.method << ")" << testing::violation_text(r);
      }
      Algorithm retimed = a;
      retimed.clear_times();
      EXPECT_EQ(time(t, retimed).collective_time, a.claimed_time) << c.describe();
      ++checked;
    }
  }
  EXPECT_EQ(checked, 200 * 8);
}

TEST(Synthesizer, SameSeedSameBytes) {
  const auto t = topo::generate("torus2d:4x4,bw=50GB/s/25GB/s");
  for (CollectiveKind kind :
       {CollectiveKind::AllReduce, CollectiveKind::AllToAll, CollectiveKind::Gather}) {
    const Collective c = Collective::over_all(t, kind, 2);
    SynthOptions o;
    o.seed = 7;
    o.matcher.priority = ChunkPriority::Random;
    EXPECT_EQ(to_json(synthesize(t, c, kChunk, o)), to_json(synthesize(t, c, kChunk, o)));
    o.restarts = 4;  // threads finish in any order; the choice does not depend on it
    EXPECT_EQ(to_json(synthesize(t, c, kChunk, o)), to_json(synthesize(t, c, kChunk, o)));
  }
}

TEST(Synthesizer, RestartsNeverLoseToTheFirstSeed) {
  const auto t = topo::generate("hetmesh2d:4x4");
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather, 2);
  SynthOptions one;
  one.matcher.priority = ChunkPriority::Random;
  SynthOptions many = one;
  many.restarts = 6;
  EXPECT_LE(synthesize(t, c, kChunk, many).claimed_time,
            synthesize(t, c, kChunk, one).claimed_time);
}

TEST(SynthesizerOptima, UnidirectionalRingIsTheRingClosedForm) {
  for (int n : {3, 4, 8, 16}) {
    const auto t = topo::generate(fmt::format("ring:{},bidir=false,bw=50GB/s,lat=0.5us", n));
    const Algorithm a = synthesize(t, Collective::over_all(t, CollectiveKind::AllGather), kChunk);
    EXPECT_EQ(a.claimed_time, (n - 1) * (kLat + kSer)) << n;  // (N-1)(alpha + (M/N)/B)
  }
}

TEST(SynthesizerOptima, FullyConnectedIsOneStep) {
  for (int n : {3, 8, 16}) {
    const auto t = topo::generate(fmt::format("fc:{},bw=50GB/s,lat=0.5us", n));
    const Algorithm a = synthesize(t, Collective::over_all(t, CollectiveKind::AllGather), kChunk);
    EXPECT_EQ(a.claimed_time, kLat + kSer) << n;  // alpha + (M/N)/B
  }
}

TEST(SynthesizerOptima, StarIsTheIngressBoundPlusLatency) {
  for (int n : {3, 5, 8, 16, 32}) {
    const auto t = topo::generate(fmt::format("switch:{},bw=50GB/s,lat=0.5us", n));
    const Collective c = Collective::over_all(t, CollectiveKind::AllGather);
    const Algorithm a = synthesize(t, c, kChunk);
    const Time ingress = topo::allgather_ingress_bound(t).time(n * kChunk);
    EXPECT_EQ(a.claimed_time, ingress + 2 * kLat) << n;  // two links: NPU -> switch -> NPU
  }
}

TEST(SynthesizerOptima, ReduceScatterOnARingMirrorsAllGather) {
  const auto t = topo::generate("ring:8,bidir=false,bw=50GB/s,lat=0.5us");
  const Algorithm a = synthesize(t, Collective::over_all(t, CollectiveKind::ReduceScatter), kChunk);
  EXPECT_EQ(a.claimed_time, 7 * (kLat + kSer));
  for (const Transfer& x : a.transfers()) EXPECT_EQ(x.op, Op::Reduce);
}

// The public TACOS code's own heterogeneous-mesh tests (astra-sim/tacos,
// tests/test_tacos_mesh_2d_hetero.cpp): All-Gather of a 1 GiB (4 GiB) output over a WxH mesh with
// one bandwidth (GiB/s) along x and another along y, k chunks per NPU, under its hold model. Ours
// is causal (TACOS's own schedules are not always: a chunk that arrives where it already is becomes
// one the sender holds at the arrival, which it may not have held when the transfer started):
// verified under hold and pipelined, its claimed time the verifier's. How fast it is against
// TACOS's own times: SynthesizerQuality.AsFastAsTacosOnItsHeterogeneousMeshes (tests/quality).
TEST(Synthesizer, TacosHeterogeneousMeshesVerify) {
  for (const TacosMesh& x : testing::kTacosMeshes) {
    const auto t = topo::generate(x.spec);
    const auto [c, a] = testing::tacos_hold_run(t, x);
    const Report r = verify(t, a);
    ASSERT_TRUE(r.correct()) << x.spec << ": " << a.method << testing::violation_text(r);
    EXPECT_EQ(r.collective_time, a.claimed_time) << x.spec;
    const Algorithm pipelined = synthesize(t, c, c.chunk_bytes_for(x.output));
    const Report rp = verify(t, pipelined, {.max_reported = 3});
    EXPECT_TRUE(rp.correct()) << x.spec << ": " << pipelined.method << testing::violation_text(rp);
  }
}

// The random choice, with and without slow links yielding, on random topologies (switches,
// router NPUs, groups, mixed speeds): every algorithm verifies and its time is the timing model's.
TEST(SynthesizerProperty, RandomChoiceVerifiesOnRandomTopologies) {
  std::mt19937_64 rng(777);
  int checked = 0;
  for (int i = 0; i < 40; ++i) {
    const auto t = testing::random_topology(rng, 10);
    for (CollectiveKind kind :
         {CollectiveKind::AllGather, CollectiveKind::ReduceScatter, CollectiveKind::AllReduce,
          CollectiveKind::Broadcast, CollectiveKind::Reduce})
      for (bool yield : {false, true}) {
        const Collective c = random_communicator(rng, t, kind, 1 + i % 3);
        SynthOptions o;
        o.method = SynthMethod::Matcher;
        o.matcher.priority = ChunkPriority::Random;
        o.matcher.slow_links_yield = yield;
        o.seed = rng();
        o.link_model = i % 2 ? LinkModel::Hold : LinkModel::Pipelined;
        const Algorithm a = synthesize(t, c, 1 + static_cast<Bytes>(rng() % 2'000'000), o);
        const Report r = verify(t, a, {.max_reported = 5, .lower_bound = false});
        ASSERT_TRUE(r.correct()) << "topology " << i << ", " << c.describe()
                                 << (yield ? ", yielding" : "") << testing::violation_text(r);
        EXPECT_EQ(r.collective_time, a.claimed_time) << "topology " << i << ", " << c.describe();
        ++checked;
      }
  }
  EXPECT_EQ(checked, 40 * 5 * 2);
}

TEST(Synthesizer, AutoChunkingPicksTheFastest) {
  const auto t = topo::generate("torus2d:4x4");
  const ChunkingResult r =
      synthesize_auto_chunks(t, Collective::over_all(t, CollectiveKind::AllReduce), 64 << 20);
  ASSERT_GE(r.tried.size(), 2u);
  for (const ChunkingResult::Try& x : r.tried)
    EXPECT_GE(x.time, r.algorithm.claimed_time) << x.chunks_per_npu;
  EXPECT_EQ(r.algorithm.collective.chunks_per_npu, r.chunks_per_npu);
  EXPECT_TRUE(verify(t, r.algorithm).correct());
}

// The baselines' chunk searches run side by side (as many as cores and memory allow): the result
// is the one a single thread gets (TENET_MEMORY of one byte leaves room for one search at a time),
// whichever search finishes first.
TEST(Synthesizer, AutoChunkingBaselinesSideBySideAreDeterministic) {
  const char* before = std::getenv("TENET_MEMORY");
  const std::string saved = before ? before : "";
  for (const char* spec : {"leafspine:2x4,spines=2", "ring:16", "switch:8", "mesh2d:3x5"}) {
    const auto t = topo::generate(spec);
    const Collective c = Collective::over_all(t, CollectiveKind::AllReduce);
    ::unsetenv("TENET_MEMORY");
    const ChunkingResult side_by_side = synthesize_auto_chunks(t, c, 16 << 20);
    ::setenv("TENET_MEMORY", "1B", 1);
    const ChunkingResult one_at_a_time = synthesize_auto_chunks(t, c, 16 << 20);
    EXPECT_EQ(to_json(side_by_side.algorithm), to_json(one_at_a_time.algorithm)) << spec;
    EXPECT_EQ(side_by_side.chunks_per_npu, one_at_a_time.chunks_per_npu) << spec;
  }
  if (before)
    ::setenv("TENET_MEMORY", saved.c_str(), 1);
  else
    ::unsetenv("TENET_MEMORY");
}

// A search that reached the bound stops there (a 512-NPU switch's All-Reduce spent 133 s on three
// counts already at 1.0001): no other count can gain more than the slack.
TEST(Synthesizer, AutoChunkingStopsAtTheBound) {
  const auto t = topo::generate("switch:16");
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather);
  const ChunkingResult r = synthesize_auto_chunks(t, c, 256 << 20);
  ASSERT_EQ(r.tried.size(), 1u);  // k = 1 is at the bound
  EXPECT_LE(static_cast<double>(r.algorithm.claimed_time),
            (1 + kChunkSearchSlack) *
                static_cast<double>(lower_bound(t, c, r.algorithm.chunk_bytes).total));
  EXPECT_TRUE(verify(t, r.algorithm).correct());
}

// On a communicator whose first count is large, halving-doubling (P log P transfers) is made first;
// within the slack of the bound it is the answer and nothing else is made (switch:1024's All-Reduce
// of 1 GiB: 14 s of CPU to 0.8). Elsewhere (a torus, where it relays) the search runs as before.
TEST(Synthesizer, AutoChunkingTakesALogStepsBaselineAtTheBoundFirst) {
  const auto t = topo::generate("switch:512");
  const Collective c = Collective::over_all(t, CollectiveKind::AllReduce);
  const ChunkingResult r = synthesize_auto_chunks(t, c, Bytes{1} << 30);
  ASSERT_EQ(r.tried.size(), 1u);
  EXPECT_EQ(r.algorithm.provenance, Provenance::of_baseline("rhd"));
  EXPECT_EQ(r.algorithm.name, "tenet");
  EXPECT_LE(static_cast<double>(r.algorithm.claimed_time),
            (1 + kChunkSearchSlack) *
                static_cast<double>(lower_bound(t, c, r.algorithm.chunk_bytes).total));
  EXPECT_TRUE(verify(t, r.algorithm).correct());
  // Small communicators search as before (their first count is cheap).
  const auto small = topo::generate("switch:16");
  const ChunkingResult s = synthesize_auto_chunks(
      small, Collective::over_all(small, CollectiveKind::AllReduce), Bytes{1} << 30);
  EXPECT_NE(s.algorithm.provenance, Provenance::of_baseline("rhd"));
}

// An All-Reduce's All-Gather leaves each chunk's owner after every reduction into it there through
// the implicit data dependency: no send lists them (on a switch that was N^3 dependencies).
TEST(Synthesizer, AllReduceDependenciesStayLinear) {
  const auto t = topo::generate("switch:32");
  SynthOptions o;
  o.method = SynthMethod::Matcher;
  const Algorithm a = synthesize(t, Collective::over_all(t, CollectiveKind::AllReduce), kChunk, o);
  size_t deps = 0;
  for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id) deps += a.deps(id).size();
  EXPECT_LE(deps, a.size());
  EXPECT_TRUE(verify(t, a).correct());
}

// Auto leaves the plain matcher out where its work is over SynthOptions::portfolio.matcher_work
// (here made tiny): a plan where one applies (here: switches, no servers: the server plan over the
// dragonfly's pods),
// else (here: over 128 NPUs, no switches, no servers, no translations) the fastest baseline, saying
// so either way; --method matcher still runs it.
TEST(Synthesizer, MatcherOverItsWorkBudgetGivesWayToBaselines) {
  SynthOptions o;
  o.portfolio.matcher_work = 1;
  // A dragonfly (no translations: a switch alone would take the symmetric schedule at the bound),
  // at 32 KiB chunks, where the plan is the fastest.
  topo::Topology switched = topo::generate("dragonfly:4x4x2");
  switched.set_charges_steps(true);
  const Collective all = Collective::over_all(switched, CollectiveKind::AllReduce);
  const Algorithm flat = synthesize(switched, all, Bytes{32} << 10, o);
  EXPECT_EQ(flat.provenance.producer, Producer::ServerPlanMatcher) << flat.method;
  EXPECT_TRUE(flat.provenance.matcher_left_out) << flat.method;
  EXPECT_NE(flat.method.find("switched fabric"), std::string::npos) << flat.method;
  EXPECT_TRUE(verify(switched, flat).correct());
  const auto t = topo::generate("mesh2d:12x11");
  const Collective c = Collective::over_all(t, CollectiveKind::AllReduce);
  const Algorithm a = synthesize(t, c, kChunk, o);
  EXPECT_TRUE(a.provenance.matcher_left_out) << a.method;
  EXPECT_NE(a.method.find("baseline"), std::string::npos) << a.method;
  EXPECT_EQ(a.name, "tenet");
  EXPECT_TRUE(verify(t, a).correct());
  // Where two baselines would not fit in memory at once, each is timed and dropped and the fastest
  // made again: the same algorithm.
  const char* before = std::getenv("TENET_MEMORY");
  const std::string saved = before ? before : "";
  ::setenv("TENET_MEMORY", "1B", 1);
  const Algorithm again = synthesize(t, c, kChunk, o);
  if (before)
    ::setenv("TENET_MEMORY", saved.c_str(), 1);
  else
    ::unsetenv("TENET_MEMORY");
  EXPECT_EQ(to_json(again), to_json(a));
  o.method = SynthMethod::Matcher;
  const Algorithm alone = synthesize(t, c, kChunk, o);
  EXPECT_TRUE(alone.provenance == Provenance(Producer::Matcher))
      << alone.method;  // the plain matcher, nothing else said
  // The default budget keeps it here.
  const Algorithm kept = synthesize(t, c, kChunk);
  EXPECT_FALSE(kept.provenance.matcher_left_out) << kept.method;
}

// On a cluster of servers the plain matcher's budget is
// SynthOptions::portfolio.matcher_work_beside_servers: over it, auto keeps the plans (the server
// plan, the trees) and says it left the matcher out; the default keeps the matcher on a small
// cluster (4 servers of 8).
TEST(Synthesizer, MatcherBesideAServerPlanHasItsOwnBudget) {
  const auto t = topo::generate("nvcluster:4x8,net=rail");
  const Collective c = Collective::over_all(t, CollectiveKind::AllReduce, 2);
  SynthOptions o;
  o.portfolio.matcher_work_beside_servers = 1;
  const Algorithm a = synthesize(t, c, kChunk, o);
  // The matcher on a plan: the flow plan's trees or the server plan.
  EXPECT_TRUE(a.provenance.producer == Producer::FlowPlanMatcher ||
              a.provenance.producer == Producer::ServerPlanMatcher)
      << a.method;
  EXPECT_TRUE(a.provenance.matcher_left_out) << a.method;
  EXPECT_TRUE(verify(t, a).correct());
  const Algorithm kept = synthesize(t, c, kChunk);
  EXPECT_FALSE(kept.provenance.matcher_left_out) << kept.method;
  // Without servers the budget does not apply.
  const auto ring = topo::generate("ring:8");
  const Algorithm on_ring =
      synthesize(ring, Collective::over_all(ring, CollectiveKind::AllReduce), kChunk, o);
  EXPECT_TRUE(on_ring.provenance == Provenance(Producer::Matcher)) << on_ring.method;
}

// A chunk search told a time to beat stops once the times so far say no count ahead can beat it.
// Over random times T(k) = A + B/k + C k (B a multiple of every count, so exact), the search
// never stops before a count that beats the time, and stops early where none can.
TEST(BestChunking, StopsOnlyWhereNoCountAheadCanWin) {
  const auto t =
      topo::generate("switch:256");  // 65,280 transfers at one chunk per NPU: a large search
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather);
  std::mt19937_64 rng(77);
  int stopped_early = 0;
  for (int i = 0; i < 500; ++i) {
    const TimeCurve time_at = random_curve(rng);
    Time best = std::numeric_limits<Time>::max();
    for (int k = 1; k <= 64; k *= 2) best = std::min(best, time_at(k));
    const Time to_beat = best + static_cast<Time>(rng() % 400'000) - 200'000;
    auto make = [&](const Collective& cc, Bytes) {
      return claiming(cc, time_at(cc.chunks_per_npu));
    };
    const ChunkingResult r =
        best_chunking(c, Bytes{1} << 30, 64, make, 1, {}, int64_t{1} << 40, to_beat);
    const ChunkingResult all = best_chunking(c, Bytes{1} << 30, 64, make, 1, {}, int64_t{1} << 40);
    ASSERT_LE(r.tried.size(), all.tried.size()) << i;
    if (all.algorithm.claimed_time < to_beat) {
      EXPECT_EQ(r.algorithm.claimed_time, all.algorithm.claimed_time) << i;
    }
    stopped_early += r.tried.size() < all.tried.size();
  }
  EXPECT_GT(stopped_early, 100);
}

// The matcher's variants double alone past the search's last count where one of them was the
// fastest there. A Broadcast over NPUs 0-7 of random fabric 169 (no flow plan for a group): the
// search ends at 64 x 8 = 512 chunks, still gaining (336.6 us at 256, 336.2 at 512); at 1024 the
// matcher takes 333.9 us, at 2048 335.9 (no gain: the doubling stops). Measured whole, that
// fabric's Broadcast of 256 MiB went from 1.087x the bound (512 chunks) to 1.059x (1024).
TEST(BestChunking, TheMatcherGoesOnPastTheLastCountWhileItGains) {
  const topo::Topology t = topo::generate("random-fabric:169");
  Collective c = Collective::over_all(t, CollectiveKind::Broadcast);
  c.ranks = {0, 1, 2, 3, 4, 5, 6, 7};
  const ChunkingResult r = synthesize_auto_chunks(t, c, 16 << 20);
  Time searched = std::numeric_limits<Time>::max();
  std::vector<int> alone;
  for (const ChunkingResult::Try& x : r.tried) {
    if (!x.alone) searched = std::min(searched, x.time);
    if (x.alone == SynthMethod::Matcher) alone.push_back(x.chunks_per_npu);
  }
  EXPECT_EQ(alone, (std::vector<int>{1024, 2048}));
  EXPECT_EQ(r.chunks_per_npu, 1024);
  EXPECT_LT(r.algorithm.claimed_time, searched);
  EXPECT_TRUE(r.algorithm.provenance == Provenance(Producer::Matcher)) << r.algorithm.method;
  const Report report = verify(t, r.algorithm, {.max_reported = 3});
  EXPECT_TRUE(report.correct()) << testing::violation_text(report);
}

// A rival (a time something raced afterwards reaches) ends a large search once two counts say that
// no count ahead beats it, and never hides a count that does: over random T(k) = A + B/k + C k,
// whenever the full search's fastest beats the rival, the search with it finds the same; the rival
// is asked once at most, at the first large count after the first, and searches end sooner with
// it.
TEST(BestChunking, ARivalEndsTheSearchWhereNoCountAheadBeatsIt) {
  const auto t = topo::generate("switch:256");
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather);
  std::mt19937_64 rng(79);
  int shorter = 0;
  for (int i = 0; i < 500; ++i) {
    const TimeCurve time_at = random_curve(rng);
    auto make = [&](const Collective& cc, Bytes) -> ChunkMade {
      return claiming(cc, time_at(cc.chunks_per_npu));
    };
    const ChunkingResult all = best_chunking(c, Bytes{1} << 30, 64, make, 1, {}, int64_t{1} << 40);
    const Time rival = all.algorithm.claimed_time + static_cast<Time>(rng() % 400'000) - 200'000;
    int asked = 0, asked_at = 0;
    Made<ChunkingResult> searched =
        search_chunks(c, Bytes{1} << 30, 64, make, 1, {}, int64_t{1} << 40, -1, 0, nullptr,
                      [&](const Collective& at) {
                        ++asked;
                        asked_at = at.chunks_per_npu;
                        return rival;
                      });
    ChunkingResult* r = made(searched);
    ASSERT_NE(r, nullptr) << i;
    EXPECT_LE(asked, 1) << i;
    // Asked with the collective at the second count (every count here is large; Blink's trees
    // are made there), once the search got there.
    EXPECT_EQ(asked, all.tried.size() > 1 ? 1 : 0) << i;
    if (asked == 1) {
      EXPECT_EQ(asked_at, 2) << i;
    }
    if (all.algorithm.claimed_time < rival) {
      EXPECT_EQ(r->algorithm.claimed_time, all.algorithm.claimed_time) << i;
    }
    if (asked == 0) {
      EXPECT_EQ(r->tried.size(), all.tried.size()) << i;
    }
    EXPECT_LE(r->tried.size(), all.tried.size()) << i;
    shorter += r->tried.size() < all.tried.size();
  }
  EXPECT_GT(shorter, 10);  // the rival ended searches early
}

// The rival is asked before the second count is made: where the first count's time, halved at
// most per doubling (over `bound`), cannot reach it within the counts allowed, no second count is
// made; where it can, the search goes on. (Tenet's own search against a ring 14x faster at one
// chunk per NPU: dragonfly:8x16x8 All-Reduce of 1 GiB.)
TEST(BestChunking, ARivalOutOfReachEndsTheSearchBeforeTheSecondCount) {
  const auto t = topo::generate("switch:256");
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather);
  constexpr Time kRival = 100'000;
  auto search = [&](Time first, Time bound) {
    int made_counts = 0;
    auto make = [&](const Collective& cc, Bytes) -> ChunkMade {
      ++made_counts;
      return claiming(cc, first / cc.chunks_per_npu);
    };
    Made<ChunkingResult> r = search_chunks(
        c, Bytes{1} << 30, 64, make, 1, {}, int64_t{1} << 40, -1, 0, nullptr,
        [&](const Collective&) { return kRival; }, 0, bound);
    EXPECT_NE(made(r), nullptr);
    return made_counts;
  };
  EXPECT_EQ(search(65 * kRival, 0), 1);       // 65 / 64 over the rival at 64 chunks per NPU
  EXPECT_GT(search(63 * kRival, 0), 1);       // 63 / 64 under it
  EXPECT_EQ(search(20 * kRival, 90'000), 1);  // its excess over 90 us halved: 1.2x the rival at 64
  EXPECT_GT(search(20 * kRival, 0), 1);
}

// Past kAutoChunkTurnTransfers, a count more than kChunkSearchTurn slower than the fastest found at
// the count before ends the search (the next would cost twice as much to build); a smaller rise or
// a rise after an earlier fastest goes on. Below it, where asked (`steep_turn`: tenet's flat
// search), a count over steep_turn slower than the fastest found at the count before ends it too
// where the times had fallen to that fastest (a first count's fastest may be a lucky one); the
// baselines' searches do not ask: a rise there may fall back below the fastest (the double binary
// tree's All-Reduce on switch:16, 48.08 -> 52.67 -> 47.49 ms at 8, 16 and 32 chunks per NPU).
// From kFlatSearchCheapTransfers the flat search also ends at the second count in a row that gains
// nothing on the fastest.
TEST(BestChunking, ATurnPastTheFastestEndsASearch) {
  const auto t = topo::generate("switch:4");
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather);
  auto search = [&](std::map<int, Time> times, int64_t transfers, double steep_turn = 0) {
    auto make = [&](const Collective& cc, Bytes) -> ChunkMade {
      Algorithm x = claiming(cc, times.at(cc.chunks_per_npu));
      x.reserve(static_cast<size_t>(transfers), 0, 0);
      for (int64_t i = 0; i < transfers; ++i) x.add(0, 0, 1, {});
      return x;
    };
    Made<ChunkingResult> r = search_chunks(c, Bytes{1} << 30, 16, make, 1, {}, int64_t{1} << 40, -1,
                                           0, nullptr, {}, steep_turn);
    return std::get<ChunkingResult>(std::move(r));
  };
  auto falling_to = [](Time at4) {
    return std::map<int, Time>{{1, 100'000}, {2, 80'000}, {4, at4}, {8, 90'000}, {16, 10'000}};
  };
  const ChunkingResult turned = search(falling_to(85'000), kAutoChunkTurnTransfers);
  EXPECT_EQ(turned.tried.size(), 3u);  // 6 % over 80
  EXPECT_EQ(turned.chunks_per_npu, 2);
  EXPECT_EQ(search(falling_to(81'000), kAutoChunkTurnTransfers).chunks_per_npu, 16);  // 1.25 %
  // Cheaper: on, unless asked; then 6 % ends it and 4 % goes on.
  const int64_t cheap = kAutoChunkTurnTransfers / 2;
  EXPECT_EQ(search(falling_to(85'000), cheap).chunks_per_npu, 16);
  const ChunkingResult steep = search(falling_to(85'000), cheap, kChunkSearchSteepTurn);
  EXPECT_EQ(steep.tried.size(), 3u);
  EXPECT_EQ(steep.chunks_per_npu, 2);
  EXPECT_EQ(search(falling_to(83'000), cheap, kChunkSearchSteepTurn).chunks_per_npu, 16);
  // The first count's fastest: on.
  EXPECT_EQ(search({{1, 80'000}, {2, 90'000}, {4, 95'000}, {8, 97'000}, {16, 10'000}}, cheap,
                   kChunkSearchSteepTurn)
                .chunks_per_npu,
            16);
  // Two counts in a row that gain nothing on the fastest (the first count's too): the flat search
  // ends there where the collective is over kFlatSearchCheapTransfers transfers (switch:64, 4,032
  // at one chunk per NPU); below it (switch:8, 56 per chunk per NPU), and in the baselines'
  // searches, it goes on.
  const std::map<int, Time> flat = {
      {1, 80'000}, {2, 81'000}, {4, 82'000}, {8, 83'000}, {16, 10'000}};
  auto flat_search = [&](const std::string& spec, double steep) {
    const auto on = topo::generate(spec);
    auto make = [&](const Collective& cc, Bytes) -> ChunkMade {
      return claiming(cc, flat.at(cc.chunks_per_npu));
    };
    Made<ChunkingResult> r =
        search_chunks(Collective::over_all(on, CollectiveKind::AllGather), Bytes{1} << 30, 16, make,
                      1, {}, int64_t{1} << 40, -1, 0, nullptr, {}, steep);
    return std::get<ChunkingResult>(std::move(r));
  };
  ASSERT_GT(transfer_estimate(
                Collective::over_all(topo::generate("switch:64"), CollectiveKind::AllGather)),
            kFlatSearchCheapTransfers);
  const ChunkingResult stopped = flat_search("switch:64", kChunkSearchSteepTurn);
  EXPECT_EQ(stopped.tried.size(), 3u);
  EXPECT_EQ(stopped.chunks_per_npu, 1);
  EXPECT_EQ(flat_search("switch:64", 0).chunks_per_npu, 16);
  EXPECT_EQ(flat_search("switch:8", kChunkSearchSteepTurn).chunks_per_npu, 16);
}

// Counts made as CannotBeat (their floor, a lower bound on their time, at least the time to beat)
// are never kept and do not end the search before a count that beats the time: over random times
// T(k) = A + B/k + C k and floors F(k) = (uA + vB/k + wC k)/8 with u, v, w in 0..8, the search
// finds what the full search finds whenever that beats the time, and says NotMade where every count
// was a floor.
// A count past the first that makes nothing (every method left out there: NotMade) ends the
// search with what it has; a first count that makes nothing is the search's answer.
TEST(BestChunking, ACountThatMakesNothingEndsTheSearch) {
  const auto t = topo::generate("switch:4");
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather);
  auto search = [&](int nothing_from) {
    auto make = [&](const Collective& cc, Bytes) -> ChunkMade {
      if (cc.chunks_per_npu >= nothing_from) return NotMade{"left out"};
      return claiming(cc, 100'000 / cc.chunks_per_npu);
    };
    return search_chunks(c, Bytes{1} << 30, 16, make, 1, {}, int64_t{1} << 40, -1, 0, nullptr);
  };
  const Made<ChunkingResult> cut = search(4);
  ASSERT_TRUE(made(cut));
  EXPECT_EQ(made(cut)->chunks_per_npu, 2);
  EXPECT_EQ(made(cut)->tried.size(), 2u);
  EXPECT_EQ(made(cut)->algorithm.claimed_time, 50'000);
  EXPECT_FALSE(made(search(1)));
}

TEST(BestChunking, FloorsStandInForTimesThatCannotWin) {
  const auto t = topo::generate("switch:256");
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather);
  std::mt19937_64 rng(78);
  int floored = 0, all_floored = 0, won = 0;
  for (int i = 0; i < 500; ++i) {
    const TimeCurve time_at = random_curve(rng);
    const Time u = static_cast<Time>(rng() % 9), v = static_cast<Time>(rng() % 9),
               w = static_cast<Time>(rng() % 9);
    auto floor_at = [&](int k) {
      return (u * time_at.a + v * time_at.b / k + w * time_at.per * k) / 8;
    };
    Time best = std::numeric_limits<Time>::max();
    for (int k = 1; k <= 64; k *= 2) best = std::min(best, time_at(k));
    const Time to_beat = best + static_cast<Time>(rng() % 400'000) - 200'000;
    bool threw = false;
    auto make = [&](const Collective& cc, Bytes) -> ChunkMade {
      EXPECT_LE(floor_at(cc.chunks_per_npu), time_at(cc.chunks_per_npu));
      if (floor_at(cc.chunks_per_npu) >= to_beat) {
        threw = true;
        return CannotBeat{floor_at(cc.chunks_per_npu), 0};
      }
      return claiming(cc, time_at(cc.chunks_per_npu));
    };
    auto full = [&](const Collective& cc, Bytes) {
      return claiming(cc, time_at(cc.chunks_per_npu));
    };
    const ChunkingResult all = best_chunking(c, Bytes{1} << 30, 64, full, 1, {}, int64_t{1} << 40);
    std::optional<ChunkingResult> r;
    Made<ChunkingResult> searched =
        search_chunks(c, Bytes{1} << 30, 64, make, 1, {}, int64_t{1} << 40, to_beat);
    if (ChunkingResult* found = made(searched))
      r = std::move(*found);
    else
      ++all_floored;  // every count was a floor
    floored += threw;
    if (all.algorithm.claimed_time < to_beat) {
      ASSERT_TRUE(r) << i;
      EXPECT_EQ(r->algorithm.claimed_time, all.algorithm.claimed_time) << i;
      won += threw;
    } else if (r) {
      EXPECT_GE(r->algorithm.claimed_time, to_beat) << i;
    }
    if (r) {
      // Made counts were under the time to beat; floors are listed as floors, at or over it.
      for (const ChunkingResult::Try& x : r->tried)
        if (x.floor)
          EXPECT_GE(x.time, to_beat) << i;
        else
          EXPECT_LT(floor_at(x.chunks_per_npu), to_beat) << i;
    }
  }
  EXPECT_GT(floored, 100);     // the floors were tried,
  EXPECT_GT(all_floored, 20);  // some searches had nothing but floors,
  EXPECT_GT(won, 20);          // and some found their winner past a floor
}

// With a lower bound on every count's time (search_chunks' `bound`), a count's time over it at
// most halves per doubling: fewer counts ahead can beat to_beat, and the search ends sooner. Over
// random times T(k) = A + B/k + C k, exact floors past to_beat and bounds up to A: the answer is
// the fully timed search's wherever that beats to_beat, and no search tries more counts than it
// does without the bound.
TEST(BestChunking, ABoundEndsTheSearchSooner) {
  const auto t = topo::generate("switch:256");
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather);
  std::mt19937_64 rng(83);
  int shorter = 0, won = 0;
  for (int i = 0; i < 500; ++i) {
    const TimeCurve time_at = random_curve(rng);
    const Time bound = time_at.a * static_cast<Time>(rng() % 9) / 8;
    Time best = std::numeric_limits<Time>::max();
    for (int k = 1; k <= 64; k *= 2) best = std::min(best, time_at(k));
    const Time to_beat = best + static_cast<Time>(rng() % 400'000) - 200'000;
    int counts = 0;
    auto make = [&](const Collective& cc, Bytes) -> ChunkMade {
      ++counts;
      const Time now = time_at(cc.chunks_per_npu);
      if (now >= to_beat) return CannotBeat{now, 0};
      return claiming(cc, now);
    };
    auto search = [&](Time under) {
      counts = 0;
      return search_chunks(c, Bytes{1} << 30, 64, make, 1, {}, int64_t{1} << 40, to_beat, 0,
                           nullptr, {}, 0, under);
    };
    const Made<ChunkingResult> plain = search(0);
    const int plain_counts = counts;
    const Made<ChunkingResult> bounded = search(bound);
    EXPECT_LE(counts, plain_counts) << i;
    shorter += counts < plain_counts;
    ASSERT_EQ(made(bounded) != nullptr, made(plain) != nullptr) << i;
    if (best < to_beat) {
      ASSERT_NE(made(bounded), nullptr) << i;
      EXPECT_EQ(made(bounded)->algorithm.claimed_time, best) << i;
      ++won;
    }
  }
  EXPECT_GT(won, 100);
  EXPECT_GT(shorter, 50);
}

// The flat search times a count only where its floor beats the fastest so far
// (SynthOptions::to_beat); a floor at or over the fastest gains nothing, as a slower time would
// not, and asks the rival as such a time would. Over random times T(k) = A + B/k + C k and floors
// (uA + vB/k + wC k)/8: the answer is never slower than the fully timed search's (with a rival,
// where that beats the rival), every count not timed is listed as a floor at or over the answer,
// and with exact floors (u = v = w = 8) and no rival the search tries the same counts.
TEST(BestChunking, FloorsOverTheFastestEndTheSearchAsTimesDo) {
  const auto t = topo::generate("switch:256");
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather);
  std::mt19937_64 rng(91);
  int floors = 0, rivals = 0;
  for (int i = 0; i < 400; ++i) {
    const TimeCurve time_at = random_curve(rng);
    const bool exact = i % 2 == 0, with_rival = i % 4 >= 2;
    const Time u = exact ? 8 : static_cast<Time>(rng() % 9),
               v = exact ? 8 : static_cast<Time>(rng() % 9),
               w = exact ? 8 : static_cast<Time>(rng() % 9);
    auto floor_at = [&](int k) {
      return (u * time_at.a + v * time_at.b / k + w * time_at.per * k) / 8;
    };
    Time fastest = -1;
    auto flat = [&](const Collective& cc, Bytes) -> ChunkMade {
      const int k = cc.chunks_per_npu;
      if (fastest > 0 && floor_at(k) >= fastest) return CannotBeat{floor_at(k), 0};
      if (fastest < 0 || time_at(k) < fastest) fastest = time_at(k);
      return claiming(cc, time_at(k));
    };
    auto full = [&](const Collective& cc, Bytes) {
      return claiming(cc, time_at(cc.chunks_per_npu));
    };
    const ChunkingResult all = best_chunking(c, Bytes{1} << 30, 64, full, 1, {}, int64_t{1} << 40);
    const Time rival = all.algorithm.claimed_time + static_cast<Time>(rng() % 400'000) - 200'000;
    int asked = 0, asked_timed = 0;
    const std::function<Time(const Collective&)> ask = [&](const Collective&) {
      ++asked;
      return rival;
    };
    Made<ChunkingResult> searched =
        search_chunks(c, Bytes{1} << 30, 64, flat, 1, {}, int64_t{1} << 40, -1, 0, nullptr,
                      with_rival ? ask : std::function<Time(const Collective&)>());
    if (with_rival) {
      // Timed throughout, the same search asks the rival at the same count: exact floors ask it
      // too.
      search_chunks(c, Bytes{1} << 30, 64, full, 1, {}, int64_t{1} << 40, -1, 0, nullptr,
                    [&](const Collective&) {
                      ++asked_timed;
                      return rival;
                    });
      if (exact) {
        EXPECT_EQ(asked, asked_timed) << i;
      }
      rivals += asked;
    }
    const ChunkingResult* r = made(searched);
    ASSERT_NE(r, nullptr) << i;
    if (!with_rival || all.algorithm.claimed_time < rival) {
      EXPECT_LE(r->algorithm.claimed_time, all.algorithm.claimed_time) << i;
    }
    for (const ChunkingResult::Try& x : r->tried) {
      floors += x.floor;
      if (x.floor) {
        EXPECT_GE(x.time, r->algorithm.claimed_time) << i;
      }
    }
    if (exact && !with_rival) {
      EXPECT_EQ(r->chunks_per_npu, all.chunks_per_npu) << i;
      ASSERT_EQ(r->tried.size(), all.tried.size()) << i;
      for (size_t j = 0; j < r->tried.size(); ++j)
        EXPECT_EQ(r->tried[j].chunks_per_npu, all.tried[j].chunks_per_npu) << i;
    }
  }
  EXPECT_GT(floors, 100);  // the counts not timed
  EXPECT_GT(rivals, 50);   // and the rivals asked at them or at slower times
}

// The synthesizer honours SynthOptions::to_beat: with a time it cannot beat, the matcher's
// All-Gather and All-Reduce (its joined halves) claim their floor (synth::time_floor), untimed, and
// say so; with none, or one they beat, they are timed as always.
TEST(BestChunking, ToBeatLeavesALosingCountUntimed) {
  const auto t = testing::charging(topo::generate("hypercube:8"));
  for (CollectiveKind kind : {CollectiveKind::AllGather, CollectiveKind::AllReduce}) {
    const Collective c = Collective::over_all(t, kind, 2);
    SynthOptions o;
    o.method = SynthMethod::Matcher;
    const Algorithm timed = synthesize(t, c, Bytes{1} << 20, o);
    EXPECT_EQ(timed.claimed_time, model_time(t, timed)) << to_string(kind);
    bool floored = false;
    o.floored = &floored;
    o.to_beat = 1;  // nothing beats a picosecond
    const Algorithm a = synthesize(t, c, Bytes{1} << 20, o);
    EXPECT_TRUE(floored) << to_string(kind);
    EXPECT_EQ(a.claimed_time, time_floor(t, a)) << to_string(kind);
    EXPECT_LE(a.claimed_time, timed.claimed_time) << to_string(kind);
    floored = false;
    o.to_beat = 2 * timed.claimed_time;
    const Algorithm b = synthesize(t, c, Bytes{1} << 20, o);
    EXPECT_FALSE(floored) << to_string(kind);
    EXPECT_EQ(b.claimed_time, timed.claimed_time) << to_string(kind);
  }
}

// The plans' doubling past the search is not begun where what they made in it says that it cannot
// win. nvcluster:2x8, an All-Gather of 64 MiB with per-step costs (as the CLI charges them): the
// pipelines and the server plan end the search far behind the matcher on the server plan, so
// neither doubles alone, and the pipelines at the next count are indeed no faster. (On
// switch-cluster.yaml, this test's fabric before the pipelines sent messages, their gain from 32
// to 64 chunks per NPU now says they may win, and they double once.)
TEST(BestChunking, PlansThatCannotWinDoNotDouble) {
  topo::Topology t = topo::generate("nvcluster:2x8");
  t.set_charges_steps(true);
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather);
  const Bytes total = Bytes{64} << 20;
  const ChunkingResult r = synthesize_auto_chunks(t, c, total);
  int largest = 1;
  for (const ChunkingResult::Try& x : r.tried) {
    EXPECT_FALSE(x.alone == SynthMethod::PlanPipeline || x.alone == SynthMethod::ServerPlan)
        << x.chunks_per_npu;
    largest = std::max(largest, x.chunks_per_npu);
  }
  Collective next = c;
  next.chunks_per_npu = 2 * largest;
  SynthOptions pipelines;
  pipelines.method = SynthMethod::PlanPipeline;
  EXPECT_GE(synthesize(t, next, next.chunk_bytes_for(total), pipelines).claimed_time,
            r.algorithm.claimed_time);
  const Report report = verify(t, r.algorithm, {.max_reported = 3});
  EXPECT_TRUE(report.correct()) << testing::violation_text(report);
}

// An All-Reduce whose Blink trees end far under the Reduce-Scatter + All-Gather figure
// (kTreesFirstBelow) is answered by them, raced by the other baselines, without tenet's own
// search: every count tried is the trees' (their time at that count, or a floor under it).
// Where they do not, the search is tenet's as before.
TEST(Synthesizer, TreesFarUnderTheHalvesFigureAnswerWithoutTheSearch) {
  const Bytes total = Bytes{64} << 20;
  const auto line = topo::generate("line:8");
  const Collective c = Collective::over_all(line, CollectiveKind::AllReduce);
  const ChunkingResult r = synthesize_auto_chunks(line, c, total);
  EXPECT_EQ(r.algorithm.provenance, Provenance::of_baseline("blink")) << r.algorithm.method;
  const Time halves = lower_bound(line, c, c.chunk_bytes_for(total)).coarse;
  EXPECT_LT(static_cast<double>(r.algorithm.claimed_time),
            kTreesFirstBelow * static_cast<double>(halves));
  int timed = 0;
  for (const ChunkingResult::Try& x : r.tried) {
    Collective at = c;
    at.chunks_per_npu = x.chunks_per_npu;
    const Time trees = make_algorithm("blink", line, at, at.chunk_bytes_for(total)).claimed_time;
    if (x.floor) {
      EXPECT_LE(x.time, trees) << x.chunks_per_npu;
    } else {
      EXPECT_EQ(x.time, trees) << x.chunks_per_npu;
      ++timed;
    }
  }
  EXPECT_GE(timed, 2);
  const Report report = verify(line, r.algorithm, {.max_reported = 3});
  EXPECT_TRUE(report.correct()) << testing::violation_text(report);
  // On a ring the halves reach their figure and the trees do not go far under it.
  const auto ring = topo::generate("ring:8");
  const Collective around = Collective::over_all(ring, CollectiveKind::AllReduce);
  const ChunkingResult searched = synthesize_auto_chunks(ring, around, total);
  EXPECT_NE(searched.algorithm.provenance, Provenance::of_baseline("blink"))
      << searched.algorithm.method;
  Collective first = around;
  first.chunks_per_npu = searched.tried.front().chunks_per_npu;
  EXPECT_NE(searched.tried.front().time,
            make_algorithm("blink", ring, first, first.chunk_bytes_for(total)).claimed_time);
}

TEST(Synthesizer, ExamplesVerify) {
  for (const auto& e : std::filesystem::directory_iterator(std::string(TENET_SOURCE_DIR) +
                                                           "/examples/topologies")) {
    const auto t = topo::load(e.path().string());
    for (CollectiveKind kind :
         {CollectiveKind::AllReduce, CollectiveKind::AllToAll, CollectiveKind::Broadcast}) {
      const Algorithm a = synthesize(t, Collective::over_all(t, kind, 2), kChunk);
      const Report r = verify(t, a, {.max_reported = 5, .lower_bound = false});
      EXPECT_TRUE(r.correct()) << e.path() << " " << to_string(kind) << testing::violation_text(r);
    }
  }
}

TEST(Synthesizer, RejectsBadInput) {
  const auto t = topo::generate("ring:4");
  Collective c = Collective::over_all(t, CollectiveKind::Broadcast);
  c.root = 9;
  EXPECT_THROW(synthesize(t, c, kChunk), Error);
  EXPECT_THROW(synthesize(t, Collective::over_all(t, CollectiveKind::AllGather), 0), Error);
  SynthOptions o;
  o.restarts = 0;
  EXPECT_THROW(synthesize(t, Collective::over_all(t, CollectiveKind::AllGather), kChunk, o), Error);
  EXPECT_THROW(parse_chunk_priority("best"), Error);
}

}  // namespace
}  // namespace tenet::synth
