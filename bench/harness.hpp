// The comparison harness behind `tenet bench`: for every case of a suite, synthesize (best of
// the suite's restarts), build every applicable baseline, verify every algorithm, time it under
// the link cost model and, when the suite names simulator backends, replay it there. Then write
// results.csv, report.md and gnuplot plots, and compare against an earlier results.csv.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench/pool.hpp"
#include "bench/suite.hpp"
#include "sim/system.hpp"
#include "synth/memo.hpp"

namespace tenet::synth {
class AlgorithmCache;  // synth/cache/algorithm_cache.hpp
class Deadline;        // synth/auto/deadline.hpp
}  // namespace tenet::synth

namespace tenet::bench {

// How an algorithm's run or a simulation ended. Code compares these; people and files (results.csv,
// simulations.csv, the reports, the rows exchanged between processes) read their text (to_string).
enum class ResultStatus {
  Ok,
  Incorrect,      // the verifier found violations: a failure of the run
  NotApplicable,  // the algorithm does not apply to the case, or the workload to the topology
  Error,
};
// "ok", "incorrect", "not-applicable", "error".
std::string_view to_string(ResultStatus status);
// The status whose text is `text` (as to_string writes it); nothing for any other text.
std::optional<ResultStatus> parse_result_status(std::string_view text);

struct Result {
  std::string topology;  // the suite's label
  int npus = 0;
  synth::CollectiveKind collective{};
  Bytes size = 0;
  int chunks = 1;       // per NPU as the suite asked; 0: auto (picked per algorithm)
  int chunks_used = 1;  // what the algorithm ran with
  std::string algorithm;
  std::string method;    // what made it (synth::method_of): "server-plan matcher", "baseline ring"
  std::string protocol;  // the runtime protocol it runs (synth::Algorithm::protocol), or empty
  ResultStatus status = ResultStatus::Error;  // until the run sets it
  std::string note;          // why not applicable, the first violation, or the error
  Time time = 0;             // collective time under the link cost model
  Time bound = 0;            // the lower bound
  double busbw = 0;          // bytes per second
  double build_seconds = 0;  // synthesis or construction
  bool from_cache = false;   // read from the algorithm cache (verified): build_seconds is the read
  size_t transfers = 0;
  std::vector<Time> simulated;  // per suite network, the replayed time

  bool ok() const { return status == ResultStatus::Ok; }
  std::string chunks_label() const { return chunks == 0 ? "auto" : std::to_string(chunks); }
  double ratio() const {
    return bound > 0 ? static_cast<double>(time) / static_cast<double>(bound) : 0.0;
  }
};

// One training iteration of a suite workload on a topology, network backend and collective
// producer.
struct SimRun {
  std::string topology;  // the suite's label
  int npus = 0;
  std::string workload;  // the suite's label
  sim::NetworkKind network{};
  std::string algorithm;  // producer of every collective it applies to; tenet produces the others
  // Ok, NotApplicable (the layout does not fit the topology) or Error (until the run sets one).
  ResultStatus status = ResultStatus::Error;
  // The simulator's warnings, collectives produced by tenet instead, or the error.
  std::string note;
  Time iteration = 0;
  Time compute = 0, communication = 0, exposed = 0;  // the maximum over ranks
  int collectives = 0;
  uint64_t events = 0;
  double max_link_utilization = 0;                  // busy time / iteration of the busiest link
  double seconds = 0;                               // wall-clock time of the simulation
  std::vector<sim::CollectiveRow> collective_rows;  // where the time went (SimResult's)
  std::vector<sim::MessageRow> message_rows;        // and its point-to-point messages

