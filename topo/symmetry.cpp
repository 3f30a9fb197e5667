#include "topo/symmetry.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "topo/analysis.hpp"

namespace tenet::topo {

NodeId Translations::shift(NodeId x, NodeId s) const {
  NodeId moved = 0;
  for (size_t d = 0; d < dims_.size(); ++d) {
    const int l = dims_[d];
    int c = x / strides_[d] % l + s / strides_[d] % l;
    if (c >= l) c -= l;
    moved += c * strides_[d];
  }
  return moved;
}

NodeId Translations::negate(NodeId x) const {
  NodeId r = 0;
  for (size_t d = 0; d < dims_.size(); ++d)
    r += (dims_[d] - x / strides_[d] % dims_[d]) % dims_[d] * strides_[d];
  return r;
}

Translations::Walker::Walker(const Translations& tr, NodeId x)
    : tr_(&tr), step_(tr.dims_.size(), 0), moved_(tr.dims_.size()), at_(x) {
  for (size_t d = 0; d < tr.dims_.size(); ++d) moved_[d] = x / tr.strides_[d] % tr.dims_[d];
}

void Translations::Walker::step() {
  for (size_t d = 0; d < moved_.size(); ++d) {
    const int l = tr_->dims_[d];
    if (++moved_[d] == l) {
      moved_[d] = 0;
      at_ -= (l - 1) * tr_->strides_[d];
    } else {
      at_ += tr_->strides_[d];
    }
    if (++step_[d] < l) return;
    step_[d] = 0;  // back where it began: carry into the next dimension
  }
}

bool Translations::reversible() const {
  return std::none_of(reverse_.begin(), reverse_.end(), [](LinkId r) { return r < 0; });
}

std::string Translations::describe() const {
  std::vector<std::string> parts;
  for (int l : dims_) parts.push_back(fmt::format("Z{}", l));
  return fmt::format("{}", fmt::join(parts, " x "));
}

namespace {

// Each link's way back: the p-th link from its destination to its source of the same bandwidth,
// latency and step, for the p-th such link forth (p counted in out_links order). Links sorted by
// (source, destination, bandwidth, latency, step, that order): each group is contiguous, and a
// link's way back is found by binary search, in O(links log links) however many parallel links
// or however wide a switch; -1 where it has none.
std::vector<LinkId> ways_back(const Topology& t) {
  struct Arc {
    NodeId src, dst;
    Bandwidth bandwidth;
    Time latency, step;
    size_t seq;
    LinkId id;
    auto key() const { return std::tie(src, dst, bandwidth, latency, step); }
  };
  std::vector<Arc> arcs;
  arcs.reserve(static_cast<size_t>(t.num_links()));
  for (NodeId u = 0; u < t.num_nodes(); ++u)
    for (LinkId l : t.out_links(u)) {
      const Link& a = t.link(l);
      arcs.push_back({a.src, a.dst, a.bandwidth, a.latency, a.step, arcs.size(), l});
    }
  std::sort(arcs.begin(), arcs.end(), [](const Arc& a, const Arc& b) {
    return std::tie(a.src, a.dst, a.bandwidth, a.latency, a.step, a.seq) <
           std::tie(b.src, b.dst, b.bandwidth, b.latency, b.step, b.seq);
  });
  std::vector<LinkId> reverse(t.num_links(), -1);
  for (size_t i = 0, group = 0; i < arcs.size(); ++i) {
    if (i > 0 && arcs[i].key() != arcs[i - 1].key()) group = i;
    const Arc& a = arcs[i];
    const Arc back{a.dst, a.src, a.bandwidth, a.latency, a.step, 0, -1};
    const auto first =
        std::lower_bound(arcs.begin(), arcs.end(), back,
                         [](const Arc& x, const Arc& y) { return x.key() < y.key(); });
    const size_t at = static_cast<size_t>(first - arcs.begin()) + (i - group);
    if (at < arcs.size() && arcs[at].key() == back.key()) reverse[a.id] = arcs[at].id;
  }
  return reverse;
}

}  // namespace

std::optional<Translations> Translations::over(const Topology& t, const std::vector<int>& dims) {
  Translations tr;
  const int n = t.num_npus();
  const int switches = t.num_switches();
  tr.dims_ = dims;
  tr.npus_ = n;
  tr.strides_.clear();
  int stride = 1;
  for (int l : dims) {
    tr.strides_.push_back(stride);
    stride *= l;
  }
  auto coordinate = [&](NodeId x, size_t d) { return x / tr.strides_[d] % dims[d]; };

  // Each switch is known by its NPUs. With a switch linked to a switch, or two switches on the same
  // NPUs, switches cannot be told apart by where their NPUs go: no translations then.
  std::vector<std::vector<NodeId>> npus_of(switches);
  for (const Link& l : t.links()) {
    if (t.is_switch(l.src) && t.is_switch(l.dst)) return std::nullopt;
    if (t.is_switch(l.src)) npus_of[l.src - n].push_back(l.dst);
    if (t.is_switch(l.dst)) npus_of[l.dst - n].push_back(l.src);
  }
  std::map<std::vector<NodeId>, NodeId> by_npus;
  for (int w = 0; w < switches; ++w) {
    std::vector<NodeId>& v = npus_of[w];
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    if (!by_npus.emplace(v, n + w).second) return std::nullopt;
  }
  // Every unit step of a dimension must move the topology onto itself: NPUs by the step, a
  // switch onto the switch on its NPUs moved, every link onto a link of the same bandwidth and
  // latency. Then so does every translation (they are sums of unit steps).
  std::vector<std::vector<NodeId>> unit(
      dims.size(), std::vector<NodeId>(t.num_nodes()));  // per dimension, node -> node
  for (size_t d = 0; d < dims.size(); ++d) {
    for (NodeId x = 0; x < n; ++x) unit[d][x] = tr.shift(x, dims[d] > 1 ? tr.strides_[d] : 0);
    for (int w = 0; w < switches; ++w) {
      std::vector<NodeId> moved;
      for (NodeId v : npus_of[w]) moved.push_back(unit[d][v]);
      std::sort(moved.begin(), moved.end());
      const auto it = by_npus.find(moved);
      if (it == by_npus.end()) return std::nullopt;
      unit[d][n + w] = it->second;
    }
    using Out = std::tuple<NodeId, Bandwidth, Time, Time>;
    for (NodeId u = 0; u < t.num_nodes(); ++u) {
      std::vector<Out> mine, theirs;
      for (LinkId l : t.out_links(u))
        mine.emplace_back(unit[d][t.link(l).dst], t.link(l).bandwidth, t.link(l).latency,
                          t.link(l).step);
      for (LinkId l : t.out_links(unit[d][u]))
        theirs.emplace_back(t.link(l).dst, t.link(l).bandwidth, t.link(l).latency, t.link(l).step);
      std::sort(mine.begin(), mine.end());
      std::sort(theirs.begin(), theirs.end());
      if (mine != theirs) return std::nullopt;
    }
  }
  // Switch w seen from NPU x is w moved by -x. Each orbit of switches keeps the switch every
  // translation s moves its first switch onto (image[orbit][s]), and each switch a translation that
  // reaches it from its orbit's first (reached_by): w moved by -x is image[orbit][reached_by[w] -
  // x].
  std::vector<int> orbit_of(switches, -1);
  std::vector<NodeId> reached_by(switches, 0);
  std::vector<std::vector<NodeId>> image;
  for (int w = 0; w < switches; ++w) {
    if (orbit_of[w] >= 0) continue;
    std::vector<NodeId> img(n, -1);
    img[0] = n + w;
    const int o = static_cast<int>(image.size());
    orbit_of[w] = o;
    reached_by[w] = 0;
    // Translations in order: s = s' + a unit step of dimension d, for the first d where s has a
    // non-zero coordinate; s' is smaller, so its image is known.
    for (NodeId s = 1; s < n; ++s) {
      size_t d = 0;
      while (coordinate(s, d) == 0) ++d;
      img[s] = unit[d][img[s - tr.strides_[d]]];
      const int sw = img[s] - n;
      if (orbit_of[sw] < 0) {
        orbit_of[sw] = o;
        reached_by[sw] = s;
      }
    }
    image.push_back(std::move(img));
  }
  // v as seen from NPU x: an NPU's offset, a switch's image under -x.
  auto seen_from = [&](NodeId x, NodeId v) {
    if (t.is_npu(v)) return tr.shift(v, tr.negate(x));
    const int w = v - n;
    return image[orbit_of[w]][tr.shift(reached_by[w], tr.negate(x))];
  };

  using Key =
      std::tuple<NodeId, Bandwidth, Time, LinkId>;  // seen from the NPU, bandwidth, latency, id
  auto slots_of = [&](NodeId x, bool out) {
    std::vector<Key> keys;
    for (LinkId l : out ? t.out_links(x) : t.in_links(x)) {
      const Link& link = t.link(l);
      const NodeId other = out ? link.dst : link.src;
      if (!out && t.is_npu(other)) continue;  // an NPU's out-slot
      keys.emplace_back(seen_from(x, other), link.bandwidth, link.latency, l);
    }
    std::sort(keys.begin(), keys.end());
    return keys;
  };
  auto same = [](const Key& a, const Key& b) {
    return std::get<0>(a) == std::get<0>(b) && std::get<1>(a) == std::get<1>(b) &&
           std::get<2>(a) == std::get<2>(b);
  };
  tr.orbit_.assign(t.num_links(), -1);
  for (bool out : {true, false}) {
    const std::vector<Key> first = slots_of(0, out);
    const int slots = static_cast<int>(first.size());
    (out ? tr.out_ : tr.in_) = slots;
    std::vector<LinkId>& table = out ? tr.out_links_ : tr.in_links_;
    table.resize(static_cast<size_t>(n) * slots);
    for (NodeId x = 0; x < n; ++x) {
      const std::vector<Key> keys = x == 0 ? first : slots_of(x, out);
      if (keys.size() != first.size()) return std::nullopt;
      for (int j = 0; j < slots; ++j) {
        if (!same(keys[j], first[j])) return std::nullopt;
        const LinkId l = std::get<3>(keys[j]);
        table[static_cast<size_t>(x) * slots + j] = l;
        tr.orbit_[l] = out ? j : tr.out_ + j;
      }
    }
  }
  if (tr.out_ == 0) return std::nullopt;
  tr.reverse_ = ways_back(t);
  return tr;
}

std::optional<Translations> translation_symmetry(const Topology& t) {
  const int n = t.num_npus();
  if (n < 2) return std::nullopt;
  std::vector<std::vector<int>> candidates;
  int64_t product = 1;
  for (int l : t.levels()) product *= std::max(l, 0);
  if (!t.levels().empty() && product == n) candidates.push_back(t.levels());
  // A cluster of servers of consecutive NPUs: GPU fastest, then server.
  if (t.num_switches() > 0) {
    std::vector<std::vector<NodeId>> servers = detect_servers(t);
    for (std::vector<NodeId>& server : servers) std::sort(server.begin(), server.end());
    std::sort(servers.begin(), servers.end());
    bool consecutive = !servers.empty();
    for (size_t j = 0; consecutive && j < servers.size(); ++j)
      for (size_t i = 0; consecutive && i < servers[j].size(); ++i)
        consecutive = servers[j][i] == static_cast<NodeId>(j * servers[0].size() + i);
    if (consecutive)
      candidates.push_back({static_cast<int>(servers[0].size()), static_cast<int>(servers.size())});
  }
  for (const std::vector<int>& dims : candidates)
    if (std::optional<Translations> tr = Translations::over(t, dims)) return tr;
  return std::nullopt;
}

}  // namespace tenet::topo
