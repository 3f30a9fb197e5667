// What several fuzz harnesses share: the topology an input is checked on, and the split of one
// input into the per-rank files of a Chakra ET set.
#pragma once

#include <string_view>
#include <vector>

#include "chakra/et.hpp"
#include "topo/topology.hpp"

namespace tenet::fuzz {

// Separates the ranks' files in one fuzz input (seeds.cpp writes it; the fuzzer may move it).
inline constexpr std::string_view kRankSeparator = "\n--tenet-rank--\n";
inline constexpr int kMaxFuzzNpus = 64;

// fc:n with n clamped to [2, kMaxFuzzNpus], built once per n.
const topo::Topology& fully_connected(int npus);
// The ET files of `text` (at most kMaxFuzzNpus); throws tenet::Error for one that does not parse.
std::vector<chakra::EtFile> parse_ranks(std::string_view text);

}  // namespace tenet::fuzz