  bool ok() const { return status == ResultStatus::Ok; }
};

struct SuiteResults {
  // In suite order: topology, collective, size, chunks, then algorithm.
  std::vector<Result> cases;
  // In suite order: topology, workload, network, then sim-algorithm.
  std::vector<SimRun> simulations;
};

// Per case and algorithm (topology|collective|size_bytes|chunks|algorithm), the build seconds an
// earlier results.csv measured; `old_file` names it in errors (a missing column, a short row).
using KnownCosts = std::map<std::string, double>;
KnownCosts known_costs(std::string_view old_csv, const std::string& old_file);

struct HarnessOptions {
  // Cases run concurrently per process; 0: all cores (shared among a host's MPI processes).
  int threads = 0;
  std::function<void(double)> progress;
  // The run's processes (an MPI world, see bench/pool.hpp); nullptr: this process alone.
  const Processes* processes = nullptr;
  PoolStats* stats = nullptr;  // filled on rank 0 when given
  // Earlier build times: the most expensive are dealt first (without them: an estimate).
  const KnownCosts* costs = nullptr;
  // Where synthesized algorithms are kept across runs (synth/cache/algorithm_cache.hpp), or none.
  synth::AlgorithmCache* cache = nullptr;
  // When syntheses answer with the best found so far (synth/auto/deadline.hpp), or none.
  const synth::Deadline* deadline = nullptr;
  // What syntheses keep between their steps (synth/memo.hpp), shared by the run's cases and their
  // reports, or none (each keeps its own).
  synth::SynthMemo* memo = nullptr;
};

// Every case and simulation of the suite. In an MPI run, rank 0 returns them all and the other
// ranks an empty SuiteResults (they ran their share). A case that throws (every algorithm's own
// errors are caught into its row) stops the run: see run_items.
SuiteResults run_suite(const Suite& suite, const HarnessOptions& options = {});

// One row per case and algorithm; times in picoseconds (exact), bandwidths in GB/s (1e9 B/s).
std::string results_csv(const Suite& suite, const std::vector<Result>& results);
// Per topology and baseline, the synthesizer's geometric-mean speed-up (a Markdown table).
std::string summary_markdown(const Suite& suite, const std::vector<Result>& results);
// The summary, then a table per topology: each case's lower bound, the synthesizer's time and its
// speed-up over every baseline, with the geometric mean per baseline; then a summary over
// topologies.
std::string report_markdown(const Suite& suite, const std::vector<Result>& results);

// One row per simulation: iteration, compute, communication and exposed communication (per rank,
// the maximum) in picoseconds, the busiest link's utilization, wall-clock seconds.
std::string simulations_csv(const std::vector<SimRun>& runs);
// One row per simulation and collective row (sim::CollectiveRow): the group kind, collective,
// size, algorithm and method, calls, and the summed time, wait and exposed time in picoseconds;
// then a row per group kind of point-to-point messages (sim::MessageRow): collective
// "point-to-point", calls the messages, size_bytes their bytes in all, time_ps the receivers'
// waits and exposed_ps the part of them their compute sat idle.
std::string simulation_collectives_csv(const std::vector<SimRun>& runs);
// A table per topology and workload: the iteration per network backend and producer, and tenet's
// speed-up over every other producer (their iteration / tenet's).
std::string simulations_markdown(const Suite& suite, const std::vector<SimRun>& runs);

// What became of the plots' SVGs.
struct Plotted {
  enum class Outcome : uint8_t {
    Rendered,   // gnuplot ran plots.gp and exited 0
    NoGnuplot,  // no gnuplot on the PATH
    Failed,     // gnuplot ran and failed (`status`: its exit code, or 128 + the signal)
  };
  Outcome outcome = Outcome::Rendered;
  int status = 0;
  bool rendered() const { return outcome == Outcome::Rendered; }
};

// Writes <dir>/plots/: data files, plots.gp, and, when gnuplot is installed, SVGs (time versus
// size per algorithm for each topology and collective; per collective, speed-up bars when some
// case has both tenet and a baseline, and percent of the lower bound). Names reach plots.gp only as
// gnuplot single-quoted literals, which expand nothing, and gnuplot (from the PATH) runs without a
// shell.
Plotted write_plots(const Suite& suite, const std::vector<Result>& results, const std::string& dir);

// What got worse against an earlier results.csv (`old_file` names it in errors), one sentence each.
struct Regressions {
  // A longer collective time, a verdict lost, a case that no longer runs.
  std::vector<std::string> worse;
  // Builds more than (1 + speed_tolerance) times and 50 ms slower: wall-clock times, which move
  // with machine load.
  std::vector<std::string> slower_builds;
};
Regressions regressions(std::string_view old_csv, const std::string& old_file,
                        const std::vector<Result>& results, double speed_tolerance = 1.0);
// Throws tenet::Error naming `old_file` (and the line) where `old_csv` is not a tenet bench
// simulations.csv: a missing column, a row of another length.
void check_old_simulations(std::string_view old_csv, const std::string& old_file);
// What got worse against an earlier simulations.csv (`old_file` names it in errors): a simulation
// that ran and now does not, or a longer iteration. Rows of simulations not in `runs` are skipped.
std::vector<std::string> sim_regressions(std::string_view old_csv, const std::string& old_file,
                                         const std::vector<SimRun>& runs);

}  // namespace tenet::bench
