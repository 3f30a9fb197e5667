// ASTRA-sim's ns-3 network backend (astra-network-ns3: ns-3 with the HPCC project's RDMA NICs and
// switches, driven by astra-sim/network_frontend/ns3): the files that describe a Tenet topology to
// it. Its analytical network knows dimension products only; this one reads any graph of NPUs,
// switches and links.
//
// The topology file, as the backend's SetupNetwork reads it (scratch/common.h):
//   <nodes> <switches> <links>
//   <switch id> <switch id> ...                        (one line)
//   <node> <node> <rate> <delay> <error rate>          (one line per link)
// Node i < NPUs is ASTRA-sim's NPU i (the frontend sends from node i); the switches follow. That is
// Tenet's own numbering, so node ids are Tenet's NodeIds. Rates are written in bit/s and delays in
// picoseconds, both exact.
//
// What the backend cannot say, and what the file writes instead (each said in `notes`):
//  - a link is full duplex with one rate and one delay: where Tenet's two directions differ, both
//    get the slower rate and the larger delay; a one-way link becomes two-way;
//  - one link per pair of nodes (its routing keeps one interface per neighbour, `nbr2if`):
//    parallel links become one of their summed rate;
//  - routes are its own: every path of fewest hops, spread over flows by ECMP hashing, through
//    switches only (CalculateRoute expands switches, never hosts). A topology whose NPUs pass
//    traffic through (Node::router) cannot be written (ns3_topology throws).
#pragma once

#include <string>
#include <vector>

#include "synth/ir/algorithm.hpp"
#include "topo/topology.hpp"

namespace tenet::astra {

struct Ns3Topology {
  std::string text;                // the topology file
  std::vector<int64_t> rates;      // every link rate in it, bit/s, ascending (config.txt maps them)
  std::vector<std::string> notes;  // where it differs from the topology
};

// The backend's topology file for `t`. Throws tenet::Error when `t` has NPUs that pass traffic
// through: the backend's hosts forward nothing, so Tenet's routes through them have no path there.
Ns3Topology ns3_topology(const topo::Topology& t);

// How the backend's routes differ from the ones `a` was timed on (nothing when they cannot):
// transfers between nodes with several fewest-hop paths (ECMP hashing picks one per flow) and
// transfers Tenet routed over more hops than the fewest.
std::vector<std::string> ns3_route_notes(const synth::Algorithm& a, const topo::Topology& t);

// What the backend should report for `a`, before its packet headers and ECMP's choices of path:
// Tenet's schedule with no per-step cost (the backend charges none) and every message completing
// one route latency after it arrives. ASTRA-sim's frontend ends a message, its send and its receive
// alike, when the sender's queue pair has its last ACK (astra-sim 518bd51,
// astra-sim/network_frontend/ns3/entry.h, qp_finish), so a message's dependents start a return
// trip late; and a hop forwards a packet once it has all of it. Timed as `a` on a copy of `t` whose
// links' latencies are doubled and grown by a packet's time.
Time ns3_estimate(const synth::Algorithm& a, const topo::Topology& t);

// The backend's network configuration (config.txt: ReadConf in scratch/common.h) for a topology of
// these link rates. `dir` is the folder of the topology file and of the backend's outputs,
// relative to the folder the backend runs in (it opens its paths as written).
std::string ns3_config(const Ns3Topology& topology, const std::string& dir);

}  // namespace tenet::astra
