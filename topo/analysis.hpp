// Graph analyses on a Topology, done with Boost.Graph: reachability, hop and latency shortest
// paths, diameter, connectivity, per-node bandwidth.
#pragma once

#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "topo/topology.hpp"

namespace tenet::topo {

// The first ordered pair (a, b) of NPUs such that no directed path leads from a to b, or nothing.
// Paths may pass through any node: NPUs relay explicitly, switches forward. O(V + E).
std::optional<std::pair<NodeId, NodeId>> first_unreachable_npu_pair(const Topology& t);

// Whether every NPU of `npus` reaches every other through links and pass-through nodes only
// (switches, router NPUs): no NPU would have to store and forward for another. One search per NPU,
// stopping at the first that misses one.
bool npus_joined_pairwise(const Topology& t, const std::vector<NodeId>& npus);

inline constexpr int kUnreachable = -1;
// Hop counts from `src` to every node (kUnreachable where none), through any node.
std::vector<int> hop_distances(const Topology& t, NodeId src);
// Latency-weighted shortest distances from `src` (ps; -1 where unreachable), through any node.
std::vector<Time> latency_distances(const Topology& t, NodeId src);
// The same from the nearest of `sources` (each at 0), or, `reversed`, to the nearest of them.
std::vector<Time> latency_distances_from(const Topology& t, std::span<const NodeId> sources,
                                         bool reversed = false);
// Shortest distances from `src` with each link weighted by 1 / its bandwidth (seconds per byte: the
// least link time a byte spends on its way; -1 where unreachable), through any node.
std::vector<double> link_time_distances(const Topology& t, NodeId src);

struct Diameter {
  int hops = 0;      // the largest hop distance between two NPUs
  Time latency = 0;  // the largest latency distance between two NPUs
  NodeId hops_from = 0, hops_to = 0;
  NodeId latency_from = 0, latency_to = 0;
  int sources = 0;  // the NPUs searched from: every NPU, or a sample (then a lower bound)
};
// Over NPU pairs only. One BFS and one Dijkstra per NPU; with more than `exact_up_to` NPUs (0: no
// limit), from 64 evenly spaced NPUs and the one farthest from the farthest NPU they found (a sweep
// back): distances at most the diameter, and on regular fabrics (every NPU equally far from its
// farthest) the diameter itself. A search per NPU grows as the square of the NPUs.
Diameter npu_diameter(const Topology& t, int exact_up_to = 0);

// Number of strongly connected components of the whole graph (switches included).
int strong_component_count(const Topology& t);

// Servers: NPUs joined by their fastest links (NVLink or an NVSwitch inside a box) behind a slower
// network. For link bandwidths from the highest down, the NPUs joined through links at least that
// fast (through any nodes) form groups; the first bandwidth at which every NPU is in a group of
// the same size s, with 2 <= s < N, gives the servers, each sorted by id, in order of their first
// NPU. Empty when no bandwidth splits the NPUs that way (a flat or homogeneous topology). `joined`,
// when given, receives that bandwidth (the servers' NVSwitch links, not their NICs).
std::vector<std::vector<NodeId>> detect_servers(const Topology& t, Bandwidth* joined = nullptr);
// Pods: where no bandwidth splits the NPUs into servers, the groups the switches' structure makes.
// Two switches joined by a link that lies on a triangle of switches (they have a switch neighbour
// in common: a dragonfly group's routers, all joined to each other) are one pod's; a pod holds the
// NPUs that attach to its switches. A leaf-spine's leaves (no triangles: its levels are
// bipartite) are pods of one switch each, a dragonfly's groups pods of all their routers. Each
// pod sorted by id, in order of its first NPU; empty unless there are at least two pods, all of
// the same size (at least 2), and every NPU attaches to switches of one pod only (a single switch,
// a server with a second NIC on another leaf: no pods).
std::vector<std::vector<NodeId>> detect_pods(const Topology& t);
// The bandwidth out of and into each of `groups` (sets of NPUs, disjoint): a group's nodes are its
// NPUs and the switches whose every NPU neighbour is in it (a server's NVSwitch, a pod's leaf or
// routers), and its links out are those from its nodes to any other node.
struct GroupBandwidth {
  std::vector<Bandwidth> out, in;  // per group
};
GroupBandwidth group_bandwidth(const Topology& t, const std::vector<std::vector<NodeId>>& groups);
// detect_servers, when its servers hold exactly `members` (in any order; a group that is whole
// servers), else empty.
std::vector<std::vector<NodeId>> servers_of(const Topology& t, std::vector<NodeId> members,
                                            Bandwidth* joined = nullptr);

Bandwidth ingress_bandwidth(const Topology& t, NodeId n);  // sum over incoming links
Bandwidth egress_bandwidth(const Topology& t, NodeId n);   // sum over outgoing links

}  // namespace tenet::topo
