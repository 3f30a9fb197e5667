#include "bench/harness.hpp"
#include "tests/bench/suite_test_support.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>

#include <algorithm>
#include <filesystem>

#include "bench/report_common.hpp"
#include "synth/baselines/baselines.hpp"
#include "topo/error.hpp"
#include "topo/io.hpp"

namespace tenet::bench {
namespace {

using testing::on;
constexpr auto expect_error = testing::expect_suite_error;

constexpr const char* kSmall = R"(name: small
topologies: [ring:4, switch:4]
collectives: [all-reduce, all-gather]
sizes: [64KiB, 16MiB]
algorithms: all
chunks: [1, 2]
networks: [analytical]
)";

TEST(Suite, TheBuiltInSuiteCoversTheAdvertisedFamilies) {
  const Suite s = parse_suite(default_suite_yaml(), "<default>");
  std::vector<std::string> labels;
  for (const SuiteTopology& t : s.topologies) labels.push_back(t.label);
  for (const char* family : {"ring:", "mesh2d:", "mesh3d:", "torus2d:", "torus3d:", "hypercube:",
                             "switch:", "leafspine:", "nvcluster:", "hetmesh2d:", "two-islands"})
    EXPECT_TRUE(std::any_of(labels.begin(), labels.end(), [&](const std::string& l) {
      return l.find(family) == 0;
    })) << family;
  EXPECT_EQ(s.sizes.front(), Bytes{1} << 20);
  EXPECT_EQ(s.sizes.back(), Bytes{1} << 30);
  const Suite quick = parse_suite(default_suite_yaml(), "<default>", true);
  EXPECT_LT(quick.num_cases(), s.num_cases());
  EXPECT_EQ(quick.name, "default (quick)");
}

TEST(Suite, ReadsInlineAndFileTopologiesRelativeToTheSuite) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("tenet_suite_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "topos");
  topo::write_file_atomically(
      (dir / "topos" / "pair.yaml").string(),
      "name: pair\nnpus: [a, b]\nlinks: [{src: a, dst: b, bw: 10GB/s, lat: 1us}]\n");
  topo::write_file_atomically(
      (dir / "suite.yaml").string(),
      "topologies:\n  - topos/pair.yaml\n  - {name: trio, defaults: {bw: 1GB/s, lat: 1us},"
      " npus: [x, y, z], links: [{src: x, dst: y}, {src: y, dst: z}]}\n"
      "collectives: all-gather\nsizes: 1MiB\n");
  const Suite s = load_suite((dir / "suite.yaml").string());
  ASSERT_EQ(s.topologies.size(), 2u);
  EXPECT_EQ(s.topologies[0].topology.num_npus(), 2);
  EXPECT_EQ(s.topologies[1].label, "trio");
  EXPECT_EQ(s.topologies[1].topology.num_npus(), 3);
  // report.md's headings hold results.csv's `topology` column (the label).
  EXPECT_EQ(report_name(s.topologies[0]), "pair (" + s.topologies[0].label + ")");
  EXPECT_EQ(report_name(s.topologies[1]), "trio");
  EXPECT_EQ(s.name, "suite");
  EXPECT_EQ(s.algorithms, std::vector<std::string>{"all"});
  EXPECT_EQ(s.chunks, std::vector<int>{0});  // auto, as tenet synth and tenet sim default to
  std::filesystem::remove_all(dir);
}

// A suite may be someone else's: a topology file it names is read only where it is a regular
// file, not through a link (to a file outside, read before) nor from a FIFO (which held the read
// for ever); the error names the file.
TEST(Suite, TopologyFilesThatAreLinksOrFifosAreRefused) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("tenet_suite_links_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  topo::write_file_atomically((dir / "outside.yaml").string(),
                              "name: pair\nnpus: [a, b]\nlinks: [{src: a, dst: b, bw: 10GB/s, "
                              "lat: 1us}]\n");
  topo::write_file_atomically((dir / "suite.yaml").string(),
                              "topologies: [net.yaml]\ncollectives: all-gather\nsizes: 1MiB\n");
  auto error_of = [&] {
    try {
      load_suite((dir / "suite.yaml").string());
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  std::filesystem::create_symlink(dir / "outside.yaml", dir / "net.yaml");
  EXPECT_NE(error_of().find("net.yaml: a symbolic link, not read"), std::string::npos)
      << error_of();
  std::filesystem::remove(dir / "net.yaml");
  ASSERT_EQ(::mkfifo((dir / "net.yaml").c_str(), 0600), 0);
  EXPECT_NE(error_of().find("net.yaml: not a regular file, not read"), std::string::npos)
      << error_of();
  std::filesystem::remove(dir / "net.yaml");
  std::filesystem::copy_file(dir / "outside.yaml", dir / "net.yaml");
  EXPECT_EQ(load_suite((dir / "suite.yaml").string()).topologies.at(0).topology.num_npus(), 2);
  std::filesystem::remove_all(dir);
}

TEST(Suite, MalformedSuitesNameTheLine) {
  expect_error("topologies: [ring:4]\ncollectives: [all-reduce]\nsizes: [1MiB]\ncolour: red\n", 4,
               "unknown key 'colour'");
  expect_error("topologies: [ring:4]\ncollectives: [all-reduce]\nsizes: [1MiB, 12]\n", 3, "unit");
  expect_error("topologies: [ring:4]\ncollectives:\n  - all-reduce\n  - all-mix\n", 4, "all-mix");
  expect_error(
      "topologies: [ring:4]\ncollectives: [all-reduce]\nsizes: [1MiB]\nalgorithms: [ring, fast]\n",
      4, "unknown algorithm 'fast'");
  expect_error("topologies: [ring:4]\ncollectives: [all-reduce]\nsizes: [1MiB]\nchunks: [0]\n", 4,
               "[1, 4096]");
  expect_error("topologies: [ring:4]\ncollectives: [all-reduce]\nsizes: [1MiB]\nrestarts: many\n",
               4, "whole number");
  expect_error(
      "topologies: [ring:4]\ncollectives: [all-reduce]\nsizes: [1MiB]\nnetworks: [ethernet]\n", 4,
      "ethernet");
  expect_error(
      "topologies:\n  - ring:4\n  - nothing-here.yaml\ncollectives: [all-reduce]\nsizes: [1MiB]\n",
      3, "no such file");
  expect_error("topologies:\n  - ring:4\n  - torus2d:4\ncollectives: [all-reduce]\nsizes: [1MiB]\n",
               3, "torus2d:4");
  expect_error("topologies: []\ncollectives: [all-reduce]\nsizes: [1MiB]\n", 1, "non-empty list");
  expect_error("collectives: [all-reduce]\nsizes: [1MiB]\n", 0, "no 'topologies'");
  expect_error("topologies: [ring:4]\ncollectives: [all-reduce]\nsizes: [1MiB]\nquick: {name: q}\n",
               4, "cannot be replaced");
  expect_error("topologies: [ring:4\ncollectives: [all-reduce]\n", 2, "not valid YAML");
  expect_error("- just\n- a list\n", 1, "a suite is a YAML map");
  // An error inside an inline topology carries the suite's line.
  expect_error(
      "topologies:\n  - ring:4\n  - name: bad\n    npus: [a, b]\n    links:\n"
      "      - {src: a, dst: c, bw: 1GB/s, lat: 1us}\ncollectives: [all-reduce]\nsizes: [1MiB]\n",
      6, "c");
}

// A topology entry may name a process group; its collectives run over the group (tenet synth
// --ranks), and a group of one NPU per server beats the ring of its rail by borrowing the servers'
// other NICs.
TEST(Suite, ProcessGroupEntries) {
  const Suite s = parse_suite(R"(topologies:
  - ring:4
  - {topology: "nvcluster:2x8,net=rail", ranks: "0-15:8"}
collectives: [all-reduce, all-gather]
sizes: [64MiB]
algorithms: [tenet, ring]
chunks: [8]
)",
                              "groups.yaml");
  ASSERT_EQ(s.topologies.size(), 2u);
  EXPECT_EQ(s.topologies[1].label, "nvcluster:2x8,net=rail ranks 0-15:8");
  EXPECT_EQ(s.topologies[1].ranks, (std::vector<topo::NodeId>{0, 8}));
  EXPECT_EQ(s.topologies[1].num_ranks(), 2);
  const SuiteResults all = run_suite(s, on(2));
  int group_rows = 0;
  for (const Result& r : all.cases) {
    ASSERT_TRUE(r.ok()) << r.topology << " " << r.algorithm << ": " << r.note;
    if (r.topology != s.topologies[1].label) continue;
    ++group_rows;
    if (r.algorithm != "tenet") continue;
    const auto ring = std::find_if(all.cases.begin(), all.cases.end(), [&](const Result& x) {
      return x.topology == r.topology && x.collective == r.collective && x.algorithm == "ring";
    });
    ASSERT_NE(ring, all.cases.end());
    EXPECT_LT(r.time * 2, ring->time) << synth::to_string(r.collective);  // 8 NICs, not 1
  }
  EXPECT_EQ(group_rows, 4);
  expect_error(
      "topologies:\n  - {topology: ring:4, ranks: \"0-9\"}\n"
      "collectives: [all-reduce]\nsizes: [1MiB]\n",
      2, "ranks of ring:4");
  expect_error("topologies:\n  - {ranks: \"0-1\"}\ncollectives: [all-reduce]\nsizes: [1MiB]\n", 2,
               "needs 'topology'");
  expect_error(
      "topologies:\n  - {topology: ring:4, ranks: \"0-1\", size: 2}\n"
      "collectives: [all-reduce]\nsizes: [1MiB]\n",
      2, "unknown key 'size'");
}

// The statuses' texts, as results.csv, the reports and the rows between processes carry them, read
// back as the statuses they name; nothing else does.
TEST(Harness, StatusesReadBackFromTheirText) {
  for (const auto& [status, text] : std::vector<std::pair<ResultStatus, std::string>>{
           {ResultStatus::Ok, "ok"},
           {ResultStatus::Incorrect, "incorrect"},
           {ResultStatus::NotApplicable, "not-applicable"},
           {ResultStatus::Error, "error"}}) {
    EXPECT_EQ(to_string(status), text);
    EXPECT_EQ(parse_result_status(text), status) << text;
  }
  for (const char* text : {"", "OK", "not applicable", "failed"})
    EXPECT_FALSE(parse_result_status(text).has_value()) << text;
}

TEST(Harness, EveryAlgorithmIsVerifiedAndReplaysInItsTime) {
  const Suite s = parse_suite(kSmall, "small.yaml");
  const std::vector<Result> results = run_suite(s, on(2)).cases;
  ASSERT_EQ(s.num_cases(), 16u);
  int ok = 0;
  std::set<std::string> seen_tenet;
  for (const Result& r : results) {
    ASSERT_TRUE(r.status == ResultStatus::Ok || r.status == ResultStatus::NotApplicable)
        << r.algorithm << ": " << to_string(r.status) << " " << r.note;
    if (!r.ok()) {
      EXPECT_FALSE(r.note.empty());
      continue;
    }
    ++ok;
    EXPECT_GE(r.time, r.bound) << r.algorithm;  // the bound holds
    EXPECT_GT(r.busbw, 0);
    ASSERT_EQ(r.simulated.size(), 1u);
    // An exact replay on `analytical`.
    EXPECT_EQ(r.simulated[0], r.time) << r.algorithm << " on " << r.topology;
    if (r.algorithm == "tenet")
      seen_tenet.insert(
          fmt::format("{}{}{}{}", r.topology, static_cast<int>(r.collective), r.size, r.chunks));
  }
  EXPECT_EQ(seen_tenet.size(), 16u);  // the synthesizer ran on every case
  EXPECT_GT(ok, 16 * 3);
  // The ring baseline equals its closed form: All-Gather on ring:4, (p-1)(a + b/B) per chunk step.
  int checked = 0;
  for (const Result& r : results)
    if (r.topology == "ring:4" && r.algorithm == "ring" &&
        r.collective == synth::CollectiveKind::AllGather && r.chunks == 1 &&
        r.size == (Bytes{16} << 20)) {
      const Bytes per_rank_chunk = (Bytes{16} << 20) / 4;
      EXPECT_EQ(r.time, 3 * (500'000 + transfer_time(per_rank_chunk, 50'000'000'000)));
      ++checked;
    }
  EXPECT_EQ(checked, 1);
}

