// Writing algorithms in every format: Tenet JSON, MSCCL-XML, Chakra collective graphs.
#pragma once

#include <string>
#include <vector>

#include "chakra/algorithm_files.hpp"
#include "synth/algorithm.hpp"
#include "topo/topology.hpp"

namespace tenet::cli {

using chakra::load_any_algorithm;  // reading lives in chakra/, which the simulator uses too

// Writes `a` in each of `formats` ("json", "msccl-xml", "chakra") into `dir`; returns the paths.
// Throws tenet::Error for an unknown format.
std::vector<std::string> export_algorithm(const synth::Algorithm& a, const topo::Topology& t,
                                          const std::vector<std::string>& formats, const std::string& dir,
                                          Bandwidth reduce_bandwidth);

}  // namespace tenet::cli
