// ForestColl's spanning trees read as an All-Gather, so that its schedules can be verified, timed,
// exported and simulated in Tenet beside Tenet's own.
//
// The format is what ForestColl's `spanning_trees_to_xml` writes (pipeline_allgather.py in
// github.com/liangyuRain/ForestColl): an <Algo nchunkspernode="k"> element holding one <tree
// root= index= nchunks= height=> per tree, each a list of <send src= dst= path=> in
// breadth-first order. A node is named as ForestColl prints its networkx node, a Python tuple
// ("(0, 'GPU', 3)", a switch "(-1, 'IB', 0)"); a path is the nodes from src to dst, comma
// separated. Each NPU roots trees whose nchunks add up to k: it cuts its data into k parts and
// broadcasts nchunks of them down each of its trees.
//
// Names are matched exactly against the topology's nodes: write the topology with ForestColl's
// names (its NPUs first, in the order ForestColl numbers its GPUs).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "synth/ir/algorithm.hpp"
#include "topo/topology.hpp"
#include "topo/units.hpp"

namespace tenet::synth {

struct ForestTree {
  struct Send {
    NodeId src = 0, dst = 0;
    std::vector<LinkId> route;  // the path's links
  };
  NodeId root = 0;
  int index = 0;            // the root's i-th tree
  int nchunks = 0;          // of the root's k parts, how many this tree broadcasts
  std::vector<Send> sends;  // parent before child (breadth-first)
};

struct ForestTrees {
  int k = 0;  // parts per NPU (nchunkspernode)
  std::vector<ForestTree> trees;
};

// Whether `xml` is ForestColl's tree file: its root element is <Algo> (MSCCL-XML's is <algo>).
bool is_forestcoll_trees(std::string_view xml);

// Reads ForestColl's trees onto `t`. Throws tenet::Error naming `file` and the line for XML that
// is not well formed, a missing or malformed attribute, a node name `t` does not have, a path that
// does not lead from src to dst over links of `t` (or visits a node twice, or passes an NPU that
// does not relay), a send
// from a node its tree has not reached or to one it has, a tree that does not reach every NPU, or
// roots whose trees' nchunks do not add up to k.
ForestTrees read_forestcoll_trees(std::string_view xml, const topo::Topology& t,
                                  const std::string& file);

// The All-Gather of `total_bytes` the trees make (Tenet's convention: every NPU's output): each
// NPU's data in k parts, each part in `slices` chunks streamed down its tree one after another
// (every node forwards a chunk once it has it), each tree on a channel of its own, listed in slice
// order; timed on `t`.
// Throws tenet::Error where a chunk would be under a byte.
Algorithm pipeline_forest(const topo::Topology& t, const ForestTrees& f, Bytes total_bytes,
                          int slices);

// A tree file as an algorithm file reader takes it: every part one chunk of 1 MiB (as MSCCL-XML
// imports take their chunks), in one slice. pipeline_forest makes it at any size and slicing.
Algorithm import_forestcoll_trees(std::string_view xml, const topo::Topology& t,
                                  const std::string& file);

}  // namespace tenet::synth
