#include "synth/plans/box_rails.hpp"

#include <boost/pending/disjoint_sets.hpp>

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "synth/tuning.hpp"
#include "topo/routing.hpp"

namespace tenet::synth {

namespace {

// The boxes of `t`: NPUs joined by NPU-to-NPU links, each in NPU id order, ordered by their
// first NPU.
std::vector<std::vector<NodeId>> boxes_of(const topo::Topology& t) {
  boost::disjoint_sets_with_storage<> sets(t.num_npus());
  for (const topo::Link& l : t.links())
    if (t.is_npu(l.src) && t.is_npu(l.dst)) sets.union_set(l.src, l.dst);
  std::vector<int> box_of(t.num_npus(), -1);
  std::vector<std::vector<NodeId>> boxes;
  for (NodeId v = 0; v < t.num_npus(); ++v) {
    const auto root = static_cast<NodeId>(sets.find_set(v));
    if (box_of[root] < 0) {
      box_of[root] = static_cast<int>(boxes.size());
      boxes.emplace_back();
    }
    boxes[box_of[root]].push_back(v);
  }
  return boxes;
}

// A link inside a box, by the positions it joins and what it is; ordered so that the i-th of one
// box stands for the i-th of another alike.
struct BoxLink {
  int src, dst;
  Bandwidth bandwidth;
  Time latency;
  LinkId id;
  auto key() const { return std::tie(src, dst, bandwidth, latency); }
  bool operator<(const BoxLink& o) const {
    return std::tie(src, dst, bandwidth, latency, id) <
           std::tie(o.src, o.dst, o.bandwidth, o.latency, o.id);
  }
};

// Per root box, the box each other box gets its rails' data from. Boxes whose NPUs link to the
// same switches form a pod (a leaf's servers); the root's pod gets it from the root, and each other
// pod once, in the box at the root's place in its own pod (round), which hands it on to the rest
// of that pod: a chunk crosses the links between pods once per pod, not once per box.
std::vector<std::vector<int>> rail_parents(const topo::Topology& t,
                                           const std::vector<std::vector<NodeId>>& boxes) {
  std::map<std::vector<NodeId>, int> pod_of_switches;
  std::vector<std::vector<int>> pods;
  std::vector<std::pair<int, int>> place(boxes.size());  // per box: its pod and place there
  for (size_t b = 0; b < boxes.size(); ++b) {
    std::vector<NodeId> switches;
    for (NodeId v : boxes[b])
      for (LinkId l : t.out_links(v))
        if (t.is_switch(t.link(l).dst)) switches.push_back(t.link(l).dst);
    std::sort(switches.begin(), switches.end());
    switches.erase(std::unique(switches.begin(), switches.end()), switches.end());
    const auto [it, added] = pod_of_switches.emplace(switches, static_cast<int>(pods.size()));
    if (added) pods.emplace_back();
    place[b] = {it->second, static_cast<int>(pods[it->second].size())};
    pods[it->second].push_back(static_cast<int>(b));
  }
  std::vector<std::vector<int>> parent(boxes.size(), std::vector<int>(boxes.size(), -1));
  for (size_t root = 0; root < boxes.size(); ++root) {
    const auto [home, at] = place[root];
    for (size_t p = 0; p < pods.size(); ++p) {
      const int first = static_cast<int>(p) == home
                            ? static_cast<int>(root)
                            : pods[p][static_cast<size_t>(at) % pods[p].size()];
      if (first != static_cast<int>(root)) parent[root][first] = static_cast<int>(root);
      for (int b : pods[p])
        if (b != first) parent[root][b] = first;
    }
  }
  return parent;
}

}  // namespace

std::optional<TreePacking> pack_boxes_on_rails(const topo::Topology& t) {
  const std::vector<std::vector<NodeId>> boxes = boxes_of(t);
  if (boxes.size() < 2 || boxes[0].size() < 2) return std::nullopt;
  const auto per = static_cast<int>(boxes[0].size());
  std::vector<int> box_of(t.num_npus()), position(t.num_npus());
  for (size_t b = 0; b < boxes.size(); ++b) {
    if (static_cast<int>(boxes[b].size()) != per) return std::nullopt;
    for (int i = 0; i < per; ++i) {
      box_of[boxes[b][i]] = static_cast<int>(b);
      position[boxes[b][i]] = i;
    }
  }
  // Each box's links inside, alike box by box.
  std::vector<std::vector<BoxLink>> inside(boxes.size());
  for (LinkId l = 0; l < t.num_links(); ++l) {
    const topo::Link& x = t.link(l);
    if (t.is_npu(x.src) && t.is_npu(x.dst))
      inside[box_of[x.src]].push_back(
          {position[x.src], position[x.dst], x.bandwidth, x.latency, l});
  }
  for (auto& links : inside) std::sort(links.begin(), links.end());
  for (size_t b = 1; b < boxes.size(); ++b) {
    if (inside[b].size() != inside[0].size()) return std::nullopt;
    for (size_t i = 0; i < inside[b].size(); ++i)
      if (inside[b][i].key() != inside[0][i].key()) return std::nullopt;
    for (int i = 0; i < per; ++i)
      if (t.node(boxes[b][i]).router != t.node(boxes[0][i]).router) return std::nullopt;
  }
  // The rails: from every NPU to its position in every other box through switches alone, every
  // least-cost route (as ECMP spreads a flow) up to kMostRailRoutes.
  const topo::Router router(t);
  std::vector<std::vector<std::vector<topo::Route>>> rail(t.num_npus());
  for (NodeId u = 0; u < t.num_npus(); ++u) {
    rail[u] = router.switch_routes_from(u, kMostRailRoutes);
    for (size_t b = 0; b < boxes.size(); ++b)
      if (static_cast<int>(b) != box_of[u] && rail[u][boxes[b][position[u]]].empty())
        return std::nullopt;
  }
  const std::vector<std::vector<int>> from = rail_parents(t, boxes);
  // The box alone, its links in `inside` order.
  topo::TopologyBuilder builder("box");
  for (int i = 0; i < per; ++i) builder.add_npu("", t.node(boxes[0][i]).router);
  for (const BoxLink& l : inside[0]) builder.add_link(l.src, l.dst, l.bandwidth, l.latency);
  const std::optional<TreePacking> box = pack_pipelined_trees(builder.build());
  if (!box) return std::nullopt;

  TreePacking out;
  out.k = box->k;
  out.unit = box->unit;
  out.max_flows = box->max_flows;
  const NodeId n = t.num_npus();
  for (NodeId root = 0; root < n; ++root)
    for (const PackedTree& inner : box->trees) {
      if (inner.root != position[root]) continue;
      PackedTree tree;
      tree.root = root;
      tree.copies = inner.copies;
      tree.parent.assign(n, -1);
      tree.routes.resize(n);
      tree.shares.resize(n);
      tree.lanes.resize(n);
      for (NodeId v = 0; v < n; ++v) {
        if (v == root) continue;
        const int b = box_of[v], i = position[v];
        if (b != box_of[root] && i == position[root]) {  // over the rail
          tree.parent[v] = boxes[from[box_of[root]][b]][i];
          for (const topo::Route& route : rail[tree.parent[v]][v])
            tree.routes[v].push_back(route.links);
          const double each = 1.0 / static_cast<double>(tree.routes[v].size());
          tree.shares[v].assign(tree.routes[v].size(), each);
          tree.lanes[v].assign(tree.routes[v].size(), each);
          continue;
        }
        tree.parent[v] = boxes[b][inner.parent[i]];
        for (const auto& route : inner.routes[i]) {
          std::vector<LinkId>& mine = tree.routes[v].emplace_back();
          for (LinkId l : route) mine.push_back(inside[b][l].id);
        }
        tree.shares[v] = inner.shares[i];
        tree.lanes[v] = inner.lanes[i];
      }
      out.trees.push_back(std::move(tree));
    }
  // The congestion: each tree streams at copies x unit / U over its arcs, split over an arc's
  // routes by its lanes; U is the least that keeps every link within its bandwidth.
  std::vector<double> load(static_cast<size_t>(t.num_links()), 0.0);  // copies
  for (const PackedTree& tree : out.trees)
    for (NodeId v = 0; v < n; ++v)
      for (size_t r = 0; r < tree.routes[v].size(); ++r)
        for (LinkId l : tree.routes[v][r]) load[l] += tree.copies * tree.lanes[v][r];
  for (LinkId l = 0; l < t.num_links(); ++l)
    out.congestion = std::max(out.congestion, load[l] * static_cast<double>(out.unit) /
                                                  static_cast<double>(t.link(l).bandwidth));
  return out;
}

}  // namespace tenet::synth
