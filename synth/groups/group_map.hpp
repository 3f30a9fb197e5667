// Same-shape process groups. Every tensor-parallel group of a rail-optimised cluster is the same
// group up to renaming (server 5's GPUs, NVSwitch and NICs play server 0's parts), and so is every
// data-parallel group of one rail: an algorithm made for one group runs on another once its nodes
// and links are renamed, in the same time. The simulator synthesizes a workload's groups of one
// shape once this way (sim/system.cpp).
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "synth/ir/algorithm.hpp"
#include "topo/topology.hpp"

namespace tenet::synth {

// `a` (made on `t` for its collective's ranks) renamed to run over `ranks`, or nothing when no
// renaming is found. Member i becomes ranks[i]. Every other node the algorithm passes or relays
// through is renamed link by link, in transfer order, to a node of the same kind and flags at the
// end of a matching link: itself when that is free, else the node it swaps with (the one renamed
// to it), else the first free one. Links go to links between the renamed ends with the same
// bandwidth, latency and buffer, distinct links to distinct links and distinct nodes to distinct
// nodes. Only then is a renaming returned, so the result has a's transfers over links of the
// same properties shared the same way: it is correct exactly when `a` is, and keeps a's times.
// The search may miss a renaming that exists (it does not backtrack); it never returns a wrong one.
std::optional<Algorithm> map_to_group(const topo::Topology& t, const Algorithm& a,
                                      std::span<const topo::NodeId> ranks);

// The part of a topology a group works in: its members and the switches they reach through
// switches alone (a server's NVSwitch and the rail switches its NICs plug into; a fabric's
// leaves and spines), with the links among them. NPUs outside the group are left out: in training
// they run their own groups. The part is a topology of its own whose NPU i is member i, so a
// group's collective is the part's collective over every NPU.
struct GroupPart {
  topo::Topology topology;
  Collective collective;            // c over the part's NPUs 0..m-1
  std::vector<topo::NodeId> nodes;  // the whole topology's node of each part node
  std::vector<topo::LinkId> links;  // the whole topology's link of each part link

  // An algorithm made on the part, renamed to the whole topology and the group's ranks.
  Algorithm lift(Algorithm a, const topo::Topology& whole,
                 const std::vector<topo::NodeId>& ranks) const;
};

// A part of at most 1/kGroupPartShare of the whole topology's nodes is worth working in alone.
inline constexpr int kGroupPartShare = 4;

// The part of `t` group `c` works in, when the group leaves NPUs out, no member links straight to
// an NPU outside the group (on a torus or a mesh the other NPUs are the fabric itself), the
// members reach each other within the part, and the part is small enough (kGroupPartShare: a
// server's group in a cluster of 8 servers or more). Synthesis there costs what the group costs,
// not what the cluster does; what it gives up is relaying through other groups' NPUs (the group's
// lower bound still counts them). Nothing otherwise.
// With `min_bandwidth`, only links at least that fast count: a server's part through its NVSwitch
// alone, not its NICs and the fabric behind them (synth/groups/composed.hpp's server levels).
std::optional<GroupPart> group_part(const topo::Topology& t, const Collective& c,
                                    Bandwidth min_bandwidth = 0);

}  // namespace tenet::synth
