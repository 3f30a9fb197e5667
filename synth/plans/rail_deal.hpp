// Which rail each chunk of a server plan's All-Gather crosses on (synth/plans/server_plan.hpp).
//
// The server plan sends every chunk from its root's server to each other server on its root's own
// rail (position). Where the rails between two servers are unequal (a degraded or slower NIC, a
// server with fewer NICs behind its NPUs), the slowest rail carries as much as the others and the
// plan runs at its speed. Dealt, the chunks of a server's roots cross to another server at each
// position in proportion to that rail's narrowest link: the G k chunks of a server's G roots are
// shared out as seats by the largest remainder (ties to the lower position), each root's chunks
// keeping its own position while that position's share lasts (first chunks first), the others
// taking the next positions with room, in order. A chunk leaving at another NPU e of its root's
// server reaches e over the server's NVSwitch as e needs it anyway, so dealing adds no transfer:
// only the rail that carries it, and the NPU that forwards it inside the other server, change.
//
// Where every pair of servers has equal rails (the plan's routes' narrowest links), the deal is
// even: every chunk crosses at its root's position, the plan as it was.
#pragma once

#include <vector>

#include "synth/plans/server_plan.hpp"
#include "topo/topology.hpp"

namespace tenet::synth {

// Whether every pair of `plan`'s servers has equal rails: every deal over them is even.
bool even_rails(const topo::Topology& t, const ServerPlan& plan);

class RailDeal {
 public:
  // The deal of `chunks_per_npu` chunks per NPU (chunk j of root r) over `plan`'s rails on `t`.
  RailDeal(const topo::Topology& t, const ServerPlan& plan, int chunks_per_npu);

  // Whether every chunk crosses at its root's own position (ServerPlan::way is the way).
  bool even() const { return even_; }
  // The way that brings chunk `j` of `root` to `v` (an index into the plan's ways).
  int way(NodeId root, int j, NodeId v) const;
  // Each way's load in chunks, for the fluid rates (set_fluid_rates).
  std::vector<double> loads() const;

 private:
  // The position chunk j of root crosses at towards server s.
  int position(NodeId root, int j, int s) const {
    return position_[(static_cast<size_t>(root) * k_ + j) * servers_ + s];
  }
  const ServerPlan* plan_;
  int k_;
  size_t servers_;
  bool even_ = true;
  std::vector<int> position_;  // per root, chunk and other server
};

}  // namespace tenet::synth
