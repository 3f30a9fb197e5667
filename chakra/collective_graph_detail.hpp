// What the collective graph's export (collective_graph.cpp), checks (collective_graph_check.cpp)
// and import (collective_graph_read.cpp) share: ASTRA-sim's tag limit, Tenet's values in a rank's
// metadata, and sends paired with receives. Internal to chakra.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chakra/et.hpp"

namespace tenet::chakra::detail {

// ASTRA-sim's tags are in [0, 500,000,000).
constexpr int64_t kMaxTag = 500'000'000;

// A value named `name` in a rank's metadata, when it is there with that type.
std::optional<std::string> meta_string(const ChakraProtoMsg::GlobalMetadata& m,
                                       std::string_view name);
std::optional<int64_t> meta_int(const ChakraProtoMsg::GlobalMetadata& m, std::string_view name);

// Sends and receives paired as ASTRA-sim pairs them: by (tag, source, destination), in order.
struct Pairing {
  struct End {
    int rank;
    size_t index;  // node index in its file
  };
  std::vector<std::pair<End, End>> pairs;  // (send, recv)
  std::vector<std::string> problems;
};

Pairing pair_up(const std::vector<EtFile>& files, const std::string& prefix);

}  // namespace tenet::chakra::detail
