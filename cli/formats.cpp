#include "cli/formats.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <future>
#include <optional>

#include "chakra/collective_graph.hpp"
#include "cli/commands.hpp"
#include "sim/astra_bundle.hpp"
#include "synth/algorithm_json.hpp"
#include "synth/msccl_xml.hpp"
#include "synth/timing.hpp"
#include "topo/io.hpp"
#include "topo/output_folder.hpp"

namespace tenet::cli {

void add_msccl_flags(CLI::App* cmd, MscclFlags& flags) {
  cmd->add_option("--msccl-runtime", flags.runtime,
                  "MSCCL-XML for: executor (Azure/msccl-executor-nccl: coll reducescatter, 64 steps per thread\n"
                  "block) or legacy (microsoft/msccl: reduce_scatter, 256 steps, 216 thread blocks)")
      ->capture_default_str();
  cmd->add_option("--msccl-proto", flags.protocol, "MSCCL-XML protocol: Simple, LL or LL128")->capture_default_str();
  cmd->add_option("--msccl-min-bytes", flags.min_bytes, "MSCCL-XML: the smallest call size the runtime may pick it for")
      ->capture_default_str();
  cmd->add_option("--msccl-max-bytes", flags.max_bytes,
                  "MSCCL-XML: the largest call size (the legacy runtime reads it as exclusive and never picks 0)")
      ->capture_default_str();
}

synth::MscclOptions msccl_options(const MscclFlags& flags) {
  if (flags.protocol != "Simple" && flags.protocol != "LL" && flags.protocol != "LL128")
    throw Error(fmt::format("unknown MSCCL protocol '{}' (Simple, LL, LL128)", flags.protocol));
  synth::MscclOptions o;
  o.runtime = synth::parse_msccl_runtime(flags.runtime);
  o.protocol = flags.protocol;
  o.min_bytes = size_flag("--msccl-min-bytes", flags.min_bytes);
  o.max_bytes = size_flag("--msccl-max-bytes", flags.max_bytes);
  if (o.max_bytes <= o.min_bytes)
    throw Error(fmt::format("--msccl-max-bytes {} must exceed --msccl-min-bytes {}", flags.max_bytes, flags.min_bytes));
  return o;
}

void add_chakra_flags(CLI::App* cmd, ChakraFlags& flags) {
  cmd->add_option("--reduce-bw", flags.reduce_bw,
                  "How fast an NPU reduces a received chunk into its own (e.g. 500GB/s): each reduction takes\n"
                  "chunk / this, part of the algorithm's time (its claim, `tenet verify`, `tenet sim`) and a Chakra\n"
                  "COMP node (in whole microseconds). 0: reductions take no time (no COMP node). synth: default 0;\n"
                  "export: default the algorithm's own (reduce_Bps in its JSON), given: exported re-timed with it");
  cmd->add_option("--chakra-waits", flags.waits,
                  "What a Chakra send that waits for its link carries: bytes (the wait as extra bytes, so that\n"
                  "ASTRA-sim's analytical network, which has no link queues, delivers every message when Tenet\n"
                  "says) or queue (its chunk only, for networks that queue at links: congestion-aware, ns-3)")
      ->capture_default_str();
  cmd->add_option("--astra-workload", flags.astra_workload,
                  "For the astra-sim format: a Chakra ET workload (prefix) to run with the algorithm, one rank per\n"
                  "NPU; default: one collective per rank at the algorithm's size");
}

ExportOptions export_options(const ChakraFlags& chakra, const MscclFlags& msccl) {
  ExportOptions o;
  o.msccl = msccl_options(msccl);
  if (!chakra.reduce_bw.empty()) o.reduce_bandwidth = parse_reduce_bandwidth(chakra.reduce_bw);
  try {
    o.chakra.link_waits = chakra::parse_link_waits(chakra.waits);
  } catch (const Error& e) {
    throw Error(fmt::format("--chakra-waits: {}", e.what()));
  }
  if (!chakra.astra_workload.empty() && !chakra::is_prefix(chakra.astra_workload))
    throw Error(fmt::format("--astra-workload: no Chakra ET files {}", chakra::et_path(chakra.astra_workload, 0)));
  o.astra_workload = chakra.astra_workload;
  return o;
}

std::string describe_astra_time(const Exported& e) {
  if (e.astra_time < 0) return "";
  const double ratio = e.claimed_time > 0 ? static_cast<double>(e.astra_time) / static_cast<double>(e.claimed_time) : 1;
  return fmt::format("{} on ASTRA-sim's analytical network (congestion-unaware{}; Tenet: {}, ratio {:.4f})",
                     format_time(e.astra_time),
                     e.astra_on_dimensions ? "" : ", on Tenet's routes: the topology has no ASTRA-sim dimensions",
                     format_time(e.claimed_time), ratio);
}

Exported export_algorithm(const synth::Algorithm& given, const topo::Topology& t, const std::vector<std::string>& formats,
                          const std::string& dir, const ExportOptions& options) {
  const chakra::GraphOptions& chakra = options.chakra;
  const synth::MscclOptions& msccl = options.msccl;
  for (const std::string& f : formats)
    if (f != "json" && f != "msccl-xml" && f != "chakra" && f != "astra-sim")
      throw Error(fmt::format("unknown format '{}' (json, msccl-xml, chakra, astra-sim)", f));
  Exported out;
  // --reduce-bw other than the algorithm's own: a copy re-timed with it.
  std::optional<synth::Algorithm> retimed;
  const bool reduces = std::any_of(given.transfers().begin(), given.transfers().end(),
                                   [](const synth::Transfer& x) { return x.op == synth::Op::Reduce; });
  if (options.reduce_bandwidth && *options.reduce_bandwidth != given.reduce_bandwidth && reduces) {
    retimed = given;
    synth::set_reduce_bandwidth(t, *retimed, *options.reduce_bandwidth);
    out.warnings.push_back(fmt::format("re-timed with reductions at {}: {} (the file says {})",
                                         *options.reduce_bandwidth == 0 ? std::string("no cost") : format_bandwidth(*options.reduce_bandwidth),
                                         format_time(retimed->claimed_time), format_time(synth::collective_time(t, given))));
  }
  const synth::Algorithm& a = retimed ? *retimed : given;
  const Bandwidth reduce_bandwidth = a.reduce_bandwidth;
  // Every format that can refuse the algorithm is produced in memory first, so a refused format
  // leaves no partial file; the JSON, which cannot refuse, is streamed (gigabytes at 1024 NPUs).
  std::vector<std::pair<std::string, std::string>> files;
  bool chakra_wanted = false, json_wanted = false;
  std::optional<chakra::CollectiveGraphPlan> graph;
  std::future<chakra::AstraRun> emulation;  // declared after `graph`, which it reads: destroyed (waited for) first
  for (const std::string& f : formats) {
    try {
      if (f == "json") json_wanted = true;
      else if (f == "msccl-xml") {
        files.emplace_back("algorithm.xml", synth::to_msccl_xml(a, msccl));
        if (reduce_bandwidth > 0)
          out.warnings.push_back(fmt::format("msccl-xml: the reduction time ({} at {}) is not in the file: the MSCCL "
                                             "runtime reduces at its own speed, and Tenet reads the file back with "
                                             "reductions that take no time",
                                             format_time(a.reduction_time()), format_bandwidth(reduce_bandwidth)));
      }
      else if (f == "chakra") {
        graph.emplace(a, t, chakra);  // refuses here, before any file
        chakra_wanted = true;
        // What ASTRA-sim will report for it (an emulation of its custom collectives; see
        // chakra/astra_analytical.hpp), beside Tenet's own time: run while the files are written.
        emulation = std::async(std::launch::async, [&] { return chakra::run_as_astra_sim(graph->astra_graph(), t); });
        out.claimed_time = synth::collective_time(t, a);
        if (reduce_bandwidth > 0 && reduces) {
          // ASTRA-sim reads COMP durations in whole microseconds (duration_micros).
          const double micros = chakra::reduction_micros(a.chunk_bytes, reduce_bandwidth);
          if (micros != std::ceil(micros))
            out.warnings.push_back(fmt::format(
                "chakra: a reduction of {} at {} takes {:.4g} us; duration_micros holds whole microseconds, so each "
                "COMP node says {} us",
                format_bytes(a.chunk_bytes), format_bandwidth(reduce_bandwidth), micros, std::ceil(micros)));
        }
      }
    } catch (const Error& e) {
      out.skipped.emplace_back(f, e.what());
    }
  }
  // Every file of this export is committed together (topo/output_folder.hpp): a failure or a kill
  // before the commit leaves the folder's earlier files as they were.
  topo::OutputFolder folder(dir);
  if (json_wanted) synth::save_algorithm(a, folder.stage("algorithm.json"));
  for (const auto& [name, text] : files) topo::write_file_atomically(folder.stage(name), text);
  if (chakra_wanted) chakra::stage_collective_graph(*graph, a, t, folder, "chakra", "algorithm");
  if (std::find(formats.begin(), formats.end(), "astra-sim") != formats.end()) {
    try {
      sim::AstraBundleOptions bo;
      bo.graph = chakra;
      bo.workload = options.astra_workload;
      const sim::AstraBundle b = sim::stage_astra_bundle(a, t, folder, "astra-sim", bo);
      out.astra_notes = b.notes;
      const std::string there =
          b.congestion_aware
              ? fmt::format(", on ASTRA-sim's congestion-aware network, which Tenet does not emulate (Tenet: {})",
                            format_time(b.claimed_time))
              : fmt::format("; the collective there: {} (Tenet: {}){}", format_time(b.collective.time),
                            format_time(b.claimed_time), b.exact_network ? "" : " on the nearest network");
      out.astra_notes.push_back(fmt::format("run it: {}/astra-sim/run.sh (ASTRA_SIM names the binary){}", dir, there));
    } catch (const Error& e) {
      out.skipped.emplace_back("astra-sim", e.what());
    }
  }
  if (emulation.valid()) {
    try {
      const chakra::AstraRun run = emulation.get();
      out.astra_time = run.time;
      out.astra_on_dimensions = run.on_dimensions;
    } catch (const Error& e) {  // ASTRA-sim could not run the graph: the chakra files are not written
      folder.drop("chakra");
      out.skipped.emplace_back("chakra", e.what());
    }
  }
  out.written = folder.commit();
  return out;
}

}  // namespace tenet::cli
