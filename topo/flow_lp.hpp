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
  // Simplex iterations allowed: a count, not a clock, so that the same input always ends the same
  // way (capacities spanning many orders of magnitude can keep GLPK's simplex going without end).
  // 0: no limit.
  int iteration_limit = 0;
};

enum class FlowLpStatus {
  Optimal,         // solved: `duals` holds the capacity rows' duals
  IterationLimit,  // stopped at FlowLp::iteration_limit
  NoOptimum,       // the solver failed, or ended without an optimum
};

struct FlowLpResult {
  FlowLpStatus status = FlowLpStatus::NoOptimum;
  std::vector<double> duals;  // Optimal: >= 0, one per arc; empty otherwise
  int iterations = 0;         // simplex iterations run
};

// minimise T such that every commodity flows, with the summed flow on each arc at most
// T x capacity; the problem scaled by GLPK (glp_scale_prob) before the simplex runs.
FlowLpResult concurrent_flow_duals(const FlowLp& lp);

}  // namespace tenet::topo::detail
