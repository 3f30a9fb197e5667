// An algorithm's transfers as protobuf columns (algorithm_columns.proto): Tenet's own compact
// binary form of them, which the algorithm cache keeps beside the algorithm's JSON head
// (synth/cache/algorithm_cache.hpp), read straight into the algorithm without a parse tree (the
// figures: docs/synthesis.md, "The algorithm cache and the time limit"). Not a file format users
// exchange: no version of its own (the cache keys its entries by Tenet's build).
#pragma once

#include <string>
#include <string_view>

#include "synth/ir/algorithm.hpp"

namespace tenet::synth {

// `a`'s transfers, in order, as the protobuf message's bytes.
std::string transfers_to_columns(const Algorithm& a);

// Adds the transfers `bytes` hold to `a` (its head, with no transfers yet), each checked as the
// algorithm JSON's readers check one (chunk ids against the collective, dependency ids against the
// count, times in order). False where they do not parse or do not check: `a` may then hold some of
// them and must be dropped.
bool add_transfers_from_columns(std::string_view bytes, Algorithm& a);

}  // namespace tenet::synth
