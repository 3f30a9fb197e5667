// Algorithms from any file format Tenet reads: Tenet JSON, MSCCL-XML, Chakra collective graphs.
#pragma once

#include <string>

#include "synth/ir/algorithm.hpp"
#include "topo/topology.hpp"

namespace tenet::chakra {

// A .json file, a .xml file, or a Chakra prefix (<prefix>.0.et, ...; a path to one of the .et
// files names its prefix too).
synth::Algorithm load_any_algorithm(const std::string& path, const topo::Topology& t);
// Whether `text` names such a file (rather than an algorithm name such as "ring").
bool names_algorithm_file(const std::string& text);

}  // namespace tenet::chakra
