// tenet verify <algorithm.json> --topo <file|spec>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/formats.hpp"
#include "cli/halves_print.hpp"
#include "synth/formats/algorithm_json.hpp"
#include "synth/verify/verify.hpp"
#include "topo/io.hpp"

namespace tenet::cli {
namespace {

struct VerifyArgs {
  std::string algorithm, topology;
  bool verbose = false, json = false;
  bool step_costs = true;  // for an MSCCL-XML program (another tool's runs as its runtime does)
};

int run_verify(const VerifyArgs& args) {
  const topo::Topology t = load_topology(args.topology, args.step_costs);
  // Another tool's program is verified as its runtime runs it too: the import runs MSCCL-XML on
  // its buffers, and checks that a Chakra graph's sends wait for their data.
  chakra::AlgorithmImport imported = chakra::import_any_algorithm(args.algorithm, t);
  const synth::Algorithm& a = imported.algorithm;
  // (One memo for the bound and the halves in turn: the All-Reduce bound's cuts are theirs.)
  synth::BoundMemo bounds;
  synth::VerifyOptions options;
  options.max_reported = args.verbose || args.json ? 100'000 : 10;
  options.bounds = &bounds;
  synth::Report r = synth::verify(t, a, options);
  const std::optional<synth::HalvesInTurn> halves =
      r.bound.total > 0 ? halves_beyond(t, a, r.bound, &bounds) : std::nullopt;
  synth::add_import_problems(r, imported.problems, options);
  for (const std::string& w : imported.warnings)
    fmt::print(stderr, "warning: {}: {}\n", args.algorithm, w);

  if (args.json) {
    nlohmann::ordered_json j;
    j["correct"] = r.correct();
    j["violations"] = r.violation_count;
    nlohmann::ordered_json kinds = nlohmann::ordered_json::object();
    for (int k = 0; k < synth::kViolationKinds; ++k)
      if (r.counts[k])
        kinds[std::string(synth::to_string(static_cast<synth::ViolationKind>(k)))] = r.counts[k];
    j["violations_by_kind"] = kinds;
    j["transfers"] = r.transfers;
    j["collective_time_ps"] = r.collective_time;
    j["claimed_time_ps"] =
        r.claimed_time < 0 ? nlohmann::ordered_json() : nlohmann::ordered_json(r.claimed_time);
    j["model_time_ps"] =
        r.model_time < 0 ? nlohmann::ordered_json() : nlohmann::ordered_json(r.model_time);
    j["lower_bound_ps"] = r.bound.total;
    j["lower_bound_kind"] = r.bound.label;
    j["lower_bound_limit"] = r.bound.limit;
    j["ratio"] = r.ratio();
    if (halves) {
      j["halves_in_turn_ps"] = halves->total();
      j["halves_in_turn_terms"] = synth::describe(*halves);
      j["halves_in_turn_limit"] = synth::describe_limit(*halves);
    }
    j["links_used"] = r.links_used;
    j["mean_link_utilization"] = r.mean_utilization;
    j["max_link_utilization"] = r.max_utilization;
    auto& list = j["violation_list"] = nlohmann::ordered_json::array();
    for (const synth::Violation& v : r.violations)
      list.push_back({{"kind", synth::to_string(v.kind)},
                      {"transfer", v.transfer},
                      {"chunk", v.chunk},
                      {"link", v.link},
                      {"node", v.node},
                      {"time_ps", v.time},
                      {"message", v.message}});
    auto& warnings = j["warnings"] = nlohmann::ordered_json::array();
    for (const synth::Warning& w : r.warnings)
      warnings.push_back(
          {{"kind", synth::to_string(w.kind)}, {"transfer", w.transfer}, {"message", w.message}});
    fmt::print("{}\n", j.dump(2));
    return r.correct() ? 0 : 3;
  }

  fmt::print("algorithm     {}: {}, {} per chunk, {} links, {} transfers\n",
             a.name.empty() ? "(unnamed)" : a.name, a.collective.describe(),
             format_bytes(a.chunk_bytes), synth::to_string(a.link_model), r.transfers);
  fmt::print("verdict       {}  ({} violation{}, {} warning{})\n",
             r.correct() ? "CORRECT" : "INCORRECT", r.violation_count,
             r.violation_count == 1 ? "" : "s", r.warning_count, r.warning_count == 1 ? "" : "s");
  if (r.collective_time > 0 || r.transfers > 0) {
    std::string claimed =
        r.claimed_time >= 0 ? fmt::format(", claimed {}", format_time(r.claimed_time)) : "";
    fmt::print("time          {}{}\n", format_time(r.collective_time), claimed);
  }
  if (r.bound.total > 0)
    fmt::print("lower bound   {} ({}); ratio {:.4f}\n", format_time(r.bound.total),
               synth::describe(r.bound), r.ratio());
  if (r.bound.total > 0 && !r.bound.limit.empty()) fmt::print("bound limit   {}\n", r.bound.limit);
  if (halves) print_halves(*halves, r.collective_time, 14);
  if (r.links_used > 0)
    fmt::print("links         {} of {} used; utilization mean {:.1f} %, max {:.1f} %\n",
               r.links_used, t.num_links(), 100 * r.mean_utilization, 100 * r.max_utilization);
  if (!r.violations.empty()) {
    fmt::print("violations by kind:");
    for (int k = 0; k < synth::kViolationKinds; ++k)
      if (r.counts[k])
        fmt::print(" {} {}", synth::to_string(static_cast<synth::ViolationKind>(k)), r.counts[k]);
    fmt::print("\n");
    for (const synth::Violation& v : r.violations)
      fmt::print("  [{}] {}\n", synth::to_string(v.kind), v.message);
    if (r.violation_count > r.violations.size())
      fmt::print("  ... and {} more (--verbose shows all)\n",
                 r.violation_count - r.violations.size());
  }
  if (!r.warnings.empty()) {
    fmt::print("warnings:\n");
    for (const synth::Warning& w : r.warnings)
      fmt::print("  [{}] {}\n", synth::to_string(w.kind), w.message);
    if (r.warning_count > r.warnings.size())
      fmt::print("  ... and {} more (--verbose shows all)\n", r.warning_count - r.warnings.size());
  }
  return r.correct() ? 0 : 3;
}

}  // namespace

void add_verify_command(CLI::App& app) {
  static VerifyArgs args;
  CLI::App* cmd = app.add_subcommand(
      "verify",
      "Check an algorithm: routes, dependencies, link occupancy, durations, and by symbolic\n"
      "execution that every chunk is where it should be and every reduction counts each rank "
      "once.\n"
      "Exit 0 when correct, 3 when incorrect, 2 for bad input.");
  cmd->add_option(
         "algorithm", args.algorithm,
         "Algorithm: Tenet JSON (.json), MSCCL-XML (.xml), or a Chakra prefix (<prefix>.0.et ...)")
      ->required();
  cmd->add_option("-t,--topo", args.topology, "Topology file or generator spec it runs on")
      ->required();
  add_step_costs_flag(cmd, args.step_costs);
  cmd->add_flag("-v,--verbose", args.verbose, "List every violation and warning");
  cmd->add_flag("--json", args.json, "Print JSON for machines");
  cmd->callback([] { verb_exit_code() = run_verify(args); });
}

}  // namespace tenet::cli
