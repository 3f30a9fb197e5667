// The lines `tenet synth` and `tenet verify` print about an All-Reduce's halves in turn
// (synth::halves_in_turn_bound): the figure, a bound on that shape only, and what limits each half.
#pragma once

#include <optional>

#include "synth/bounds/lower_bound.hpp"
#include "synth/ir/algorithm.hpp"
#include "topo/topology.hpp"

namespace tenet::cli {

// The halves in turn of `a` (an All-Reduce) on `t`, where they say more than `bound`
// (HalvesInTurn:: above); nothing otherwise.
std::optional<synth::HalvesInTurn> halves_beyond(const topo::Topology& t, const synth::Algorithm& a,
                                                 const synth::LowerBound& bound,
                                                 synth::BoundMemo* memo = nullptr);

// "halves in turn  360.9 us  (...)" and "halves' limit   ...", each label and a space padded to
// `width`; `time` the algorithm's, set against the figure.
void print_halves(const synth::HalvesInTurn& h, Time time, int width);

}  // namespace tenet::cli
