#include "synth/collective.hpp"

#include <fmt/format.h>

#include <cctype>

#include "topo/error.hpp"

namespace tenet::synth {

std::string_view to_string(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::AllGather: return "all-gather";
    case CollectiveKind::ReduceScatter: return "reduce-scatter";
    case CollectiveKind::AllReduce: return "all-reduce";
    case CollectiveKind::Broadcast: return "broadcast";
    case CollectiveKind::Reduce: return "reduce";
    case CollectiveKind::Gather: return "gather";
    case CollectiveKind::Scatter: return "scatter";
    case CollectiveKind::AllToAll: return "all-to-all";
  }
  return "?";
}

CollectiveKind parse_collective(std::string_view name) {
  auto squash = [](std::string_view s) {
    std::string out;
    for (char c : s)
      if (c != '-' && c != '_' && c != ' ') out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  };
  std::string want = squash(name);
  std::string known;
  for (CollectiveKind k : kAllCollectives) {
    if (squash(to_string(k)) == want) return k;
    known += (known.empty() ? "" : ", ") + std::string(to_string(k));
  }
  throw Error(fmt::format("unknown collective '{}' (known: {})", name, known));
}

bool is_rooted(CollectiveKind k) {
  return k == CollectiveKind::Broadcast || k == CollectiveKind::Reduce ||
         k == CollectiveKind::Gather || k == CollectiveKind::Scatter;
}

double bus_bandwidth_factor(CollectiveKind k, int ranks) {
  if (ranks < 1) throw Error("a collective needs at least one rank");
  double n = ranks;
  switch (k) {
    case CollectiveKind::AllReduce: return 2 * (n - 1) / n;
    case CollectiveKind::AllGather:
    case CollectiveKind::ReduceScatter:
    case CollectiveKind::AllToAll: return (n - 1) / n;
    default: return 1.0;
  }
}

}  // namespace tenet::synth
