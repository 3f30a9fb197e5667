// drop_thin_lanes (declared beside the packing it reads, tree_packing.hpp): a packing's lanes under
// half of their tree's arc moved to the arc's other routes where every link has room.
#include <algorithm>
#include <map>
#include <vector>

#include "synth/plans/tree_packing.hpp"

namespace tenet::synth {

TreePacking drop_thin_lanes(const topo::Topology& t, TreePacking packing) {
  const double per_copy = static_cast<double>(packing.unit) / packing.congestion;
  std::vector<double> load(static_cast<size_t>(t.num_links()), 0.0);  // at the plan's rates
  struct Lane {
    double share;
    size_t tree;
    NodeId v;
    size_t route;
  };
  std::vector<Lane> thin;
  for (size_t i = 0; i < packing.trees.size(); ++i) {
    const PackedTree& tr = packing.trees[i];
    for (NodeId v = 0; v < static_cast<NodeId>(tr.routes.size()); ++v)
      for (size_t r = 0; r < tr.routes[v].size(); ++r) {
        for (LinkId l : tr.routes[v][r])
          load[static_cast<size_t>(l)] += per_copy * tr.copies * tr.lanes[v][r];
        if (tr.routes[v].size() > 1 && tr.lanes[v][r] > 0 && tr.lanes[v][r] < 0.5)
          thin.push_back({tr.lanes[v][r], i, v, r});
      }
  }
  std::stable_sort(thin.begin(), thin.end(),
                   [](const Lane& a, const Lane& b) { return a.share < b.share; });
  std::map<LinkId, double> change;  // per link, what moving a lane adds (or takes)
  for (const Lane& x : thin) {
    PackedTree& tr = packing.trees[x.tree];
    std::vector<double>& lanes = tr.lanes[x.v];
    const double share = lanes[x.route], rest = 1 - share;
    if (share <= 0 || share >= 0.5) continue;  // dropped, or grown with others dropped
    const double moved = per_copy * tr.copies * share;
    change.clear();
    for (LinkId l : tr.routes[x.v][x.route]) change[l] -= moved;
    for (size_t r = 0; r < lanes.size(); ++r)
      if (r != x.route && lanes[r] > 0)
        for (LinkId l : tr.routes[x.v][r]) change[l] += moved * lanes[r] / rest;
    const bool room = std::all_of(change.begin(), change.end(), [&](const auto& lc) {
      const auto [l, c] = lc;
      return c <= 0 || load[static_cast<size_t>(l)] + c <= static_cast<double>(t.link(l).bandwidth);
    });
    if (!room) continue;
    for (const auto& [l, c] : change) load[static_cast<size_t>(l)] += c;
    for (size_t r = 0; r < lanes.size(); ++r) lanes[r] = r == x.route ? 0 : lanes[r] / rest;
  }
  return packing;
}

}  // namespace tenet::synth
