// Compiled as C++17: see flow_lp.hpp.
#include "topo/flow_lp.hpp"

#include <lemon/lp.h>
#include <cmath>

namespace tenet::topo::detail {

std::vector<double> concurrent_flow_duals(const FlowLp& in) {
  const int n = in.num_nodes;
  const int m = static_cast<int>(in.arcs.size());
  std::vector<std::vector<int>> out_arcs(n), in_arcs(n);
  for (int a = 0; a < m; ++a) {
    out_arcs[in.arcs[a].first].push_back(a);
    in_arcs[in.arcs[a].second].push_back(a);
  }
  lemon::Lp lp;
  lp.messageLevel(lemon::LpBase::MESSAGE_NOTHING);
  const lemon::Lp::Col time = lp.addCol();
  lp.colLowerBound(time, 0);
  std::vector<lemon::Lp::Col> flow(in.roots.size() * m);
  for (auto& f : flow) {
    f = lp.addCol();
    lp.colLowerBound(f, 0);
  }
  std::vector<double> supply(n);
  for (size_t k = 0; k < in.roots.size(); ++k) {
    std::fill(supply.begin(), supply.end(), 0.0);
    for (const auto& [end, amount] : in.ends[k]) {
      supply[end] -= amount;
      supply[in.roots[k]] += amount;
    }
    for (int v = 0; v < n; ++v) {
      lemon::Lp::Expr e;
      for (int a : out_arcs[v]) e += flow[k * m + a];
      for (int a : in_arcs[v]) e -= flow[k * m + a];
      lp.addRow(e == supply[v]);
    }
  }
  std::vector<lemon::Lp::Row> capacity(m);
  for (int a = 0; a < m; ++a) {
    lemon::Lp::Expr e;
    for (size_t k = 0; k < in.roots.size(); ++k) e += flow[k * m + a];
    e -= in.capacity[a] * time;
    capacity[a] = lp.addRow(e <= 0);
  }
  lp.obj(time);
  lp.min();
  if (lp.solve() != lemon::LpBase::SOLVED || lp.primalType() != lemon::Lp::OPTIMAL) return {};
  std::vector<double> w(m);
  for (int a = 0; a < m; ++a) w[a] = std::abs(lp.dual(capacity[a]));
  return w;
}

}  // namespace tenet::topo::detail
