#include "sim/collective_engine.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <vector>

#include "synth/baselines/baselines.hpp"
#include "synth/cost/timing.hpp"
#include "synth/synthesizer.hpp"
#include "tests/synth/test_support.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"

namespace tenet::sim {
namespace {

// `made` (an algorithm or a ring plan) alone on the analytical network with `endpoints`: when its
// last transfer arrived (and the endpoints' delay after it).
template <typename Made>
Time run_alone(const topo::Topology& t, const Made& made, EndpointModel endpoints) {
  EventQueue events;
  auto net = make_network(NetworkKind::Analytical, t, events);
  Time finish = -1;
  CollectiveRun run(
      made, *net, events, [&] { finish = events.now(); }, endpoints);
  run.start();
  events.run();
  EXPECT_TRUE(run.done());
  return finish;
}

// Alone on an uncongested network, any algorithm replays in exactly its timed collective time.
TEST(CollectiveEngine, ReplaysTheTimingModelExactlyOnAnalytical) {
  std::mt19937_64 rng(11);
  int checked = 0;
  for (int i = 0; i < 40; ++i) {
    const auto t = synth::testing::random_topology(rng, 8);
    const synth::Collective c = synth::testing::random_collective(rng, t, 3);
    const synth::Algorithm a = synth::synthesize(t, c, 1 + static_cast<Bytes>(rng() % 1'000'000));
    EXPECT_EQ(replay(t, a, NetworkKind::Analytical), a.claimed_time) << c.describe();
    ++checked;
  }
  for (const char* spec : {"ring:8", "switch:8", "hypercube:8", "ring:4 x switch:2"})
    for (synth::BaselineKind b : synth::all_baselines()) {
      const auto t = topo::generate(spec);
      try {
        const synth::Algorithm a = synth::make_baseline(
            {b, {}}, t, synth::Collective::over_all(t, synth::CollectiveKind::AllReduce, 2),
            1 << 20);
        EXPECT_EQ(replay(t, a, NetworkKind::Analytical), a.claimed_time)
            << synth::to_string(b) << " on " << spec;
        ++checked;
      } catch (const synth::NotApplicable&) {
      }
    }
  EXPECT_GE(checked, 50);
}

// The runs of one algorithm may share its ReplayList (the simulator's calls of one collective do):
// each keeps its own count of what it still waits for, so two at once on one network, and a third
// started as the second ends, end as runs that each made their own list, on every network, with
// per-step costs and without.
TEST(CollectiveEngine, RunsSharingAListEndAsRunsOfTheirOwn) {
  std::mt19937_64 rng(5);
  for (int i = 0; i < 12; ++i) {
    topo::Topology t = synth::testing::random_topology(rng, 6);
    t.set_charges_steps(i % 2 == 0);
    const synth::Collective c = synth::testing::random_collective(rng, t, 2);
    const synth::Algorithm a = synth::synthesize(t, c, 1 + static_cast<Bytes>(rng() % 1'000'000));
    for (NetworkKind kind :
         {NetworkKind::Analytical, NetworkKind::AnalyticalCongestion, NetworkKind::Packet}) {
      // Two runs started at once, and a third as the second ends: their end times.
      auto ends = [&](auto&& run_of) {
        EventQueue events;
        auto net = make_network(kind, t, events);
        std::vector<Time> end(3, -1);
        std::vector<std::unique_ptr<CollectiveRun>> runs;
        for (int r = 0; r < 3; ++r)
          runs.push_back(run_of(*net, events, [&, r] {
            end[r] = events.now();
            if (r == 1) runs[2]->start();
          }));
        runs[0]->start();
        runs[1]->start();
        events.run();
        for (const auto& run : runs) EXPECT_TRUE(run->done());
        return end;
      };
      const std::vector<Time> own = ends([&](Network& net, EventQueue& events, auto done) {
        return std::make_unique<CollectiveRun>(a, net, events, done);
      });
      std::unique_ptr<ReplayList> list;
      const std::vector<Time> shared = ends([&](Network& net, EventQueue& events, auto done) {
        if (!list) list = std::make_unique<ReplayList>(net.topology(), a);
        return std::make_unique<CollectiveRun>(*list, net, events, done);
      });
      EXPECT_EQ(shared, own) << c.describe() << " on network " << static_cast<int>(kind);
      EXPECT_GT(own[2], own[1]);
    }
  }
}

// A ring plan (synth/ir/ring_plan.hpp) replays exactly as the algorithm it materializes, on every
// network and with the endpoints' costs.
TEST(CollectiveEngine, RingPlansReplayAsTheirAlgorithms) {
  int checked = 0;
  for (const char* spec : {"ring:6", "switch:6", "leafspine:2x4,spines=2", "nvcluster:2x4,net=rail",
                           "torus2d:3x3", "dgx1"})
    for (const char* algo : {"ring", "bidir-ring:1", "ring:3"})
      for (synth::CollectiveKind kind :
           {synth::CollectiveKind::AllGather, synth::CollectiveKind::ReduceScatter,
            synth::CollectiveKind::AllReduce}) {
        const auto t = topo::generate(spec);
        const std::optional<synth::RingPlan> plan = synth::ring_plan(
            synth::parse_baseline(algo), t, synth::Collective::over_all(t, kind, 2), 96 << 10);
        ASSERT_TRUE(plan) << algo << " on " << spec;
        const synth::Algorithm a = plan->materialize(t);
        const std::string what = fmt::format("{} {} on {}", algo, synth::to_string(kind), spec);
        for (NetworkKind net :
             {NetworkKind::Analytical, NetworkKind::AnalyticalCongestion, NetworkKind::Packet})
          EXPECT_EQ(replay(t, *plan, net), replay(t, a, net)) << what << " on " << to_string(net);
        const EndpointModel endpoints{.delay = 1'700'000,
                                      .reduce_memory_bandwidth = 900'000'000'000};
        EXPECT_EQ(run_alone(t, *plan, endpoints), run_alone(t, a, endpoints)) << what;
        EXPECT_GT(run_alone(t, *plan, endpoints), replay(t, a, NetworkKind::Analytical)) << what;
        ++checked;
      }
  EXPECT_EQ(checked, 54);
}

// Past its limit of exact busy intervals a network sums them per link into slices: the busy time
// stays, and utilization over 24 slices of the run moves by at most two slices' worth (each of
// the 24 spans more than 21 of them: 48/512 of it).
TEST(CollectiveEngine, LinkActivityPastItsLimitIsSummedIntoSlices) {
  for (const char* spec : {"ring:6", "torus2d:3x3"})
    for (NetworkKind kind : {NetworkKind::Analytical, NetworkKind::AnalyticalCongestion}) {
      const auto t = topo::generate(spec);
      const synth::Algorithm a = synth::synthesize(
          t, synth::Collective::over_all(t, synth::CollectiveKind::AllReduce, 4), 1 << 20);
      auto run = [&](size_t exact) {
        EventQueue events;
        auto net = make_network(kind, t, events);
        net->keep_activity(true, exact);
        Time finish = 0;
        CollectiveRun r(a, *net, events, [&] { finish = events.now(); });
        r.start();
        events.run();
        return std::pair{finish, net->report()};
      };
      const auto [end, exact] = run(Network::kExactActivity);
      const auto [end2, sliced] = run(5);
      ASSERT_EQ(end, end2);
      EXPECT_EQ(exact.activity_slice, 0);
      ASSERT_GT(sliced.activity_slice, 0);
      EXPECT_LE(sliced.activity_slice * Network::kActivitySlices, 2 * end);
      for (size_t l = 0; l < exact.links.size(); ++l) {
        auto busy = [](const std::vector<Interval>& v) {
          double sum = 0;
          for (const Interval& iv : v) sum += iv.share * static_cast<double>(iv.end - iv.start);
          return sum;
        };
        EXPECT_NEAR(busy(sliced.links[l].activity), busy(exact.links[l].activity),
                    1e-6 * static_cast<double>(end))
            << spec << " link " << l;
        const std::vector<double> u = utilization_over_time(exact.links[l].activity, end, 24),
                                  v = utilization_over_time(sliced.links[l].activity, end, 24);
        for (int k = 0; k < 24; ++k)
          EXPECT_NEAR(u[k], v[k], 48.0 / 512) << spec << " link " << l << " slice " << k;
      }
    }
}

TEST(CollectiveEngine, RingAllReduceOnARingIsTheClosedFormOnBothBackends) {
  const auto t = topo::generate("ring:8,bw=50GB/s,lat=0.5us");
  const synth::Algorithm a = synth::make_baseline(
      {synth::BaselineKind::Ring, {}}, t,
      synth::Collective::over_all(t, synth::CollectiveKind::AllReduce), 1 << 20);
  const Time closed =
      2 * 7 * (500'000 + transfer_time(1 << 20, 50'000'000'000));  // 2(p-1)(alpha + n/p beta)
  EXPECT_EQ(replay(t, a, NetworkKind::Analytical), closed);
  // One message per link at a time: sharing changes nothing (within a picosecond of rounding).
  EXPECT_NEAR(static_cast<double>(replay(t, a, NetworkKind::AnalyticalCongestion)),
              static_cast<double>(closed), 14.0);
}

// ASTRA-sim's endpoints (EndpointModel): its ring All-Reduce on 8 NPUs sends 2(p-1) messages in a
// chain; the first leaves D after the start, each arrival feeds the next send D later (plus three
// passes over local memory in the p-1 reducing steps), and the collective ends D after the last
// arrival: 15 D + 14 L + 7 P.
TEST(CollectiveEngine, EndpointDelayAndReductionsAreTheClosedForm) {
  const auto t = topo::generate("ring:8,bw=50GB/s,lat=0.5us");
  const synth::Algorithm a = synth::make_baseline(
      synth::parse_baseline("ring:1"), t,
      synth::Collective::over_all(t, synth::CollectiveKind::AllReduce), 1 << 17);
  const Time L = 500'000 + transfer_time(a.chunk_bytes, 50'000'000'000);
  const Time D = 10'000;
  const Bandwidth mem = 1'600'000'000'000;
  const Time P = 3 * transfer_time(a.chunk_bytes, mem);
  const auto run = [&](EndpointModel m) { return run_alone(t, a, m); };
  EXPECT_EQ(run({}), 14 * L);
  EXPECT_EQ(run({D, 0}), 15 * D + 14 * L);
  EXPECT_EQ(run({D, mem}), 15 * D + 14 * L + 7 * P);
  EXPECT_EQ(run({0, mem}), 14 * L + 7 * P);
}

// Links shared by rate: on the 16-GPU pod (a 100 GB/s spine carrying four 25 GB/s NIC streams)
// the three networks agree on a synthesized All-Gather: analytical exactly, the flow-level and
// packet-level networks within 2 % (nothing else contends).
TEST(CollectiveEngine, SharedLinksAgreeAcrossTheNetworks) {
  const std::string dir = std::string(TENET_SOURCE_DIR) + "/examples/topologies/";
  for (const char* file : {"pod-1spine.yaml", "pod-2spine.yaml"}) {
    const auto t = topo::load(dir + file);
    for (int k : {1, 4}) {
      const synth::Collective c =
          synth::Collective::over_all(t, synth::CollectiveKind::AllGather, k);
      const synth::Algorithm a = synth::synthesize(t, c, c.chunk_bytes_for(Bytes{64} << 20));
      const auto claim = static_cast<double>(a.claimed_time);
      EXPECT_EQ(replay(t, a, NetworkKind::Analytical), a.claimed_time) << file;
      // Ports of 256 KiB: at k = 1 the server plan streams paced flows that fill the NICs and the
      // spines exactly, and with the auto buffer (a credit round trip and two packets, about 60 KiB
      // here) one flow's packets queued at a full port block the others' behind them in the same
      // input FIFO: 1.06x (one spine) and 1.13x (two) the claim, up to 1.22x for the plan relayed
      // over the two leaves' pods at k = 4 (its relays' NICs full too); 256 KiB absorbs it
      // (within 2 %), as a real switch port does.
      PacketConfig ports;
      ports.buffer = 256 << 10;
      const Time flow = replay(t, a, NetworkKind::AnalyticalCongestion),
                 packet = replay(t, a, NetworkKind::Packet, ports);
      EXPECT_NEAR(static_cast<double>(flow) / claim, 1.0, 0.02) << file << " k=" << k;
      EXPECT_NEAR(static_cast<double>(packet) / claim, 1.0, 0.02) << file << " k=" << k;
      EXPECT_LT(static_cast<double>(replay(t, a, NetworkKind::Packet)) / claim, 1.25)
          << file << " k=" << k;
    }
  }
}

// A producer's own rates: two rings share every link of a bidirectional ring at half rate each.
// The analytical replay is the timing exactly; the other networks honour the rates (a flow never
// above its rate, packets paced) and agree within 2 %.
TEST(CollectiveEngine, ProducerRatesReplayOnEveryNetwork) {
  const auto t = topo::generate("ring:4,bidir=false,bw=50GB/s,lat=0.5us");
  synth::Algorithm a = synth::make_baseline(
      {synth::BaselineKind::Ring, {}}, t,
      synth::Collective::over_all(t, synth::CollectiveKind::AllGather, 2), 4 << 20);
  for (synth::TransferId id = 0; id < static_cast<synth::TransferId>(a.size()); ++id)
    a.set_rate(id, 25'000'000'000);
  synth::time(t, a);
  // Both chunks of a rank move together at half rate: (p-1) steps of (alpha + 2 chunks / B).
  EXPECT_EQ(a.claimed_time, 3 * (500'000 + transfer_time(4 << 20, 25'000'000'000)));
  EXPECT_EQ(replay(t, a, NetworkKind::Analytical), a.claimed_time);
  for (NetworkKind n : {NetworkKind::AnalyticalCongestion, NetworkKind::Packet})
    EXPECT_NEAR(static_cast<double>(replay(t, a, n)) / static_cast<double>(a.claimed_time), 1.0,
                0.02)
        << to_string(n);
  // A rate above the route's bandwidth cannot be replayed.
  a.set_rate(0, 60'000'000'000);
  EXPECT_THROW(replay(t, a, NetworkKind::Analytical), Error);
}

// Serial channels (synth::Algorithm::serial_channels) replay by the same rule: a rank's chunks
// leave one after the other, each at half rate, and the analytical replay is the timing exactly;
// the other networks agree within 2 %.
TEST(CollectiveEngine, SerialChannelsReplayAsTimed) {
  const auto t = topo::generate("ring:4,bidir=false,bw=50GB/s,lat=0.5us");
  const synth::Algorithm ring = synth::make_baseline(
      {synth::BaselineKind::Ring, {}}, t,
      synth::Collective::over_all(t, synth::CollectiveKind::AllGather, 2), 4 << 20);
  const synth::Algorithm a = synth::testing::in_serial_channel(t, ring, 25'000'000'000);
  const Time half = transfer_time(4 << 20, 25'000'000'000);
  // Each link carries its 2 (p - 1) chunks back to back at half its bandwidth (a chunk arrives
  // before the one ahead of it has left), then a latency: twice the shared channels' time, bar
  // the latencies (3 (alpha + chunk / (B/2)), ProducerRatesReplayOnEveryNetwork).
  EXPECT_EQ(a.claimed_time, 6 * half + 500'000);
  EXPECT_EQ(replay(t, a, NetworkKind::Analytical), a.claimed_time);
  for (NetworkKind n : {NetworkKind::AnalyticalCongestion, NetworkKind::Packet})
    EXPECT_NEAR(static_cast<double>(replay(t, a, n)) / static_cast<double>(a.claimed_time), 1.0,
                0.02)
        << to_string(n);
}

}  // namespace
}  // namespace tenet::sim

namespace tenet::sim {
namespace {

// Five 25 GB/s NICs on one leaf send one message each across a 100 GB/s link to the other leaf.
// The analytical network replays Tenet's reservations: four at once fill the link and the fifth
// waits for the first, 2 b / 25 GB/s in all. The congestion-aware network shares the link among
// the five flows max-min fairly, 20 GB/s each: b / 20 GB/s, below it (latencies: three hops).
TEST(CollectiveEngine, CongestionAwareNetworksShareWhatAnalyticalReserves) {
  const auto t = topo::parse_yaml(R"(
npus: [a0, a1, a2, a3, a4, b0, b1, b2, b3, b4]
switches: [leaf0, leaf1]
defaults: {lat: 1us}
links:
  - {src: "a?", dst: leaf0, bw: 25GB/s}
  - {src: "b?", dst: leaf1, bw: 25GB/s}
  - {src: leaf0, dst: leaf1, bw: 100GB/s}
)");
  const Bytes b = 1'000'000;
  synth::Collective c = synth::Collective::over_all(t, synth::CollectiveKind::AllToAll);
  synth::Algorithm a = synth::empty_algorithm("five", t, c, b, synth::LinkModel::Pipelined);
  const topo::NodeId leaf0 = t.find_node("leaf0"), leaf1 = t.find_node("leaf1");
  for (topo::NodeId i = 0; i < 5; ++i) {
    const std::vector<topo::LinkId> route{synth::testing::link_between(t, i, leaf0),
                                          synth::testing::link_between(t, leaf0, leaf1),
                                          synth::testing::link_between(t, leaf1, i + 5)};
    a.add(static_cast<synth::ChunkId>(i * 10 + i + 5), i, i + 5, route);  // pair (i, i + 5)
  }
  const Time latency = 3'000'000;
  EXPECT_EQ(replay(t, a, NetworkKind::Analytical), 2 * transfer_time(b, 25'000'000'000) + latency);
  EXPECT_NEAR(static_cast<double>(replay(t, a, NetworkKind::AnalyticalCongestion)),
              static_cast<double>(transfer_time(b, 20'000'000'000) + latency), 10.0);
}

}  // namespace
}  // namespace tenet::sim
