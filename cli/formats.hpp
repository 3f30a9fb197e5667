// The flags of the verbs that write algorithms in every format (Tenet JSON, MSCCL-XML, Chakra
// collective graphs), read into export/export.hpp's options.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "chakra/algorithm_files.hpp"
#include "chakra/collective_graph.hpp"
#include "export/export.hpp"
#include "synth/formats/msccl_xml.hpp"
#include "synth/ir/algorithm.hpp"
#include "topo/topology.hpp"

namespace tenet::cli {

using chakra::load_any_algorithm;  // reading lives in chakra/, which the simulator uses too

// --msccl-runtime, --msccl-proto, --msccl-min-bytes, --msccl-max-bytes on a verb that exports.
struct MscclFlags {
  std::string runtime = "executor", protocol, min_bytes = "0B", max_bytes = "1TiB";
};
void add_msccl_flags(CLI::App* cmd, MscclFlags& flags);
synth::MscclOptions msccl_options(const MscclFlags& flags);

// --reduce-bw, --chakra-waits, --astra-workload and --astra-network on a verb that exports Chakra
// graphs.
struct ChakraFlags {
  std::string reduce_bw, waits = "bytes", astra_workload;  // reduce_bw "": not given
  std::string astra_network = "auto";
};
void add_chakra_flags(CLI::App* cmd, ChakraFlags& flags);
// Every export option from the flags; throws tenet::Error naming a bad flag.
exporting::ExportOptions export_options(const ChakraFlags& chakra, const MscclFlags& msccl);

}  // namespace tenet::cli