TEST(Harness, ResultsDoNotDependOnTheThreadCount) {
  const Suite s = parse_suite(kSmall, "small.yaml");
  const std::vector<Result> one = run_suite(s, on(1)).cases, two = run_suite(s, on(2)).cases;
  ASSERT_EQ(one.size(), two.size());
  for (size_t i = 0; i < one.size(); ++i) {
    EXPECT_EQ(one[i].algorithm, two[i].algorithm);
    EXPECT_EQ(one[i].time, two[i].time);
    EXPECT_EQ(one[i].status, two[i].status);
  }
}

TEST(Harness, EarlierBuildTimesOrderTheWorkNotTheResults) {
  const Suite s = parse_suite(kSmall, "small.yaml");
  const std::vector<Result> first = run_suite(s, on(2)).cases;
  const KnownCosts costs = known_costs(results_csv(s, first), "old.csv");
  size_t timed = 0;
  for (const Result& r : first) {
    const auto it =
        costs.find(fmt::format("{}|{}|{}|{}|{}", r.topology, synth::to_string(r.collective), r.size,
                               r.chunks_label(), r.algorithm));
    if (r.status == ResultStatus::NotApplicable) {
      EXPECT_EQ(it, costs.end());  // no build time to learn from
      continue;
    }
    ++timed;
    ASSERT_NE(it, costs.end()) << r.algorithm << " on " << r.topology;
    EXPECT_NEAR(it->second, r.build_seconds, 1e-4);  // results.csv keeps 4 decimals
  }
  EXPECT_EQ(costs.size(), timed);
  // Dealt in another order, the rows are the same.
  HarnessOptions o = on(2);
  o.costs = &costs;
  const std::vector<Result> second = run_suite(s, o).cases;
  ASSERT_EQ(second.size(), first.size());
  for (size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(second[i].algorithm, first[i].algorithm);
    EXPECT_EQ(second[i].time, first[i].time);
    EXPECT_EQ(second[i].note, first[i].note);
  }
  // A file that is not a results.csv is refused before any work, with its line.
  for (const auto& [text, line, what] : std::vector<std::tuple<std::string, int, std::string>>{
           {"topology,npus\nring:4,4\n", 1, "no 'collective' column"},
           {results_csv(s, first) + "ring:4,4\n", 1 + static_cast<int>(first.size()) + 1,
            "cells where the header has"},
           {"", 0, "empty results file"}}) {
    try {
      known_costs(text, "old.csv");
      ADD_FAILURE() << "no error for " << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.where().file, "old.csv");
      EXPECT_EQ(e.where().line, line) << e.what();
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  }
}

