// Internal to the simulator: the conversions between Chakra's comm_type / comm_size and Tenet's
// collectives, defined in sim/comm_types.cpp. sim/system.hpp declares them (with
// comm_size_is_per_rank, which explains the two size conventions) for callers; the simulator's own
// files include this header instead of the whole system layer.
#pragma once

#include <cstdint>
#include <optional>

#include "synth/ir/collective.hpp"
#include "topo/units.hpp"

namespace tenet::sim {

std::optional<synth::CollectiveKind> collective_of_comm_type(int64_t comm_type);
Bytes collective_bytes_of_comm_size(synth::CollectiveKind kind, Bytes comm_size, int ranks);
Bytes comm_size_of_collective_bytes(synth::CollectiveKind kind, Bytes bytes, int ranks);

}  // namespace tenet::sim
