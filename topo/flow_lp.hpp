// The multicommodity concurrent-flow LP, solved by LEMON's LP interface (GLPK). Internal to topo/.
// Compiled in its own C++17 translation unit (flow_lp.cpp), as min_cut.hpp explains.
#pragma once

#include <utility>
#include <vector>

namespace tenet::topo::detail {

struct FlowLp {
  int num_nodes = 0;
  std::vector<std::pair<int, int>> arcs;  // (source, target)
  std::vector<double> capacity;           // per arc, > 0
  // Commodity k leaves roots[k] and reaches each (node, amount) of ends[k] (amounts > 0).
  std::vector<int> roots;
  std::vector<std::vector<std::pair<int, double>>> ends;
};

// minimise T such that every commodity flows, with the summed flow on each arc at most
// T x capacity. Returns the capacity rows' duals (>= 0, one per arc), or nothing when the solver
// does not reach an optimum.
std::vector<double> concurrent_flow_duals(const FlowLp& lp);

}  // namespace tenet::topo::detail
