#include "chakra/algorithm_files.hpp"

#include <cctype>
#include <filesystem>

#include "chakra/collective_graph.hpp"
#include "synth/formats/algorithm_json.hpp"
#include "synth/formats/forestcoll_trees.hpp"
#include "synth/formats/msccl_xml.hpp"
#include "synth/ir/references.hpp"
#include "topo/io.hpp"

namespace tenet::chakra {
namespace {

// "<prefix>.<rank>.et" -> "<prefix>"; anything else unchanged. (A scan: std::regex recursed per
// character and overflowed the stack on 100,000-character names.)
std::string prefix_of(const std::string& path) {
  if (path.size() < 5 || path.compare(path.size() - 3, 3, ".et") != 0) return path;
  size_t i = path.size() - 3;
  const size_t digits_end = i;
  while (i > 0 && std::isdigit(static_cast<unsigned char>(path[i - 1]))) --i;
  if (i == digits_end || i == 0 || path[i - 1] != '.') return path;
  return path.substr(0, i - 1);
}

}  // namespace

AlgorithmImport import_any_algorithm(const std::string& path, const topo::Topology& t) {
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".xml") {
    const std::string text = topo::read_file(path);
    if (synth::is_forestcoll_trees(text))
      return {synth::import_forestcoll_trees(text, t, path), {}, {}};
    synth::MscclImport in = synth::import_msccl_xml(text, t, path);
    return {std::move(in.algorithm), std::move(in.problems), std::move(in.warnings)};
  }
  const std::string prefix = prefix_of(path);
  if (is_prefix(prefix)) {
    ChakraImport in = import_collective_graph(read_prefix(prefix), t, prefix);
    return {std::move(in.algorithm), std::move(in.problems), std::move(in.warnings)};
  }
  return {synth::load_algorithm(path), {}, {}};
}

synth::Algorithm load_any_algorithm(const std::string& path, const topo::Topology& t) {
  const std::string ext = std::filesystem::path(path).extension().string();
  const std::string prefix = prefix_of(path);
  const bool xml = ext == ".xml", chakra = !xml && is_prefix(prefix);
  synth::Algorithm a;
  if (xml) {
    const std::string text = topo::read_file(path);
    a = synth::is_forestcoll_trees(text) ? synth::import_forestcoll_trees(text, t, path)
                                         : synth::parse_msccl_xml(text, t, path);
  } else {
    a = chakra ? from_collective_graph(read_prefix(prefix), t, prefix)
               : synth::load_algorithm(path);
  }
  // Whatever the format, what it names must be on this topology before anyone sizes a table by it.
  synth::check_references(a, t, chakra ? prefix : path);
  return a;
}

bool names_algorithm_file(const std::string& text) {
  const std::string ext = std::filesystem::path(text).extension().string();
  std::error_code ec;
  return ext == ".json" || ext == ".xml" || ext == ".et" || std::filesystem::exists(text, ec) ||
         is_prefix(prefix_of(text));
}

}  // namespace tenet::chakra
