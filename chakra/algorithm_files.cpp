#include "chakra/algorithm_files.hpp"

#include <cctype>
#include <filesystem>

#include "chakra/collective_graph.hpp"
#include "synth/formats/algorithm_json.hpp"
#include "synth/formats/msccl_xml.hpp"
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

synth::Algorithm load_any_algorithm(const std::string& path, const topo::Topology& t) {
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".xml") return synth::parse_msccl_xml(topo::read_file(path), t, path);
  const std::string prefix = prefix_of(path);
  if (is_prefix(prefix)) return from_collective_graph(read_prefix(prefix), t, prefix);
  return synth::load_algorithm(path);
}

bool names_algorithm_file(const std::string& text) {
  const std::string ext = std::filesystem::path(text).extension().string();
  std::error_code ec;
  return ext == ".json" || ext == ".xml" || ext == ".et" || std::filesystem::exists(text, ec) ||
         is_prefix(prefix_of(text));
}

}  // namespace tenet::chakra
