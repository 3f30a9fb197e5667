// Process groups that leave NPUs idle borrow them. A data-parallel group of one GPU per server, on
// one rail of a rail-optimised cluster, reaches only its own NIC; its server mates' NICs sit idle
// while the group's cut bound counts them (each member reaches them over its NVSwitch). NCCL's PXN
// sends through them; here each member's team (the other NPUs of its server) carries slices of its
// data:
//   1. member i hands slice s of its chunks to its team mate s (the member itself is mate 0);
//   2. for every slice s, mates s of all teams run the collective among themselves: a sub-group
//      collective on the whole topology, made by the caller (a synthesized or a baseline one);
//   3. member i takes back from its mates what its slices became.
// In equal slices, chunk q*T + s of each rank's k chunks is slice s (T: the team size). The
// phases wait for each other chunk by chunk (data dependencies; a mate's chunk is in place before
// anything reduces into it or overwrites it), so they overlap: the time is about the slowest
// phase's, with all T NICs of every server in use.
// A tensor-parallel group fills one server, and its NICs sit idle while its bound counts them
// (member i reaches member j through its NIC, another server's NVSwitch and j's NIC). It borrows
// the next server: member i's mirror is the NPU at its place there (on its rail), and the two
// slices are unequal, the members' own server carrying most (on nvcluster's 450 GB/s NVSwitch
// links and 50 GB/s NICs, about a tenth of an All-Gather's chunks go through the mirrors).
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "synth/ir/algorithm.hpp"
#include "topo/topology.hpp"

namespace tenet::synth {

// The teams a group borrows: teams[i][0] is member i, teams[i][s] its mate s.
struct RelayTeams {
  std::vector<std::vector<topo::NodeId>> teams;
  // Mates are the members' idle server mates (false), or the NPUs of another server that sit where
  // the members sit in theirs (true: a group inside one server reaching an idle server through its
  // NICs). Mirrors carry less than the member's own server does: the slices are not equal.
  bool mirrors = false;
};

// The teams of a group, or nothing when it has none to borrow. It must be All-Gather,
// Reduce-Scatter or All-Reduce and leave NPUs out, in a topology of servers of one size, at least
// 2 (topo::detect_servers). Then either every member is alone in its server (its mates: the rest of
// its server), or, with `borrow_servers`, every member is in one server (its mirror: the NPU at
// its place in the next server, in a rail-optimised cluster the one on its rail).
std::optional<RelayTeams> relay_teams(const topo::Topology& t, const Collective& c,
                                      bool borrow_servers = true);

// Slice s's chunks per NPU when k splits evenly over a team of `team_size` (else empty).
std::vector<int> equal_slices(int k, int team_size);

// The composition above for `c` over `teams`, slice s taking slices[s] of each rank's k chunks
// (summing to k; a slice may be empty, the members' own too), interleaved so that each slice's
// chunks spread over the order; `sub(sub_collective)` makes the collective of each slice's mates
// (chunk j of the sub-collective's rank r is rank r's j-th chunk of the slice; timed, and among
// the mates alone: nothing when it relays through other NPUs). The result is timed.
std::optional<Algorithm> team_relay(const topo::Topology& t, const Collective& c, Bytes chunk_bytes,
                                    LinkModel model, const RelayTeams& teams,
                                    const std::vector<int>& slices,
                                    const std::function<Algorithm(const Collective&)>& sub);
// The same over relay_teams(t, c) in equal slices (nothing when k does not split evenly).
std::optional<Algorithm> team_relay(const topo::Topology& t, const Collective& c, Bytes chunk_bytes,
                                    LinkModel model,
                                    const std::function<Algorithm(const Collective&)>& sub);

}  // namespace tenet::synth