// The small suite, run once for the tests that read its results.
struct SmallRun {
  Suite suite = parse_suite(kSmall, "small.yaml");
  std::vector<Result> results = run_suite(suite).cases;
  std::string csv = results_csv(suite, results);
};
const SmallRun& small_run() {
  static const SmallRun run;
  return run;
}

TEST(Harness, WritesEveryResultAsCsv) {
  const SmallRun& run = small_run();
  const std::vector<Result>& results = run.results;
  const std::string& csv = run.csv;
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "topology,npus,collective,size_bytes,chunks_per_npu,chunks_used,algorithm,status,"
            "time_ps,lower_bound_ps,ratio_to_bound,busbw_GBps,build_s,transfers,note,method,"
            "protocol,sim_analytical_ps");
  // What made each algorithm: a baseline by its own name says nothing more; tenet says its
  // producer.
  for (const Result& r : results) {
    if (!r.ok()) continue;
    if (r.algorithm == "tenet")
      EXPECT_FALSE(r.method.empty()) << r.topology << " " << r.size;
    else
      EXPECT_EQ(r.method, "") << r.algorithm;
  }
  EXPECT_EQ(static_cast<size_t>(std::count(csv.begin(), csv.end(), '\n')), results.size() + 1);
}

TEST(Harness, ReportsSpeedUpsAndBusbw) {
  const SmallRun& run = small_run();
  const Suite& s = run.suite;
  const std::vector<Result>& results = run.results;
  const std::string report = report_markdown(s, results);
  EXPECT_NE(report.find("## ring:4 (4 NPUs)"), std::string::npos);
  EXPECT_NE(report.find("## switch:4 (4 NPUs)"), std::string::npos);
  EXPECT_NE(report.find("geometric mean"), std::string::npos);
  EXPECT_EQ(report.find("Failures"), std::string::npos);
  // The synthesizer's busbw and replayed time per case; baselines in the fixed order.
  EXPECT_NE(report.find("| tenet method "), std::string::npos);
  const size_t busbw_at = report.find("| tenet busbw "),
               sim_at = report.find("| sim analytical ", busbw_at),
               ring_at = report.find("ring ", sim_at);
  EXPECT_TRUE(busbw_at != std::string::npos && sim_at != std::string::npos &&
              ring_at != std::string::npos)
      << report;
  EXPECT_NE(report.find("| vs ring | vs bidir-ring | vs direct | vs rhd |"), std::string::npos)
      << report.substr(0, 2000);
  // Tenet's speed-up over ring on ring:4, All-Gather 16 MiB, 1 chunk: printed as the ratio of the
  // times.
  const Result *tenet = nullptr, *ring = nullptr;
  for (const Result& r : results)
    if (r.topology == "ring:4" && r.collective == synth::CollectiveKind::AllGather &&
        r.size == (Bytes{16} << 20) && r.chunks == 1) {
      if (r.algorithm == "tenet") tenet = &r;
      if (r.algorithm == "ring") ring = &r;
    }
  ASSERT_TRUE(tenet && ring);
  EXPECT_NE(report.find(fmt::format(
                "{:.2f}x", static_cast<double>(ring->time) / static_cast<double>(tenet->time))),
            std::string::npos);
}

