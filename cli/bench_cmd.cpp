// tenet bench [SUITE.yaml] [--quick] [-o out/bench] [--compare-to old/results.csv]
#include <fmt/color.h>
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "bench/harness.hpp"
#include "cli/commands.hpp"
#include "cli/progress.hpp"
#include "topo/error.hpp"
#include "topo/io.hpp"

namespace tenet::cli {
namespace {

struct BenchArgs {
  std::string suite, output = "out/bench", compare_to;
  std::vector<std::string> networks;
  bool quick = false, print_default = false, fail_on_build_time = false;
  int threads = 0;
  double speed_tolerance = 1.0;
};

void run_bench(const BenchArgs& args) {
  if (args.print_default) {
    fmt::print("{}", bench::default_suite_yaml());
    return;
  }
  bench::Suite suite = args.suite.empty() ? bench::parse_suite(bench::default_suite_yaml(), "<default suite>", args.quick)
                                          : bench::load_suite(args.suite, args.quick);
  if (!args.networks.empty()) {
    suite.networks.clear();
    for (const std::string& n : args.networks) suite.networks.push_back(sim::parse_network(n));
  }
  // Read the old results before any work, so a bad path fails fast.
  const std::string old_csv = args.compare_to.empty() ? "" : topo::read_file(args.compare_to);
  if (args.threads < 0) throw Error("--threads must be 0 (all cores) or more");

  fmt::print("suite {}: {} topologies, {} cases\n", suite.name, suite.topologies.size(), suite.num_cases());
  std::fflush(stdout);
  const auto begin = std::chrono::steady_clock::now();
  std::vector<bench::Result> results;
  {
    ProgressBar bar("benchmarking");
    results = bench::run_suite(suite, {.threads = args.threads, .progress = [&](double f) { bar(f); }});
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();

  std::filesystem::create_directories(args.output);
  const std::filesystem::path dir(args.output);
  topo::write_file_atomically((dir / "results.csv").string(), bench::results_csv(suite, results));
  topo::write_file_atomically((dir / "report.md").string(), bench::report_markdown(suite, results));
  const bool plotted = bench::write_plots(suite, results, args.output);

  size_t ok = 0, failed = 0, not_applicable = 0;
  const bool color = ::isatty(STDOUT_FILENO);
  for (const bench::Result& r : results) {
    if (r.ok()) ++ok;
    else if (r.status == "not-applicable") ++not_applicable;
    else ++failed;
  }
  fmt::print("{} algorithms verified correct, {} not applicable, {} failed, in {:.1f} s\n\n", ok, not_applicable,
             failed, seconds);
  fmt::print("Synthesized vs baselines (geometric-mean speed-up per topology; above 1x: tenet is faster):\n\n{}\n",
             bench::summary_markdown(suite, results));
  for (const bench::Result& r : results) {
    if (r.ok() || r.status == "not-applicable") continue;
    const std::string line = fmt::format("FAILED {} on {} {} {} ({} chunks/NPU): {}: {}", r.algorithm, r.topology,
                                         synth::to_string(r.collective), format_bytes(r.size), r.chunks_label(), r.status, r.note);
    if (color) fmt::print(fmt::fg(fmt::color::red), "{}\n", line);
    else fmt::print("{}\n", line);
  }
  fmt::print("wrote {}, {}, {}{}\n", (dir / "results.csv").string(), (dir / "report.md").string(),
             (dir / "plots").string(), plotted ? " (SVG)" : "");
  if (!plotted)
    fmt::print("gnuplot is not installed (Debian: gnuplot-nox): wrote the plot data and plots.gp only; "
               "render with `cd {} && gnuplot plots.gp`\n", (dir / "plots").string());
  if (failed > 0) verb_exit_code() = 3;

  if (!args.compare_to.empty()) {
    const bench::Regressions found = bench::regressions(old_csv, args.compare_to, results, args.speed_tolerance);
    std::vector<std::string> worse = found.worse;
    if (args.fail_on_build_time) worse.insert(worse.end(), found.slower_builds.begin(), found.slower_builds.end());
    if (worse.empty()) {
      fmt::print("no regressions against {}\n", args.compare_to);
    } else {
      fmt::print("{} regression{} against {}:\n", worse.size(), worse.size() == 1 ? "" : "s", args.compare_to);
      for (const std::string& w : worse) fmt::print("  {}\n", w);
      if (verb_exit_code() == 0) verb_exit_code() = 4;
    }
    if (!args.fail_on_build_time && !found.slower_builds.empty()) {
      fmt::print("warning: {} build{} slower than --speed-tolerance allows (wall-clock, so machine load counts; "
                 "--fail-on-build-time makes these regressions):\n",
                 found.slower_builds.size(), found.slower_builds.size() == 1 ? "" : "s");
      for (const std::string& w : found.slower_builds) fmt::print("  {}\n", w);
    }
  }
}

}  // namespace

void add_bench_command(CLI::App& app) {
  static BenchArgs args;
  CLI::App* cmd = app.add_subcommand(
      "bench",
      "Compare the synthesizer with every applicable baseline over a suite of topologies x\n"
      "collectives x sizes x chunk counts. Every algorithm is verified; a failure is a failure of\n"
      "the run. Writes <output>/results.csv, report.md (tables with tenet's speed-up and geometric\n"
      "means) and plots/ (gnuplot SVGs when gnuplot is installed). A suite without `chunks` runs auto\n"
      "(each algorithm picks its chunks per NPU), as tenet synth and tenet sim do by default.\n"
      "Exit codes: 0 done, 2 bad input, 3 an algorithm failed verification or errored,\n"
      "4 regressions against --compare-to.");
  cmd->add_option("suite", args.suite,
                  "Suite YAML file (see --print-default for the format); default: the built-in suite");
  cmd->add_flag("--quick", args.quick, "Run the suite's quick subset (the built-in one: 16 cases, about 6 s on 2 cores)");
  cmd->add_option("-o,--output", args.output, "Output folder")->capture_default_str();
  cmd->add_option("--compare-to", args.compare_to,
                  "An earlier results.csv: print what got worse (slower collectives, lost verdicts, cases that\n"
                  "no longer run) and exit 4 if anything did; builds over (1 + tolerance) times slower are\n"
                  "warnings (wall-clock build times move with machine load) unless --fail-on-build-time");
  cmd->add_option("--speed-tolerance", args.speed_tolerance,
                  "Build-time slack for --compare-to (1.0: flag builds over twice as slow)")
      ->capture_default_str();
  cmd->add_flag("--fail-on-build-time", args.fail_on_build_time,
                "With --compare-to: slower builds are regressions too (exit 4), not warnings");
  cmd->add_option("--network", args.networks,
                  "Also replay every algorithm on these simulator backends (comma-separated:\n"
                  "analytical, analytical-congestion, packet with its defaults); replaces the suite's `networks`")
      ->delimiter(',');
  cmd->add_option("-j,--threads", args.threads, "Cases run concurrently; 0: all cores")->capture_default_str();
  cmd->add_flag("--print-default", args.print_default, "Print the built-in suite (a starting point for your own)");
  cmd->callback([] { run_bench(args); });
}

}  // namespace tenet::cli
