// An All-Reduce's All-Gather half sending each owner's chunks in the order its Reduce-Scatter half
// reduces them there.
#pragma once

#include "synth/ir/algorithm.hpp"

namespace tenet::synth::detail {

// Renames the chunks of the All-Gather `gathered` within each owner so that each owner sends its
// chunks in the order the Reduce-Scatter `reduced` (over the same ranks and chunks) reduces them
// into it: the chunk it first sends is the one whose last reduction into it is listed first, and
// so on. Lists are in dependency order, which the matcher's (forward.cpp, build) is in start order
// too, so the places stand for the times the join waits on, without timing either half: an
// approximation of the order the reductions end in. An owner's chunks are interchangeable in an
// All-Gather, so `gathered` stays the same All-Gather, taking the same time alone; joined after
// `reduced` (each chunk's All-Gather leaving its owner once its own reduction is in), a chunk can
// leave as soon as it is reduced. This matters where the All-Gather is the Reduce-Scatter's
// schedule mirrored (all_reduce_halves): there the chunk an owner sends first is the one reduced
// into it last, so that no chunk's All-Gather could start before every reduction into its owner
// had ended. False where it leaves the chunks as they are: `reduced` is not over the same chunks,
// or a message would carry chunks that are not consecutive once renamed; true otherwise (the order
// may have been right already).
bool gather_as_reduced(const Algorithm& reduced, Algorithm& gathered);

}  // namespace tenet::synth::detail
