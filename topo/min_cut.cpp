// Compiled as C++17: see min_cut.hpp.
#include "topo/min_cut.hpp"

#include <lemon/hao_orlin.h>
#include <lemon/preflow.h>
#include <lemon/static_graph.h>
#include <algorithm>
#include <numeric>

namespace tenet::topo::detail {

struct MinCutGraph::Impl {
  lemon::StaticDigraph g;
  std::vector<int> slot;  // arc index given by the caller -> arc index in g
  std::unique_ptr<lemon::StaticDigraph::ArcMap<double>> cap;
};

MinCutGraph::MinCutGraph(int num_nodes, const std::vector<std::pair<int, int>>& arcs)
    : impl_(std::make_unique<Impl>()) {
  // StaticDigraph wants arcs sorted by source.
  std::vector<int> order(arcs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return arcs[a].first < arcs[b].first; });
  std::vector<std::pair<int, int>> sorted;
  sorted.reserve(arcs.size());
  impl_->slot.resize(arcs.size());
  for (size_t k = 0; k < order.size(); ++k) {
    sorted.push_back(arcs[order[k]]);
    impl_->slot[order[k]] = static_cast<int>(k);
  }
  impl_->g.build(num_nodes, sorted.begin(), sorted.end());
  impl_->cap = std::make_unique<lemon::StaticDigraph::ArcMap<double>>(impl_->g, 0.0);
}

MinCutGraph::~MinCutGraph() = default;

void MinCutGraph::set_capacity(int arc, double capacity) {
  impl_->cap->set(impl_->g.arc(impl_->slot[arc]), capacity);
}

double MinCutGraph::min_cut_from(int source, std::vector<char>& source_side) {
  const auto& g = impl_->g;
  lemon::HaoOrlin<lemon::StaticDigraph, lemon::StaticDigraph::ArcMap<double>> ho(g, *impl_->cap);
  ho.init(g.node(source));
  ho.calculateOut();
  lemon::StaticDigraph::NodeMap<bool> side(g);
  double value = ho.minCutMap(side);
  source_side.assign(g.nodeNum(), 0);
  for (int v = 0; v < g.nodeNum(); ++v) source_side[v] = side[g.node(v)];
  return value;
}

double MinCutGraph::min_st_cut(int source, int sink, std::vector<char>& source_side) {
  const auto& g = impl_->g;
  lemon::Preflow<lemon::StaticDigraph, lemon::StaticDigraph::ArcMap<double>> pf(
      g, *impl_->cap, g.node(source), g.node(sink));
  pf.runMinCut();
  source_side.assign(g.nodeNum(), 0);
  for (int v = 0; v < g.nodeNum(); ++v) source_side[v] = pf.minCut(g.node(v));
  return pf.flowValue();
}

}  // namespace tenet::topo::detail
