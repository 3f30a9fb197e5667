// tenet topo info | convert | generators
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "bench/table.hpp"
#include "cli/commands.hpp"
#include "synth/bounds/lower_bound.hpp"
#include "topo/analysis.hpp"
#include "topo/bounds.hpp"
#include "topo/cut_words.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"
#include "topo/presets.hpp"
#include "topo/symmetry.hpp"

namespace tenet::cli {
namespace {

constexpr int kDiameterSources = 4096;  // the NPUs up to which the diameter is exact

struct MinMax {
  double lo = 0, hi = 0, sum = 0;
  int n = 0;
  void add(double v) {
    lo = n ? std::min(lo, v) : v;
    hi = n ? std::max(hi, v) : v;
    sum += v;
    ++n;
  }
  double mean() const { return n ? sum / n : 0; }
};

void info(const std::string& input, const std::string& size_text, bool json, bool step_costs) {
  const topo::Topology t = load_topology(input, step_costs);
  const Bytes size = parse_bytes(size_text);
  MinMax out_deg, in_deg, egress, ingress, link_bw, link_lat, link_step;
  int routers = 0;
  for (topo::NodeId v = 0; v < t.num_npus(); ++v) {
    out_deg.add(static_cast<double>(t.out_links(v).size()));
    in_deg.add(static_cast<double>(t.in_links(v).size()));
    egress.add(static_cast<double>(topo::egress_bandwidth(t, v)));
    ingress.add(static_cast<double>(topo::ingress_bandwidth(t, v)));
    routers += t.node(v).router;
  }
  for (const topo::Link& l : t.links()) {
    link_bw.add(static_cast<double>(l.bandwidth));
    link_lat.add(static_cast<double>(l.latency));
    link_step.add(static_cast<double>(l.step));
  }
  // Past 4,096 NPUs from a sample of them (the exact one is quadratic): at least this.
  const topo::Diameter d = topo::npu_diameter(t, kDiameterSources);
  const int components = topo::strong_component_count(t);
  const std::optional<topo::Translations> symmetry = topo::translation_symmetry(t);
  topo::CutBound cut, ingress_b;
  synth::LowerBound whole;  // what synth and verify print: latency and per-step costs counted
  if (t.num_npus() >= 2) {
    cut = topo::allgather_cut_bound(t);
    ingress_b = topo::allgather_ingress_bound(t);
    const synth::Collective ag = synth::Collective::over_all(t, synth::CollectiveKind::AllGather);
    whole = synth::lower_bound(t, ag, std::max<Bytes>(1, ag.chunk_bytes_for(size)));
  }
  auto bw = [](double v) { return format_bandwidth(static_cast<Bandwidth>(v)); };
  if (json) {
    nlohmann::ordered_json j;
    j["name"] = t.name();
    j["fingerprint"] = fmt::format("{:016x}", t.fingerprint());
    j["npus"] = t.num_npus();
    j["switches"] = t.num_switches();
    j["router_npus"] = routers;
    j["links"] = t.num_links();
    j["diameter_hops"] = d.hops;
    j["diameter_latency_ps"] = d.latency;
    j["diameter_sources"] =
        d.sources;  // fewer than the NPUs: a sample, and the diameter at least this
    j["strong_components"] = components;
    j["translations"] =
        symmetry ? symmetry->describe() : "";  // see topo/symmetry.hpp; "" when none
    j["link_step_ps"] = {{"min", link_step.lo}, {"max", link_step.hi}};
    if (!t.protocols().empty()) {
      auto& protocols = j["protocols"] = nlohmann::ordered_json::array();
      for (const topo::Protocol& p : t.protocols())
        protocols.push_back({{"name", p.name},
                             {"bandwidth", p.bandwidth},
                             {"step_ps", p.step_scale > 0 ? nlohmann::ordered_json(nullptr)
                                                          : nlohmann::ordered_json(p.step)},
                             {"step_scale", p.step_scale},
                             {"in_network", p.in_network},
                             {"excludes", p.excludes}});
    }
    j["npu_egress_bps"] = {{"min", egress.lo}, {"max", egress.hi}};
    j["npu_ingress_bps"] = {{"min", ingress.lo}, {"max", ingress.hi}};
    j["allgather_bytes"] = size;
    if (t.num_npus() >= 2) {
      j["cut_bound_ps"] = cut.time(size);
      j["cut_set_size"] = cut.set.size();
      j["cut_set_npus"] = cut.members_inside;
      j["cut_set_out_bps"] = cut.out_bandwidth;
      // "exact", or "islands": one-node sets and islands of wide links only (past
      // topo::kCutSearchWork).
      j["cut_search"] = cut.search == topo::CutSearch::Exact ? "exact" : "islands";
      j["ingress_bound_ps"] = ingress_b.time(size);
      j["lower_bound_ps"] = whole.total;
      j["lower_bound"] = synth::describe(whole);
    }
    fmt::print("{}\n", j.dump(2));
    return;
  }
  fmt::print("topology      {}  (fingerprint {:016x})\n", t.name(), t.fingerprint());
  fmt::print("nodes         {} NPUs ({} with routers), {} switches\n", t.num_npus(), routers,
             t.num_switches());
  fmt::print("links         {} directed\n", t.num_links());
  fmt::print("NPU degree    out {}..{} (mean {:.2f}), in {}..{} (mean {:.2f})\n", out_deg.lo,
             out_deg.hi, out_deg.mean(), in_deg.lo, in_deg.hi, in_deg.mean());
  if (t.num_links() > 0) {
    fmt::print("link bw       {} .. {}\n", bw(link_bw.lo), bw(link_bw.hi));
    fmt::print("link latency  {} .. {}\n", format_time(static_cast<Time>(link_lat.lo)),
               format_time(static_cast<Time>(link_lat.hi)));
    fmt::print(
        "step cost     {} .. {} per transfer (a route's largest; links' `step`, defaults {} and {} "
        "on scale-out networks; --step-costs off on synth, sim, bench: none)\n",
        format_time(static_cast<Time>(link_step.lo)), format_time(static_cast<Time>(link_step.hi)),
        format_time(topo::kDefaultStep), format_time(topo::kNetworkStep));
  }
  for (const topo::Protocol& p : t.protocols())
    fmt::print("protocol      {}: {:g} of every link's bandwidth carries data, {}{}{}\n", p.name,
               p.bandwidth, p.step_words(),
               p.in_network ? "" : "; no in-network reduction or multicast",
               p.excludes.empty() ? std::string()
                                  : fmt::format("; not for {}", fmt::join(p.excludes, ", ")));
  fmt::print("NPU egress    {} .. {}\n", bw(egress.lo), bw(egress.hi));
  fmt::print("NPU ingress   {} .. {}\n", bw(ingress.lo), bw(ingress.hi));
  const bool sampled = d.sources < t.num_npus();
  fmt::print("diameter      {}{} hops ({} -> {}); {} latency ({} -> {}){}\n",
             sampled ? "at least " : "", d.hops, t.node(d.hops_from).name, t.node(d.hops_to).name,
             format_time(d.latency), t.node(d.latency_from).name, t.node(d.latency_to).name,
             sampled ? fmt::format(" (searched from {} of {} NPUs)", d.sources, t.num_npus()) : "");
  fmt::print("connectivity  every NPU reaches every other; {} strongly connected component{}\n",
             components, components == 1 ? "" : "s");
  fmt::print("symmetry      {}\n",
             symmetry ? fmt::format("looks the same from every NPU: translations of {} (--method "
                                    "symmetric applies)",
                                    symmetry->describe())
                      : "none found (translations of its dimensions or servers)");
  if (t.num_npus() < 2) return;
  fmt::print("All-Gather of {} (output per NPU), lower bounds:\n", format_bytes(size));
  fmt::print("  cut bound      {}  ({}{})\n", format_time(cut.time(size)),
             topo::describe_cut(t, cut.set),
             cut.search == topo::CutSearch::Exact
                 ? ""
                 : fmt::format("; of the one-node sets and islands of wide links only: "
                               "searching every set is {} nodes x {} arcs, past the budget of "
                               "{:.3g}",
                               t.num_nodes() + 1, t.num_links() + t.num_npus(),
                               static_cast<double>(topo::kCutSearchWork)));
  fmt::print("  ingress bound  {}  (worst NPU ingress {})\n", format_time(ingress_b.time(size)),
             format_bandwidth(ingress_b.out_bandwidth));
  fmt::print("  cut / ingress  {:.3f}x\n",
             static_cast<double>(cut.time(size)) / std::max<Time>(1, ingress_b.time(size)));
  fmt::print("  whole bound    {}  ({}; as synth and verify print it{})\n",
             format_time(whole.total), synth::describe(whole),
             t.charges_steps() ? "" : ", --step-costs off");
}

void list_generators(bool markdown) {
  bench::Table table({"generator", "shape", "example", "defaults", "what it builds"});
  for (const topo::GeneratorInfo& g : topo::generators())
    table.add_row({g.name, g.shape, g.example, g.defaults, g.description});
  if (markdown) {
    fmt::print("{}", table.markdown());
    return;
  }
  for (const topo::GeneratorInfo& g : topo::generators())
    fmt::print("{:<10} {:<6} {}\n{:<17} e.g. {}   (defaults {})\n", g.name, g.shape, g.description,
               "", g.example, g.defaults);
  fmt::print(
      "\nSpecs: <generator>:<shape>[,key=value...]. Every generator takes bw=<bandwidth> and\n"
      "lat=<time> (one value, or one per dimension/level joined by '/', e.g. bw=80GiB/s/35GiB/s)\n"
      "and router=true (NPUs forward traffic without storing it). Join specs with ' x ' to\n"
      "build a hierarchy, e.g. 'ring:8,bw=300GB/s x switch:4,bw=50GB/s' (first dimension "
      "fastest).\n"
      "Aliases: fully-connected = fc, fattree = leafspine.\n");
  fmt::print(
      "\nSystem presets (calibrated to published measurements; examples/systems/<name>.yaml),\n"
      "usable wherever a topology is, e.g. --topo dgx-h100:\n");
  for (const topo::Preset& p : topo::presets()) {
    const topo::Topology t = topo::load(std::string(p.name));
    std::string figures;
    for (const topo::PublishedFigure& f : t.calibration().published)
      figures += fmt::format("{}{} {} {}", figures.empty() ? "" : "; ", f.collective, f.algorithm,
                             format_bandwidth(f.busbw));
    fmt::print("{:<14} {} NPUs, {}\n", p.name, t.num_npus(),
               figures.empty() ? "no published figure (" + t.calibration().source + ")"
                               : "calibrated to busbw " + figures);
  }
}

}  // namespace

void add_topo_commands(CLI::App& app) {
  CLI::App* topo = app.add_subcommand("topo", "Inspect, convert and generate topologies");
  topo->require_subcommand(1);

  static std::string input, size = "1GiB", output;
  static bool json = false, markdown = false, step_costs = true;
  CLI::App* info_cmd = topo->add_subcommand(
      "info",
      "Summarize a topology: counts, degrees, bandwidth, diameter, connectivity, and the cut and\n"
      "ingress lower bounds of an All-Gather, with its whole bound (latency and per-step costs\n"
      "counted, as synth and verify print it)");
  info_cmd->add_option("topology", input, "Topology file (.yaml, .json, .dot, network.yml) or spec")
      ->required();
  info_cmd->add_option("--size", size, "All-Gather output size per NPU for the bounds, with a unit")
      ->capture_default_str();
  info_cmd->add_flag("--json", json, "Print JSON for machines");
  add_step_costs_flag(info_cmd, step_costs);
  info_cmd->callback([] { info(input, size, json, step_costs); });

  CLI::App* convert = topo->add_subcommand(
      "convert", "Convert a topology (file or spec) to Tenet YAML, Tenet JSON or Graphviz DOT");
  convert->add_option("input", input, "Topology file or generator spec")->required();
  convert
      ->add_option("-o,--output", output, "Output file; format by extension: .yaml .yml .json .dot")
      ->required();
  convert->callback([] {
    topo::Topology t = topo::load(input);
    topo::save(t, output);
    fmt::print("wrote {} ({} NPUs, {} switches, {} links)\n", output, t.num_npus(),
               t.num_switches(), t.num_links());
  });

  CLI::App* gens =
      topo->add_subcommand("generators", "List topology generators with an example each");
  gens->add_flag("--markdown", markdown, "Print a Markdown table");
  gens->callback([] { list_generators(markdown); });
}

}  // namespace tenet::cli
