#include "sim/comm_types.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "chakra/et.hpp"
#include "sim/system.hpp"
#include "topo/error.hpp"

namespace tenet::sim {

std::optional<synth::CollectiveKind> collective_of_comm_type(int64_t comm_type) {
  switch (comm_type) {
    case ChakraProtoMsg::ALL_REDUCE:
      return synth::CollectiveKind::AllReduce;
    case ChakraProtoMsg::REDUCE:
      return synth::CollectiveKind::Reduce;
    case ChakraProtoMsg::ALL_GATHER:
      return synth::CollectiveKind::AllGather;
    case ChakraProtoMsg::GATHER:
      return synth::CollectiveKind::Gather;
    case ChakraProtoMsg::SCATTER:
      return synth::CollectiveKind::Scatter;
    case ChakraProtoMsg::BROADCAST:
      return synth::CollectiveKind::Broadcast;
    case ChakraProtoMsg::ALL_TO_ALL:
      return synth::CollectiveKind::AllToAll;
    case ChakraProtoMsg::REDUCE_SCATTER:
    case ChakraProtoMsg::REDUCE_SCATTER_BLOCK:
      return synth::CollectiveKind::ReduceScatter;
    default:
      return std::nullopt;  // BARRIER: no data; handled as a meeting point
  }
}

Bytes collective_bytes_of_comm_size(synth::CollectiveKind kind, Bytes comm_size, int ranks) {
  if (!comm_size_is_per_rank(kind)) return comm_size;
  // Sizes are limited to topo::kMaxBytes (2^60) where they are read; saturate rather than wrap.
  return comm_size > std::numeric_limits<Bytes>::max() / std::max(ranks, 1)
             ? std::numeric_limits<Bytes>::max()
             : comm_size * ranks;
}

Bytes comm_size_of_collective_bytes(synth::CollectiveKind kind, Bytes bytes, int ranks) {
  if (!comm_size_is_per_rank(kind)) return bytes;
  if (ranks < 1 || bytes % ranks != 0)
    throw Error(fmt::format(
        "{} of {} over {} ranks: Chakra's comm_size is each rank's input ({}/{}), so the size must "
        "be a multiple of {}",
        synth::to_string(kind), format_bytes(bytes), ranks, format_bytes(bytes), ranks, ranks));
  return bytes / ranks;
}

}  // namespace tenet::sim
