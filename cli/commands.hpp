// The verbs of the `tenet` executable. Each registers its subcommand on the app; the work is a
// thin call into the libraries.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "topo/limits.hpp"
#include "topo/topology.hpp"
#include "topo/units.hpp"

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

// --reduce-bw: "0" or a bandwidth with a unit; the flag's name in the error when it does not parse.
Bandwidth parse_reduce_bandwidth(const std::string& text);

}  // namespace tenet::cli
