#include "synth/synthesizer.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <utility>
#include <vector>

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

// With restarts the seeds run at once, and only the kept seed's reports reach the caller, as one
// run of it makes them: every pipeline variant once, from the caller's thread (each seed called the
// caller's callbacks from its own thread before, a variant once per seed, into maps the chunk
// search does not lock). The pipelines do not depend on the seed.
TEST(Synthesizer, RestartsHandOnTheKeptSeedsReportsAlone) {
  const auto t = topo::generate("hetmesh2d:4x4");
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather, 4);
  SynthOptions o;
  o.method = SynthMethod::PlanPipeline;
  std::vector<std::pair<int, Time>> alone, restarted;
  bool floored = false;
  o.floored = &floored;
  o.pipelines.on_variant = [&](int v, Time time) { alone.emplace_back(v, time); };
  const Algorithm a = synthesize(t, c, kChunk, o);
  o.restarts = 3;
  o.pipelines.on_variant = [&](int v, Time time) { restarted.emplace_back(v, time); };
  const Algorithm b = synthesize(t, c, kChunk, o);
  ASSERT_GT(alone.size(), 1u);
  EXPECT_EQ(restarted, alone);
  EXPECT_EQ(b.claimed_time, a.claimed_time);
  EXPECT_FALSE(floored);
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
