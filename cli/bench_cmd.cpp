// tenet bench [SUITE.yaml] [--quick] [-o out/bench] [--compare-to old/results.csv]
#include <fmt/color.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <optional>

#include "bench/harness.hpp"
#include "cli/commands.hpp"
#include "cli/progress.hpp"
#include "cli/synth_rows.hpp"
#include "synth/cache/algorithm_cache.hpp"
#include "topo/error.hpp"
#include "topo/io.hpp"
#include "topo/no_follow.hpp"
#include "topo/output_folder.hpp"
#include "topo/quoting.hpp"

namespace tenet::cli {
namespace {

struct BenchArgs {
  std::string suite, output = "out/bench", compare_to;
  std::vector<std::string> networks;
  bool quick = false, print_default = false, fail_on_build_time = false;
  bool step_costs = true;  // --step-costs
  CacheArgs cache;         // --cache, --no-cache
  std::string time_limit;  // --time-limit
  int threads = 0;
  double speed_tolerance = 1.0;
};

// What --compare-to compares with: the results.csv named, and the simulations.csv beside it where
// there is one (read without following a link: the folder may be one a user was sent).
struct Earlier {
  std::string results;
  std::optional<std::string> simulations;
  std::string simulations_file;  // its path, as errors and the output name it
};

// Reads the suite and the flags, and what --compare-to names; throws tenet::Error on bad input.
bench::Suite prepare(const BenchArgs& args, bool lead, Earlier& earlier, bench::KnownCosts& costs) {
  bench::Suite suite = args.suite.empty() ? bench::parse_suite(bench::default_suite_yaml(),
                                                               "<default suite>", args.quick)
                                          : bench::load_suite(args.suite, args.quick);
  for (bench::SuiteTopology& st : suite.topologies) st.topology.set_charges_steps(args.step_costs);
  if (!args.networks.empty()) {
    suite.networks.clear();
    for (const std::string& n : args.networks) suite.networks.push_back(sim::parse_network(n));
  }
  // Read the old results before any work, so a bad path fails fast.
  if (lead && !args.compare_to.empty()) {
    earlier.results = topo::read_file(args.compare_to);
    // (known_costs checks the file too, before any work; so does reading the simulations.)
    costs = bench::known_costs(earlier.results, args.compare_to);
    const std::filesystem::path folder = std::filesystem::path(args.compare_to).parent_path();
    earlier.simulations_file = (folder / "simulations.csv").string();
    const topo::no_follow::Fd dir = topo::no_follow::open_root(folder.string());
    earlier.simulations =
        topo::no_follow::read_file_at(dir.get(), "simulations.csv", earlier.simulations_file);
    if (earlier.simulations)
      bench::check_old_simulations(*earlier.simulations, earlier.simulations_file);
  }
  if (args.threads < 0) throw Error("--threads must be 0 (all cores) or more");
  if (lead) topo::make_directories(args.output);  // a bad -o fails now, not after the run
  return suite;
}

// "3 processes (MPI) x 1 thread each" or "1 process x 2 threads".
std::string describe_workers(const bench::PoolStats& st) {
  const bool same = std::all_of(st.threads.begin(), st.threads.end(),
                                [&](int t) { return t == st.threads.front(); });
  const std::string threads =
      same ? fmt::format("{} thread{}{}", st.threads.front(), st.threads.front() == 1 ? "" : "s",
                         st.processes > 1 ? " each" : "")
           : fmt::format("{} threads in all",
                         std::accumulate(st.threads.begin(), st.threads.end(), 0));
  return fmt::format("{} process{}{} x {}", st.processes, st.processes == 1 ? "" : "es",
                     st.processes > 1 ? " (MPI)" : "", threads);
}

// Every rank reads the suite; they agree that all could before any work is dealt. False when one
// could not: rank 0 throws its own error or names the ranks that failed; another rank throws its
// own error, or, when rank 0 failed (and says why), sets exit code 2.
bool prepare_everywhere(const BenchArgs& args, const bench::Processes& procs, bench::Suite& suite,
                        Earlier& earlier, bench::KnownCosts& costs) {
  const bool lead = procs.rank() == 0;
  std::exception_ptr bad_input;
  try {
    suite = prepare(args, lead, earlier, costs);
  } catch (...) {
    bad_input = std::current_exception();
  }
  const std::vector<int> failed = procs.failed_ranks(!bad_input);
  if (failed.empty()) return true;
  if (bad_input && (lead || failed.front() != 0)) {
    if (lead) std::rethrow_exception(bad_input);
    try {
      std::rethrow_exception(bad_input);
    } catch (const std::exception& e) {
      throw Error(fmt::format("rank {}: {}", procs.rank(), e.what()));
    }
  }
  if (lead)
    throw Error(fmt::format("the run could not start on rank{} {} (their errors above)",
                            failed.size() == 1 ? "" : "s", fmt::join(failed, ", ")));
  verb_exit_code() = 2;  // rank 0 said why
  return false;
}

// Runs the suite on every rank (rank 0 shows the progress); false when it failed on another rank,
// which rank 0 reports.
bool run_everywhere(const BenchArgs& args, const bench::Processes& procs, const bench::Suite& suite,
                    const bench::KnownCosts& costs, bench::SuiteResults& all,
                    bench::PoolStats& stats) {
  const std::unique_ptr<synth::AlgorithmCache> cache = open_cache(args.cache);
  const TimeLimit deadline(args.time_limit);
  try {
    std::optional<ProgressBar> bar;
    if (procs.rank() == 0) bar.emplace("benchmarking");
    const auto progress = [&](double f) {
      if (bar) (*bar)(f);
    };
    all = bench::run_suite(suite, {.threads = args.threads,
                                   .progress = progress,
                                   .processes = &procs,
                                   .stats = &stats,
                                   .costs = &costs,
                                   .cache = cache.get(),
                                   .deadline = deadline.get()});
  } catch (const bench::RemoteFailure&) {
    verb_exit_code() = 1;  // rank 0 reports the case that failed
    return false;
  }
  if (deadline.get()->stopped())
    fmt::print(stderr,
               "note: syntheses stopped early ({}): their rows are the best found by then\n",
               describe_stop(args.time_limit));
  return true;
}

// What write_report wrote: the paths to print, what gnuplot made of the plots, their folder.
struct Written {
  std::vector<std::string> files;
  std::optional<bench::Plotted> plotted;  // none: no case, no plots
  std::string plots;
};

// The report is one set (topo/output_folder.hpp): results.csv, simulations.csv,
// simulation_collectives.csv, report.md and
// plots/ of this run, committed together; those of an earlier run that this one does not write go.
Written write_report(const std::string& output, const bench::Suite& suite,
                     const bench::SuiteResults& all) {
  const std::vector<bench::Result>& results = all.cases;
  topo::OutputFolder folder(output);
  Written written;
  for (const char* stale :
       {"results.csv", "simulations.csv", "simulation_collectives.csv", "report.md"})
    folder.remove_at_commit(stale);
  folder.replace_tree_at_commit("plots");
  if (suite.num_cases() > 0) {
    topo::write_file_atomically(folder.stage("results.csv"), bench::results_csv(suite, results));
    written.files.push_back(folder.final_path("results.csv"));
  }
  if (!all.simulations.empty()) {
    topo::write_file_atomically(folder.stage("simulations.csv"),
                                bench::simulations_csv(all.simulations));
    written.files.push_back(folder.final_path("simulations.csv"));
    topo::write_file_atomically(folder.stage("simulation_collectives.csv"),
                                bench::simulation_collectives_csv(all.simulations));
    written.files.push_back(folder.final_path("simulation_collectives.csv"));
  }
  topo::write_file_atomically(
      folder.stage("report.md"),
      (suite.num_cases() > 0 ? bench::report_markdown(suite, results) + "\n" : "") +
          bench::simulations_markdown(suite, all.simulations));
  written.files.push_back(folder.final_path("report.md"));
  if (suite.num_cases() > 0) {
    written.plotted = bench::write_plots(suite, results, folder.staging_dir());
    written.files.push_back(folder.final_path("plots") +
                            (written.plotted->rendered() ? " (SVG)" : ""));
  }
  folder.commit();
  written.plots = folder.final_path("plots");
  return written;
}

// How many rows ran (and, for cases, verified correct), did not apply, or failed.
struct Tally {
  size_t ok = 0, failed = 0, not_applicable = 0;
};

template <typename Row>
Tally tally(const std::vector<Row>& rows) {
  Tally t;
  for (const Row& r : rows) {
    if (r.ok())
      ++t.ok;
    else if (r.status == bench::ResultStatus::NotApplicable)
      ++t.not_applicable;
    else
      ++t.failed;
  }
  return t;
}

// The counts, the time and workers, the summary of speed-ups and the simulations' tables.
void print_summary(const bench::Suite& suite, const bench::SuiteResults& all, const Tally& cases,
                   const Tally& sims, double seconds, const bench::Processes& procs,
                   const bench::PoolStats& stats) {
  if (suite.num_cases() > 0)
    fmt::print("{} algorithms verified correct, {} not applicable, {} failed\n", cases.ok,
               cases.not_applicable, cases.failed);
  if (!all.simulations.empty())
    fmt::print("{} simulations ran, {} not applicable, {} failed\n", sims.ok, sims.not_applicable,
               sims.failed);
  fmt::print("in {:.1f} s on {}\n", seconds, describe_workers(stats));
  if (procs.distributed()) {
    std::vector<std::string> per_rank;
    for (size_t r = 0; r < stats.items.size(); ++r)
      per_rank.push_back(fmt::format("{} ({:.1f} s)", stats.items[r], stats.busy_seconds[r]));
    fmt::print("items (busy seconds) per rank: {}\n", fmt::join(per_rank, ", "));
  }
  fmt::print("\n");
  if (suite.num_cases() > 0)
    fmt::print(
        "Synthesized vs baselines (geometric-mean speed-up per topology; above 1x: tenet is "
        "faster):\n\n{}\n",
        bench::summary_markdown(suite, all.cases));
  if (!all.simulations.empty())
    fmt::print("{}\n", bench::simulations_markdown(suite, all.simulations));
}

// A line per failed algorithm or simulation, in red on a terminal.
void print_failures(const bench::SuiteResults& all) {
  const bool color = ::isatty(STDOUT_FILENO);
  auto print_line = [&](const std::string& line) {
    if (color)
      fmt::print(fmt::fg(fmt::color::red), "{}\n", line);
    else
      fmt::print("{}\n", line);
  };
  for (const bench::Result& r : all.cases) {
    if (r.ok() || r.status == bench::ResultStatus::NotApplicable) continue;
    print_line(fmt::format("FAILED {} on {} {} {} ({} chunks/NPU): {}: {}", r.algorithm, r.topology,
                           synth::to_string(r.collective), format_bytes(r.size), r.chunks_label(),
                           bench::to_string(r.status), r.note));
  }
  for (const bench::SimRun& r : all.simulations) {
    if (r.ok() || r.status == bench::ResultStatus::NotApplicable) continue;
    print_line(fmt::format("FAILED simulation of {} on {} ({} network, {}): {}", r.workload,
                           r.topology, sim::to_string(r.network), r.algorithm, r.note));
  }
}

// --compare-to: what got worse (exit code 4 unless an earlier failure set one), and the slower
// builds as warnings unless --fail-on-build-time.
void print_regressions(const BenchArgs& args, const Earlier& earlier,
                       const bench::SuiteResults& all) {
  const bench::Regressions found =
      bench::regressions(earlier.results, args.compare_to, all.cases, args.speed_tolerance);
  std::vector<std::string> worse = found.worse;
  if (earlier.simulations) {
    const std::vector<std::string> sims =
        bench::sim_regressions(*earlier.simulations, earlier.simulations_file, all.simulations);
    worse.insert(worse.end(), sims.begin(), sims.end());
  } else if (!all.simulations.empty()) {
    fmt::print("note: no {}: the simulations are not compared\n", earlier.simulations_file);
  }
  if (args.fail_on_build_time)
    worse.insert(worse.end(), found.slower_builds.begin(), found.slower_builds.end());
  if (worse.empty()) {
    fmt::print("no regressions against {}\n", args.compare_to);
  } else {
    fmt::print("{} regression{} against {}:\n", worse.size(), worse.size() == 1 ? "" : "s",
               args.compare_to);
    for (const std::string& w : worse) fmt::print("  {}\n", w);
    if (verb_exit_code() == 0) verb_exit_code() = 4;
  }
  if (!args.fail_on_build_time && !found.slower_builds.empty()) {
    fmt::print(
        "warning: {} build{} slower than --speed-tolerance allows (wall-clock, so machine load "
        "counts; --fail-on-build-time makes these regressions):\n",
        found.slower_builds.size(), found.slower_builds.size() == 1 ? "" : "s");
    for (const std::string& w : found.slower_builds) fmt::print("  {}\n", w);
  }
}

void run_bench(const BenchArgs& args) {
  if (args.print_default) {
    fmt::print("{}", bench::default_suite_yaml());
    return;
  }
  const bench::Processes procs;  // joins the MPI job when mpirun or srun started this process
  const bool lead = procs.rank() == 0;
  if (!procs.warning().empty() && lead) fmt::print(stderr, "warning: {}\n", procs.warning());
  // Started by an MPI launcher, but without MPI: rank 0 runs it all.
  if (!lead && !procs.distributed()) return;

  Earlier earlier;
  bench::KnownCosts costs;
  bench::Suite suite;
  if (!prepare_everywhere(args, procs, suite, earlier, costs)) return;
  if (lead) {
    fmt::print(
        "suite {}: {} topologies, {} cases{}{}\n", suite.name, suite.topologies.size(),
        suite.num_cases(),
        suite.workloads.empty() ? "" : fmt::format(", {} simulations", suite.num_simulations()),
        procs.distributed() ? fmt::format(", over {} MPI processes", procs.size()) : "");
    std::fflush(stdout);
  }
  const auto begin = std::chrono::steady_clock::now();
  bench::SuiteResults all;
  bench::PoolStats stats;
  if (!run_everywhere(args, procs, suite, costs, all, stats)) return;
  if (!lead) return;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();

  const Written written = write_report(args.output, suite, all);
  const Tally cases = tally(all.cases), sims = tally(all.simulations);
  print_summary(suite, all, cases, sims, seconds, procs, stats);
  print_failures(all);
  fmt::print("wrote {}\n", fmt::join(written.files, ", "));
  if (written.plotted) say_plotted(*written.plotted, written.plots);
  if (cases.failed > 0 || sims.failed > 0) verb_exit_code() = 3;
  if (!args.compare_to.empty()) print_regressions(args, earlier, all);
}

// The help texts that span lines, as printed.
constexpr const char* kBenchHelp =
    R"(Compare the synthesizer with every applicable baseline over a suite of topologies x
collectives x sizes x chunk counts. Every algorithm is verified; a failure is a failure of
the run. Writes <output>/results.csv, report.md (tables with tenet's speed-up and geometric
means) and plots/ (gnuplot SVGs when gnuplot is installed). A suite without `chunks` runs auto
(each algorithm picks its chunks per NPU), as tenet synth and tenet sim do by default.
A suite may also list workloads (model presets with parallelism layouts, Chakra ET prefixes):
each is simulated on every topology, network backend and sim-algorithm (simulations.csv).
Under MPI (`mpirun -n K tenet bench ...`, `srun --mpi=pmix tenet bench ...`) rank 0 deals the
cases to every process, most expensive first, and alone writes the same files a single process
would (only build_s and sim_s, wall-clock times, differ).
Exit codes: 0 done, 2 bad input, 3 an algorithm failed verification or a simulation errored,
4 regressions against --compare-to.)";
constexpr const char* kCompareToHelp =
    R"(An earlier results.csv: print what got worse (slower collectives, lost verdicts, cases that
no longer run; from the simulations.csv beside it, where there is one, slower iterations and
simulations that no longer run) and exit 4 if anything did; builds over (1 + tolerance) times
slower are warnings (wall-clock build times move with machine load) unless --fail-on-build-time.
Its build times also order the work: the slowest cases are dealt first)";
constexpr const char* kNetworkHelp =
    R"(Also replay every algorithm on these simulator backends (comma-separated:
