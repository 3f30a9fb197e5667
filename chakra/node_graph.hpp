// A Chakra collective graph of every rank, flattened: each node with what it does and the nodes it
// waits for, numbered across ranks.
#pragma once

#include <cstdint>
#include <vector>

#include "chakra/et.hpp"
#include "topo/topology.hpp"

namespace tenet::chakra {

// A collective graph as one flat graph over every rank: per node what it does and what it waits
// for (the form in which the ASTRA-sim emulation and other whole-graph readers walk it).
struct NodeGraph {
  struct Node {
    ChakraProtoMsg::NodeType type = ChakraProtoMsg::INVALID_NODE;
    int rank = 0;
    int peer = -1;  // comm_dst of a send, comm_src of a receive
    int64_t size = 0, tag = 0;
    uint64_t micros = 0;  // duration_micros
    uint64_t id = 0;      // the node's id in its file
  };
  std::vector<topo::NodeId> npu;  // per rank
  std::vector<Node> nodes;        // every rank's, in any order (dependencies name them by index)
  std::vector<size_t> dep_begin;  // per node: its dependencies (indices into nodes) in deps, CSR
  std::vector<size_t> deps;
};
// Decodes ET files (ranks map to NPUs by the tenet_ranks metadata when present, else rank r is NPU
// r). Throws tenet::Error naming the rank and node for a send or receive without its attributes or
// a dependency on a node that is not in the file.
NodeGraph node_graph(const std::vector<EtFile>& files, const topo::Topology& t);

}  // namespace tenet::chakra
