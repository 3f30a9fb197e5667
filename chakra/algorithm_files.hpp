// Algorithms from any file format Tenet reads: Tenet JSON, MSCCL-XML (or ForestColl's tree XML,
// synth/formats/forestcoll_trees.hpp, told apart by its <Algo> root), Chakra collective graphs.
#pragma once

#include <string>
#include <vector>

#include "synth/ir/algorithm.hpp"
#include "synth/ir/import_problem.hpp"
#include "topo/topology.hpp"

namespace tenet::chakra {

// An algorithm file read for checking: the algorithm, and for another tool's program (MSCCL-XML,
// a Chakra collective graph) what makes it incorrect in the runtime that runs it, and warnings.
struct AlgorithmImport {
  synth::Algorithm algorithm;
  std::vector<synth::ImportProblem> problems;
  std::vector<std::string> warnings;
};
// Any file load_any_algorithm reads, with an MSCCL-XML program's or a Chakra graph's problems
// reported rather than thrown (`tenet verify` says INCORRECT).
AlgorithmImport import_any_algorithm(const std::string& path, const topo::Topology& t);

// A .json file, a .xml file, or a Chakra prefix (<prefix>.0.et, ...; a path to one of the .et
// files names its prefix too). Throws tenet::Error, naming the field, when the algorithm names a
// rank, node, chunk or link `t` does not have (synth::check_references).
synth::Algorithm load_any_algorithm(const std::string& path, const topo::Topology& t);
// Whether `text` names such a file (rather than an algorithm name such as "ring").
bool names_algorithm_file(const std::string& text);

}  // namespace tenet::chakra
