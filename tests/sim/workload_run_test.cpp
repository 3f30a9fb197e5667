// Generated training workloads (sim/workload.hpp) run by the simulator: their groups' kinds, trace
// slices, hybrid layouts, shared algorithms, node counts, pipeline order and the presets' limits.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "sim/system.hpp"
#include "sim/workload.hpp"
#include "topo/generators.hpp"

namespace tenet::sim {
namespace {

using ::testing::HasSubstr;

Model four_layers() {
  Model m{"four", {}};
  for (int l = 0; l < 4; ++l)
    m.layers.push_back({fmt::format("l{}", l), 8 << 20, 2e12, 4e12, 4 << 20, 0});
  return m;
}

// Generated workloads name their groups' kinds (tenet_group): a tp 2 x dp 2 iteration has rows
// for "tp" (two groups) and "dp" (two groups), and their calls are every collective run.
TEST(Workloads, CollectiveRowsNameTheGroupKinds) {
  const auto t = topo::generate("nvcluster:2x2");
  SimConfig cfg;
  cfg.algorithms[synth::CollectiveKind::AllReduce] = "ring";
  const SimResult r =
      simulate(t, training_iteration(four_layers(), {2, 2, 1, 1, PipelineSchedule::OneFOneB}), cfg);
  int calls = 0;
  std::set<std::string> kinds;
  for (const CollectiveRow& row : r.collective_rows) {
    calls += row.calls;
    kinds.insert(row.group);
    EXPECT_EQ(row.groups, 2) << row.group;
    EXPECT_EQ(row.algorithm, "ring");
    EXPECT_LE(row.exposed, row.time) << row.group;
  }
  EXPECT_EQ(calls, r.collectives);
  EXPECT_EQ(kinds, (std::set<std::string>{"dp", "tp"}));
}

// The trace as Perfetto's JSON importer takes it: slices on one track never overlap (so they nest),
// communication slices say what they moved (bytes; a collective's group kind, algorithm and chunks
// per NPU), and links are counters of the share in use (their busy intervals overlap where
// messages share a link, which slices could not show), back to 0 when idle. A tp 2 x pp 2
// iteration on the congestion-aware network (shares below 1) has collectives and sends.
TEST(Workloads, TraceSlicesNestAndSayWhatTheyMoved) {
  const auto t = topo::generate("nvcluster:2x2");
  SimConfig cfg;
  cfg.network = NetworkKind::AnalyticalCongestion;
  cfg.algorithms[synth::CollectiveKind::AllReduce] = "ring";
  cfg.trace = true;
  const SimResult r =
      simulate(t, training_iteration(four_layers(), {1, 2, 2, 2, PipelineSchedule::OneFOneB}), cfg);
  const nlohmann::json j = nlohmann::json::parse(trace_json(r));
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> tracks;
  std::map<std::string, std::vector<double>> counters;  // per link: its samples in order
  int collectives = 0, sends = 0;
  const int network = static_cast<int>(r.ranks.size());
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "X") {
      ASSERT_NE(e["pid"], network) << e.dump();  // links are counters
      const double ts = e["ts"].get<double>(), dur = e["dur"].get<double>();
      tracks[{e["pid"].get<int>(), e["tid"].get<int>()}].emplace_back(ts, ts + dur);
      if (e["tid"].get<int>() < 3) continue;  // compute, CPU, memory
      ASSERT_TRUE(e.contains("args")) << e.dump();
      EXPECT_GT(e["args"]["bytes"].get<int64_t>(), 0) << e.dump();
      if (e["args"].contains("algorithm")) {
        ++collectives;
        EXPECT_EQ(e["args"]["algorithm"], "ring") << e.dump();
        EXPECT_EQ(e["args"]["group"], "tp") << e.dump();
        EXPECT_GT(e["args"]["chunks_per_npu"].get<int>(), 0) << e.dump();
      } else {
        ++sends;
      }
    } else if (e["ph"] == "C") {
      EXPECT_EQ(e["pid"], network);
      const double in_use = e["args"]["in use"].get<double>();
      EXPECT_GE(in_use, 0) << e.dump();
      counters[e["name"].get<std::string>()].push_back(in_use);
    }
  }
  for (auto& [track, slices] : tracks) {
    std::sort(slices.begin(), slices.end());
    for (size_t i = 1; i < slices.size(); ++i)
      EXPECT_LE(slices[i - 1].second, slices[i].first + 1e-6)
          << "rank " << track.first << " track " << track.second << " slice " << i;
  }
  EXPECT_GT(collectives, 0);
  EXPECT_GT(sends, 0);
  ASSERT_FALSE(counters.empty());
  for (const auto& [link, samples] : counters) {
    EXPECT_EQ(samples.back(), 0) << link;  // idle at the end
    EXPECT_GT(*std::max_element(samples.begin(), samples.end()), 0) << link;
  }
}

