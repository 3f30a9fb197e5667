// Compiled as C++17: see flow_graph.hpp.
#include "synth/plans/flow_graph.hpp"

#include <lemon/list_graph.h>
#include <lemon/preflow.h>
#include <algorithm>
#include <map>

namespace tenet::synth {

struct FlowGraph::Impl {
  lemon::ListDigraph g;
  lemon::ListDigraph::ArcMap<Cap> cap{g};
  std::vector<lemon::ListDigraph::Node> nodes;
  std::map<std::pair<int, int>, lemon::ListDigraph::Arc> arcs;
};

FlowGraph::FlowGraph(int nodes) : impl_(std::make_unique<Impl>()) {
  for (int i = 0; i < nodes; ++i) add_node();
}

FlowGraph::~FlowGraph() = default;

FlowGraph::FlowGraph(const FlowGraph& other) : FlowGraph(other.num_nodes()) {
  for (const auto& [uv, arc] : other.impl_->arcs)
    set_capacity(uv.first, uv.second, other.impl_->cap[arc]);
}

int FlowGraph::add_node() {
  impl_->nodes.push_back(impl_->g.addNode());
  return static_cast<int>(impl_->nodes.size()) - 1;
}

int64_t FlowGraph::num_arcs() const { return static_cast<int64_t>(impl_->arcs.size()); }

int FlowGraph::num_nodes() const { return static_cast<int>(impl_->nodes.size()); }

FlowGraph::Cap FlowGraph::capacity(int u, int v) const {
  auto it = impl_->arcs.find({u, v});
  return it == impl_->arcs.end() ? 0 : impl_->cap[it->second];
}

void FlowGraph::set_capacity(int u, int v, Cap c) {
  auto it = impl_->arcs.find({u, v});
  if (c <= 0) {
    if (it != impl_->arcs.end()) {
      impl_->g.erase(it->second);
      impl_->arcs.erase(it);
    }
    return;
  }
  if (it == impl_->arcs.end())
    it =
        impl_->arcs.emplace(std::make_pair(u, v), impl_->g.addArc(impl_->nodes[u], impl_->nodes[v]))
            .first;
  impl_->cap[it->second] = std::min(c, kInfinite);
}

std::vector<int> FlowGraph::successors(int u) const {
  std::vector<int> out;
  for (auto it = impl_->arcs.lower_bound({u, -1}); it != impl_->arcs.end() && it->first.first == u;
       ++it)
    out.push_back(it->first.second);
  return out;
}

std::vector<int> FlowGraph::predecessors(int v) const {
  std::vector<int> out;
  for (const auto& [uv, arc] : impl_->arcs)
    if (uv.second == v) out.push_back(uv.first);
  return out;
}

std::vector<std::pair<int, int>> FlowGraph::degrees() const {
  std::vector<std::pair<int, int>> d(impl_->nodes.size(), {0, 0});
  for (const auto& [uv, arc] : impl_->arcs) {
    ++d[static_cast<size_t>(uv.second)].first;
    ++d[static_cast<size_t>(uv.first)].second;
  }
  return d;
}

void FlowGraph::isolate(int u) {
  for (auto it = impl_->arcs.begin(); it != impl_->arcs.end();) {
    if (it->first.first == u || it->first.second == u) {
      impl_->g.erase(it->second);
      it = impl_->arcs.erase(it);
    } else {
      ++it;
    }
  }
}

FlowGraph::Cap FlowGraph::max_flow(int s, int t) const {
  lemon::Preflow<lemon::ListDigraph, lemon::ListDigraph::ArcMap<Cap>> pf(
      impl_->g, impl_->cap, impl_->nodes[s], impl_->nodes[t]);
  pf.runMinCut();
  return pf.flowValue();
}

FlowGraph::Cap FlowGraph::max_flow(int s, int t, Cap limit) {
  if (limit <= 0) return 0;
  const lemon::ListDigraph::Node source = impl_->g.addNode();
  const lemon::ListDigraph::Arc in = impl_->g.addArc(source, impl_->nodes[s]);
  impl_->cap[in] = limit;
  Cap value = 0;
  {
    lemon::Preflow<lemon::ListDigraph, lemon::ListDigraph::ArcMap<Cap>> pf(impl_->g, impl_->cap,
                                                                           source, impl_->nodes[t]);
    pf.runMinCut();
    value = pf.flowValue();
  }
  impl_->g.erase(source);  // and its arc
  return value;
}

}  // namespace tenet::synth
