// tenet export, tenet chakra dump | dot | check
#include <fmt/format.h>

#include <sstream>

#include "chakra/collective_graph.hpp"
#include "cli/commands.hpp"
#include "cli/formats.hpp"
#include "export/export.hpp"
#include "topo/io.hpp"

namespace tenet::cli {
namespace {

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace

Bandwidth parse_reduce_bandwidth(const std::string& text) {
  if (text == "0") return 0;
  try {
    return parse_bandwidth(text);
  } catch (const Error& e) {
    throw Error(fmt::format("--reduce-bw: {}", e.what()));
  }
}

void add_export_commands(CLI::App& app) {
  static std::string input, topology, formats = "chakra,msccl-xml,json", output = "out/export";
  static bool step_costs = true;
  static MscclFlags msccl_flags;
  static ChakraFlags chakra_flags;
  CLI::App* exp = app.add_subcommand("export",
                                     "Write an algorithm as Chakra ET collective graphs (for "
                                     "ASTRA-sim), MSCCL-XML (for the MSCCL runtime)\n"
                                     "and/or Tenet JSON. Chakra output goes to <dir>/chakra/ with "
                                     "a system.json and, when the topology is\n"
                                     "expressible as ASTRA-sim dimensions, a network.yml.");
  exp->add_option("algorithm", input, "Algorithm: .json, .xml, or a Chakra prefix")->required();
  exp->add_option("-t,--topo", topology, "Topology file or generator spec")->required();
  exp->add_option("-f,--format", formats,
                  "Comma-separated: chakra, msccl-xml, json, astra-sim (a folder ASTRA-sim runs as "
                  "it is, with run.sh)")
      ->capture_default_str();
  exp->add_option("-o,--output", output, "Output folder")->capture_default_str();
  add_chakra_flags(exp, chakra_flags);
  add_msccl_flags(exp, msccl_flags);
  add_step_costs_flag(exp, step_costs);
  exp->callback([] {
    const exporting::ExportOptions options =
        export_options(chakra_flags, msccl_flags);  // bad flags before any work
    const topo::Topology t = load_topology(topology, step_costs);
    const synth::Algorithm a = load_any_algorithm(input, t);
    const exporting::Exported e =
        exporting::export_algorithm(a, t, split_commas(formats), output, options);
    for (const std::string& path : e.written) fmt::print("wrote {}\n", path);
    if (e.astra_time >= 0) fmt::print("chakra: {}\n", exporting::describe_astra_time(e));
    if (e.msccl_time >= 0)
      fmt::print("msccl-xml: read back as the MSCCL runtime runs it: {} (Tenet: {})\n",
                 format_time(e.msccl_time), format_time(e.claimed_time));
    for (const std::string& n : e.astra_notes) fmt::print("astra-sim: {}\n", n);
    for (const auto& [format, why] : e.skipped)
      fmt::print(stderr, "not written: {}: {}\n", format, why);
    for (const std::string& w : e.warnings) fmt::print(stderr, "warning: {}\n", w);
    if (e.written.empty()) verb_exit_code() = 2;  // nothing asked for could be written
  });

  CLI::App* ch = app.add_subcommand("chakra", "Inspect Chakra execution traces (ET files)");
  ch->require_subcommand(1);
  static std::string file, prefix;
  CLI::App* dump = ch->add_subcommand("dump", "Print an ET file as JSON (like Chakra's jsonizer)");
  dump->add_option("file", file, "An .et file")->required();
  dump->callback([] { fmt::print("{}", chakra::dump_json(chakra::read_et(file))); });
  CLI::App* dot =
      ch->add_subcommand("dot", "Print an ET file as a Graphviz graph (like Chakra's visualizer)");
  dot->add_option("file", file, "An .et file")->required();
  dot->callback([] { fmt::print("{}", chakra::to_dot(chakra::read_et(file))); });
  CLI::App* check =
      ch->add_subcommand("check",
                         "Check the ET files <prefix>.0.et ... against ASTRA-sim's reader rules: "
                         "unique ids, dependencies inside\n"
                         "the file, acyclic, required attributes, tags, and sends and receives "
                         "that pair up with equal sizes.\n"
                         "Exit 0 when fine, 3 with problems, 2 for unreadable input.");
  check->add_option("prefix", prefix, "The files' prefix")->required();
  check->callback([] {
    const auto files = chakra::read_prefix(prefix);
    const auto problems = chakra::check_collective_graph(files, prefix);
    size_t nodes = 0;
    for (const auto& f : files) nodes += f.nodes.size();
    fmt::print("{} ranks, {} nodes: {}\n", files.size(), nodes,
               problems.empty()
                   ? "fine"
                   : fmt::format("{} problem{}", problems.size(), problems.size() == 1 ? "" : "s"));
    for (const std::string& p : problems) fmt::print("  {}\n", p);
    if (!problems.empty()) verb_exit_code() = 3;
  });
}

}  // namespace tenet::cli
