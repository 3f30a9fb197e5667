#include "cli/formats.hpp"

#include <fmt/format.h>

#include "astra/bundle.hpp"
#include "chakra/collective_graph.hpp"
#include "chakra/et.hpp"
#include "cli/commands.hpp"
#include "synth/formats/msccl_xml.hpp"
#include "topo/error.hpp"

namespace tenet::cli {

void add_msccl_flags(CLI::App* cmd, MscclFlags& flags) {
  cmd->add_option(
         "--msccl-runtime", flags.runtime,
         "MSCCL-XML for: executor (Azure/msccl-executor-nccl: coll reducescatter, 64 steps per "
         "thread\n"
         "block) or legacy (microsoft/msccl: reduce_scatter, 256 steps, 216 thread blocks)")
      ->capture_default_str();
  cmd->add_option("--msccl-proto", flags.protocol,
                  "MSCCL-XML protocol: Simple, LL or LL128 (default: the one the algorithm runs, "
                  "where it runs one of these; else Simple)");
  cmd->add_option("--msccl-min-bytes", flags.min_bytes,
                  "MSCCL-XML: the smallest call size the runtime may pick it for")
      ->capture_default_str();
  cmd->add_option("--msccl-max-bytes", flags.max_bytes,
                  "MSCCL-XML: the largest call size (the legacy runtime reads it as exclusive and "
                  "never picks 0)")
      ->capture_default_str();
}

synth::MscclOptions msccl_options(const MscclFlags& flags) {
  if (!flags.protocol.empty() && flags.protocol != "Simple" && flags.protocol != "LL" &&
      flags.protocol != "LL128")
    throw Error(fmt::format("unknown MSCCL protocol '{}' (Simple, LL, LL128)", flags.protocol));
  synth::MscclOptions o;
  o.runtime = synth::parse_msccl_runtime(flags.runtime);
  o.protocol = flags.protocol;
  o.min_bytes = size_flag("--msccl-min-bytes", flags.min_bytes);
  o.max_bytes = size_flag("--msccl-max-bytes", flags.max_bytes);
  if (o.max_bytes <= o.min_bytes)
    throw Error(fmt::format("--msccl-max-bytes {} must exceed --msccl-min-bytes {}",
                            flags.max_bytes, flags.min_bytes));
  return o;
}

void add_chakra_flags(CLI::App* cmd, ChakraFlags& flags) {
  cmd->add_option(
      "--reduce-bw", flags.reduce_bw,
      "How fast an NPU reduces a received chunk into its own (e.g. 500GB/s): each reduction takes\n"
      "chunk / this, part of the algorithm's time (its claim, `tenet verify`, `tenet sim`) and a "
      "Chakra\n"
      "COMP node (in whole microseconds). 0: reductions take no time (no COMP node). synth: "
      "default 0;\n"
      "export: default the algorithm's own (reduce_Bps in its JSON), given: exported re-timed with "
      "it");
  cmd->add_option("--chakra-waits", flags.waits,
                  "What a Chakra send that waits for its link carries: bytes (the wait as extra "
                  "bytes, so that\n"
                  "ASTRA-sim's analytical network, which has no link queues, delivers every "
                  "message when Tenet\n"
                  "says) or queue (its chunk only, for networks that queue at links: "
                  "congestion-aware, ns-3)")
      ->capture_default_str();
  cmd->add_option("--astra-workload", flags.astra_workload,
                  "For the astra-sim format: a Chakra ET workload (prefix) to run with the "
                  "algorithm, one rank per\n"
                  "NPU; default: one collective per rank at the algorithm's size");
  cmd->add_option("--astra-network", flags.astra_network,
                  "For the astra-sim format: the ASTRA-sim network it runs on: analytical (exact "
                  "where the topology\n"
                  "is ASTRA-sim dimensions, else the nearest dimensions), ns3 (every NPU, switch "
                  "and link; ns-3's\n"
                  "own routes and packets), or auto (analytical where exact, ns3 otherwise)")
      ->capture_default_str();
}

exporting::ExportOptions export_options(const ChakraFlags& chakra, const MscclFlags& msccl) {
  exporting::ExportOptions o;
  o.msccl = msccl_options(msccl);
  if (!chakra.reduce_bw.empty()) o.reduce_bandwidth = parse_reduce_bandwidth(chakra.reduce_bw);
  try {
    o.chakra.link_waits = chakra::parse_link_waits(chakra.waits);
  } catch (const Error& e) {
    throw Error(fmt::format("--chakra-waits: {}", e.what()));
  }
  if (!chakra.astra_workload.empty() && !chakra::is_prefix(chakra.astra_workload))
    throw Error(fmt::format("--astra-workload: no Chakra ET files {}",
                            chakra::et_path(chakra.astra_workload, 0)));
  o.astra_workload = chakra.astra_workload;
  try {
    o.astra_network = astra::parse_astra_network(chakra.astra_network);
  } catch (const Error& e) {
    throw Error(fmt::format("--astra-network: {}", e.what()));
  }
  return o;
}

}  // namespace tenet::cli
