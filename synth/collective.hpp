// The collectives Tenet knows, their names on the command line and in files, and NCCL's
// bus-bandwidth factors (nccl-tests, doc/PERFORMANCE.md). Pre- and postconditions come with the
// algorithm IR.
#pragma once

#include <array>
#include <string>
#include <string_view>

namespace tenet::synth {

enum class CollectiveKind {
  AllGather,
  ReduceScatter,
  AllReduce,
  Broadcast,
  Reduce,
  Gather,
  Scatter,
  AllToAll,
};

inline constexpr std::array kAllCollectives{
    CollectiveKind::AllGather, CollectiveKind::ReduceScatter, CollectiveKind::AllReduce,
    CollectiveKind::Broadcast, CollectiveKind::Reduce,        CollectiveKind::Gather,
    CollectiveKind::Scatter,   CollectiveKind::AllToAll,
};

// "all-gather", "reduce-scatter", ... Parsing also accepts "allgather", "all_gather", "AllGather".
std::string_view to_string(CollectiveKind k);
CollectiveKind parse_collective(std::string_view name);

// Whether the collective has a root (broadcast, reduce, gather, scatter).
bool is_rooted(CollectiveKind k);
// busbw = algbw * factor for n ranks: All-Reduce 2(n-1)/n; Reduce-Scatter, All-Gather and
// All-to-All (n-1)/n; the rooted ones 1.
double bus_bandwidth_factor(CollectiveKind k, int ranks);

}  // namespace tenet::synth
