#include "synth/ir/ring_plan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "synth/baselines/baselines.hpp"
#include "synth/cost/link_admission.hpp"
#include "synth/cost/timing.hpp"
#include "synth/verify/verify.hpp"
#include "tests/synth/test_support.hpp"
#include "topo/generators.hpp"

namespace tenet::synth {
namespace {

// Everything a replay asks a plan (each transfer, its route, rate, queue, and who waits for it)
// against the algorithm it materializes, read the way the timing model reads a list: the
// transfer that waits for an arrival is the next one listed to send that chunk from where it
// arrived.
void expect_plan_is_its_algorithm(const topo::Topology& t, const RingPlan& plan,
                                  const std::string& what) {
  const Algorithm a = plan.materialize(t);
  ASSERT_EQ(static_cast<size_t>(plan.size()), a.size()) << what;
  const Report r = verify(t, a, {.max_reported = 5, .lower_bound = false});
  ASSERT_TRUE(r.correct()) << what << testing::violation_text(r);
  const TransferQueues q(t, a);
  ASSERT_EQ(plan.num_queues(), q.num_queues()) << what;
  for (int32_t k = 0; k < q.num_queues(); ++k)
    for (int32_t n = 0;; ++n) {
      ASSERT_EQ(plan.queue_entry(k, n), q.queue_entry(k, n))
          << what << ": queue " << k << " entry " << n;
      if (q.queue_entry(k, n) < 0) break;
    }
  // Per (node, chunk): the transfers that send it from there, in list order, to find each
  // arrival's user.
  std::map<std::pair<NodeId, ChunkId>, std::vector<TransferId>> sends;
  for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id)
    sends[{a[id].src, a[id].chunk}].push_back(id);
  std::vector<char> waits(a.size(), 0);
  for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id) {
    const RingPlan::Send x = plan.send(id);
    const Transfer& y = a[id];
    ASSERT_EQ(x.chunk, y.chunk) << what << ": transfer " << id;
    EXPECT_EQ(x.src, y.src);
    EXPECT_EQ(x.dst, y.dst);
    EXPECT_EQ(x.op, y.op);
    EXPECT_EQ(x.rate, a.rate(id));
    EXPECT_EQ(x.channel, y.channel);
    EXPECT_TRUE(std::ranges::equal(x.route, a.route(id))) << what << ": transfer " << id;
    EXPECT_TRUE(std::ranges::equal(plan.route(id), a.route(id)));
    EXPECT_EQ(plan.rate(id), q.rate(id));
    EXPECT_EQ(plan.queue_of(id), q.queue_of(id));
    TransferId next = -1;
    for (TransferId s : sends[{y.dst, y.chunk}])
      if (s > id) {
        next = s;
        break;
      }
    ASSERT_EQ(plan.user(id), next) << what << ": transfer " << id;
    if (next >= 0) ++waits[next];
  }
  std::vector<TransferId> first;
  plan.first_sends([&](TransferId id) { first.push_back(id); });
  std::vector<TransferId> expected;
  for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id) {
    EXPECT_LE(waits[id], 1) << what << ": transfer " << id;
    // A send that no arrival feeds is a first one, unless an earlier arrival of its chunk at its
    // source feeds it transitively (an All-Reduce's Reduce-Scatter arrival): none here has one.
    if (waits[id] == 0) expected.push_back(id);
  }
  EXPECT_EQ(first, expected) << what;
}

// The most any one link carries of `a`'s transfers at their own rates, added transfer by transfer
// (time_floor's per-link load).
Time busiest_link_load(const topo::Topology& t, const Algorithm& a) {
  RouteCoster coster(t, a);
  std::vector<Time> load(t.num_links(), 0);
  for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id) {
    const RouteCost cost = coster(a, id);
    const Bandwidth held =
        a.link_model == LinkModel::Hold ? std::numeric_limits<Bandwidth>::max() : cost.rate;
    for (LinkId l : a.route(id)) load[l] += busy_share(cost.occupancy, held, t.link(l).bandwidth);
  }
  return load.empty() ? 0 : *std::max_element(load.begin(), load.end());
}

