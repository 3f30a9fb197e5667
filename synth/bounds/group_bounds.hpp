// Internal to synth/bounds: lower_bound's terms for All-to-All, Gather and Scatter
// (group_bounds.cpp), and the islands the All-Reduce arrivals bound shares with them.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "synth/bounds/bound_memo_state.hpp"
#include "synth/synthesizer.hpp"
#include "topo/topology.hpp"

namespace tenet::synth::detail {

// All-to-All's distance bounds, `k` bytes per member pair: {time, label} of the larger of the
// hop-count and link-time bounds.
std::pair<Time, const char*> all_to_all_distance_bound(const topo::Topology& t,
                                                       const std::vector<topo::NodeId>& m, Bytes k);

// The widths at which a topology's links fall into islands: every distinct link bandwidth, or 64
// of them spread over the range.
std::vector<Bandwidth> island_widths(const topo::Topology& t);

// All-to-All, Gather and Scatter over groups of nodes (islands of wide links, each switch with its
// NPUs), `k` bytes per member pair.
Time group_cut_bound(const topo::Topology& t, const Collective& c, Bytes k);

// The maximum-concurrent-flow bound (topo/flow_bound.hpp) of All-to-All, Gather or Scatter with
// `k` bytes per member pair: solved once per topology, group and root for a unit of bytes (the
// bound is linear in them), kept in `memo` (when given), then scaled.
struct FlowTerm {
  Time time = 0;
  std::string label;  // "max-concurrent-flow bound (LP)"
  std::string limit;  // the links it weighs (LowerBound::limit)
};
FlowTerm flow_bound(BoundMemo::State* memo, const topo::Topology& t, const Collective& c, Bytes k);

}  // namespace tenet::synth::detail
