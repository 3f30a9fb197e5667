// Algorithms in every format the CLI reads and writes: Tenet JSON, MSCCL-XML, Chakra collective
// graphs.
#pragma once

#include <string>
#include <vector>

#include "synth/algorithm.hpp"
#include "topo/topology.hpp"

namespace tenet::cli {

// A .json file, a .xml file, or a Chakra prefix (<prefix>.0.et, ... ; a path to one of the .et
// files names its prefix too).
synth::Algorithm load_any_algorithm(const std::string& path, const topo::Topology& t);

// Writes `a` in each of `formats` ("json", "msccl-xml", "chakra") into `dir`; returns the paths.
// Throws tenet::Error for an unknown format.
std::vector<std::string> export_algorithm(const synth::Algorithm& a, const topo::Topology& t,
                                          const std::vector<std::string>& formats, const std::string& dir,
                                          Bandwidth reduce_bandwidth);

}  // namespace tenet::cli