TEST(Harness, FindsRegressionsAndRefusesBadResultFiles) {
  const SmallRun& run = small_run();
  const std::vector<Result>& results = run.results;
  const std::string& csv = run.csv;
  // Against itself: nothing got worse.
  EXPECT_TRUE(regressions(csv, "old.csv", results).worse.empty());
  // A run where ring got slower and the synthesizer failed on one case.
  std::vector<Result> worse = results;
  size_t changed = 0;
  for (Result& r : worse) {
    if (r.algorithm == "ring" && r.ok() && changed == 0) {
      r.time += 1;
      ++changed;
    }
  }
  worse[0].status = ResultStatus::Error;
  worse[0].note = "boom";
  const auto found = regressions(csv, "old.csv", worse).worse;
  ASSERT_EQ(found.size(), 2u) << fmt::format("{}", fmt::join(found, "\n"));
  EXPECT_NE(found[0].find("now error (boom)"), std::string::npos) << found[0];
  EXPECT_NE(found[1].find("slower collective"), std::string::npos) << found[1];
  // Not a results file, and a ragged one: errors that name the file and line.
  try {
    regressions("a,b\n1,2\n", "old.csv", results);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.where().line, 1);
    EXPECT_NE(std::string(e.what()).find("no 'topology' column"), std::string::npos) << e.what();
  }
  try {
    regressions(csv.substr(0, csv.find('\n') + 1) + "ring:4,4\n", "old.csv", results);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.where().line, 2);
  }
  // A time that is not a whole positive number of picoseconds (stoll read "1e308" as 1 ps), or a
  // build time that is not a number: an error naming the line.
  {
    std::vector<std::string> lines;
    for (size_t at = 0, next; at < csv.size(); at = next + 1) {
      next = csv.find('\n', at);
      if (next == std::string::npos) next = csv.size();
      lines.push_back(csv.substr(at, next - at));
    }
    auto cells_of = [](const std::string& line) {
      std::vector<std::string> cells;
      for (size_t at = 0, next;; at = next + 1) {
        next = line.find(',', at);
        cells.push_back(line.substr(at, next == std::string::npos ? next : next - at));
        if (next == std::string::npos) return cells;
      }
    };
    const std::vector<std::string> header = cells_of(lines[0]);
    const auto column = [&](const char* name) {
      return static_cast<size_t>(std::find(header.begin(), header.end(), name) - header.begin());
    };
    size_t row = 1;
    while (row < lines.size() && (lines[row].find('"') != std::string::npos ||
                                  cells_of(lines[row])[column("status")] != "ok"))
      ++row;
    ASSERT_LT(row, lines.size());
    for (const auto& [name, bad] :
         std::vector<std::pair<const char*, const char*>>{{"time_ps", "1e308"},
                                                          {"time_ps", "-5"},
                                                          {"time_ps", ""},
                                                          {"build_s", "fast"},
                                                          {"build_s", "inf"}}) {
      std::vector<std::string> cells = cells_of(lines[row]);
      cells[column(name)] = bad;
      std::string edited;
      for (size_t i = 0; i < lines.size(); ++i)
        edited += (i == row ? fmt::format("{}", fmt::join(cells, ",")) : lines[i]) + "\n";
      try {
        regressions(edited, "old.csv", results);
        ADD_FAILURE() << name << " " << bad;
      } catch (const Error& e) {
        EXPECT_EQ(e.where().line, static_cast<int>(row + 1)) << name << " " << bad;
        EXPECT_NE(std::string(e.what()).find(fmt::format("{} '{}'", name, bad)), std::string::npos)
            << e.what();
      }
    }
  }
}

