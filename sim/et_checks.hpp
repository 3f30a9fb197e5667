// Internal to the simulator (sim/system.cpp): checking a Chakra ET workload before it runs, and
// reading each rank's dependency graph.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "chakra/et.hpp"
#include "sim/comm_groups.hpp"
#include "topo/error.hpp"
#include "topo/topology.hpp"

namespace tenet::sim::detail {

// The error about node `n` of rank `r` of the workload `workload`: "<workload>: rank r node id
// ('name'): what".
Error node_error(const std::string& workload, int r, const chakra::Node& n,
                 const std::string& what);

// A rank's dependency graph: its nodes in file order, and per node the nodes that depend on it and
// how many dependencies it waits for.
struct RankGraph {
  std::vector<const chakra::Node*> nodes;
  std::unordered_map<uint64_t, size_t> index;  // node id -> its position in `nodes`
  std::vector<std::vector<size_t>> users;
  std::vector<int> pending;
};

// Checks the workload `name` (rank r on NPU r of `t`) and reads every rank's graph. Throws
// tenet::Error at the first problem, rank by rank and node by node: more ranks than NPUs, a node
// id used twice, a dependency on a node not in the rank's graph, a node check_node refuses, or a
// dependency cycle. `groups` learns the group of every collective.
std::vector<RankGraph> read_workload(const topo::Topology& t,
                                     const std::vector<chakra::EtFile>& workload,
                                     const std::string& name, CommGroups& groups);

// Throws tenet::Error for a node of rank `r` of a workload of `ranks` ranks that cannot run: a size
// or duration out of range, a peer that is not a rank, a send, receive or collective without the
// attributes it needs, a comm_type that is no Chakra collective, a group that does not hold (see
// CommGroups), or a node type the simulator does not run.
void check_node(const std::string& name, int ranks, int r, const chakra::Node& n,
                CommGroups& groups);

}  // namespace tenet::sim::detail
