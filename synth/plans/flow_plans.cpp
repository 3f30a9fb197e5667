#include "synth/plans/flow_plans.hpp"

#include <algorithm>
#include <numeric>

#include "synth/plans/box_rails.hpp"
#include "synth/tuning.hpp"
#include "topo/bounds.hpp"

namespace tenet::synth::detail {

namespace {

std::vector<LinkId> pair_order(const topo::Topology& t) {
  std::vector<LinkId> order(static_cast<size_t>(t.num_links()));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](LinkId a, LinkId b) {
    const topo::Link &x = t.link(a), &y = t.link(b);
    return std::tie(x.src, x.dst, a) < std::tie(y.src, y.dst, b);
  });
  return order;
}

FlowPlans::Shape shape_of(const topo::Topology& t, const std::vector<LinkId>& order) {
  FlowPlans::Shape s;
  for (NodeId v = 0; v < t.num_nodes(); ++v) {
    const topo::Node& n = t.node(v);
    s.nodes.emplace_back(n.kind, n.router, n.can_reduce, n.can_multicast);
  }
  for (LinkId l : order) s.links.emplace_back(t.link(l).src, t.link(l).dst, t.link(l).bandwidth);
  return s;
}

// `p` (packed on a topology whose links in pair order were `from`) in the links of one of the same
// shape whose links in pair order are `to`.
TreePacking renamed(TreePacking p, const std::vector<LinkId>& from, const std::vector<LinkId>& to) {
  std::vector<LinkId> rename(from.size());
  for (size_t i = 0; i < from.size(); ++i) rename[static_cast<size_t>(from[i])] = to[i];
  for (PackedTree& tree : p.trees)
    for (auto& routes : tree.routes)
      for (auto& route : routes)
        for (LinkId& l : route) l = rename[static_cast<size_t>(l)];
  return p;
}

// The All-Gather trees: boxes on rails where they apply and come within kBoxesOnRailsNear of the
// cut bound at their fluid rates (their trees stay inside a box but for one hop on a rail, and
// pack in a box's time), else the whole fabric's packing. Up to kBoxesOnRailsMostNpus: their trees
// are the box's per NPU, each a route per NPU.
std::optional<TreePacking> pack_all_gather_trees(const topo::Topology& t) {
  if (t.num_npus() > kBoxesOnRailsMostNpus) return pack_pipelined_trees(t);
  if (std::optional<TreePacking> boxes = pack_boxes_on_rails(t)) {
    const double fluid = boxes->congestion / (boxes->k * static_cast<double>(boxes->unit));
    if (fluid <= (1 + kBoxesOnRailsNear) * topo::allgather_cut_bound(t).ratio()) return boxes;
  }
  return pack_pipelined_trees(t);
}

}  // namespace

const TreePacking* FlowPlans::of(const topo::Topology& t, NodeId root) {
  std::lock_guard<std::mutex> guard(mutex_);
  const std::pair key(t.fingerprint(), root);
  auto it = plans_.find(key);
  if (it == plans_.end()) {
    Packed made;
    made.order = pair_order(t);
    made.shape = shape_of(t, made.order);
    const auto same = std::find_if(plans_.begin(), plans_.end(), [&](const auto& entry) {
      return entry.first.second == root && entry.second.shape == made.shape;
    });
    if (same == plans_.end())
      made.packing = root < 0 ? pack_all_gather_trees(t) : pack_broadcast_trees(t, root);
    else if (same->second.packing)
      made.packing = renamed(*same->second.packing, same->second.order, made.order);
    it = plans_.emplace(key, std::move(made)).first;
  }
  return it->second.packing ? &*it->second.packing : nullptr;
}

}  // namespace tenet::synth::detail
