#include "export/export.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <future>

#include "astra/analytical.hpp"
#include "astra/bundle.hpp"
#include "astra/et_set.hpp"
#include "synth/cost/timing.hpp"
#include "synth/formats/algorithm_json.hpp"
#include "synth/ir/references.hpp"
#include "topo/error.hpp"
#include "topo/io.hpp"
#include "topo/output_folder.hpp"
#include "topo/quoting.hpp"

namespace tenet::exporting {
namespace {

bool has_reductions(const synth::Algorithm& a) {
  return std::any_of(a.transfers().begin(), a.transfers().end(),
                     [](const synth::Transfer& x) { return x.op == synth::Op::Reduce; });
}

// A reduce bandwidth other than the algorithm's own: a copy re-timed with it, and a warning
// saying so. Nothing otherwise.
std::optional<synth::Algorithm> retimed_copy(const synth::Algorithm& given, const topo::Topology& t,
                                             const ExportOptions& options, bool reduces,
                                             Exported& out) {
  std::optional<synth::Algorithm> retimed;
  if (options.reduce_bandwidth && *options.reduce_bandwidth != given.reduce_bandwidth && reduces) {
    retimed = given;
    synth::set_reduce_bandwidth(t, *retimed, *options.reduce_bandwidth);
    out.warnings.push_back(fmt::format(
        "re-timed with reductions at {}: {} (the file says {})",
        *options.reduce_bandwidth == 0 ? std::string("no cost")
                                       : format_bandwidth(*options.reduce_bandwidth),
        format_time(retimed->claimed_time), format_time(synth::collective_time(t, given))));
  }
  return retimed;
}

// The formats that can refuse the algorithm, produced in memory before any file is written.
struct Rendered {
  bool json = false, chakra = false;
  std::vector<std::pair<std::string, std::string>> files;  // name, text
  std::optional<chakra::CollectiveGraphPlan> graph;
  // Declared after `graph`, which it reads: destroyed (waited for) first.
  std::future<astra::AstraRun> emulation;
};

// A format read back must take the time Tenet claims: past this relative difference, a warning.
constexpr double kRoundTripTolerance = 1e-3;

// The MSCCL-XML, and what it takes when read back as its runtime runs it on `t`: a warning with
// both times where that is not Tenet's (thread blocks wait on each other in program order, which
// may serialize what Tenet's schedule overlaps).
void render_msccl(const synth::Algorithm& a, const topo::Topology& t,
                  const synth::MscclOptions& msccl, Rendered& r, Exported& out) {
  std::string xml = synth::to_msccl_xml(a, msccl);
  const synth::MscclImport back = synth::import_msccl_xml(xml, t, "algorithm.xml");
  const Time claimed = synth::collective_time(t, a);
  out.claimed_time = claimed;
  if (!back.problems.empty()) {
    out.warnings.push_back(
        fmt::format("msccl-xml: read back, the program is incorrect in the MSCCL runtime: {}",
                    back.problems.front().message));
  } else {
    out.msccl_time = synth::model_time(t, back.algorithm);
    if (claimed > 0 && std::abs(static_cast<double>(out.msccl_time - claimed)) >
                           kRoundTripTolerance * static_cast<double>(claimed))
      out.warnings.push_back(fmt::format(
          "msccl-xml: read back as the MSCCL runtime runs it, the program takes {} (Tenet: {}, "
          "ratio {:.4f}): its thread blocks run their steps in program order",
          format_time(out.msccl_time), format_time(claimed),
          static_cast<double>(out.msccl_time) / static_cast<double>(claimed)));
  }
  r.files.emplace_back("algorithm.xml", std::move(xml));
  if (a.reduce_bandwidth > 0)
    out.warnings.push_back(fmt::format(
        "msccl-xml: the reduction time ({} at {}) is not in the file: the MSCCL runtime reduces at "
        "its own speed, and Tenet reads the file back with reductions that take no time",
        format_time(a.reduction_time()), format_bandwidth(a.reduce_bandwidth)));
}

// A Chakra graph (the chakra format's, and the ASTRA-sim bundle's collective) holds a reduction as
// a COMP node of whole microseconds (duration_micros): where the reduction takes a fraction of one,
// the graph's time is not Tenet's, said as a warning naming `format`.
void warn_whole_micros(const synth::Algorithm& a, bool reduces, const char* format, Exported& out) {
  if (a.reduce_bandwidth <= 0 || !reduces) return;
  const double micros = chakra::reduction_micros(a.chunk_bytes, a.reduce_bandwidth);
  if (micros != std::ceil(micros))
    out.warnings.push_back(
        fmt::format("{}: a reduction of {} at {} takes {:.4g} us; duration_micros holds whole "
                    "microseconds, so each COMP node says {} us",
                    format, format_bytes(a.chunk_bytes), format_bandwidth(a.reduce_bandwidth),
                    micros, std::ceil(micros)));
}

void render_chakra(const synth::Algorithm& a, const topo::Topology& t,
                   const chakra::GraphOptions& options, bool reduces, Rendered& r, Exported& out) {
  r.graph.emplace(a, t, options);  // refuses here, before any file
  r.chakra = true;
  // What ASTRA-sim will report for it (an emulation of its custom collectives; see
  // astra/analytical.hpp), beside Tenet's own time: run while the files are written.
  r.emulation = std::async(std::launch::async, [&graph = r.graph, &t] {
    return astra::run_as_astra_sim(graph->node_graph(), t);
  });
  out.claimed_time = synth::collective_time(t, a);
  warn_whole_micros(a, reduces, "chakra", out);
}

// The folder ASTRA-sim runs as it is, staged under astra-sim/ of `folder`, or skipped with why.
void stage_astra_sim(const synth::Algorithm& a, const topo::Topology& t, topo::OutputFolder& folder,
                     const std::string& dir, const ExportOptions& options, bool reduces,
                     Exported& out) {
  try {
    astra::AstraBundleOptions bo;
    bo.graph = options.chakra;
    bo.workload = options.astra_workload;
    bo.network = options.astra_network;
    const astra::AstraBundle b = astra::stage_astra_bundle(a, t, folder, "astra-sim", bo);
    out.astra_notes = b.notes;
    const std::string there =
        b.ns3 ? fmt::format(
                    ", on ASTRA-sim's ns-3 network (packets, its own routes), which Tenet does not "
                    "emulate (Tenet: {}; without step costs and with each message ending at its "
                    "last ACK, as ns-3's frontend ends it: {})",
                    format_time(b.claimed_time), format_time(b.ns3_estimate))
        : b.congestion_aware
            ? fmt::format(
                  ", on ASTRA-sim's congestion-aware network, which Tenet does not emulate "
                  "(Tenet: {})",
                  format_time(b.claimed_time))
            : fmt::format(
                  "; the collective there: {} (Tenet: {}){}", format_time(b.collective.time),
                  format_time(b.claimed_time),
                  b.exact_network ? "" : fmt::format(" {}", astra::nearest_network_words(b)));
    out.astra_notes.push_back(
        fmt::format("run it: {} ({} names the binary){}",
                    topo::shell_quoted(dir + "/astra-sim/run.sh", "the export folder"),
                    b.ns3 ? "ASTRA_SIM_NS3" : "ASTRA_SIM", there));
    warn_whole_micros(a, reduces, "astra-sim", out);
  } catch (const Error& e) {
    out.skipped.emplace_back("astra-sim", e.what());
  }
}

// The emulation's result; when ASTRA-sim could not run the graph, the chakra files are not written.
void collect_emulation(Rendered& r, topo::OutputFolder& folder, Exported& out) {
  if (!r.emulation.valid()) return;
  try {
    const astra::AstraRun run = r.emulation.get();
    out.astra_time = run.time;
    out.astra_on_dimensions = run.on_dimensions;
  } catch (const Error& e) {
    folder.drop("chakra");
    out.skipped.emplace_back("chakra", e.what());
  }
}

}  // namespace

std::string describe_astra_time(const Exported& e) {
  if (e.astra_time < 0) return "";
  const double ratio = e.claimed_time > 0
                           ? static_cast<double>(e.astra_time) / static_cast<double>(e.claimed_time)
                           : 1;
  return fmt::format(
      "{} on ASTRA-sim's analytical network (congestion-unaware{}; Tenet: {}, ratio {:.4f})",
      format_time(e.astra_time),
      e.astra_on_dimensions ? "" : ", on Tenet's routes: the topology has no ASTRA-sim dimensions",
      format_time(e.claimed_time), ratio);
}

Exported export_algorithm(const synth::Algorithm& given, const topo::Topology& t,
                          const std::vector<std::string>& formats, const std::string& dir,
                          const ExportOptions& options) {
  for (const std::string& f : formats)
    if (f != "json" && f != "msccl-xml" && f != "chakra" && f != "astra-sim")
      throw Error(fmt::format("unknown format '{}' (json, msccl-xml, chakra, astra-sim)", f));
  // Every format sizes its tables by the ranks, nodes and chunks the algorithm names: they must be
  // the topology's before anything is allocated.
  synth::check_references(given, t);
  Exported out;
  const bool reduces = has_reductions(given);
  const std::optional<synth::Algorithm> retimed = retimed_copy(given, t, options, reduces, out);
  const synth::Algorithm& a = retimed ? *retimed : given;
  // Every format that can refuse the algorithm is produced in memory first, so a refused format
  // leaves no partial file; the JSON, which cannot refuse, is streamed.
  Rendered r;
  for (const std::string& f : formats) {
    try {
      if (f == "json")
        r.json = true;
      else if (f == "msccl-xml")
        render_msccl(a, t, options.msccl, r, out);
      else if (f == "chakra")
        render_chakra(a, t, options.chakra, reduces, r, out);
    } catch (const Error& e) {
      out.skipped.emplace_back(f, e.what());
    }
  }
  // Every file of this export is committed together (topo/output_folder.hpp): a failure or a kill
  // before the commit leaves the folder's earlier files as they were.
  topo::OutputFolder folder(dir);
  // The folder describes this algorithm alone: an earlier export's formats that this one does not
  // write (not asked for, or refused) go in the same commit.
  folder.remove_at_commit("algorithm.json");
  folder.remove_at_commit("algorithm.xml");
  folder.replace_tree_at_commit("chakra");
  folder.replace_tree_at_commit("astra-sim");
  if (r.json) synth::save_algorithm(a, folder.stage("algorithm.json"));
  for (const auto& [name, text] : r.files) topo::write_file_atomically(folder.stage(name), text);
  if (r.chakra) astra::stage_astra_collective(*r.graph, a, t, folder, "chakra", "algorithm");
  if (std::find(formats.begin(), formats.end(), "astra-sim") != formats.end())
    stage_astra_sim(a, t, folder, dir, options, reduces, out);
  collect_emulation(r, folder, out);
  out.written = folder.commit();
  return out;
}

}  // namespace tenet::exporting
