// Writing an algorithm in every format at once: Tenet JSON, MSCCL-XML, Chakra collective graphs
// with their ASTRA-sim files, and the folder ASTRA-sim runs as it is (astra/bundle.hpp), committed
// together, with what ASTRA-sim makes of the Chakra graph beside Tenet's own time.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "astra/bundle.hpp"
#include "chakra/collective_graph.hpp"
#include "synth/formats/msccl_xml.hpp"
#include "synth/ir/algorithm.hpp"
#include "topo/topology.hpp"
#include "topo/units.hpp"

// `export` is a keyword: the namespace is `exporting`.
namespace tenet::exporting {

struct Exported {
  std::vector<std::string> written;  // paths
  // Format, and why it cannot hold this algorithm.
  std::vector<std::pair<std::string, std::string>> skipped;
  std::vector<std::string> warnings;  // what a written format could not say exactly
  // The Chakra graph run as ASTRA-sim runs it on its analytical network (congestion-unaware), and
  // Tenet's time for the algorithm; -1 when no graph was written.
  Time astra_time = -1, claimed_time = -1;
  // The MSCCL-XML read back as its runtime runs it (synth::import_msccl_xml), timed on the same
  // topology; -1 when none was written. Where it differs from Tenet's time by over 0.1 %, a
  // warning gives both.
  Time msccl_time = -1;
  bool astra_on_dimensions = true;
  std::vector<std::string> astra_notes;  // about the astra-sim folder, when written
};

struct ExportOptions {
  // When given: the algorithm is exported re-timed with its reductions at this rate
  // (Algorithm::reduce_bandwidth); otherwise with its own.
  std::optional<Bandwidth> reduce_bandwidth;
  chakra::GraphOptions chakra;
  synth::MscclOptions msccl;
  // For "astra-sim": a Chakra ET workload prefix; empty: the collective alone.
  std::string astra_workload;
  // For "astra-sim": the network backend it runs on (astra/bundle.hpp).
  astra::AstraNetwork astra_network = astra::AstraNetwork::Auto;
};

// Writes `a` in each of `formats` ("json", "msccl-xml", "chakra", "astra-sim": a folder ASTRA-sim
// runs as it is, astra/bundle.hpp) into `dir`, every file committed together
// (topo/output_folder.hpp). A format that cannot express this algorithm (MSCCL-XML has no
// broadcast, ...) is skipped with the reason and the others are still written. Throws
// tenet::Error, before writing anything, for an unknown format, and for an algorithm that names a
// rank, node, chunk or link `t` does not have (synth::check_references).
Exported export_algorithm(const synth::Algorithm& a, const topo::Topology& t,
                          const std::vector<std::string>& formats, const std::string& dir,
                          const ExportOptions& options = {});

// One line on what ASTRA-sim makes of the Chakra graph `e` holds ("" when none was written).
std::string describe_astra_time(const Exported& e);

}  // namespace tenet::exporting