TEST(RingPlan, IsTheRingBaselineTransferByTransfer) {
  std::mt19937_64 rng(5);
  std::vector<topo::Topology> topologies;
  for (const char* spec : {"ring:6", "switch:7", "leafspine:2x4,spines=2", "nvcluster:2x4,net=rail",
                           "torus2d:3x3", "dgx1", "mesh2d:3x4", "ring:4 x switch:2"})
    topologies.push_back(topo::generate(spec));
  for (int i = 0; i < 30; ++i) topologies.push_back(testing::random_topology(rng, 9));
  int planned = 0, relayed = 0;
  for (const topo::Topology& t : topologies)
    for (const char* algo : {"ring", "ring:1", "bidir-ring", "bidir-ring:1", "ring:3"})
      for (CollectiveKind kind :
           {CollectiveKind::AllGather, CollectiveKind::ReduceScatter, CollectiveKind::AllReduce}) {
        Collective c = testing::random_collective(rng, t, 3);
        c.kind = kind;
        if (reduces(kind)) c.ranks = Collective::over_all(t, kind).ranks;
        const Bytes chunk = 1 + static_cast<Bytes>(rng() % 1'000'000);
        const std::string what = std::string(algo) + " " + c.describe() + " on " + t.name();
        std::optional<RingPlan> plan;
        try {
          plan = ring_plan(parse_baseline(algo), t, c, chunk);
        } catch (const NotApplicable&) {
          continue;
        }
        if (!plan) {
          ++relayed;
          continue;
        }
        expect_plan_is_its_algorithm(t, *plan, what);
        // The ring baseline is the plan's algorithm (timed).
        Algorithm a = plan->materialize(t);
        const Algorithm b = make_baseline(parse_baseline(algo), t, c, chunk);
        EXPECT_EQ(collective_time(t, a), b.claimed_time) << what;
        // Its floor, from the plan, is the materialized algorithm's; on the generator families
        // it is the ring's time (nothing contends), on random fabrics at most that (their routes
        // share switch links). The chunk search's rival takes a large ring's time so.
        EXPECT_EQ(time_floor(t, *plan), time_floor(t, a)) << what;
        // Its load floor, found per hop and route, is what the busiest link carries of the
        // algorithm's transfers one by one, under either link model: at most the floor.
        EXPECT_EQ(load_floor(t, *plan), busiest_link_load(t, a)) << what;
        EXPECT_LE(load_floor(t, *plan), time_floor(t, *plan)) << what;
        const RingPlan held = *ring_plan(parse_baseline(algo), t, c, chunk, LinkModel::Hold);
        EXPECT_EQ(load_floor(t, held), busiest_link_load(t, held.materialize(t))) << what;
        if (t.name() == "random") {
          EXPECT_LE(time_floor(t, *plan), b.claimed_time) << what;
        } else {
          EXPECT_EQ(time_floor(t, *plan), b.claimed_time) << what;
        }
        ++planned;
      }
  EXPECT_GT(planned, 300);
  EXPECT_GT(relayed, 0);  // rings whose neighbours are not linked keep their relays
}

TEST(RingPlan, HasNoPlanForWhatItDoesNotRun) {
  const auto t = topo::generate("ring:4");
  const Collective bcast = Collective::over_all(t, CollectiveKind::Broadcast);
  EXPECT_FALSE(ring_plan(parse_baseline("ring"), t, bcast, 1024));
  EXPECT_FALSE(ring_plan(parse_baseline("direct"), t,
                         Collective::over_all(t, CollectiveKind::AllGather), 1024));
  EXPECT_THROW(
      ring_plan(parse_baseline("ring"), t, Collective::over_all(t, CollectiveKind::AllGather), 0),
      Error);
}

TEST(RingPlan, RefusesLanesThatDoNotFit) {
  const auto t = topo::generate("ring:3");
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather);
  RingPlan::Lane lane;
  lane.order = {0, 1, 2};
  lane.hops = {{{{testing::link_between(t, 0, 1)}}, 0},
               {{{testing::link_between(t, 1, 2)}}, 0},
               {{{testing::link_between(t, 2, 0)}}, 0}};
  lane.blocks = {{0}, {1}, {2}};
  EXPECT_NO_THROW(RingPlan(t, "ring", c, 1024, LinkModel::Pipelined, 0, 1.0, {lane}));
  RingPlan::Lane uneven = lane;
  uneven.blocks[1].push_back(1);
  EXPECT_THROW(RingPlan(t, "ring", c, 1024, LinkModel::Pipelined, 0, 1.0, {uneven}), Error);
  RingPlan::Lane short_hops = lane;
  short_hops.hops.pop_back();
  EXPECT_THROW(RingPlan(t, "ring", c, 1024, LinkModel::Pipelined, 0, 1.0, {short_hops}), Error);
  RingPlan::Lane bad_link = lane;
  bad_link.hops[0].routes[0][0] = 999;
  EXPECT_THROW(RingPlan(t, "ring", c, 1024, LinkModel::Pipelined, 0, 1.0, {bad_link}), Error);
  EXPECT_THROW(RingPlan(t, "ring", Collective::over_all(t, CollectiveKind::Broadcast), 1024,
                        LinkModel::Pipelined, 0, 1.0, {lane}),
               Error);
}

}  // namespace
}  // namespace tenet::synth
