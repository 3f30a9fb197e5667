#include "synth/groups/group_map.hpp"

#include <fmt/format.h>

#include <vector>

#include "topo/error.hpp"

namespace tenet::synth {

namespace {

using topo::LinkId;
using topo::NodeId;

// A one-to-one renaming of nodes and links, built up as the algorithm's routes are walked.
class Renaming {
 public:
  explicit Renaming(const topo::Topology& t)
      : t_(t),
        image_(t.num_nodes(), -1),
        preimage_(t.num_nodes(), -1),
        link_image_(t.num_links(), -1),
        link_preimage_(t.num_links(), -1) {}

  // Renames x to y, or says it cannot (x already has another name, y is taken, they differ).
  bool bind(NodeId x, NodeId y) {
    if (image_[x] >= 0) return image_[x] == y;
    if (preimage_[y] >= 0 || !same_node(x, y)) return false;
    image_[x] = y;
    preimage_[y] = x;
    return true;
  }

  // Renames link l (its source renamed already) and, if need be, its destination.
  bool map_link(LinkId l) {
    if (link_image_[l] >= 0) return true;
    const topo::Link& k = t_.link(l);
    const NodeId from = image_[k.src];
    if (from < 0) return false;
    LinkId chosen = -1;
    if (const NodeId to = image_[k.dst]; to >= 0) {
      for (LinkId m : t_.out_links(from))
        if (link_preimage_[m] < 0 && t_.link(m).dst == to && same_link(l, m)) {
          chosen = m;
          break;
        }
    } else {
      int preference = 3;  // 0: the node itself, 1: the node it swaps with, 2: any other
      for (LinkId m : t_.out_links(from)) {
        const NodeId w = t_.link(m).dst;
        if (link_preimage_[m] >= 0 || preimage_[w] >= 0 || !same_link(l, m) || !same_node(k.dst, w))
          continue;
        const int p = w == k.dst ? 0 : w == preimage_[k.dst] ? 1 : 2;
        if (p < preference) preference = p, chosen = m;
      }
      if (chosen >= 0 && !bind(k.dst, t_.link(chosen).dst)) return false;
    }
    if (chosen < 0) return false;
    link_image_[l] = chosen;
    link_preimage_[chosen] = l;
    return true;
  }

  NodeId image(NodeId x) const { return image_[x]; }
  const std::vector<NodeId>& nodes() const { return image_; }
  const std::vector<LinkId>& links() const { return link_image_; }

 private:
  bool same_node(NodeId x, NodeId y) const {
    const topo::Node &p = t_.node(x), &q = t_.node(y);
    return p.kind == q.kind && p.router == q.router && p.can_reduce == q.can_reduce &&
           p.can_multicast == q.can_multicast;
  }
  bool same_link(LinkId x, LinkId y) const {
    const topo::Link &p = t_.link(x), &q = t_.link(y);
    return p.bandwidth == q.bandwidth && p.latency == q.latency && p.buffer == q.buffer &&
           p.step == q.step;
  }

  const topo::Topology& t_;
  std::vector<NodeId> image_, preimage_;
  std::vector<LinkId> link_image_, link_preimage_;
};

}  // namespace

std::optional<Algorithm> map_to_group(const topo::Topology& t, const Algorithm& a,
                                      std::span<const topo::NodeId> ranks) {
  const std::vector<NodeId>& from = a.collective.ranks;
  if (from.size() != ranks.size()) return std::nullopt;
  for (NodeId r : ranks)
    if (r < 0 || r >= t.num_npus()) return std::nullopt;
  Renaming renaming(t);
  for (size_t i = 0; i < from.size(); ++i)
    if (!renaming.bind(from[i], ranks[i])) return std::nullopt;
  for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id) {
    const Transfer& x = a[id];
    if (renaming.image(x.src) < 0) return std::nullopt;  // sends what it never received
    for (LinkId l : a.route(id))
      if (!renaming.map_link(l)) return std::nullopt;
    if (renaming.image(x.dst) < 0) return std::nullopt;  // an empty route to another node
  }
  Algorithm b = a;
  b.collective.ranks.assign(ranks.begin(), ranks.end());
  b.rename(renaming.nodes(), renaming.links());
  return b;
}

