// A small dynamic max-flow graph for planning (tree packing): arcs come and go, capacities change,
// and max-flow values are asked many times. Integer capacities; kInfinite stands for unbounded.
//
// Backed by LEMON's Preflow; LEMON 1.3 does not compile as C++20 (see topo/min_cut.hpp), so the
// implementation is its own C++17 translation unit behind this plain interface.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

namespace tenet::synth {

class FlowGraph {
 public:
  using Cap = int64_t;
  static constexpr Cap kInfinite = Cap{1} << 50;

  explicit FlowGraph(int nodes = 0);
  ~FlowGraph();
  FlowGraph(const FlowGraph& other);
  FlowGraph& operator=(const FlowGraph&) = delete;

  int add_node();
  int num_nodes() const;
  int64_t num_arcs() const;
  // The capacity of arc u -> v, 0 when there is none.
  Cap capacity(int u, int v) const;
  // Sets (creating or, for 0, removing) arc u -> v.
  void set_capacity(int u, int v, Cap c);
  // Nodes with an arc from u (to v), in increasing order.
  std::vector<int> successors(int u) const;
  std::vector<int> predecessors(int v) const;
  // Per node, how many arcs enter and leave it (one pass over the arcs).
  std::vector<std::pair<int, int>> degrees() const;
  // Removes every arc of node u (the node stays, isolated).
  void isolate(int u);
  // The maximum flow value from s to t. (Not const: the graph keeps LEMON's Preflow between runs
  // while its node set stands, its maps allocated once.)
  Cap max_flow(int s, int t);
  // min(max_flow(s, t), limit): the flow of a source limited to `limit` out of s, which spreads
  // less excess than s's whole out-capacity.
  Cap max_flow(int s, int t, Cap limit);
  // max_flow(s, t, limit), and where it is below `limit`, per node whether it is on the least
  // source side of a minimum cut (the nodes s reaches in the residual graph of a maximum flow):
  // a node off it is off the source side of some minimum cut, so an arc of any capacity from it
  // to t leaves the max-flow as it is; a node on it is on the source side of every minimum cut.
  Cap max_flow(int s, int t, Cap limit, std::vector<char>& least_source_side);
  // For each node v of `vs` in turn, until `each` returns false: each(v, min(limit, the max-flow
  // from s to t with arc v -> t of unbounded capacity, the others as they are)). One max-flow is
  // made, and per v the augmenting paths into v of its residual graph: where the first flow is
  // under `limit`, t lies off the part of that graph s reaches, so a flow into t with v -> t
  // unbounded is that flow plus a flow into v there (its paths never reach t), which is at most
  // `limit` less the first flow: a few paths instead of a max-flow each.
  void max_flows_freeing(int s, int t, Cap limit, const std::vector<int>& vs,
                         const std::function<bool(int, Cap)>& each);
  // For each node v of `vs` in turn, until `each` returns false: each(v, min(limit, the max-flow
  // from s to v)), the values max_flow(s, v, limit) gives. A node into which the nodes known to
  // receive `limit` from s (s itself, and each v answered `limit` so far) send at least `limit`
  // over their arcs, in all, receives it too (a cut before it cuts off one of them or all their
  // arcs into it): it is answered without a max-flow of its own.
  void max_flows_from(int s, Cap limit, const std::vector<int>& vs,
                      const std::function<bool(int, Cap)>& each);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tenet::synth
