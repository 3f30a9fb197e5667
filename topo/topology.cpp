#include "topo/topology.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "topo/analysis.hpp"
#include "topo/limits.hpp"

namespace tenet::topo {

std::string Topology::describe_node(NodeId n) const {
  if (n < 0 || n >= num_nodes()) return fmt::format("node #{}", n);
  return fmt::format("{} '{}'", is_npu(n) ? "NPU" : "switch", nodes_[n].name);
}

std::string Topology::describe_link(LinkId l) const {
  const Link& k = links_[l];
  std::string label = k.name.empty() ? "" : fmt::format(" '{}'", k.name);
  return fmt::format("link {}{} ({} -> {})", l, label, nodes_[k.src].name, nodes_[k.dst].name);
}

NodeId Topology::find_node(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? -1 : it->second;
}

namespace {

// Names end up in JSON, Markdown and file names: they must be text.
void check_text(const std::string& name, std::string_view what, const Location& where) {
  size_t bad = 0;
  if (!valid_utf8(name, &bad))
    throw Error(fmt::format("{} is not valid UTF-8 (byte 0x{:02X} at offset {})", what,
                            static_cast<unsigned char>(name[bad]), bad),
                where);
}

}  // namespace

NodeId TopologyBuilder::add_npu(std::string name, bool router, Location where) {
  check_limit(num_npus() + num_switches() + 1, kMaxNodes, "nodes", where);
  check_text(name, "a node name", where);
  NodeId id = static_cast<NodeId>(npus_.size());
  if (name.empty()) name = fmt::format("npu{}", id);
  if (!by_name_.emplace(name, id).second)
    throw Error(fmt::format("duplicate node name '{}'", name), where);
  npus_.push_back({Node{NodeKind::Npu, std::move(name), router, false, false}, std::move(where)});
  return id;
}

NodeId TopologyBuilder::add_switch(std::string name, Location where) {
  check_limit(num_npus() + num_switches() + 1, kMaxNodes, "nodes", where);
  check_text(name, "a node name", where);
  NodeId handle = ~static_cast<NodeId>(switches_.size());
  if (name.empty()) name = fmt::format("sw{}", switches_.size());
  if (!by_name_.emplace(name, handle).second)
    throw Error(fmt::format("duplicate node name '{}'", name), where);
  switches_.push_back(
      {Node{NodeKind::Switch, std::move(name), false, false, false}, std::move(where)});
  return handle;
}

void TopologyBuilder::set_link_buffer(LinkId l, Bytes buffer) { links_.at(l).link.buffer = buffer; }

void TopologyBuilder::set_link_step(LinkId l, Time step) { links_.at(l).link.step = step; }

Node& TopologyBuilder::node_props(NodeId handle) {
  return handle >= 0 ? npus_.at(handle).node : switches_.at(~handle).node;
}

LinkId TopologyBuilder::add_link(NodeId src, NodeId dst, Bandwidth bw, Time latency,
                                 std::string name, Location where) {
  check_limit(static_cast<int64_t>(links_.size()) + 1, kMaxLinks, "links", where);
  check_text(name, "a link name", where);
  links_.push_back({Link{src, dst, bw, latency, std::move(name)}, std::move(where)});
  return static_cast<LinkId>(links_.size() - 1);
}

LinkId TopologyBuilder::add_bidirectional(NodeId a, NodeId b, Bandwidth bw, Time latency,
                                          std::string name, Location where) {
  LinkId first = add_link(a, b, bw, latency, name, where);
  add_link(b, a, bw, latency, std::move(name), std::move(where));
  return first;
}

NodeId TopologyBuilder::resolve(NodeId handle) const {
  return handle >= 0 ? handle : num_npus() + ~handle;
}

NodeId TopologyBuilder::find(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? kNotFound : it->second;
}

namespace {

uint64_t fnv1a(uint64_t h, uint64_t v) {
  for (int i = 0; i < 8; ++i) {
    h ^= (v >> (8 * i)) & 0xff;
    h *= 0x100000001b3ULL;
  }
  return h;
}

void build_csr(int num_nodes, const std::vector<Link>& links, bool by_src,
               std::vector<int32_t>& offsets, std::vector<LinkId>& ids) {
  offsets.assign(num_nodes + 1, 0);
  for (const Link& l : links) ++offsets[(by_src ? l.src : l.dst) + 1];
  for (int i = 0; i < num_nodes; ++i) offsets[i + 1] += offsets[i];
  ids.resize(links.size());
  std::vector<int32_t> next(offsets.begin(), offsets.end() - 1);
  for (LinkId id = 0; id < static_cast<LinkId>(links.size()); ++id)
    ids[next[by_src ? links[id].src : links[id].dst]++] = id;  // ascending ids per node
}

// What Topology::fingerprint covers.
uint64_t fingerprint_of(const Topology& t) {
  uint64_t h = 0xcbf29ce484222325ULL;
  h = fnv1a(h, static_cast<uint64_t>(t.num_npus()));
  for (const Node& node : t.nodes())
    h = fnv1a(h, static_cast<uint64_t>(node.kind) | (uint64_t{node.router} << 8) |
                     (uint64_t{node.can_reduce} << 9) | (uint64_t{node.can_multicast} << 10));
  for (const Link& l : t.links()) {
    h = fnv1a(h, (static_cast<uint64_t>(l.src) << 32) | static_cast<uint32_t>(l.dst));
    h = fnv1a(h, static_cast<uint64_t>(l.bandwidth));
    h = fnv1a(h, static_cast<uint64_t>(l.latency));
  }
  return h;
}

}  // namespace

Topology TopologyBuilder::build() const {
  check_text(name_, "the topology's name", {});
  Topology t;
  t.name_ = name_;
  t.num_npus_ = num_npus();
  const int n = num_npus() + num_switches();
  if (num_npus() == 0) throw Error("the topology has no NPUs");
  t.nodes_.reserve(n);
  for (const auto& p : npus_) t.nodes_.push_back(p.node);
  for (const auto& p : switches_) t.nodes_.push_back(p.node);
  for (NodeId i = 0; i < n; ++i) t.by_name_.emplace(t.nodes_[i].name, i);

  t.links_.reserve(links_.size());
  for (size_t i = 0; i < links_.size(); ++i) {
    const auto& link = links_[i].link;
    const auto& where = links_[i].where;  // not a structured binding: clang 14 cannot capture one
    auto endpoint = [&](NodeId h, const char* role) {
      bool known = h >= 0 ? h < num_npus() : ~h < num_switches();
      if (!known)
        throw Error(fmt::format("link {} has an unknown {} node (id {})", i, role, h), where);
      return resolve(h);
    };
    Link l = link;
    l.src = endpoint(link.src, "source");
    l.dst = endpoint(link.dst, "destination");
    std::string label =
        fmt::format("link {} ({} -> {})", i, t.nodes_[l.src].name, t.nodes_[l.dst].name);
    if (l.src == l.dst) throw Error(label + " is a self-loop", where);
    if (l.bandwidth <= 0)
      throw Error(fmt::format("{} has non-positive bandwidth {} B/s", label, l.bandwidth), where);
    if (l.latency < 0)
      throw Error(fmt::format("{} has negative latency {} ps", label, l.latency), where);
    if (l.buffer < 0)
      throw Error(fmt::format("{} has a negative buffer of {} B", label, l.buffer), where);
    if (l.step < 0)
      throw Error(fmt::format("{} has a negative per-step cost of {} ps", label, l.step), where);
    t.links_.push_back(std::move(l));
  }
  build_csr(n, t.links_, true, t.out_offsets_, t.out_links_);
  build_csr(n, t.links_, false, t.in_offsets_, t.in_links_);

  for (NodeId s = t.num_npus_; s < n; ++s)
    if (t.out_links(s).empty() && t.in_links(s).empty())
      throw Error(fmt::format("switch '{}' has no links", t.nodes_[s].name),
                  switches_[s - t.num_npus_].where);

  if (auto pair = first_unreachable_npu_pair(t))
    throw Unreachable(
        fmt::format("NPU '{}' cannot reach NPU '{}': every NPU must reach every other",
                    t.nodes_[pair->first].name, t.nodes_[pair->second].name),
        npus_[pair->first].where);

  // Dimensions are NPU counts of at least 1 whose product is the NPU count, multiplied with
  // overflow checks: a list whose product wraps around 2^64 must not pass for the count.
  auto product = [](const std::vector<int>& v) -> std::optional<int64_t> {
    if (std::any_of(v.begin(), v.end(), [](int x) { return x < 1; })) return std::nullopt;
    return checked_product(v);
  };
  if (!levels_.empty()) {
    if (std::any_of(levels_.begin(), levels_.end(), [](int x) { return x < 1; }))
      throw Error("dimensions must be NPU counts of at least 1");
    const std::optional<int64_t> p = product(levels_);
    if (!p)
      throw Error(
          fmt::format("dimensions multiply past 2^63 NPUs, but the topology has {}", t.num_npus_));
    if (*p != t.num_npus_)
      throw Error(
          fmt::format("dimensions multiply to {} NPUs, but the topology has {}", *p, t.num_npus_));
  }
  t.levels_ = levels_;
  t.calibration_ = calibration_;
  if (!grid_.empty() && product(grid_) == t.num_npus_) t.grid_ = grid_;

  for (size_t i = 0; i < protocols_.size(); ++i) {
    const Protocol& p = protocols_[i];
    if (p.name.empty()) throw Error(fmt::format("protocol {} has no name", i + 1));
    for (size_t j = 0; j < i; ++j)
      if (protocols_[j].name == p.name)
        throw Error(fmt::format("protocol '{}' is listed twice", p.name));
    if (!(p.bandwidth > 0.0 && p.bandwidth <= 1.0))
      throw Error(
          fmt::format("protocol '{}': bandwidth {} is not a share in (0, 1]", p.name, p.bandwidth));
    if (p.step < 0)
      throw Error(
          fmt::format("protocol '{}' has a negative per-step cost of {} ps", p.name, p.step));
    if (!(p.step_scale >= 0.0) || !std::isfinite(p.step_scale))
      throw Error(fmt::format("protocol '{}': step_scale {} is not a factor of at least 0", p.name,
                              p.step_scale));
  }
  t.protocols_ = protocols_;
  t.fingerprint_ = fingerprint_of(t);
  return t;
}

bool Protocol::excludes_producer(std::string_view producer) const {
  producer = producer.substr(0, producer.find(':'));
  return std::find(excludes.begin(), excludes.end(), producer) != excludes.end();
}

Time Protocol::step_on(const Link& l) const {
  return step_scale > 0 ? static_cast<Time>(std::llround(static_cast<double>(l.step) * step_scale))
                        : step;
}

std::string Protocol::step_words() const {
  return step_scale > 0 ? fmt::format("{:g} x each link's step", step_scale)
                        : fmt::format("{} a step", format_time(step));
}

const Protocol* Topology::protocol(std::string_view name) const {
  for (const Protocol& p : protocols_)
    if (p.name == name) return &p;
  return nullptr;
}

Topology Topology::without_in_network_collectives() const {
  Topology u = *this;
  for (Node& n : u.nodes_) n.can_reduce = n.can_multicast = false;
  u.fingerprint_ = fingerprint_of(u);
  return u;
}

Topology Topology::under(const Protocol& p) const {
  Topology u = p.in_network ? *this : without_in_network_collectives();
  for (Link& l : u.links_) {
    l.bandwidth = std::max<Bandwidth>(
        1, static_cast<Bandwidth>(std::llround(static_cast<double>(l.bandwidth) * p.bandwidth)));
    l.step = p.step_on(l);
  }
  u.protocols_.clear();
  u.applied_ = p;
  u.fingerprint_ = fingerprint_of(u);
  return u;
}

double Calibration::efficiency_of(std::string_view algorithm) const {
  algorithm = algorithm.substr(0, algorithm.find(':'));
  for (const auto& [name, e] : algorithm_efficiency)
    if (name == algorithm) return e;
  return 1.0;
}

uint64_t step_fingerprint(const Topology& t) {
  uint64_t h = fnv1a(0xcbf29ce484222325ULL, static_cast<uint64_t>(t.charges_steps()));
  for (const Link& l : t.links()) h = fnv1a(h, static_cast<uint64_t>(l.step));
  return h;
}

Topology reversed(const Topology& t) {
  TopologyBuilder b(t.name() + " (reversed)");
  std::vector<NodeId> handle(t.num_nodes());
  for (NodeId v = 0; v < t.num_nodes(); ++v) {
    const Node& n = t.node(v);
    handle[v] = t.is_npu(v) ? b.add_npu(n.name, n.router) : b.add_switch(n.name);
    b.node_props(handle[v]) = n;
  }
  for (const Link& l : t.links()) {
    const LinkId added = b.add_link(handle[l.dst], handle[l.src], l.bandwidth, l.latency, l.name);
    b.set_link_buffer(added, l.buffer);
    b.set_link_step(added, l.step);
  }
  b.set_levels(t.levels());
  b.set_grid(t.grid());
  b.set_calibration(t.calibration());
  b.set_protocols(t.protocols());
  Topology r = b.build();
  r.set_charges_steps(t.charges_steps());
  r.applied_ = t.applied_;
  return r;
}

std::optional<std::vector<LinkId>> twin_links(const Topology& t) {
  // Each link's class (its ends, bandwidth, latency and step) and id: sorted, the k-th link of
  // class (u, v, ...) pairs with the k-th of class (v, u, ...).
  using Class = std::tuple<NodeId, NodeId, Bandwidth, Time, Time>;
  using Key = std::pair<Class, LinkId>;
  std::vector<Key> keys;
  keys.reserve(static_cast<size_t>(t.num_links()));
  for (LinkId l = 0; l < t.num_links(); ++l) {
    const Link& k = t.link(l);
    keys.push_back({{k.src, k.dst, k.bandwidth, k.latency, k.step}, l});
  }
  std::sort(keys.begin(), keys.end());
  std::vector<LinkId> twin(static_cast<size_t>(t.num_links()), -1);
  for (size_t i = 0; i < keys.size();) {
    const Class& mine = keys[i].first;
    size_t end = i;
    while (end < keys.size() && keys[end].first == mine) ++end;
    const auto& [u, v, bandwidth, latency, step] = mine;
    const Class back{v, u, bandwidth, latency, step};
    auto j = std::lower_bound(keys.begin(), keys.end(), Key{back, -1});
    for (size_t x = i; x < end; ++x, ++j) {
      if (j == keys.end() || j->first != back) return std::nullopt;
      twin[static_cast<size_t>(keys[x].second)] = j->second;
    }
    if (j != keys.end() && j->first == back) return std::nullopt;  // more the other way
    i = end;
  }
  return twin;
}

}  // namespace tenet::topo
