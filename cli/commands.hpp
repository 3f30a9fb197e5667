// The verbs of the `tenet` executable. Each registers its subcommand on the app; the work is a
// thin call into the libraries.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "topo/limits.hpp"
#include "topo/topology.hpp"
#include "topo/units.hpp"

namespace tenet::synth {
class AlgorithmCache;
class Deadline;
}  // namespace tenet::synth

namespace tenet::cli {

// The exit code a verb asks for when it ran without error (verify: 3 for an incorrect algorithm).
inline int& verb_exit_code() {
  static int code = 0;
  return code;
}

void add_topo_commands(CLI::App& app);
void add_verify_command(CLI::App& app);
void add_synth_command(CLI::App& app);
void add_export_commands(CLI::App& app);
void add_sim_commands(CLI::App& app);
void add_workload_gen_command(CLI::App& app);  // part of add_sim_commands
void add_bench_command(CLI::App& app);

// --chunks-per-npu: a whole number in [1, most], or auto (then `when_auto`).
int parse_chunks(const std::string& text, int when_auto, int most = topo::kMaxChunksPerNpu);

// A size flag's value; its name in the error when it does not parse.
Bytes size_flag(const std::string& flag, const std::string& text);

// --step-costs on|off on a verb that makes, imports or simulates algorithms (default on).
void add_step_costs_flag(CLI::App* cmd, bool& on);
// A topology file or generator spec, charging its links' per-step costs when `step_costs`
// (topo::Topology::charges_steps).
topo::Topology load_topology(const std::string& spec, bool step_costs);

// --cache DIR and --no-cache on a verb that synthesizes (synth, sim, bench).
struct CacheArgs {
  std::string folder;  // empty: the default (synth::AlgorithmCache::default_folder)
  bool off = false;
};
void add_cache_flags(CLI::App* cmd, CacheArgs& args);
// The cache the flags ask for, or null (--no-cache, or no default folder).
std::unique_ptr<synth::AlgorithmCache> open_cache(const CacheArgs& args);

// --time-limit T on a verb that synthesizes.
void add_time_limit_flag(CLI::App* cmd, std::string& limit);
// Why a search stopped early, for the `stopped early` lines: "at --time-limit T" with a limit
// given, else "interrupted" (SIGINT, SIGTERM).
std::string describe_stop(const std::string& limit);
// The deadline --time-limit asks for (empty: no limit), which SIGINT and SIGTERM interrupt while
// this lives (one at a time). Throws tenet::Error naming the flag for a value that is not a
// positive time of at most a day.
class TimeLimit {
 public:
  // `reserve` seconds of the limit are kept back from the searches for what follows them
  // (verifying and writing the answer; synth::Deadline), so that the command, not only its
  // searches, ends near the limit.
  explicit TimeLimit(const std::string& limit, double reserve = 0);
  ~TimeLimit();
  TimeLimit(const TimeLimit&) = delete;
  TimeLimit& operator=(const TimeLimit&) = delete;
  const synth::Deadline* get() const { return deadline_.get(); }

 private:
  std::unique_ptr<synth::Deadline> deadline_;
};

// --reduce-bw: "0" or a bandwidth with a unit; the flag's name in the error when it does not parse.
Bandwidth parse_reduce_bandwidth(const std::string& text);

}  // namespace tenet::cli
