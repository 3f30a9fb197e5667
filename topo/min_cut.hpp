// Minimum cuts on a capacitated digraph, computed by LEMON. Internal to topo/.
//
// LEMON 1.3 (Debian's) calls std::allocator::construct, which C++20 removed, so LEMON is compiled
// in its own C++17 translation unit (min_cut.cpp) behind this plain interface.
#pragma once

#include <memory>
#include <utility>
#include <vector>

namespace tenet::topo::detail {

class MinCutGraph {
 public:
  // Arcs as (source, target) over nodes 0..num_nodes-1; arc i keeps index i.
  MinCutGraph(int num_nodes, const std::vector<std::pair<int, int>>& arcs);
  ~MinCutGraph();
  MinCutGraph(const MinCutGraph&) = delete;
  MinCutGraph& operator=(const MinCutGraph&) = delete;

  void set_capacity(int arc, double capacity);
  // Hao-Orlin: the least out-capacity of a set X with source in X and X != all nodes.
  // `source_side` gets X's characteristic vector.
  double min_cut_from(int source, std::vector<char>& source_side);
  // Preflow: the least s-t cut; `source_side` gets the source side.
  double min_st_cut(int source, int sink, std::vector<char>& source_side);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tenet::topo::detail
