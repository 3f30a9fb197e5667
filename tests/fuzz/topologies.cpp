#include "tests/fuzz/topologies.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <memory>

#include "topo/generators.hpp"

namespace tenet::fuzz {

const topo::Topology& fully_connected(int npus) {
  static std::array<std::unique_ptr<topo::Topology>, kMaxFuzzNpus + 1> cache;
  const int n = std::clamp(npus, 2, kMaxFuzzNpus);
  if (!cache[n])
    cache[n] = std::make_unique<topo::Topology>(topo::generate(fmt::format("fc:{}", n)));
  return *cache[n];
}

std::vector<chakra::EtFile> parse_ranks(std::string_view text) {
  std::vector<chakra::EtFile> files;
  for (size_t begin = 0; static_cast<int>(files.size()) < kMaxFuzzNpus;) {
    const size_t end = std::min(text.find(kRankSeparator, begin), text.size());
    files.push_back(
        chakra::parse_et(text.substr(begin, end - begin), fmt::format("fuzz.{}.et", files.size())));
    if (end == text.size()) break;
    begin = end + kRankSeparator.size();
  }
  return files;
}

}  // namespace tenet::fuzz
