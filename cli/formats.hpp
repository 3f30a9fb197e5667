// Writing algorithms in every format: Tenet JSON, MSCCL-XML, Chakra collective graphs.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "chakra/algorithm_files.hpp"
#include "chakra/collective_graph.hpp"
#include "synth/algorithm.hpp"
#include "synth/msccl_xml.hpp"
#include "topo/topology.hpp"

namespace tenet::cli {

using chakra::load_any_algorithm;  // reading lives in chakra/, which the simulator uses too

struct Exported {
  std::vector<std::string> written;                          // paths
  std::vector<std::pair<std::string, std::string>> skipped;  // format, why it cannot hold this algorithm
  std::vector<std::string> warnings;                         // what a written format could not say exactly
  // The Chakra graph run as ASTRA-sim runs it on its analytical network (congestion-unaware), and
  // Tenet's time for the algorithm; -1 when no graph was written.
  Time astra_time = -1, claimed_time = -1;
  bool astra_on_dimensions = true;
  std::vector<std::string> astra_notes;  // about the astra-sim folder, when written
};

// Writes `a` in each of `formats` ("json", "msccl-xml", "chakra", "astra-sim": a folder ASTRA-sim
// runs as it is, sim/astra_bundle.hpp) into `dir`. A format that cannot
// express this algorithm (MSCCL-XML has no broadcast, ...) is skipped with the reason and the others
// are still written. Throws tenet::Error, before writing anything, for an unknown format.
struct ExportOptions {
  // --reduce-bw when given: the algorithm is exported re-timed with its reductions at this rate
  // (Algorithm::reduce_bandwidth); otherwise with its own.
  std::optional<Bandwidth> reduce_bandwidth;
  chakra::GraphOptions chakra;
  synth::MscclOptions msccl;
  std::string astra_workload;  // for "astra-sim": a Chakra ET workload prefix; empty: the collective alone
};
Exported export_algorithm(const synth::Algorithm& a, const topo::Topology& t, const std::vector<std::string>& formats,
                          const std::string& dir, const ExportOptions& options = {});
// One line on what ASTRA-sim makes of the Chakra graph `e` holds ("" when none was written).
std::string describe_astra_time(const Exported& e);



// --msccl-runtime, --msccl-proto, --msccl-min-bytes, --msccl-max-bytes on a verb that exports.
struct MscclFlags {
  std::string runtime = "executor", protocol = "Simple", min_bytes = "0B", max_bytes = "1TiB";
};
void add_msccl_flags(CLI::App* cmd, MscclFlags& flags);
synth::MscclOptions msccl_options(const MscclFlags& flags);

// --reduce-bw, --chakra-waits and --astra-workload on a verb that exports Chakra graphs.
struct ChakraFlags {
  std::string reduce_bw, waits = "bytes", astra_workload;  // reduce_bw "": not given
};
void add_chakra_flags(CLI::App* cmd, ChakraFlags& flags);
// Every export option from the flags; throws tenet::Error naming a bad flag.
ExportOptions export_options(const ChakraFlags& chakra, const MscclFlags& msccl);

}  // namespace tenet::cli
