// A Reduce-Scatter as an All-Gather's answer reversed in time (detail::reduce_scatter_reversed):
// on a topology that is its own reverse, each chunk's delivery tree becomes its reduction tree,
// every rank counted once, and where the schedule runs as it was listed (no transfer's start left
// to the timing's choice) it takes the All-Gather's time. And the converse
// (detail::all_gather_reversed): a Reduce-Scatter's reduction trees become delivery trees.
#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <string>
#include <vector>

#include "synth/baselines/baselines.hpp"
#include "synth/bounds/lower_bound.hpp"
#include "synth/cost/timing.hpp"
#include "synth/plans/full_rate_drain.hpp"
#include "synth/plans/reversed_answer.hpp"
#include "synth/plans/tail_spread.hpp"
#include "synth/synthesizer.hpp"
#include "synth/verify/verify.hpp"
#include "tests/synth/test_support.hpp"
#include "topo/generators.hpp"

namespace tenet::synth {
namespace {

constexpr Bytes kMiB = Bytes{1} << 20;

std::vector<LinkId> twins_of(const topo::Topology& t) {
  const std::optional<std::vector<LinkId>> twins = topo::twin_links(t);
  EXPECT_TRUE(twins.has_value()) << t.name() << " is not its own reverse";
  return twins.value_or(std::vector<LinkId>{});
}

// The reversal of `ag`: a verified Reduce-Scatter of its ranks, chunks and chunk size, at or over
// the bound, as many transfers, every one a reduction out of the All-Gather's destination.
Algorithm expect_reversed(const topo::Topology& t, const Algorithm& ag) {
  const std::optional<Algorithm> r = detail::reduce_scatter_reversed(t, ag, twins_of(t));
  EXPECT_TRUE(r.has_value()) << ag.method;
  if (!r) return ag;
  EXPECT_EQ(r->collective.kind, CollectiveKind::ReduceScatter);
  EXPECT_EQ(r->collective.ranks, ag.collective.ranks);
  EXPECT_EQ(r->collective.chunks_per_npu, ag.collective.chunks_per_npu);
  EXPECT_EQ(r->chunk_bytes, ag.chunk_bytes);
  EXPECT_EQ(r->size(), ag.size());
  const Report report = verify(t, *r);
  EXPECT_TRUE(report.correct()) << ag.method << testing::violation_text(report);
  EXPECT_EQ(report.collective_time, r->claimed_time);
  EXPECT_GE(r->claimed_time, lower_bound(t, r->collective, r->chunk_bytes).total);
  return *r;
}

// The ring All-Gather of 4 chunks per NPU on ring:8, reversed: the ring Reduce-Scatter, in the
// same time (a ring runs as listed: each step the chunk the step before brought).
TEST(ReversedAnswer, TheRingsAllGatherReversedTakesItsTime) {
  const topo::Topology t = topo::generate("ring:8");
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather, 4);
  const Algorithm ag = make_baseline(parse_baseline("ring"), t, c, kMiB, LinkModel::Pipelined);
  const Algorithm rs = expect_reversed(t, ag);
  EXPECT_EQ(rs.claimed_time, ag.claimed_time);
  for (const Transfer& x : rs.transfers()) EXPECT_EQ(x.op, Op::Reduce);
}

// The flow plan's pipelines on the MI250 box (links of 200, 100 and 50 GB/s, steps charged),
// All-Gather of 64 MiB at 64 chunks per NPU, reversed: a verified Reduce-Scatter in at most the
// All-Gather's time (274.37 against 274.84 us: each port one queue, in the mirror of its twin's
// order), messages and rates kept, every transfer in channel 0.
TEST(ReversedAnswer, ThePipelinesReversedTakeTheirTime) {
  const topo::Topology t = testing::example_with_steps("mi250-box.yaml");
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather, 64);
  SynthOptions o;
  o.method = SynthMethod::PlanPipeline;
  const Algorithm ag = synthesize(t, c, c.chunk_bytes_for(64 * kMiB), o);
  ASSERT_TRUE(ag.has_messages());
  const Algorithm rs = expect_reversed(t, ag);
  EXPECT_LE(rs.claimed_time, ag.claimed_time);
  EXPECT_GE(static_cast<double>(rs.claimed_time), 0.99 * static_cast<double>(ag.claimed_time));
  EXPECT_TRUE(rs.has_rates());
  for (const Transfer& x : rs.transfers()) EXPECT_EQ(x.channel, 0);
}

