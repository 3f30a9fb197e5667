// Suites that list workloads: parsing (presets with layouts, Chakra prefixes, errors with the
// suite's line) and the simulations tenet bench runs (the same iteration as tenet sim).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "bench/harness.hpp"
#include "bench/table.hpp"
#include "chakra/et.hpp"
#include "sim/system.hpp"
#include "sim/workload.hpp"
#include "tests/bench/suite_test_support.hpp"
#include "topo/error.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"

namespace tenet::bench {
namespace {

using testing::on;
constexpr auto expect_error = testing::expect_suite_error;

TEST(SimulationSuite, ReadsPresetsLayoutsAndChakraPrefixes) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("tenet_simsuite_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "traces");
  const auto files =
      sim::collective_microbenchmark(synth::CollectiveKind::AllGather, Bytes{1} << 20, 4);
  for (size_t r = 0; r < files.size(); ++r)
    chakra::write_et(chakra::et_path((dir / "traces" / "ag").string(), static_cast<int>(r)),
                     files[r]);
  topo::write_file_atomically((dir / "suite.yaml").string(), R"(topologies: [ring:4]
workloads:
  - resnet50
  - {model: gpt3-175b, tp: 2, pp: 2, microbatches: 4, schedule: gpipe, batch: 8, seq-len: 1024}
  - traces/ag
  - {chakra: traces/ag, name: all-gather-1MiB}
  - "gpt:layers=2,hidden=64,heads=4"
networks: [analytical, packet]
sim-algorithms: [tenet, ring, ring]
)");
  const Suite s = load_suite((dir / "suite.yaml").string());
  EXPECT_TRUE(s.collectives.empty());  // a simulation-only suite needs no collectives or sizes
  EXPECT_EQ(s.num_cases(), 0u);
  ASSERT_EQ(s.workloads.size(), 5u);
  EXPECT_EQ(s.workloads[4].preset, "gpt:layers=2,hidden=64,heads=4");  // a Megatron-LM GPT
  EXPECT_EQ(s.workloads[0].label, "resnet50");
  EXPECT_EQ(s.workloads[0].preset, "resnet50");
  const SuiteWorkload& gpt = s.workloads[1];
  EXPECT_EQ(gpt.label, "gpt3-175b tp2 pp2 mb4 gpipe batch8 seq1024");
  EXPECT_EQ(gpt.tp, 2);
  EXPECT_EQ(gpt.pp, 2);
  EXPECT_EQ(gpt.microbatches, 4);
  EXPECT_EQ(gpt.schedule, sim::PipelineSchedule::GPipe);
  EXPECT_EQ(gpt.shape.batch, 8);
  EXPECT_EQ(gpt.shape.sequence, 1024);
  EXPECT_EQ(s.workloads[2].label, "traces/ag");
  EXPECT_EQ(s.workloads[2].prefix, (dir / "traces" / "ag").string());  // relative to the suite file
  EXPECT_EQ(s.workloads[3].label, "all-gather-1MiB");
  EXPECT_EQ(s.sim_algorithms, (std::vector<std::string>{"tenet", "ring"}));
  EXPECT_EQ(s.num_simulations(), 1u * 5 * 2 * 2);
  std::filesystem::remove_all(dir);
}

TEST(SimulationSuite, MalformedWorkloadsNameTheLine) {
  const std::string head = "topologies: [ring:4]\n";
  expect_error(head + "workloads:\n  - resnet\n", 3, "did you mean 'resnet50'");
  expect_error(head + "workloads:\n  - traces/none\n", 3, "no Chakra ET file traces/none.0.et");
  expect_error(head + "workloads:\n  - {model: gpt3-175b, tp: two}\n", 3,
               "'tp' must be a whole number");
  expect_error(head + "workloads:\n  - {model: gpt3-175b, pp: 0}\n", 3, "'pp' must lie in");
  expect_error(head + "workloads:\n  - {model: resnet50, seq-len: 128}\n", 3, "no sequence length");
  expect_error(head + "workloads:\n  - {model: gpt3-175b, schedule: zigzag}\n", 3, "gpipe or 1f1b");
  expect_error(head + "workloads:\n  - \"gpt:layers=2,hidden=64,heads=5\"\n", 3,
               "5 heads do not divide the width 64");
  expect_error(head + "workloads:\n  - {model: \"gpt:layers=2,hidden=64\"}\n", 3, "no heads");
  expect_error(head + "workloads:\n  - {model: gpt3-175b, tensor: 8}\n", 3,
               "unknown workload key 'tensor'");
  expect_error(head + "workloads:\n  - {chakra: x, model: resnet50}\n", 3,
               "exactly one of 'model'");
  expect_error(head + "workloads:\n  - {name: nothing}\n", 3, "exactly one of 'model'");
  expect_error(head + "workloads:\n  - [resnet50]\n", 3, "a workload is a model preset");
  expect_error(head + "workloads:\n  - resnet50\n  - {model: resnet50}\n", 4,
               "two workloads are called 'resnet50'");
  expect_error(head + "workloads: [resnet50]\nsim-algorithms: [tenet, rnig]\n", 3, "rnig");
  expect_error(head + "workloads: [resnet50]\ncollectives: [all-reduce]\n", 0, "no 'sizes'");
  expect_error(head + "sizes: [1MiB]\n", 0, "no 'collectives'");
  expect_error(head + "collectives: [all-reduce]\nsizes: [1MiB]\nworkload: [resnet50]\n", 4,
               "unknown key 'workload' (did you mean 'workloads'?)");
}

TEST(SimulationSuite, EachSimulationIsTheIterationTenetSimReports) {
  const Suite s = parse_suite(R"(topologies: ["nvcluster:2x4,net=rail", ring:6]
workloads:
  - resnet50
  - {model: gpt3-175b, tp: 4, batch: 1, seq-len: 256}
networks: [analytical, analytical-congestion]
sim-algorithms: [tenet, ring]
)",
                              "sims.yaml");
  const SuiteResults all = run_suite(s, on(2));
  EXPECT_TRUE(all.cases.empty());
  ASSERT_EQ(all.simulations.size(), s.num_simulations());
  ASSERT_EQ(all.simulations.size(), 2u * 2 * 2 * 2);
  size_t i = 0;
  for (const SuiteTopology& t : s.topologies)
    for (const SuiteWorkload& w : s.workloads)
      for (sim::NetworkKind n : s.sim_networks())
        for (const std::string& a : s.sim_algorithms) {
          const SimRun& r = all.simulations[i++];  // in suite order
          EXPECT_EQ(r.topology, t.label);
          EXPECT_EQ(r.workload, w.label);
          EXPECT_EQ(r.network, n);
          EXPECT_EQ(r.algorithm, a);
          // 6 NPUs do not split into tensor-parallel groups of 4.
          if (t.topology.num_npus() % w.tp != 0) {
            EXPECT_EQ(r.status, ResultStatus::NotApplicable) << r.note;
            EXPECT_NE(r.note.find("do not split"), std::string::npos) << r.note;
            continue;
          }
          ASSERT_TRUE(r.ok()) << r.note;
          // What tenet sim computes for the same workload, network and producer.
          sim::SimConfig cfg;
          cfg.network = n;
          cfg.chunks_per_npu = 0;
          if (a != "tenet") cfg.algorithms[synth::CollectiveKind::AllReduce] = a;
          const auto workload = sim::training_iteration(
              sim::model_preset(w.preset, sim::batch_shape(w.preset, w.shape, w.microbatches)),
              sim::layout(t.topology.num_npus(), w.tp, w.pp, 1, w.schedule));
          const sim::SimResult expected = sim::simulate(t.topology, workload, cfg);
          EXPECT_EQ(r.iteration, expected.iteration)
              << r.workload << " on " << r.topology << " " << a;
          EXPECT_EQ(r.collectives, expected.collectives);
          EXPECT_EQ(r.message_rows.size(), expected.message_rows.size());
          int calls = 0;
          for (const sim::CollectiveRow& row : r.collective_rows) calls += row.calls;
          EXPECT_EQ(calls, r.collectives);
          EXPECT_GT(r.compute, 0);
          EXPECT_LE(r.exposed, r.communication);
          EXPECT_GT(r.max_link_utilization, 0);
        }
  // On ring:6 the ring All-Reduce is what tenet finds too.
  for (size_t k = 0; k + 1 < all.simulations.size(); k += 2) {  // tenet, then ring, per network
    const SimRun &tenet = all.simulations[k], &ring = all.simulations[k + 1];
    if (tenet.topology == "ring:6" && tenet.workload == "resnet50") {
      ASSERT_EQ(ring.algorithm, "ring");
      EXPECT_EQ(tenet.iteration, ring.iteration);
    }
  }

