// An All-Reduce's All-Gather half sending each owner's chunks in the order its Reduce-Scatter half
// reduces them there.
#pragma once

#include "synth/ir/algorithm.hpp"

namespace tenet::synth::detail {

// Renames the chunks of the All-Gather `gathered` within each owner so that each owner sends its
// chunks in the order the Reduce-Scatter `reduced` (over the same ranks and chunks) ends their
// reductions into it: the chunk it first sends is the one whose last reduction into it is listed
// first, and so on (a list's places are its start order, so this needs no times). An owner's
// chunks are interchangeable in an All-Gather, so `gathered` stays the same All-Gather, taking the
// same time alone; joined after `reduced` (each chunk's All-Gather leaving its owner once its own
// reduction is in), it can start each chunk as soon as that chunk is reduced. This matters where
// the All-Gather is the Reduce-Scatter's schedule mirrored (all_reduce_halves): there the chunk an
// owner sends first is the one reduced into it last, so that no chunk's All-Gather could start
// before every reduction into its owner had ended. Left as it is where a message would carry
// chunks that are not consecutive once renamed; whether it was renamed is returned.
bool gather_as_reduced(const Algorithm& reduced, Algorithm& gathered);

}  // namespace tenet::synth::detail
