// Per-step costs (topo::Link::step, Algorithm::step_costs): every transfer pays its route's
// largest step while holding its share of the links, in synth::time, the verifier, every producer,
// the files and the simulator's networks alike.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "sim/collective_engine.hpp"
#include "synth/baselines/baselines.hpp"
#include "synth/cost/timing.hpp"
#include "synth/formats/algorithm_json.hpp"
#include "synth/synthesizer.hpp"
#include "synth/tuning.hpp"
#include "synth/verify/verify.hpp"
#include "tests/synth/test_support.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"

namespace tenet::synth {
namespace {

using testing::charging;
using testing::link_between;

constexpr Bytes kChunk = 1 << 20;
constexpr Bandwidth kBw = 50'000'000'000;  // 50 GB/s
constexpr Time kLat = 500'000;             // 0.5 us
const Time kSer = transfer_time(kChunk, kBw);

// Ring All-Gather on a one-way ring: at step s, NPU i forwards chunk (i - s) mod N.
Algorithm ring_allgather(const topo::Topology& t, int n, LinkModel model) {
  Algorithm a =
      empty_algorithm("ring", t, Collective::over_all(t, CollectiveKind::AllGather), kChunk, model);
  std::vector<TransferId> brought(n, -1);
  for (int s = 0; s < n - 1; ++s) {
    std::vector<TransferId> next = brought;
    for (int i = 0; i < n; ++i) {
      const ChunkId c = ((i - s) % n + n) % n;
      std::vector<TransferId> deps;
      if (brought[c] >= 0) deps.push_back(brought[c]);
      const LinkId l = link_between(t, i, (i + 1) % n);
      next[c] = a.add(c, i, (i + 1) % n, std::span(&l, 1), Op::Copy, deps);
    }
    brought = next;
  }
  return a;
}

// (N-1)(step + alpha + (M/N)/B): each hop pays its step while it holds the link, and each link is
// busy step + bytes/B per transfer (under hold also the latency).
TEST(StepCosts, RingAllGatherEqualsTheClosedForm) {
  for (int n : {2, 4, 8}) {
    const auto t =
        charging(topo::generate(fmt::format("ring:{},bidir=false,bw=50GB/s,lat=0.5us", n)));
    for (LinkModel m : {LinkModel::Pipelined, LinkModel::Hold}) {
      Algorithm a = ring_allgather(t, n, m);
      ASSERT_TRUE(a.step_costs);
      const TimingResult r = time(t, a);
      EXPECT_EQ(r.collective_time, (n - 1) * (topo::kDefaultStep + kLat + kSer)) << n;
      for (Time busy : r.link_busy)
        EXPECT_EQ(busy, (n - 1) * (topo::kDefaultStep + kSer + (m == LinkModel::Hold ? kLat : 0)));
      EXPECT_TRUE(verify(t, a).correct());
      EXPECT_EQ(model_time(t, a), a.claimed_time);
    }
  }
}

// Made where steps are not charged, an algorithm keeps the bytes-only time on any topology.
TEST(StepCosts, OffWhereTheTopologyDoesNotChargeThem) {
  const auto t = topo::generate("ring:4,bidir=false,bw=50GB/s,lat=0.5us");
  ASSERT_FALSE(t.charges_steps());
  Algorithm a = ring_allgather(t, 4, LinkModel::Pipelined);
  EXPECT_FALSE(a.step_costs);
  EXPECT_EQ(time(t, a).collective_time, 3 * (kLat + kSer));
  // Its time is its own: the topology charging later does not change it.
  EXPECT_EQ(model_time(charging(t), a), 3 * (kLat + kSer));
}

// A route through a switch pays its largest link's step, once.
TEST(StepCosts, ARoutePaysItsLargestStepOnce) {
  const auto t = charging(topo::parse_yaml(R"(
npus: [a, b]
switches: [s]
links:
  - {src: a, dst: s, bw: 50GB/s, lat: 0.5us, step: 1us}
  - {src: s, dst: b, bw: 50GB/s, lat: 0.5us, step: 3us}
)"));
  const RouteCost c = route_cost(t, std::vector<LinkId>{0, 2}, kChunk, LinkModel::Pipelined, true);
  EXPECT_EQ(c.step, 3'000'000);
  EXPECT_EQ(c.occupancy, 3'000'000 + kSer);
  EXPECT_EQ(c.duration, 3'000'000 + kSer + 2 * kLat);
  const RouteCost off =
      route_cost(t, std::vector<LinkId>{0, 2}, kChunk, LinkModel::Pipelined, false);
  EXPECT_EQ(off.duration, kSer + 2 * kLat);
  RouteCoster coster(t, kChunk, LinkModel::Pipelined, true);
  EXPECT_EQ(coster(std::vector<LinkId>{0, 2}).duration, c.duration);
}

// The ring baseline's All-Reduce on a ring: 2(p-1)(step + alpha + (n/p) beta), in synth::time and
// on every simulated network (the congestion-aware and packet networks start a message a step
// later with the link free meanwhile; one message per link at a time, the same end).
TEST(StepCosts, RingAllReduceIsTheClosedFormOnEveryNetwork) {
  const int p = 8;
  const auto t = charging(topo::generate("ring:8,bw=50GB/s,lat=0.5us"));
  const Algorithm a = make_baseline(parse_baseline("ring:1"), t,
                                    Collective::over_all(t, CollectiveKind::AllReduce), kChunk);
  ASSERT_TRUE(a.step_costs);
  const Time closed = 2 * (p - 1) * (topo::kDefaultStep + kLat + kSer);
  EXPECT_EQ(a.claimed_time, closed);
  EXPECT_EQ(sim::replay(t, a, sim::NetworkKind::Analytical), closed);
  EXPECT_NEAR(static_cast<double>(sim::replay(t, a, sim::NetworkKind::AnalyticalCongestion)),
              static_cast<double>(closed), 14.0);
  // Packets pipeline over the hop: within a packet's time per step of the closed form.
  EXPECT_NEAR(static_cast<double>(sim::replay(t, a, sim::NetworkKind::Packet)),
              static_cast<double>(closed), 2 * (p - 1) * 100'000.0);
}

// Alone on the analytical network, every algorithm made with step costs replays in exactly its
// claimed time, and verifies with that time: synthesized on random topologies, every baseline, and
// ring plans as their algorithms.
TEST(StepCosts, EveryProducerReplaysAndVerifiesItsTime) {
  std::mt19937_64 rng(5);
  int checked = 0;
  for (int i = 0; i < 20; ++i) {
    const auto t = charging(testing::random_topology(rng, 8));
    const Collective c = testing::random_collective(rng, t, 3);
    const Algorithm a = synthesize(t, c, 1 + static_cast<Bytes>(rng() % 1'000'000));
    ASSERT_TRUE(a.step_costs);
    EXPECT_EQ(sim::replay(t, a, sim::NetworkKind::Analytical), a.claimed_time) << c.describe();
    const Report r = verify(t, a);
    EXPECT_TRUE(r.correct()) << c.describe();
    EXPECT_EQ(r.model_time, a.claimed_time) << c.describe();
    ++checked;
  }
  for (const char* spec : {"ring:8", "switch:8", "nvcluster:2x4", "ring:4 x switch:2"}) {
    const auto t = charging(topo::generate(spec));
    for (BaselineKind b : all_baselines()) {
      try {
        const Algorithm a = make_baseline(
            {b, {}}, t, Collective::over_all(t, CollectiveKind::AllReduce, 2), 1 << 20);
        EXPECT_EQ(sim::replay(t, a, sim::NetworkKind::Analytical), a.claimed_time)
            << to_string(b) << " on " << spec;
        EXPECT_TRUE(verify(t, a).correct()) << to_string(b) << " on " << spec;
        ++checked;
      } catch (const NotApplicable&) {
      }
    }
    const std::optional<RingPlan> plan = ring_plan(
        parse_baseline("ring"), t, Collective::over_all(t, CollectiveKind::AllReduce, 2), 96 << 10);
    ASSERT_TRUE(plan) << spec;
    EXPECT_TRUE(plan->step_costs());
    const Algorithm a = plan->materialize(t);
    EXPECT_TRUE(a.step_costs);
    for (sim::NetworkKind net : {sim::NetworkKind::Analytical,
                                 sim::NetworkKind::AnalyticalCongestion, sim::NetworkKind::Packet})
      EXPECT_EQ(sim::replay(t, *plan, net), sim::replay(t, a, net)) << spec;
  }
  EXPECT_GE(checked, 30);
}

// More chunks are no longer free: on a ring at 64 MiB, pipelining a Broadcast in 4096 chunks loses
// to 64 once every step costs 0.3 us, and `-k auto` never cuts chunks under kMinChunkBytes.
TEST(StepCosts, AutoChunksBalanceStepsAgainstPipelining) {
  const auto free_steps = topo::generate("ring:8,bw=50GB/s,lat=0.5us");
  const auto t = charging(free_steps);
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather);
  for (Bytes total : {Bytes{1} << 20, Bytes{64} << 20}) {
    const ChunkingResult r = synthesize_auto_chunks(t, c, total, {}, 4096);
    Collective chosen = c;
    chosen.chunks_per_npu = r.chunks_per_npu;
    EXPECT_TRUE(r.chunks_per_npu == 1 || chosen.chunk_bytes_for(total) >= kMinChunkBytes)
        << r.chunks_per_npu;
    for (const ChunkingResult::Try& tried : r.tried) {
      Collective at = c;
      at.chunks_per_npu = tried.chunks_per_npu;
      EXPECT_TRUE(tried.chunks_per_npu == 1 || at.chunk_bytes_for(total) >= kMinChunkBytes)
          << tried.chunks_per_npu;
    }
    EXPECT_TRUE(verify(t, r.algorithm).correct());
  }
  // A chunk whose bytes take less than its step costs more in steps than it gains in pipelining.
  const Collective bcast = Collective::over_all(t, CollectiveKind::Broadcast);
  const Bytes total = Bytes{64} << 20;
  auto at = [&](const topo::Topology& on, int k) {
    Collective cc = bcast;
    cc.chunks_per_npu = k;
    return make_baseline(parse_baseline("ring:1"), on, cc, cc.chunk_bytes_for(total)).claimed_time;
  };
  EXPECT_LT(at(free_steps, 4096), at(free_steps, 64));
  EXPECT_GT(at(t, 4096), at(t, 64));
}

// Files record it: JSON keeps step_costs (old files without it read as false), and a value that is
// not a boolean is an error naming the field.
TEST(StepCosts, AlgorithmJsonKeepsIt) {
  const auto t = charging(topo::generate("ring:4,bw=50GB/s,lat=0.5us"));
  const Algorithm a = make_baseline(parse_baseline("ring:1"), t,
                                    Collective::over_all(t, CollectiveKind::AllGather), kChunk);
  const std::string text = to_json(a);
  EXPECT_NE(text.find("\"step_costs\": true"), std::string::npos);
  for (const Algorithm& back : {parse_algorithm_json(text), parse_algorithm_json_reference(text)}) {
    EXPECT_TRUE(back.step_costs);
    EXPECT_EQ(model_time(t, back), a.claimed_time);
  }
  std::string old = text;
  old.erase(old.find("  \"step_costs\": true,\n"), std::string("  \"step_costs\": true,\n").size());
  EXPECT_FALSE(parse_algorithm_json(old).step_costs);
  std::string bad = text;
  bad.replace(bad.find("\"step_costs\": true"), 18, "\"step_costs\": 1");
  try {
    parse_algorithm_json(bad, "bad.json");
    FAIL() << "a number for step_costs was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("step_costs"), std::string::npos) << e.what();
  }
}

// Topology files state steps per link or as a default; they survive YAML, JSON and DOT, do not
// change the fingerprint, and a negative one is refused naming the key.
TEST(StepCosts, TopologyFilesStateThem) {
  const std::string text = R"(
defaults: {bw: 100GB/s, lat: 1us, step: 2us}
npus: 3
links:
  - {src: 0, dst: 1}
  - {src: 1, dst: 2, step: 0.5us}
  - {src: 2, dst: 0, step: 0.3us}
)";
  const auto t = topo::parse_yaml(text);
  EXPECT_EQ(t.link(0).step, 2'000'000);
  EXPECT_EQ(t.link(2).step, 500'000);
  EXPECT_EQ(t.link(4).step, topo::kDefaultStep);
  for (const topo::Topology& back :
       {topo::parse_yaml(topo::to_yaml(t)), topo::parse_yaml(topo::to_json(t)),
        topo::parse_dot(topo::to_dot(t))})
    for (LinkId l = 0; l < t.num_links(); ++l) EXPECT_EQ(back.link(l).step, t.link(l).step) << l;
  std::string plain = text;
  plain.replace(plain.find(", step: 2us"), 11, "");
  EXPECT_EQ(topo::parse_yaml(plain).fingerprint(), t.fingerprint());
  std::string negative = text;
  negative.replace(negative.find("0.5us"), 5, "-1us");
  EXPECT_THROW(topo::parse_yaml(negative, "neg.yaml"), Error);
  try {
    topo::parse_yaml(negative, "neg.yaml");
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("neg.yaml"), std::string::npos) << e.what();
  }
}

// Generators: a scale-out network's links cost a network step, a server's the default.
TEST(StepCosts, GeneratorsStateScaleOutSteps) {
  const auto t = topo::generate("nvcluster:2x4,net=rail");
  int network = 0, server = 0;
  for (const topo::Link& l : t.links()) {
    const bool rail =
        t.node(l.src).name.rfind("rail", 0) == 0 || t.node(l.dst).name.rfind("rail", 0) == 0;
    EXPECT_EQ(l.step, rail ? topo::kNetworkStep : topo::kDefaultStep);
    (rail ? network : server)++;
  }
  EXPECT_EQ(network, 16);
  EXPECT_EQ(server, 16);
  const topo::Topology fabric = topo::generate("leafspine:2x4,spines=2");
  for (const topo::Link& l : fabric.links()) EXPECT_EQ(l.step, topo::kNetworkStep);
  const topo::Topology torus = topo::generate("torus2d:3x3");
  for (const topo::Link& l : torus.links()) EXPECT_EQ(l.step, topo::kDefaultStep);
}

// The 16-GPU cluster of examples/ (one degraded NIC, a 2:1 spine): at 1 MiB, `-k auto` keeps
// chunks at or above the minimum, the result verifies at its claimed time, and it stays far under
// the transfer counts no runtime runs.
TEST(StepCosts, AUsersClusterGetsRunnableChunks) {
  const auto t = charging(
      topo::load_file(std::string(TENET_SOURCE_DIR) + "/examples/topologies/cluster16.yaml"));
  for (CollectiveKind kind : {CollectiveKind::AllGather, CollectiveKind::AllReduce}) {
    const Collective c = Collective::over_all(t, kind);
    const ChunkingResult r = synthesize_auto_chunks(t, c, Bytes{1} << 20);
    EXPECT_GE(r.algorithm.chunk_bytes, kMinChunkBytes) << to_string(kind);
    EXPECT_LT(r.algorithm.size(), 100'000u) << to_string(kind);
    const Report v = verify(t, r.algorithm);
    EXPECT_TRUE(v.correct()) << to_string(kind);
    EXPECT_EQ(v.model_time, r.algorithm.claimed_time) << to_string(kind);
  }
}

}  // namespace
}  // namespace tenet::synth