TEST(Workloads, HybridLayoutsAlwaysComplete) {
  const auto t = topo::generate("nvcluster:2x4");
  for (int dp : {1, 2})
    for (int tp : {1, 2})
      for (int pp : {1, 2, 4})
        for (int mbs : {1, 3})
          for (PipelineSchedule sched : {PipelineSchedule::GPipe, PipelineSchedule::OneFOneB}) {
            const Parallelism par{dp, tp, pp, mbs, sched};
            if (par.ranks() > t.num_npus()) continue;
            SimConfig cfg;
            cfg.algorithms[synth::CollectiveKind::AllReduce] = "ring";
            const SimResult r = simulate(t, training_iteration(four_layers(), par), cfg);
            EXPECT_GT(r.iteration, 0) << dp << "x" << tp << "x" << pp << " mb" << mbs;
          }
}

// A hybrid-parallel iteration on a rail cluster: the tensor-parallel groups (one per server) and
// the data-parallel groups (one per rail) are two shapes (one size each), so two algorithms are
// made and the rest renamed; the iteration takes to the picosecond what it takes with every
// group's own.
TEST(Workloads, SameShapeGroupsShareOneAlgorithm) {
  const auto t = topo::generate("nvcluster:4x4,net=rail");
  const auto files = training_iteration(four_layers(), {4, 4, 1, 2, PipelineSchedule::OneFOneB});
  SimConfig cfg;
  cfg.chunks_per_npu = 4;
  const SimResult shared = simulate(t, files, cfg);
  cfg.rename_groups = false;
  const SimResult own = simulate(t, files, cfg);
  EXPECT_EQ(shared.algorithms_made, 2);         // one TP, one DP
  EXPECT_EQ(shared.algorithms_renamed, 3 + 3);  // the other TP and DP groups
  EXPECT_EQ(own.algorithms_made, 4 + 4);
  EXPECT_EQ(own.algorithms_renamed, 0);
  EXPECT_EQ(shared.iteration, own.iteration);
  EXPECT_EQ(shared.collectives, own.collectives);
}

TEST(Workloads, NodeCountsFollowTheLayout) {
  // dp 2 x tp 2 x pp 2, 2 micro-batches: each rank has 2 layers; per micro-batch a TP All-Reduce
  // per layer forward and backward, one pipeline message each way; one DP All-Reduce per layer.
  const auto files = training_iteration(four_layers(), {2, 2, 2, 2, PipelineSchedule::OneFOneB});
  ASSERT_EQ(files.size(), 8u);
  for (const auto& f : files) {
    int comp = 0, coll = 0, send = 0, recv = 0;
    for (const auto& n : f.nodes) {
      comp += n.type() == ChakraProtoMsg::COMP_NODE;
      coll += n.type() == ChakraProtoMsg::COMM_COLL_NODE;
      send += n.type() == ChakraProtoMsg::COMM_SEND_NODE;
      recv += n.type() == ChakraProtoMsg::COMM_RECV_NODE;
    }
    EXPECT_EQ(comp, 2 * 2 * 2);      // layers x micro-batches x (fwd, bwd)
    EXPECT_EQ(coll, 2 * 2 * 2 + 2);  // TP All-Reduces + DP All-Reduces
    EXPECT_EQ(send, 2);              // activations or gradients, per micro-batch
    EXPECT_EQ(recv, 2);
  }
}

TEST(Workloads, OneMicroBatchPipelineIsSequential) {
  // Two stages, one micro-batch: nothing overlaps, so the iteration is at least all the compute.
  const auto t = topo::generate("ring:2");
  const auto files = training_iteration(four_layers(), {1, 1, 2, 1, PipelineSchedule::GPipe});
  const SimResult r = simulate(t, files, SimConfig{});
  EXPECT_GE(r.iteration, r.ranks[0].compute + r.ranks[1].compute);
  EXPECT_THROW(training_iteration(four_layers(), {1, 1, 5, 1, PipelineSchedule::GPipe}), Error);
}

// A preset's counts are batch x sequence length (each up to 2^24) times the model's sizes: a count
// past what an integer holds is refused naming it, never converted to a wrapped value (a node of
// -2^63 operations ran for 1 ns).
TEST(Workloads, PresetCountsPastTheIntegersAreRefused) {
  auto error = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(error([] {
                model_preset("transformer-1t", {1 << 24, 1 << 24});
              }),
              HasSubstr("transformer-1t: a layer's activations (bytes) would be 1.441e+19, past "
                        "2^62: a smaller batch or sequence length"));
  const Model gpt = model_preset("gpt3-175b", {1 << 24, 1 << 20});
  EXPECT_THAT(
      error([&] {
        training_iteration(gpt, {1, 1, 1, 1, PipelineSchedule::OneFOneB});
      }),
      HasSubstr("gpt3-175b: rank 0 node 'fwd layer0 mb0': 6.375e+22 operations, past 2^62"));
  EXPECT_THAT(describe_batch("gpt3-175b", {1 << 24, 1 << 24}, 1 << 20, 1),
              HasSubstr("(2.951e+20 tokens)"));
}

}  // namespace
}  // namespace tenet::sim
