// Compiled as C++17: see flow_lp.hpp.
#include "topo/flow_lp.hpp"

#include <glpk.h>
#include <lemon/lp.h>

#include <algorithm>
#include <cmath>

namespace tenet::topo::detail {

FlowLpResult concurrent_flow_duals(const FlowLp& in) {
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
  // GLPK's simplex run directly on LEMON's problem, as LEMON's own solve runs it, with scaling and
  // an iteration limit, which LEMON's interface does not set.
  glp_prob* prob = lp.lpx();
  const int was = glp_term_out(GLP_OFF);  // scaling reports to the terminal
  glp_scale_prob(prob, GLP_SF_AUTO);
  glp_term_out(was);
  glp_smcp parm;
  glp_init_smcp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  parm.it_lim = in.iteration_limit > 0 ? in.iteration_limit : parm.it_lim;
  FlowLpResult out;
  int ret = glp_simplex(prob, &parm);
  if (ret == GLP_EBADB || ret == GLP_ESING || ret == GLP_ECOND) {
    // As LEMON does: a fresh advanced basis, and once more.
    glp_term_out(GLP_OFF);
    glp_adv_basis(prob, 0);
    glp_term_out(was);
    parm.it_lim = in.iteration_limit > 0 ? std::max(1, in.iteration_limit - glp_get_it_cnt(prob))
                                         : parm.it_lim;
    ret = glp_simplex(prob, &parm);
  }
  out.iterations = glp_get_it_cnt(prob);
  if (ret == GLP_EITLIM) {
    out.status = FlowLpStatus::IterationLimit;
    return out;
  }
  if (ret != 0 || glp_get_status(prob) != GLP_OPT) return out;
  out.status = FlowLpStatus::Optimal;
  out.duals.resize(m);
  for (int a = 0; a < m; ++a)
    out.duals[a] = std::abs(glp_get_row_dual(prob, lp.lpxRow(capacity[a])));
  return out;
}

}  // namespace tenet::topo::detail