analytical, analytical-congestion, packet with its defaults); replaces the suite's `networks`)";
constexpr const char* kThreadsHelp =
    R"(Cases run concurrently per process; 0: all cores (under MPI, shared among the
processes on each host))";

}  // namespace

void add_bench_command(CLI::App& app) {
  static BenchArgs args;
  CLI::App* cmd = app.add_subcommand("bench", kBenchHelp);
  cmd->add_option(
      "suite", args.suite,
      "Suite YAML file (see --print-default for the format); default: the built-in suite");
  add_step_costs_flag(cmd, args.step_costs);
  add_cache_flags(cmd, args.cache);
  add_time_limit_flag(cmd, args.time_limit);
  cmd->add_flag("--quick", args.quick,
                "Run the suite's quick subset (the built-in one: 16 cases, about 6 s on 2 cores)");
  cmd->add_option("-o,--output", args.output, "Output folder")->capture_default_str();
  cmd->add_option("--compare-to", args.compare_to, kCompareToHelp);
  cmd->add_option("--speed-tolerance", args.speed_tolerance,
                  "Build-time slack for --compare-to (1.0: flag builds over twice as slow)")
      ->capture_default_str();
  cmd->add_flag("--fail-on-build-time", args.fail_on_build_time,
                "With --compare-to: slower builds are regressions too (exit 4), not warnings");
  cmd->add_option("--network", args.networks, kNetworkHelp)->delimiter(',');
  cmd->add_option("-j,--threads", args.threads, kThreadsHelp)->capture_default_str();
  cmd->add_flag("--print-default", args.print_default,
                "Print the built-in suite (a starting point for your own)");
  cmd->callback([] { run_bench(args); });
}

}  // namespace tenet::cli
