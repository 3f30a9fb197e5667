// The maximum-concurrent-flow lower bound for a traffic pattern (All-to-All, All-to-Allv, Gather,
// Scatter, any matrix of bytes from NPU to NPU).
//
// However an algorithm moves the bytes, each demand's bytes cross the links of paths from its
// source to its destination, and no link carries more than its bandwidth: the time T is at least
// the optimum of the multicommodity-flow LP
//   minimise T  subject to  a flow of every demand, with sum over demands of flow(e) <= T * B(e).
// Its dual gives the bound's certificate: for any link weights w >= 0,
//   T >= sum over demands of bytes * dist_w(src, dst) / sum over links of w(e) * B(e),
// with dist_w the w-shortest distance (through any node: NPUs relay, switches forward). Weights
// that are 1 give the hop-count bound, 1/B the link-time bound, the indicator of a cut's links
// the cut bound: every bound of that family is one choice of w, and the LP's duals are the best.
//
// How w is found (FlowBound::method says which):
//   "LP": the LP solved exactly (LEMON's LP interface over GLPK) when commodities x links is small
//         enough; its capacity rows' duals are w. Commodities are grouped by source, or by
//         destination when there are fewer destinations (a Gather is one commodity). The simplex
//         runs on the scaled problem for at most max_lp_iterations iterations (capacities that
//         span many orders of magnitude can keep it going without end); an LP stopped there, or
//         ended without an optimum, gives no w, and multiplicative weights give the bound
//         (FlowBound::lp says so).
//   "multiplicative weights": beyond that, rounds that route every demand on w-shortest paths and
//         raise each link's weight by how much it is overloaded (Garg and Koenemann's scheme),
//         from the better of w = 1 and w = 1/B; the best w seen is kept, and so is the best cut
//         among the links the first routing loads most (at least 50-100 % of the most loaded).
//         The averaged routing is a feasible flow, so the LP optimum lies between the bound and
//         its time (`upper`).
// Either way the returned time is the dual bound of the w found, evaluated here with exact
// shortest paths and rounded down: it is a lower bound however inexact the solver was.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "topo/topology.hpp"
#include "topo/units.hpp"

namespace tenet::topo {

struct Demand {
  NodeId src = 0, dst = 0;
  Bytes bytes = 0;
};

struct FlowBoundOptions {
  // Solve the LP when commodities x links is at most this (an 8x8 mesh All-to-All is 14,336; a
  // 64-NPU 3D torus, 24,576, is past it: GLPK's time grows quickly with the size).
  long long max_lp_size = 16'384;
  // Simplex iterations the LP may take before multiplicative weights take over: a count, so that
  // the same input always gives the same bound.
  int max_lp_iterations = 20'000;
  // Multiplicative-weights budget, in link relaxations (one round is commodities x links): about
  // a second's work.
  long long max_relaxations = 60'000'000;
  // Multiplicative weights stop once the bound is within this fraction of the flow's time.
  double target_gap = 0.01;
};

// How a FlowBound's weights were found.
enum class FlowMethod : uint8_t {
  None,                   // no demand: nothing to bound
  Lp,                     // the LP optimum
  MultiplicativeWeights,  // multiplicative-weight rounds (FlowBound::rounds)
};

// What became of the LP.
enum class LpOutcome : uint8_t {
  NotTried,  // no demand, or commodities x links past max_lp_size
  Optimal,   // solved: its duals are the weights (FlowMethod::Lp)
  CutShort,  // stopped at max_lp_iterations: multiplicative weights found the weights
  Failed,    // ended without an optimum: multiplicative weights found the weights
};

struct FlowBound {
  Time time = 0;    // the bandwidth term: a lower bound on the time to deliver every demand, ps
  Time upper = -1;  // the time of a fractional flow found (LP optimum <= upper), or -1
  FlowMethod method = FlowMethod::None;
  LpOutcome lp = LpOutcome::NotTried;
  int rounds = 0;               // with MultiplicativeWeights
  std::vector<double> weights;  // w per link, the certificate (empty for None)
};
// "LP", "multiplicative weights (R rounds)" (with "; the LP was cut short" or "; the LP failed"
// when it was tried first), or "none".
std::string describe(const FlowBound& b);

// What limits the bound, in the topology's names: the links its weights count, by their share of
// the capacity term (w(e) x B(e) over the sum), heaviest first: "the links the LP's duals weigh
// (each one full in every fastest flow): leaf0 -> spine0 100 GB/s (50 %), spine0 -> leaf1 100 GB/s
// (50 %)". With LP weights those links are the bottleneck: by complementary slackness every
// optimal flow fills each of them for the whole time. Up to kNamedFlowLinks links are named, the
// rest counted with their share; "" when the bound has no weights.
std::string describe_limit(const Topology& t, const FlowBound& b);
inline constexpr size_t kNamedFlowLinks = 4;

// Demands whose endpoints are equal or that are not reachable are ignored; bytes must be >= 0.
FlowBound concurrent_flow_bound(const Topology& t, std::span<const Demand> demands,
                                const FlowBoundOptions& options = {});

// The dual bound of a given w (seconds; 0 when no weighted link has bandwidth), computed as above.
double flow_dual_bound(const Topology& t, std::span<const Demand> demands,
                       std::span<const double> weights);

}  // namespace tenet::topo
