// Synthesis for a group whose members' server mates sit idle: the team relay (synth/groups/
// team_relay.hpp) with each slice's sub-group synthesized or a baseline, the fastest kept.
#pragma once

#include <optional>

#include "synth/memo.hpp"
#include "synth/synthesizer.hpp"
#include "topo/topology.hpp"

namespace tenet::synth::detail {

// Whether `a` is within kRelayEnough of its lower bound: the team relay is then the answer.
bool relay_enough(const topo::Topology& t, const Algorithm& a, BoundMemo* memo);
// A group whose members' server mates sit idle, borrowing them (synth/groups/team_relay.hpp);
// nothing when the group has none to borrow or its chunks do not split into the team's slices. Each
// slice's sub-collective is synthesized (without borrowing again) where it is small; else it is the
// baseline fastest on the first slice (on a rail's switch: direct or halving-doubling), since the
// matcher's work for a group still grows with the whole cluster (a 128-member rail group of a
// 1024-NPU cluster takes it seconds, and there are as many sub-groups as mates).
std::optional<Algorithm> relay_synthesize(const topo::Topology& t, const Collective& c,
                                          Bytes chunk_bytes, const SynthOptions& o);

}  // namespace tenet::synth::detail
