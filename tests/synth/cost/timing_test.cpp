#include "synth/cost/timing.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>

#include "synth/baselines/baselines.hpp"
#include "synth/cost/grid.hpp"
#include "synth/cost/link_admission.hpp"
#include "synth/synthesizer.hpp"
#include "synth/verify/verify.hpp"
#include "tests/synth/test_support.hpp"
#include "topo/generators.hpp"

namespace tenet::synth {
namespace {

using testing::link_between;

constexpr Bytes kChunk = 1 << 20;          // 1 MiB
constexpr Bandwidth kBw = 50'000'000'000;  // 50 GB/s
constexpr Time kLat = 500'000;             // 0.5 us
const Time kSer = transfer_time(kChunk, kBw);

// Ring All-Gather on a unidirectional ring: at step s, NPU i forwards chunk (i - s) mod N.
Algorithm ring_allgather(const topo::Topology& t, int n, LinkModel model) {
  Algorithm a;
  a.collective = Collective::over_all(t, CollectiveKind::AllGather);
  a.chunk_bytes = kChunk;
  a.link_model = model;
  std::vector<TransferId> brought(n, -1);  // per chunk, its latest transfer
  for (int s = 0; s < n - 1; ++s) {
    std::vector<TransferId> next = brought;
    for (int i = 0; i < n; ++i) {
      ChunkId c = ((i - s) % n + n) % n;
      std::vector<TransferId> deps;
      if (brought[c] >= 0) deps.push_back(brought[c]);
      LinkId l = link_between(t, i, (i + 1) % n);
      next[c] = a.add(c, i, (i + 1) % n, std::span(&l, 1), Op::Copy, deps);
    }
    brought = next;
  }
  return a;
}

// A link's busy share takes a 64-bit product where it fits and a 128-bit one where not: the same
// truncated quotient either way.
TEST(Timing, BusyShareIsExactOnEitherSideOf64Bits) {
  std::mt19937_64 rng(3);
  for (int i = 0; i < 20000; ++i) {
    const Time occupancy = static_cast<Time>(rng() % (Time{1} << (20 + i % 40)));
    const Bandwidth bandwidth = 1 + static_cast<Bandwidth>(rng() % 1'000'000'000'000'000);
    const Bandwidth rate = static_cast<Bandwidth>(rng() % static_cast<uint64_t>(bandwidth));
    EXPECT_EQ(busy_share(occupancy, rate, bandwidth),
              static_cast<Time>(static_cast<Int128>(occupancy) * rate / bandwidth))
        << occupancy << " ps at " << rate << " of " << bandwidth << " B/s";
  }
}

// RouteCoster remembers the serialization times it computed, per (rate, chunks carried) hashed to
// a slot: asked for hundreds of pairs in any order, each again and again (pairs sharing a slot
// evict each other), it answers what route_cost does.
TEST(Timing, RouteCosterAnswersAsRouteCostWhateverItRemembers) {
  const auto t = topo::generate("ring:4,bw=400GB/s,lat=0.5us");
  const Bytes chunk = 65'536;
  RouteCoster coster(t, chunk, LinkModel::Pipelined, false);
  const std::vector<LinkId> route{0};
  std::mt19937_64 rng(11);
  for (int i = 0; i < 20000; ++i) {
    const Bandwidth rate = 1'000'000'000 * static_cast<Bandwidth>(1 + rng() % 400);
    const int count = 1 + static_cast<int>(rng() % 4);
    const RouteCost c = coster(route, rate, count);
    EXPECT_EQ(c.occupancy,
              route_cost(t, route, chunk * count, LinkModel::Pipelined, false, rate).occupancy)
        << count << " chunks at " << rate << " B/s";
  }
}

TEST(Timing, RingAllGatherEqualsTheClosedForm) {
  for (int n : {2, 4, 8, 16}) {
    auto t = topo::generate(fmt::format("ring:{},bidir=false,bw=50GB/s,lat=0.5us", n));
    for (LinkModel m : {LinkModel::Pipelined, LinkModel::Hold}) {
      Algorithm a = ring_allgather(t, n, m);
      TimingResult r = time(t, a);
      // (N-1)(alpha + (M/N)/B) with M/N = one chunk.
      EXPECT_EQ(r.collective_time, (n - 1) * (kLat + kSer)) << n;
      EXPECT_EQ(a.claimed_time, r.collective_time);
      for (Time busy : r.link_busy)
        EXPECT_EQ(busy, (n - 1) * (m == LinkModel::Pipelined ? kSer : kSer + kLat));
    }
  }
}

TEST(Timing, PipelinedLinksStreamBackToBackHoldDoesNot) {
  auto t = topo::generate("line:2,bw=50GB/s,lat=0.5us");
  LinkId l = link_between(t, 0, 1);
  for (LinkModel m : {LinkModel::Pipelined, LinkModel::Hold}) {
    Algorithm a;
    a.collective = Collective::over_all(t, CollectiveKind::AllGather, 3);
    a.chunk_bytes = kChunk;
    a.link_model = m;
    for (ChunkId c = 0; c < 3; ++c) a.add(c, 0, 1, std::span(&l, 1));
    time(t, a);
    for (TransferId i = 0; i < 3; ++i) {
      Time gap = m == LinkModel::Pipelined ? kSer : kSer + kLat;
      EXPECT_EQ(a[i].start, i * gap);
      EXPECT_EQ(a[i].end, i * gap + kSer + kLat);
    }
  }
}

// time_floor: on a ring All-Gather nothing contends, and the floor is the model's time; transfers
// sharing one link count at its bandwidth, queued or not.
TEST(TimeFloor, ExactWhereNothingContends) {
  for (int n : {2, 4, 8}) {
    auto t = topo::generate(fmt::format("ring:{},bidir=false,bw=50GB/s,lat=0.5us", n));
    for (LinkModel m : {LinkModel::Pipelined, LinkModel::Hold})
      EXPECT_EQ(time_floor(t, ring_allgather(t, n, m)), (n - 1) * (kLat + kSer)) << n;
  }
  auto t = topo::generate("line:2,bw=50GB/s,lat=0.5us");
  LinkId l = link_between(t, 0, 1);
  for (bool channels : {false, true}) {
    Algorithm a;
    a.collective = Collective::over_all(t, CollectiveKind::AllGather, 4);
    a.chunk_bytes = kChunk;
    for (ChunkId c = 0; c < 4; ++c)
      a.add(c, 0, 1, std::span(&l, 1), Op::Copy, {}, -1, -1, 0,
            channels ? static_cast<uint16_t>(c) : uint16_t{0});
    EXPECT_EQ(model_time(t, a), 4 * kSer + kLat);
    // One queue: each waits for the one before to leave the link. Four: the link's load alone.
    EXPECT_EQ(time_floor(t, a), channels ? 4 * kSer : 4 * kSer + kLat);
  }
}

// time_floor never exceeds the model's time: over random topologies and collectives, for the test
// producer's trees under both models, every baseline that applies, and tenet's own (pipelines at
// their rates and channels included), with reductions that take time or none.
TEST(TimeFloor, NeverAboveTheModelsTime) {
  std::mt19937_64 rng(46);
  int algorithms = 0, exact = 0;
  for (int i = 0; i < 60; ++i) {
    const topo::Topology t = testing::random_topology(rng);
    const Collective c = testing::random_collective(rng, t, 4);
    std::vector<Algorithm> made;
    for (LinkModel m : {LinkModel::Pipelined, LinkModel::Hold})
      made.push_back(testing::tree_algorithm(t, c, kChunk, m));
    // Reductions that take no time, or a chunk's time at 200 GB/s.
    const Bandwidth reduce = i % 2 == 0 ? 0 : 200'000'000'000;
    for (BaselineKind b : all_baselines()) {
      try {
        made.push_back(
            make_baseline(BaselineSpec{b, {}}, t, c, kChunk, LinkModel::Pipelined, reduce));
      } catch (const NotApplicable&) {
      }
    }
    for (SynthMethod m : {SynthMethod::Auto, SynthMethod::PlanPipeline}) {
      SynthOptions o;
      o.method = m;
      o.reduce_bandwidth = reduce;
      try {
        made.push_back(synthesize(t, c, kChunk, o));
      } catch (const NotApplicable&) {
      }
    }
    for (const Algorithm& a : made) {
      const Time floor = time_floor(t, a), time = model_time(t, a);
      EXPECT_LE(floor, time) << i << " " << a.name << " " << a.method << " " << to_string(c.kind);
      EXPECT_GT(floor, 0);
      ++algorithms;
      exact += floor == time;
    }
  }
  EXPECT_GT(algorithms, 150);
  EXPECT_GT(exact, algorithms / 10);  // and it is often exact
}

TEST(Timing, MultiHopRoutesThroughASwitch) {
  // 0 -> switch at 50 GB/s, switch -> 1 at 25 GB/s: the narrowest bandwidth, the summed latency.
  topo::TopologyBuilder b;
  b.add_npu();
  b.add_npu();
  NodeId s = b.add_switch();
  b.add_bidirectional(0, s, kBw, kLat);
  b.add_bidirectional(s, 1, kBw / 2, 2 * kLat);
  auto t = b.build();
  std::vector<LinkId> route{link_between(t, 0, 2), link_between(t, 2, 1)};
  for (LinkModel m : {LinkModel::Pipelined, LinkModel::Hold}) {
    RouteCost c = route_cost(t, route, kChunk, m, false);
    EXPECT_EQ(c.duration, transfer_time(kChunk, kBw / 2) + 3 * kLat);
    EXPECT_EQ(c.occupancy, m == LinkModel::Pipelined ? transfer_time(kChunk, kBw / 2) : c.duration);
  }
}

TEST(Timing, WaitsForDataDependenciesAndLinkOrder) {
  auto t = topo::generate("line:3,bw=50GB/s,lat=0.5us");
  Algorithm a;
  a.collective = Collective::over_all(t, CollectiveKind::Broadcast);
  a.chunk_bytes = kChunk;
  LinkId l01 = link_between(t, 0, 1), l12 = link_between(t, 1, 2);
  a.add(0, 0, 1, std::span(&l01, 1));
  a.add(0, 1, 2, std::span(&l12, 1));  // no explicit dependency: waits for the chunk at npu1
  time(t, a);
  EXPECT_EQ(a[1].start, a[0].end);
  EXPECT_EQ(a[1].end, 2 * (kSer + kLat));
}

TEST(Timing, RejectsBadReferences) {
  auto t = topo::generate("line:2");
  Algorithm a;
  a.collective = Collective::over_all(t, CollectiveKind::AllGather);
  a.chunk_bytes = kChunk;
  LinkId bogus = 99;
  a.add(0, 0, 1, std::span(&bogus, 1));
  EXPECT_THROW(time(t, a), Error);
  EXPECT_THROW(time_floor(t, a), Error);
  Algorithm b = a;
  b = with_transfers(a, {});
  TransferId later = 1;
  LinkId l = 0;
  b.add(0, 0, 1, std::span(&l, 1), Op::Copy, std::span(&later, 1));
  b.add(1, 1, 0, std::span(&l, 1));
  EXPECT_THROW(time(t, b), Error);
  EXPECT_THROW(time_floor(t, b), Error);
}

}  // namespace
}  // namespace tenet::synth

namespace tenet::synth {
namespace {

// A direct All-Reduce: every rank's chunk arrives at its owner from every other rank (reductions)
// and then leaves it for every other rank. The arrival graph joins the arrivals instead of linking
// each to each departure (1024 ranks: 1G edges before), and the times are the verifier's, which
// follows the data dependencies its own way.
TEST(Timing, ManyArrivalsAndDeparturesOfAChunkAreJoined) {
  const auto t = topo::generate("switch:32");
  const Algorithm a = make_baseline({BaselineKind::Direct, {}}, t,
                                    Collective::over_all(t, CollectiveKind::AllReduce, 1), 1 << 20);
  const ArrivalGraph graph(a);
  EXPECT_GT(graph.size(), static_cast<int32_t>(a.size())) << "no joins";
  EXPECT_LT(graph.size(), static_cast<int32_t>(a.size()) + 32 * 32);
  const Report r = verify(t, a);
  ASSERT_TRUE(r.correct()) << testing::violation_text(r);
  EXPECT_EQ(r.collective_time, a.claimed_time);
  // Replayed through the joins: every transfer ready exactly once, after all it waits for.
  std::vector<int32_t> waiting = graph.waits();
  std::vector<int> ready(a.size(), 0);
  for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id)
    ready[id] = waiting[id] == 0;
  for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id) {
    ASSERT_EQ(ready[id], 1) << "transfer " << id << " not ready when its turn in list order came";
    graph.arrived(id, waiting, [&](TransferId u) {
      EXPECT_GT(u, id);
      ++ready[u];
    });
  }
}

// An All-to-All over direct links of many chunks per pair (fc:64, 20 chunks a pair: 5.2M (node,
// chunk) cells, 80.6k transfers) is timed with a map of the cells its transfers touch, not the
// table of every cell (synth/cost/grid.hpp), and keeps the time the verifier finds its own way.
TEST(Timing, AnAllToAllOfManyChunksIsTimedOnTheCellsItTouches) {
  const auto t = topo::generate("fc:64");
  const Collective c = Collective::over_all(t, CollectiveKind::AllToAll, 20);
  ASSERT_GT(static_cast<uint64_t>(t.num_nodes()) * static_cast<uint64_t>(c.num_chunks()),
            kFlatCells);
  const Algorithm a = make_baseline({BaselineKind::Direct, {}}, t, c, 4096);
  ASSERT_GT(static_cast<uint64_t>(t.num_nodes()) * static_cast<uint64_t>(c.num_chunks()),
            kFlatCellsPerTransfer * a.size());
  const Report r = verify(t, a);
  ASSERT_TRUE(r.correct()) << testing::violation_text(r);
  EXPECT_EQ(r.collective_time, a.claimed_time);
  EXPECT_EQ(model_time(t, a), a.claimed_time);
}

// The table of (node, chunk) slots only where some transfer touches them (an All-to-All's table
// of every pair would be 2^30 slots at 1024 NPUs) makes the same graph as the whole table: the
// same waits and the same users of every arrival, through joins (the direct All-Reduce's
// reductions), chains of relays (the ring All-to-All, store and forward) and inputs.
TEST(Timing, TheTouchedSlotsMakeTheWholeTablesGraph) {
  const auto t = topo::generate("switch:16");
  const std::vector<std::pair<BaselineKind, CollectiveKind>> cases = {
      {BaselineKind::Direct, CollectiveKind::AllReduce},
      {BaselineKind::Ring, CollectiveKind::AllToAll},
      {BaselineKind::Ring, CollectiveKind::AllReduce},
      {BaselineKind::Rhd, CollectiveKind::AllGather}};
  for (const auto& [kind, collective] : cases) {
    const Algorithm a = make_baseline({kind, {}}, t, Collective::over_all(t, collective, 2), 4096);
    const ArrivalGraph whole(a, SlotTable::Whole), touched(a, SlotTable::Touched);
    ASSERT_EQ(whole.waits(), touched.waits()) << to_string(collective);
    for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id) {
      // Each graph's users of the arrival, on a table where nothing else is waited for.
      auto users = [&](const ArrivalGraph& g) {
        std::vector<int32_t> waiting(g.waits().size(), 1), ready;
        g.arrived(id, waiting, [&](TransferId u) { ready.push_back(u); });
        return ready;
      };
      ASSERT_EQ(users(whole), users(touched)) << to_string(collective) << " transfer " << id;
    }
  }
}

}  // namespace
}  // namespace tenet::synth