// An All-Gather whose tail runs at its routes' full rate and is listed again (the MI250 box's
// pipelines of 1 GiB at 1024 chunks per NPU, drained and spread as a chunk search finishes them)
// reverses into a Reduce-Scatter in its time: the head at full rate, in one queue per port, goes
// before the streams' first sends. In the forward's channels the streams' sends of input, ready at
// once, took part of the head's links first, and the head waited for them to empty: 5.00 of the
// bound against the All-Gather's 1.038.
TEST(ReversedAnswer, AFinishedAllGatherReversedTakesItsTime) {
  const topo::Topology t = testing::example_with_steps("mi250-box.yaml");
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather, 1024);
  SynthOptions o;
  o.method = SynthMethod::PlanPipeline;
  Algorithm ag = synthesize(t, c, c.chunk_bytes_for(1024 * kMiB), o);
  ASSERT_TRUE(detail::drain_at_full_rate(t, ag, nullptr));
  ASSERT_TRUE(detail::spread_tail(t, ag, nullptr));
  const Algorithm rs = expect_reversed(t, ag);
  EXPECT_LE(static_cast<double>(rs.claimed_time), 1.001 * static_cast<double>(ag.claimed_time));
}

// Not an All-Gather, not timed, or a chunk delivered to a node twice (no tree to reduce down):
// nothing.
TEST(ReversedAnswer, NothingButATimedAllGatherOfOneTreePerChunk) {
  const topo::Topology t = topo::generate("ring:4");
  const std::vector<LinkId> twins = twins_of(t);
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather, 1);
  const Algorithm ag = make_baseline(parse_baseline("ring"), t, c, kMiB, LinkModel::Pipelined);
  ASSERT_TRUE(detail::reduce_scatter_reversed(t, ag, twins).has_value());
  Algorithm untimed = ag;
  untimed.clear_times();
  EXPECT_FALSE(detail::reduce_scatter_reversed(t, untimed, twins).has_value());
  const Algorithm rs = make_baseline(parse_baseline("ring"), t,
                                     Collective::over_all(t, CollectiveKind::ReduceScatter, 1),
                                     kMiB, LinkModel::Pipelined);
  EXPECT_FALSE(detail::reduce_scatter_reversed(t, rs, twins).has_value());
  // The first transfer again at the end: its chunk reaches its destination twice.
  std::vector<TransferSpec> specs;
  for (TransferId id = 0; id < static_cast<TransferId>(ag.size()); ++id)
    specs.push_back(ag.spec(id));
  TransferSpec again = specs.front();
  again.deps.clear();
  specs.push_back(again);
  Algorithm twice = with_transfers(ag, specs);
  synth::time(t, twice);
  EXPECT_FALSE(detail::reduce_scatter_reversed(t, twice, twins).has_value());
}

// On seeded random topologies that are their own reverse (rings, tori, hypercubes, switches,
// leaf-spines, servers on a fabric; mixed speeds), every producer's All-Gather over every NPU or
// over a subset (where NPUs outside it relay, taking their first partial as a copy), reversed, is
// a verified Reduce-Scatter at or over its bound.
TEST(ReversedAnswer, EveryTreePerChunkReversesIntoAVerifiedReduceScatter) {
  const std::vector<std::string> specs = {
      "ring:6",        "torus2d:3x3",       "hypercube:8", "switch:6,bw=100GB/s",
      "leafspine:2x4", "nvcluster:2x4",     "mesh2d:3x3",  "fc:5",
      "hetmesh2d:3x3", "ring:4 x switch:2", "torus2d:2x4", "dgx1:8"};
  std::mt19937 rng(76);
  int reversed = 0, relays = 0;
  for (const std::string& spec : specs) {
    const topo::Topology t = topo::generate(spec);
    if (!topo::twin_links(t)) continue;
    for (int trial = 0; trial < 3; ++trial) {
      Collective c =
          Collective::over_all(t, CollectiveKind::AllGather, 1 + static_cast<int>(rng() % 4));
      if (trial == 2 && t.num_npus() > 4) {  // a subset: every other NPU
        c.ranks.clear();
        for (NodeId v = 0; v < t.num_npus(); v += 2) c.ranks.push_back(v);
      }
      SynthOptions o;
      o.method = trial == 1 ? SynthMethod::PlanPipeline : SynthMethod::Matcher;
      const Made<Algorithm> ag =
          try_synthesize(t, c, c.chunk_bytes_for((1 + rng() % 64) * kMiB), o);
      const Algorithm* a = std::get_if<Algorithm>(&ag);
      if (!a) continue;  // (the method does not apply there)
      SCOPED_TRACE(spec + " " + c.describe() + " " + a->method);
      const Algorithm rs = expect_reversed(t, *a);
      for (const Transfer& x : rs.transfers()) relays += x.op == Op::Copy ? 1 : 0;
      ++reversed;
    }
  }
  EXPECT_GE(reversed, 24);
  EXPECT_GT(relays, 0);  // (some subset's All-Gather went through NPUs outside it)
}