  // simulations.csv: a row per simulation, times only where one ran.
  const auto rows = parse_csv(simulations_csv(all.simulations));
  ASSERT_EQ(rows.size(), 1 + all.simulations.size());
  EXPECT_EQ(rows[0][6], "iteration_ps");
  for (size_t k = 0; k < all.simulations.size(); ++k) {
    EXPECT_EQ(rows[k + 1][5], to_string(all.simulations[k].status));
    EXPECT_EQ(rows[k + 1][6],
              all.simulations[k].ok() ? std::to_string(all.simulations[k].iteration) : "");
  }
  // simulation_collectives.csv: a row per simulation and collective row, with its producer.
  const auto by_collective = parse_csv(simulation_collectives_csv(all.simulations));
  size_t expected_rows = 1;
  for (const SimRun& r : all.simulations)
    expected_rows += r.collective_rows.size() + r.message_rows.size();
  ASSERT_EQ(by_collective.size(), expected_rows);
  ASSERT_GT(by_collective.size(), 1u);
  EXPECT_EQ(by_collective[0][4], "group");
  EXPECT_EQ(by_collective[0][8], "producer");
  for (size_t k = 1; k < by_collective.size(); ++k) {
    EXPECT_TRUE(by_collective[k][4] == "dp" || by_collective[k][4] == "tp") << by_collective[k][4];
    if (by_collective[k][3] == "ring") {
      EXPECT_EQ(by_collective[k][8], "ring");
    }
  }
  const std::string md = simulations_markdown(s, all.simulations);
  EXPECT_NE(md.find("## gpt3-175b tp4 batch1 seq256 on nvcluster:2x4,net=rail (8 NPUs)"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| network"), std::string::npos);
  EXPECT_NE(md.find("not-applicable: 6 NPUs do not split"), std::string::npos) << md;
}

TEST(SimulationSuite, AProducerThatCannotRunACollectiveIsNotApplicable) {
  // ring:8 has no link from npu3 to npu0: a ring over a tensor-parallel group {0..3} cannot close.
  const Suite s = parse_suite(
      "topologies: [ring:8]\nworkloads: [{model: gpt3-175b, tp: 4, batch: 1, seq-len: 128}]\n"
      "sim-algorithms: [tenet, ring]\n",
      "s.yaml");
  const SuiteResults all = run_suite(s, on(1));
  ASSERT_EQ(all.simulations.size(), 2u);
  EXPECT_TRUE(all.simulations[0].ok()) << all.simulations[0].note;
  EXPECT_EQ(all.simulations[1].status, ResultStatus::NotApplicable);
  EXPECT_FALSE(all.simulations[1].note.empty());
}

TEST(SimulationSuite, ATraceRunsWhereItFits) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("tenet_simtrace_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto files =
      sim::collective_microbenchmark(synth::CollectiveKind::AllGather, Bytes{1} << 20, 4);
  for (size_t r = 0; r < files.size(); ++r)
    chakra::write_et(chakra::et_path((dir / "ag").string(), static_cast<int>(r)), files[r]);
  topo::write_file_atomically((dir / "s.yaml").string(),
                              "topologies: [ring:2, ring:4]\nworkloads: [ag]\n"
                              "sim-algorithms: [ring]\n");
  const SuiteResults all = run_suite(load_suite((dir / "s.yaml").string()), on(1));
  ASSERT_EQ(all.simulations.size(), 2u);
  EXPECT_EQ(all.simulations[0].status, ResultStatus::NotApplicable);
  EXPECT_EQ(all.simulations[0].note, "the trace has 4 ranks, the topology 2 NPUs");
  ASSERT_TRUE(all.simulations[1].ok()) << all.simulations[1].note;
  // What tenet sim reports for the trace with --coll all-gather=ring (auto chunks).
  sim::SimConfig cfg;
  cfg.chunks_per_npu = 0;
  cfg.algorithms[synth::CollectiveKind::AllGather] = "ring";
  EXPECT_EQ(all.simulations[1].iteration,
            sim::simulate(topo::generate("ring:4"), files, cfg).iteration);
  EXPECT_EQ(all.simulations[1].collectives, 1);
  std::filesystem::remove_all(dir);
}

// --compare-to's simulations: against an earlier simulations.csv, a longer iteration and a
// simulation that no longer runs are regressions (by how much, in time and percent); the same or
// a shorter one is not, rows of simulations not run now are skipped, and a file that is not a
// simulations.csv, or an ok row without a whole positive iteration_ps, is an error naming the
// file and line before any work (check_old_simulations).
TEST(SimulationSuite, RegressionsAgainstAnEarlierSimulationsCsv) {
  auto run = [](const char* topology, const char* algorithm, Time iteration) {
    SimRun r;
    r.topology = topology;
    r.npus = 4;
    r.workload = "resnet50";
    r.network = sim::NetworkKind::Analytical;
    r.algorithm = algorithm;
    r.status = ResultStatus::Ok;
    r.iteration = r.compute = iteration;
    return r;
  };
  const std::vector<SimRun> before{run("ring:4", "tenet", 2'000'000'000),
                                   run("ring:4", "ring", 2'100'000'000),
                                   run("switch:4", "tenet", 1'000'000'000)};
  const std::string csv = simulations_csv(before);
  check_old_simulations(csv, "old/simulations.csv");
  EXPECT_TRUE(sim_regressions(csv, "old/simulations.csv", before).empty());
  std::vector<SimRun> now(before.begin(), before.begin() + 2);  // switch:4 not run now
  now[0].iteration += 1000;                                     // 1 ns longer
  now[1].iteration -= 1000;                                     // shorter: fine
  std::vector<std::string> worse = sim_regressions(csv, "old/simulations.csv", now);
  ASSERT_EQ(worse.size(), 1u);
  EXPECT_NE(worse[0].find("resnet50 on ring:4 (analytical network, tenet): slower iteration"),
            std::string::npos)
      << worse[0];
  EXPECT_NE(worse[0].find("+1 ns, +5e-05 %"), std::string::npos) << worse[0];
  now[1].status = ResultStatus::Error;
  now[1].note = "boom";
  worse = sim_regressions(csv, "old/simulations.csv", now);
  ASSERT_EQ(worse.size(), 2u);
  EXPECT_NE(worse[1].find("was ok, now error (boom)"), std::string::npos) << worse[1];

  auto error_at = [](const std::string& text) {
    try {
      check_old_simulations(text, "old/simulations.csv");
    } catch (const Error& e) {
      EXPECT_EQ(e.where().file, "old/simulations.csv");
      return std::pair(e.where().line, std::string(e.what()));
    }
    return std::pair(-1, std::string());
  };
  EXPECT_NE(error_at("").second.find("empty simulations file"), std::string::npos);
  EXPECT_EQ(error_at("topology,workload\nring:4,resnet50\n").first, 1);  // a results.csv, say
  const size_t first_row = csv.find('\n') + 1;
  EXPECT_EQ(error_at(csv.substr(0, first_row) + "ring:4,4\n").first, 2);  // a short row
  const std::string row = csv.substr(first_row, csv.find('\n', first_row) - first_row);
  for (const char* bad : {"1e308", "-5", "", "2.5"}) {
    std::string edited = csv;
    const std::string old_cell = ",2000000000,";
    const size_t at = edited.find(old_cell, first_row);
    ASSERT_NE(at, std::string::npos) << row;
    edited.replace(at, old_cell.size(), fmt::format(",{},", bad));
    const auto [line, message] = error_at(edited);
    EXPECT_EQ(line, 2) << bad;
    EXPECT_NE(message.find(fmt::format("iteration_ps '{}'", bad)), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace tenet::bench