TEST(Harness, DrawsEveryPlotInAStyleOfItsOwn) {
  const SmallRun& run = small_run();
  const Suite& s = run.suite;
  const std::vector<Result>& results = run.results;
  const auto dir =
      std::filesystem::temp_directory_path() / ("tenet_plots_" + std::to_string(::getpid()));
  const bool rendered = write_plots(s, results, dir.string()).rendered();
  // Every chunk count gets its time and busbw plots, not the first only.
  for (const char* f :
       {"plots.gp", "speedup-all-reduce.dat", "speedup-all-gather.dat", "bound-all-reduce.dat",
        "bound-all-gather.dat", "ring_4-all-reduce-k1.dat", "ring_4-all-reduce-k2.dat",
        "switch_4-all-gather-k2.dat", "switch_4-all-gather-k2-busbw.dat"})
    EXPECT_TRUE(std::filesystem::exists(dir / "plots" / f)) << f;
  const std::string gp = topo::read_file((dir / "plots" / "plots.gp").string());
  // A bound line on every size plot; sizes written as sizes; one colour per algorithm everywhere.
  EXPECT_NE(gp.find("'ring_4-all-reduce-k2.dat' using 1:2 with lines dt 2 lw 2 lc rgb '#000000' "
                    "title 'lower bound'"),
            std::string::npos)
      << gp;
  EXPECT_NE(gp.find("set xtics ('64 KiB' 65536, '16 MiB' 16777216)"), std::string::npos);
  // The size axis spans the sizes run (not gnuplot's whole decades).
  EXPECT_NE(gp.find("set xrange [52012.7:2.11393e+07]"), std::string::npos) << gp;
  // Every line of a size chart has a marker and dash pattern of its own algorithm's, so that
  // coinciding lines stay told apart; every bar its value above it.
  std::map<std::string, std::set<std::string>> marks;  // algorithm -> "pt N ... dt M" drawn with
  for (size_t at = gp.find("with linespoints pt "); at != std::string::npos;
       at = gp.find("with linespoints pt ", at + 1)) {
    const size_t dt = gp.find(" dt ", at), lw = gp.find(" lw ", dt);
    const size_t title = gp.find("title '", at), end = gp.find('\'', title + 7);
    marks[gp.substr(title + 7, end - title - 7)].insert(gp.substr(at + 20, lw - at - 20));
  }
  std::set<std::string> styles;
  for (const auto& [alg, used] : marks) {
    EXPECT_EQ(used.size(), 1u) << alg << " is drawn in several styles";
    styles.insert(*used.begin());
  }
  EXPECT_GE(marks.size(), 5u);
  EXPECT_EQ(styles.size(), marks.size()) << "two algorithms share a marker and dash pattern";
  EXPECT_NE(gp.find("with labels offset 0,0.6"), std::string::npos);
  std::map<std::string, std::set<std::string>> colours;  // algorithm -> colours it was drawn in
  for (size_t at = gp.find("lc rgb '"); at != std::string::npos; at = gp.find("lc rgb '", at + 1)) {
    const std::string colour = gp.substr(at + 8, 7);
    const size_t title = gp.find("title '", at), end = gp.find('\'', title + 7);
    if (title != std::string::npos && gp.find('\n', at) > title)
      colours[gp.substr(title + 7, end - title - 7)].insert(colour);
  }
  EXPECT_GE(colours.size(), 5u);
  for (const auto& [alg, used] : colours)
    EXPECT_EQ(used.size(), 1u) << alg << " is drawn in several colours";
  if (rendered) {
    EXPECT_TRUE(std::filesystem::exists(dir / "plots" / "speedup-all-reduce.svg"));
    EXPECT_TRUE(std::filesystem::exists(dir / "plots" / "time-ring_4-all-reduce-k1.svg"));
    EXPECT_TRUE(std::filesystem::exists(dir / "plots" / "busbw-ring_4-all-reduce-k2.svg"));
  }
  std::filesystem::remove_all(dir);
}

