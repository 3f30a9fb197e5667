#include "chakra/algorithm_files.hpp"

#include <filesystem>
#include <regex>

#include "chakra/collective_graph.hpp"
#include "synth/algorithm_json.hpp"
#include "synth/msccl_xml.hpp"
#include "topo/io.hpp"

namespace tenet::chakra {
namespace {

std::string prefix_of(const std::string& path) {
  static const std::regex one_file(R"((.*)\.[0-9]+\.et)");
  std::smatch m;
  return std::regex_match(path, m, one_file) ? std::string(m[1]) : path;
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
