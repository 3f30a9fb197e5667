// Which rail each chunk of a server plan's All-Gather crosses on (synth/plans/server_plan.hpp).
//
// The server plan sends every chunk from its root's server to each other server on its root's own
// rail (position). Where the rails between two servers are unequal (a degraded or slower NIC, a
// server with fewer NICs behind its NPUs), the slowest rail carries as much as the others and the
// plan runs at its speed. Dealt, the chunks of a server's roots cross to another server at each
// position q in a share (1 - f) / G + f bw_q / sum(bw) between the even one and one in proportion
// to the rails' narrowest links bw: f is the step of kRailDealSteps that leaves the plan's
// busiest link least loaded (each way's chunks over its links' bandwidth), and the deal stays even
// where none does better than even shares (an NPU behind a fast NIC forwards what it brings in to
// its G - 1 mates, and its NVSwitch port may not carry more). The G k chunks of a server's G roots
// are shared out as seats by the largest remainder (ties to the lower position), each root's
// chunks keeping its own position while that position's share lasts (first chunks first), the
// others taking the next positions with room, in order. A chunk leaving at another NPU e of its
// root's server reaches e over the server's NVSwitch as e needs it anyway, so dealing adds no
// transfer: only the rail that carries it, and the NPU that forwards it inside the other server,
// change.
//
// Where every pair of servers has equal rails (the plan's routes' narrowest links), or no step
// towards them unloads the busiest link, the deal is even: every chunk crosses at its root's
// position, the plan as it was.
#pragma once

#include <vector>

#include "synth/plans/server_plan.hpp"
#include "topo/topology.hpp"

namespace tenet::synth {

// Whether every deal over `plan`'s rails is even (RailDeal::even; it does not depend on the count).
bool even_rails(const topo::Topology& t, const ServerPlan& plan);

class RailDeal {
 public:
  // The deal of `chunks_per_npu` chunks per NPU (chunk j of root r) over `plan`'s rails on `t`.
  RailDeal(const topo::Topology& t, const ServerPlan& plan, int chunks_per_npu);

  // Whether every chunk crosses at its root's own position (ServerPlan::way is the way).
  bool even() const { return even_; }
  // How far the shares go from even (0) towards the rails' proportions (1).
  double towards() const { return towards_; }
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
  double towards_ = 0;
  std::vector<int> position_;  // per root, chunk and other server
};

}  // namespace tenet::synth