// The percent-of-bound bars compare every algorithm on the same cases: when a baseline fails on one
// case, that case leaves every algorithm's mean on that topology (else the synthesizer would be
// averaged over harder cases than the baseline).
TEST(Harness, BoundChartsCompareCommonCasesOnly) {
  const Suite s = parse_suite(kSmall, "small.yaml");
  std::vector<Result> results = run_suite(s).cases;
  const auto is_case = [](const Result& r) {
    return r.topology == "switch:4" && r.collective == synth::CollectiveKind::AllReduce &&
           r.size == (Bytes{64} << 10) && r.chunks == 1;
  };
  for (Result& r : results)
    if (is_case(r) && r.algorithm == "rhd") r.status = ResultStatus::Error;
  // The expected means: over the switch:4 All-Reduce cases other than the failed one.
  std::map<std::string, std::vector<double>> pct;
  for (const Result& r : results)
    if (r.topology == "switch:4" && r.collective == synth::CollectiveKind::AllReduce && r.ok() &&
        !is_case(r))
      pct[r.algorithm].push_back(100.0 * static_cast<double>(r.bound) /
                                 static_cast<double>(r.time));
  ASSERT_EQ(pct["tenet"].size(), 3u);
  const auto dir =
      std::filesystem::temp_directory_path() / ("tenet_bound_" + std::to_string(::getpid()));
  write_plots(s, results, dir.string());
  const std::string dat = topo::read_file((dir / "plots" / "bound-all-reduce.dat").string());
  std::filesystem::remove_all(dir);
  ASSERT_NE(dat.find("\ntopology "), std::string::npos) << dat;
  const size_t header = dat.find("\ntopology ") + 1;
  std::vector<std::string> columns;
  const std::string head = dat.substr(header, dat.find('\n', header) - header);
  for (size_t q = head.find('"'); q != std::string::npos;
       q = head.find('"', head.find('"', q + 1) + 1))
    columns.push_back(head.substr(q + 1, head.find('"', q + 1) - q - 1));
  const size_t row = dat.find("\"switch:4\"");
  ASSERT_NE(row, std::string::npos) << dat;
  std::istringstream cells(dat.substr(row + 10, dat.find('\n', row) - row - 10));
  size_t compared = 0;
  for (const std::string& c : columns) {
    std::string cell;
    cells >> cell;
    if (!pct.count(c)) continue;
    ++compared;
    double log_sum = 0;
    for (double v : pct[c]) log_sum += std::log(v);
    EXPECT_NEAR(std::stod(cell), std::exp(log_sum / static_cast<double>(pct[c].size())), 1e-3) << c;
  }
  EXPECT_EQ(compared, 9u)
      << dat;  // tenet, ring, bidir-ring, direct, rhd, dbt, tree, oneshot, blink
  EXPECT_NE(std::find(columns.begin(), columns.end(), "rhd"), columns.end()) << dat;
}

}  // namespace
}  // namespace tenet::bench