Algorithm GroupPart::lift(Algorithm a, const topo::Topology& whole,
                          const std::vector<topo::NodeId>& ranks) const {
  a.rename(nodes, links);
  a.collective.ranks = ranks;
  a.topology_fingerprint = whole.fingerprint();
  a.topology_name = whole.name();
  a.provenance.in_group_part = true;
  a.method = fmt::format(
      "{}; in the group's part of the topology ({} of {} nodes: the members and the switches "
      "they reach)",
      a.method.empty() ? a.name : a.method, topology.num_nodes(), whole.num_nodes());
  return a;
}

std::optional<GroupPart> group_part(const topo::Topology& t, const Collective& c,
                                    Bandwidth min_bandwidth) {
  const int m = c.num_ranks();
  if (m >= t.num_npus() || m < 2) return std::nullopt;
  // The members, then the switches they reach through switches, breadth first.
  std::vector<NodeId> local(static_cast<size_t>(t.num_nodes()), -1);
  std::vector<NodeId> nodes(c.ranks.begin(), c.ranks.end());
  for (int i = 0; i < m; ++i) local[static_cast<size_t>(c.ranks[i])] = i;
  const size_t most = static_cast<size_t>(t.num_nodes() / kGroupPartShare);
  if (nodes.size() > most) return std::nullopt;
  std::vector<NodeId> switches;
  for (size_t i = 0; i < nodes.size() + switches.size(); ++i) {
    const NodeId v = i < nodes.size() ? nodes[i] : switches[i - nodes.size()];
    for (LinkId l : t.out_links(v)) {
      if (t.link(l).bandwidth < min_bandwidth) continue;
      const NodeId w = t.link(l).dst;
      if (t.is_npu(w) && local[static_cast<size_t>(w)] < 0) {
        if (i < nodes.size())
          return std::nullopt;  // a member linked to another NPU: that NPU is fabric
        continue;
      }
      if (!t.is_switch(w) || local[static_cast<size_t>(w)] >= 0) continue;
      local[static_cast<size_t>(w)] = 0;  // seen; numbered below
      switches.push_back(w);
      if (nodes.size() + switches.size() > most) return std::nullopt;
    }
  }
  GroupPart part;
  topo::TopologyBuilder b(t.name() + " (group part)");
  for (int i = 0; i < m; ++i) {
    const topo::Node& n = t.node(c.ranks[i]);
    b.add_npu(n.name, n.router);
    b.node_props(i).can_reduce = n.can_reduce;
    b.node_props(i).can_multicast = n.can_multicast;
  }
  for (NodeId w : switches) {
    const topo::Node& n = t.node(w);
    const NodeId handle = b.add_switch(n.name);
    b.node_props(handle).can_reduce = n.can_reduce;
    b.node_props(handle).can_multicast = n.can_multicast;
    local[static_cast<size_t>(w)] = handle;
  }
  std::vector<LinkId> links;
  for (size_t i = 0; i < nodes.size() + switches.size(); ++i) {
    const NodeId v = i < nodes.size() ? nodes[i] : switches[i - nodes.size()];
    for (LinkId l : t.out_links(v)) {
      const topo::Link& k = t.link(l);
      if (k.bandwidth < min_bandwidth) continue;
      // (Every switch a part node links to at min_bandwidth or more is in the part.)
      const bool inside =
          t.is_switch(k.dst) || (k.dst < t.num_npus() && local[static_cast<size_t>(k.dst)] >= 0);
      if (!inside) continue;
      const LinkId added =
          b.add_link(local[static_cast<size_t>(v)], local[static_cast<size_t>(k.dst)], k.bandwidth,
                     k.latency, k.name);
      if (k.buffer > 0) b.set_link_buffer(added, k.buffer);
      b.set_link_step(added, k.step);
      links.push_back(l);
    }
  }
  b.set_calibration(t.calibration());
  try {
    part.topology = b.build();  // refuses a part whose members cannot reach each other
  } catch (const Unreachable&) {
    return std::nullopt;
  }
  part.topology.set_charges_steps(t.charges_steps());
  part.nodes.resize(static_cast<size_t>(part.topology.num_nodes()));
  for (int i = 0; i < m; ++i) part.nodes[static_cast<size_t>(i)] = c.ranks[i];
  for (size_t j = 0; j < switches.size(); ++j) part.nodes[static_cast<size_t>(m) + j] = switches[j];
  part.links = std::move(links);
  part.collective = c;
  for (int i = 0; i < m; ++i) part.collective.ranks[i] = i;
  return part;
}

}  // namespace tenet::synth
