// Process groups that leave NPUs idle borrow them. A data-parallel group of one GPU per server, on
// one rail of a rail-optimised cluster, reaches only its own NIC; its server mates' NICs sit idle
// while the group's cut bound counts them (each member reaches them over its NVSwitch). NCCL's PXN
// sends through them; here each member's team (the other NPUs of its server) carries slices of its
// data:
//   1. member i hands slice s of its chunks to its team mate s (the member itself is mate 0);
//   2. for every slice s, mates s of all teams run the collective among themselves: a sub-group
//      collective on the whole topology, made by the caller (a synthesized or a baseline one);
//   3. member i takes back from its mates what its slices became.
// Chunk q*T + s of each rank's k chunks is slice s (T: the team size, k a multiple of T). The
// phases wait for each other chunk by chunk (data dependencies; a mate's chunk is in place before
// anything reduces into it or overwrites it), so they overlap: the time is about the slowest
// phase's, with all T NICs of every server in use.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "synth/algorithm.hpp"
#include "topo/topology.hpp"

namespace tenet::synth {

// The teams of a group: teams[i][s] is member i's mate s (teams[i][0] = the member), or nothing
// when the group has none to borrow: it must be All-Gather, Reduce-Scatter or All-Reduce, leave
// NPUs out, and every member must be alone in its server (topo::detect_servers) with servers of
// the same size, at least 2.
std::optional<std::vector<std::vector<topo::NodeId>>> relay_teams(const topo::Topology& t, const Collective& c);

// The composition above for `c` (its chunks_per_npu a multiple of the team size, else nothing),
// with `sub(sub_collective)` making the collective of each slice's mates (chunk j of the
// sub-collective's rank r is chunk (j % k') * T + s of rank r, k' = k / T; timed, and among the
// mates alone: nothing when it relays through other NPUs). The result is timed.
std::optional<Algorithm> team_relay(const topo::Topology& t, const Collective& c, Bytes chunk_bytes,
                                    LinkModel model, const std::function<Algorithm(const Collective&)>& sub);

}  // namespace tenet::synth
