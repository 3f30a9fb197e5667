// The answer's last deliveries listed again (synth/plans/tail_spread.hpp): where the trees' last
// chunks go down their trees hop by hop after the cut's links went idle, list scheduling of those
// deliveries ends sooner; the algorithm still verifies, keeps every transfer before the cut as it
// was and never ends under the bound; what reduces only as an All-Reduce's copies after its
// reductions; a chunk search lists its answer's tail again; a Reduce-Scatter's head gains through
// its reverse in time; and nothing is timed past the deadline. (Every producer on 1000 random
// fabrics, listed again from two tails, and every Reduce-Scatter reversed:
// tests/synth/bounds/bound_property_test.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "synth/baselines/baselines.hpp"
#include "synth/bounds/lower_bound.hpp"
#include "synth/cost/timing.hpp"
#include "synth/plans/full_rate_drain.hpp"
#include "synth/plans/tail_spread.hpp"
#include "synth/synthesizer.hpp"
#include "synth/tuning.hpp"
#include "synth/verify/verify.hpp"
#include "tests/synth/test_support.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"

namespace tenet::synth {
namespace {

using detail::spread_from;
using detail::spread_tail;

// The 16-GPU cluster a user wrote (examples/topologies/cluster16.yaml: servers of 4 on NVSwitch,
// one NIC of 50 GB/s among fifteen of 100), steps charged as the CLI does.
topo::Topology cluster16() {
  return testing::charging(
      topo::load(std::string(TENET_SOURCE_DIR) + "/examples/topologies/cluster16.yaml"));
}

// Its All-Gather of 64 MiB on the server plan, 8 chunks per NPU (what `-k auto` picks), before
// its tail is listed again: the chunks that come over the rails last still go through the
// NVSwitch one after the other in the plan's order.
Algorithm cluster16_all_gather() {
  const topo::Topology t = cluster16();
  Collective c = Collective::over_all(t, CollectiveKind::AllGather);
  c.chunks_per_npu = 8;
  SynthOptions o;
  o.method = SynthMethod::ServerPlan;
  return synthesize(t, c, c.chunk_bytes_for(Bytes{64} << 20), o);
}

// `a` listed again from each tail of the ladder where it can be: each verifies and claims the time
// the verifier finds. Returns how many tails listed it again.
int every_tail_verifies(const topo::Topology& t, const Algorithm& a) {
  int spread = 0;
  for (double tail : kSpreadTails)
    if (const std::optional<Algorithm> b =
            spread_from(t, a, detail::drain_cut(a.makespan(), tail))) {
      const Report r = verify(t, *b);
      EXPECT_TRUE(r.correct()) << tail << testing::violation_text(r);
      EXPECT_EQ(r.collective_time, b->claimed_time) << tail;
      ++spread;
    }
  return spread;
}

TEST(TailSpread, TheLastDeliveriesListedAgainEndSooner) {
  const topo::Topology t = cluster16();
  const Algorithm made = cluster16_all_gather();
  Algorithm a = made;
  ASSERT_TRUE(spread_tail(t, a, nullptr)) << made.method;
  EXPECT_LT(static_cast<double>(a.claimed_time),
            (1 - kDrainGain) * static_cast<double>(made.claimed_time));
  // From one of the ladder's tails; every transfer that started before its cut kept, in order,
  // as it was; the deliveries after it no more than those taken out (each needed once).
  const double tail = a.provenance.tail_spread;
  EXPECT_NE(std::find(std::begin(kSpreadTails), std::end(kSpreadTails), tail),
            std::end(kSpreadTails));
  const Time cut = detail::drain_cut(made.makespan(), tail);
  TransferId kept = 0, cut_out = 0;
  for (TransferId id = 0; id < static_cast<TransferId>(made.size()); ++id) {
    if (made[id].start >= cut) {
      ++cut_out;
      continue;
    }
    ASSERT_LT(kept, static_cast<TransferId>(a.size()));
    EXPECT_EQ(a.spec(kept).route, made.spec(id).route) << id;
    EXPECT_EQ(a[kept].chunk, made[id].chunk) << id;
    EXPECT_EQ(a[kept].dst, made[id].dst) << id;
    ++kept;
  }
  EXPECT_GT(cut_out, 0);
  EXPECT_GT(static_cast<TransferId>(a.size()), kept);
  const Report r = verify(t, a);
  EXPECT_TRUE(r.correct()) << testing::violation_text(r);
  EXPECT_EQ(r.collective_time, a.claimed_time);
  EXPECT_GE(a.claimed_time, lower_bound(t, a.collective, a.chunk_bytes).total);
}

// From every tail of the ladder, the algorithm listed again verifies and is timed as made.
TEST(TailSpread, EveryTailVerifies) {
  const topo::Topology t = cluster16();
  const Algorithm made = cluster16_all_gather();
  EXPECT_GE(every_tail_verifies(t, made), 2);
  // (A cut past every start takes nothing out.)
  EXPECT_FALSE(spread_from(t, made, made.makespan() + 1));
}

// A Reduce-Scatter's partials are not alike (each holds what has been reduced into it): left as it
// is (its head goes through its reverse, spread_head); so is a one-shot All-Reduce, whose every
// rank reduces. An All-Reduce's copies after its reductions are listed again: the ring's, from
// every cut past its last reduction, verifies.
TEST(TailSpread, WhatReducesIsListedAgainOnlyAsCopiesAfterItsReductions) {
  const topo::Topology t = testing::charging(topo::generate("ring:8"));
  const topo::Topology star = testing::charging(topo::generate("switch:8"));  // (the one-shot's)
  for (BaselineKind kind : {BaselineKind::Ring, BaselineKind::Oneshot}) {
    const bool ring = kind == BaselineKind::Ring;
    const CollectiveKind collective =
        ring ? CollectiveKind::ReduceScatter : CollectiveKind::AllReduce;
    const topo::Topology& on = ring ? t : star;
    Algorithm a = make_baseline(BaselineSpec{kind, {}}, on, Collective::over_all(on, collective),
                                Bytes{1} << 20);
    const Time before = a.claimed_time;
    EXPECT_FALSE(spread_from(on, a, a.makespan() / 2)) << to_string(collective);
    EXPECT_FALSE(spread_tail(on, a, nullptr)) << to_string(collective);
    EXPECT_EQ(a.claimed_time, before);
    EXPECT_EQ(a.provenance.tail_spread, 0);
  }
  const Algorithm ring =
      make_baseline(BaselineSpec{BaselineKind::Ring, {}}, t,
                    Collective::over_all(t, CollectiveKind::AllReduce, 2), Bytes{1} << 20);
  EXPECT_GT(every_tail_verifies(t, ring), 0);
  // (Not from a cut before its last reduction: what would be listed again is partials too.)
  EXPECT_FALSE(spread_from(t, ring, 1));
}

// The list scheduling's rule spelled out naively, as a reference: each (way, chunk) offered on its
// own, soonest arrival first (ties to the lower way, the routes numbered as they first appear in
// the list; among a way's chunks its source held by the time its links are free, the one the
// fewest nodes hold, then the lower chunk; else the lower chunk), offered again at its later
// arrival where a link it needs was booked since. What it makes of `a`'s All-Gather from `cut` on:
// each delivery's chunk, ends and route, in order of start.
using Delivery = std::tuple<ChunkId, NodeId, NodeId, std::vector<LinkId>>;
std::vector<Delivery> listed_naively(const topo::Topology& t, const Algorithm& a, Time cut) {
  struct Way {
    NodeId src, dst;
    std::vector<LinkId> route;
    Time duration, occupancy;
  };
  std::vector<Way> ways;
  std::map<std::vector<LinkId>, int> numbered;
  std::vector<std::vector<int>> into(static_cast<size_t>(t.num_nodes()));
  std::vector<std::vector<int>> out_of(into.size());
  RouteCoster coster(t, a);
  for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id) {
    const std::vector<LinkId> route(a.route(id).begin(), a.route(id).end());
    if (!numbered.emplace(route, static_cast<int>(ways.size())).second) continue;
    const RouteCost cost = coster(route, 0, 1);
    into[static_cast<size_t>(a[id].dst)].push_back(static_cast<int>(ways.size()));
    out_of[static_cast<size_t>(a[id].src)].push_back(static_cast<int>(ways.size()));
    ways.push_back({a[id].src, a[id].dst, route, cost.duration, cost.occupancy});
  }
  const Collective& c = a.collective;
  const ChunkId chunks = c.num_chunks();
  std::map<std::pair<NodeId, ChunkId>, Time> held;  // (absent: not held)
  std::map<std::pair<NodeId, ChunkId>, bool> needs;
  for (int r = 0; r < c.num_ranks(); ++r)
    for (ChunkId ch = 0; ch < chunks; ++ch) {
      if (c.initially_holds(r, ch)) held[{c.ranks[static_cast<size_t>(r)], ch}] = 0;
      needs[{c.ranks[static_cast<size_t>(r)], ch}] = c.finally_needs(r, ch);
    }
  std::vector<Time> link_free(static_cast<size_t>(t.num_links()), 0);
  for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id) {
    if (a[id].start >= cut) continue;
    Time& h = held.try_emplace({a[id].dst, a[id].chunk}, 0).first->second;
    h = std::max(h, a[id].end);
    for (LinkId l : a.route(id))
      link_free[static_cast<size_t>(l)] =
          std::max(link_free[static_cast<size_t>(l)], a[id].start + coster(a, id).occupancy);
  }
  std::map<ChunkId, int> holders;
  for (const auto& [at, time] : held) ++holders[at.second];
  const auto links_free = [&](const Way& w) {
    Time free = 0;
    for (LinkId l : w.route) free = std::max(free, link_free[static_cast<size_t>(l)]);
    return free;
  };
  const auto arrival = [&](const Way& w, ChunkId ch) {
    return std::max(held.at({w.src, ch}), links_free(w)) + w.duration;
  };
  std::set<std::tuple<Time, int, ChunkId>> offers;
  const auto offer = [&](int w, ChunkId ch) {
    const Way& way = ways[static_cast<size_t>(w)];
    if (held.contains({way.src, ch}) && needs[{way.dst, ch}] && !held.contains({way.dst, ch}))
      offers.emplace(arrival(way, ch), w, ch);
  };
  for (NodeId v = 0; v < t.num_nodes(); ++v)
    for (ChunkId ch = 0; ch < chunks; ++ch)
      if (needs[{v, ch}] && !held.contains({v, ch}))
        for (int w : into[static_cast<size_t>(v)]) offer(w, ch);
  std::vector<std::pair<Time, Delivery>> made;
  while (!offers.empty()) {
    const auto [at, w, first] = *offers.begin();
    offers.erase(offers.begin());
    const Way& way = ways[static_cast<size_t>(w)];
    if (held.contains({way.dst, first})) continue;
    if (const Time now = arrival(way, first); now > at) {
      offers.emplace(now, w, first);
      continue;
    }
    ChunkId ch = first;
    if (at == links_free(way) + way.duration)  // (its source held them all by then)
      for (auto it = offers.begin();
           it != offers.end() && std::get<0>(*it) == at && std::get<1>(*it) == w; ++it) {
        const ChunkId other = std::get<2>(*it);
        if (!held.contains({way.dst, other}) && arrival(way, other) == at &&
            std::pair(holders[other], other) < std::pair(holders[ch], ch))
          ch = other;
      }
    if (ch != first) {
      offers.erase({at, w, ch});
      offers.emplace(at, w, first);
    }
    ++holders[ch];
    for (LinkId l : way.route)
      link_free[static_cast<size_t>(l)] = at - way.duration + way.occupancy;
    held[{way.dst, ch}] = at;
    made.emplace_back(at - way.duration, Delivery{ch, way.src, way.dst, way.route});
    for (int next : out_of[static_cast<size_t>(way.dst)]) offer(next, ch);
  }
  std::stable_sort(made.begin(), made.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<Delivery> listed;
  for (auto& [start, d] : made) listed.push_back(std::move(d));
  return listed;
}

// spread_from lists exactly what the rule above makes (its ways wait in one queue, not each
// offer): the cluster's All-Gather on the server plan, and a random fabric's on the flow plan's
// pipelines (routes of several links through switches, ways sharing their links), from tails of
// 2 % to 60 % of the run (up to a thousand deliveries, many ways waiting on one link).
TEST(TailSpread, TheDeliveriesAreWhatTheRuleMakes) {
  const topo::Topology fabric = testing::charging(topo::generate("random-fabric:5"));
  Collective on_fabric = Collective::over_all(fabric, CollectiveKind::AllGather);
  on_fabric.chunks_per_npu = 32;
  SynthOptions pipelines;
  pipelines.method = SynthMethod::PlanPipeline;
  const topo::Topology cluster = cluster16();
  const std::pair<const topo::Topology*, Algorithm> cases[] = {
      {&cluster, cluster16_all_gather()},
      {&fabric,
       synthesize(fabric, on_fabric, on_fabric.chunk_bytes_for(Bytes{64} << 20), pipelines)}};
  int compared = 0;
  for (const auto& [t, made] : cases)
    for (double tail : {0.02, 0.08, 0.25, 0.6}) {
      const Time cut = detail::drain_cut(made.makespan(), tail);
      const std::optional<Algorithm> b = spread_from(*t, made, cut);
      if (!b) continue;
      const std::vector<Delivery> expected = listed_naively(*t, made, cut);
      const auto kept =
          static_cast<TransferId>(std::count_if(made.transfers().begin(), made.transfers().end(),
                                                [&](const Transfer& x) { return x.start < cut; }));
      ASSERT_EQ(b->size(), kept + expected.size()) << made.method << " " << tail;
      for (size_t i = 0; i < expected.size(); ++i) {
        const auto id = static_cast<TransferId>(kept + i);
        const std::vector<LinkId> route(b->route(id).begin(), b->route(id).end());
        EXPECT_EQ((Delivery{(*b)[id].chunk, (*b)[id].src, (*b)[id].dst, route}), expected[i])
            << made.method << " " << tail << " " << i;
      }
      ++compared;
    }
  EXPECT_GE(compared, 4);
}

// An All-Reduce's answer lists its tail again: `dgx1-pair.yaml`'s of 64 MiB (the matcher's) ends
// sooner than every count it tried, and verifies.
TEST(TailSpread, AnAllReducesAnswerListsItsCopiesAgain) {
  const topo::Topology t = testing::example_with_steps("dgx1-pair.yaml");
  const Collective c = Collective::over_all(t, CollectiveKind::AllReduce);
  const ChunkingResult r = synthesize_auto_chunks(t, c, Bytes{64} << 20);
  EXPECT_GT(r.algorithm.provenance.tail_spread, 0) << r.algorithm.method;
  for (const ChunkingResult::Try& x : r.tried)
    EXPECT_LT(r.algorithm.claimed_time, x.time) << x.chunks_per_npu;
  const Report report = verify(t, r.algorithm);
  EXPECT_TRUE(report.correct()) << testing::violation_text(report);
  EXPECT_EQ(report.collective_time, r.algorithm.claimed_time);
}

// A chunk search lists its answer's tail again: the cluster's All-Gather of 64 MiB ends sooner
// than every count it tried (their times are the answers before), and verifies; without the
// option it does not.
TEST(TailSpread, AChunkSearchListsItsAnswersTailAgain) {
  const topo::Topology t = cluster16();
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather);
  const ChunkingResult r = synthesize_auto_chunks(t, c, Bytes{64} << 20);
  EXPECT_GT(r.algorithm.provenance.tail_spread, 0);
  ASSERT_FALSE(r.tried.empty());
  for (const ChunkingResult::Try& x : r.tried)
    EXPECT_LT(r.algorithm.claimed_time, x.time) << x.chunks_per_npu;
  EXPECT_TRUE(verify(t, r.algorithm).correct());
  SynthOptions o;
  o.portfolio.tail_spread = false;
  const ChunkingResult without = synthesize_auto_chunks(t, c, Bytes{64} << 20, o);
  EXPECT_EQ(without.algorithm.provenance.tail_spread, 0);
  EXPECT_LT(r.algorithm.claimed_time, without.algorithm.claimed_time);
}