// The converse (detail::all_gather_reversed): on the same topologies every producer's
// Reduce-Scatter whose nodes send each partial once, reversed, is a verified All-Gather at or over
// its bound; the ring's in the ring's time; and reversed again, a verified Reduce-Scatter.
TEST(ReversedAnswer, EveryReduceScatterReversesIntoAVerifiedAllGather) {
  const std::vector<std::string> specs = {"ring:6",        "torus2d:3x3",   "hypercube:8",
                                          "leafspine:2x4", "nvcluster:2x4", "hetmesh2d:3x3",
                                          "dgx1:8",        "fc:5"};
  std::mt19937 rng(84);
  int reversed = 0;
  for (const std::string& spec : specs) {
    const topo::Topology t = topo::generate(spec);
    const std::optional<std::vector<LinkId>> twins = topo::twin_links(t);
    if (!twins) continue;
    for (int trial = 0; trial < 3; ++trial) {
      const Collective c =
          Collective::over_all(t, CollectiveKind::ReduceScatter, 1 + static_cast<int>(rng() % 4));
      const Bytes chunk = c.chunk_bytes_for((1 + rng() % 64) * kMiB);
      std::optional<Algorithm> rs;
      if (trial == 0) {
        try {
          rs = make_baseline(parse_baseline("ring"), t, c, chunk, LinkModel::Pipelined);
        } catch (const Error&) {  // (no ring over the NPUs' links there)
        }
      } else {
        SynthOptions o;
        o.method = trial == 1 ? SynthMethod::PlanPipeline : SynthMethod::Matcher;
        Made<Algorithm> made = try_synthesize(t, c, chunk, o);
        if (Algorithm* a = std::get_if<Algorithm>(&made)) rs = std::move(*a);
      }
      if (!rs) continue;
      SCOPED_TRACE(spec + " " + c.describe() + " " + rs->method);
      const std::optional<Algorithm> ag = detail::all_gather_reversed(t, *rs, *twins);
      if (!ag) continue;  // (a node sends some partial twice)
      EXPECT_EQ(ag->collective.kind, CollectiveKind::AllGather);
      EXPECT_EQ(ag->size(), rs->size());
      const Report report = verify(t, *ag);
      EXPECT_TRUE(report.correct()) << testing::violation_text(report);
      EXPECT_EQ(report.collective_time, ag->claimed_time);
      EXPECT_GE(ag->claimed_time, lower_bound(t, ag->collective, ag->chunk_bytes).total);
      if (trial == 0) {
        EXPECT_EQ(ag->claimed_time, rs->claimed_time);
      }
      expect_reversed(t, *ag);
      ++reversed;
    }
  }
  EXPECT_GE(reversed, 12);
  // Not a Reduce-Scatter, or not timed: nothing.
  const topo::Topology t = topo::generate("ring:4");
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather, 1);
  const Algorithm ag = make_baseline(parse_baseline("ring"), t, c, kMiB, LinkModel::Pipelined);
  EXPECT_FALSE(detail::all_gather_reversed(t, ag, twins_of(t)).has_value());
  Algorithm rs = make_baseline(parse_baseline("ring"), t,
                               Collective::over_all(t, CollectiveKind::ReduceScatter, 1), kMiB,
                               LinkModel::Pipelined);
  ASSERT_TRUE(detail::all_gather_reversed(t, rs, twins_of(t)).has_value());
  rs.clear_times();
  EXPECT_FALSE(detail::all_gather_reversed(t, rs, twins_of(t)).has_value());
}

}  // namespace
}  // namespace tenet::synth