// A Reduce-Scatter's first reductions, through its reverse in time: the cluster's of 64 MiB on the
// server plan (the chunks that go over the rails first wait in the NVSwitch for the partials of
// the plan's order) ends sooner, verifies, and every chunk is reduced over every rank once.
TEST(TailSpread, AReduceScattersFirstReductionsListedAgainEndSooner) {
  const topo::Topology t = cluster16();
  Collective c = Collective::over_all(t, CollectiveKind::ReduceScatter);
  c.chunks_per_npu = 8;
  SynthOptions o;
  o.method = SynthMethod::ServerPlan;
  const Algorithm made = synthesize(t, c, c.chunk_bytes_for(Bytes{64} << 20), o);
  const std::optional<std::vector<LinkId>> twins = topo::twin_links(t);
  ASSERT_TRUE(twins);
  Algorithm a = made;
  ASSERT_TRUE(detail::spread_head(t, a, *twins, /*drain=*/true, nullptr)) << made.method;
  EXPECT_LT(static_cast<double>(a.claimed_time),
            (1 - kDrainGain) * static_cast<double>(made.claimed_time));
  EXPECT_GT(a.provenance.tail_spread, 0);
  EXPECT_EQ(a.collective.kind, CollectiveKind::ReduceScatter);
  const Report r = verify(t, a);
  EXPECT_TRUE(r.correct()) << testing::violation_text(r);
  EXPECT_EQ(r.collective_time, a.claimed_time);
  EXPECT_GE(a.claimed_time, lower_bound(t, a.collective, a.chunk_bytes).total);
  // (An All-Gather is no Reduce-Scatter: left as it is.)
  Algorithm gathered = cluster16_all_gather();
  EXPECT_FALSE(detail::spread_head(t, gathered, *twins, /*drain=*/true, nullptr));
}

// Past the deadline nothing is scheduled or timed, and the search is marked stopped.
TEST(TailSpread, PastTheDeadlineNothingIsTimed) {
  const topo::Topology t = cluster16();
  const Algorithm made = cluster16_all_gather();
  Deadline over;
  over.interrupt();
  Algorithm a = made;
  EXPECT_FALSE(spread_tail(t, a, &over));
  EXPECT_EQ(a.claimed_time, made.claimed_time);
  EXPECT_TRUE(over.stopped());
}

}  // namespace
}  // namespace tenet::synth
