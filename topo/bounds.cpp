#include "topo/bounds.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <optional>

#include "topo/analysis.hpp"
#include "topo/min_cut.hpp"

namespace tenet::topo {

Time CutBound::time(Bytes output_bytes) const {
  if (members_inside == 0 || num_members == 0) return 0;
  Int128 num = static_cast<Int128>(output_bytes) * members_inside * kPicosPerSecond;
  Int128 den = static_cast<Int128>(num_members) * out_bandwidth;
  return static_cast<Time>((num + den - 1) / den);
}

namespace {

std::vector<NodeId> member_list(const Topology& t, std::span<const NodeId> members) {
  std::vector<NodeId> m(members.begin(), members.end());
  if (m.empty()) {
    m.resize(t.num_npus());
    std::iota(m.begin(), m.end(), 0);
  }
  std::sort(m.begin(), m.end());
  if (std::adjacent_find(m.begin(), m.end()) != m.end()) throw Error("duplicate member NPU");
  for (NodeId v : m)
    if (v < 0 || v >= t.num_npus()) throw Error(fmt::format("member {} is not an NPU", v));
  if (m.size() < 2) throw Error("a collective bound needs at least two member NPUs");
  return m;
}

// a/b > c/d for positive denominators, exactly.
bool ratio_greater(int a, Bandwidth b, int c, Bandwidth d) {
  return static_cast<Int128>(a) * d > static_cast<Int128>(c) * b;
}

CutBound make_bound(const Topology& t, const std::vector<char>& in_set,
                    const std::vector<char>& is_member, int n) {
  CutBound c;
  c.num_members = n;
  for (NodeId v = 0; v < t.num_nodes(); ++v) {
    if (!in_set[v]) continue;
    c.set.push_back(v);
    c.members_inside += is_member[v];
    for (LinkId l : t.out_links(v))
      if (!in_set[t.link(l).dst]) c.out_bandwidth += t.link(l).bandwidth;
  }
  return c;
}

// How many of the widest distinct bandwidths island_sets tries.
constexpr size_t kIslandBandwidths = 16;

// `best` replaced by the best of the islands' sets when one beats it: for each of the widest
// bandwidths b, the components C of the links at least b wide (links joined either way), and the
// sets C and all but C, each holding some but not all members.
void island_sets(const Topology& t, const std::vector<char>& is_member, int n, CutBound& best) {
  std::vector<Bandwidth> widths;
  for (const Link& l : t.links()) widths.push_back(l.bandwidth);
  std::sort(widths.begin(), widths.end(), std::greater<>());
  widths.erase(std::unique(widths.begin(), widths.end()), widths.end());
  if (widths.size() > kIslandBandwidths) widths.resize(kIslandBandwidths);
  const auto nodes = static_cast<size_t>(t.num_nodes());
  std::vector<NodeId> parent(nodes);
  auto find = [&](NodeId v) {
    while (parent[v] != v) v = parent[v] = parent[parent[v]];
    return v;
  };
  std::optional<std::pair<Bandwidth, NodeId>> found;  // the bandwidth and island; `outside`
  bool outside = false;
  for (Bandwidth b : widths) {
    std::iota(parent.begin(), parent.end(), 0);
    for (const Link& l : t.links())
      if (l.bandwidth >= b) parent[find(l.src)] = find(l.dst);
    std::vector<int> inside(nodes, 0);
    std::vector<Bandwidth> leave(nodes, 0), enter(nodes, 0);
    for (NodeId v = 0; v < t.num_nodes(); ++v) inside[find(v)] += is_member[v];
    for (const Link& l : t.links()) {
      const NodeId a = find(l.src), c = find(l.dst);
      if (a == c) continue;
      leave[a] += l.bandwidth;
      enter[c] += l.bandwidth;
    }
    for (NodeId r = 0; r < t.num_nodes(); ++r) {
      if (find(r) != r || inside[r] == 0 || inside[r] == n) continue;
      if (leave[r] > 0 &&
          ratio_greater(inside[r], leave[r], best.members_inside, best.out_bandwidth)) {
        best.members_inside = inside[r];
        best.out_bandwidth = leave[r];
        found = {b, r};
        outside = false;
      }
      if (enter[r] > 0 &&
          ratio_greater(n - inside[r], enter[r], best.members_inside, best.out_bandwidth)) {
        best.members_inside = n - inside[r];
        best.out_bandwidth = enter[r];
        found = {b, r};
        outside = true;
      }
    }
  }
  if (!found) return;
  // The set itself, made again for the winner only.
  std::iota(parent.begin(), parent.end(), 0);
  for (const Link& l : t.links())
    if (l.bandwidth >= found->first) parent[find(l.src)] = find(l.dst);
  std::vector<char> in_set(nodes, 0);
  for (NodeId v = 0; v < t.num_nodes(); ++v)
    in_set[v] = static_cast<char>((find(v) == found->second) != outside);
  best = make_bound(t, in_set, is_member, n);
}

}  // namespace

CutBound allgather_ingress_bound(const Topology& t, std::span<const NodeId> members) {
  std::vector<NodeId> m = member_list(t, members);
  NodeId worst = m.front();
  for (NodeId v : m)
    if (ingress_bandwidth(t, v) < ingress_bandwidth(t, worst)) worst = v;
  std::vector<char> in_set(t.num_nodes(), 1), is_member(t.num_nodes(), 0);
  for (NodeId v : m) is_member[v] = 1;
  in_set[worst] = 0;
  return make_bound(t, in_set, is_member, static_cast<int>(m.size()));
}

CutBound allgather_cut_bound(const Topology& t, std::span<const NodeId> members, int64_t max_work) {
  const std::vector<NodeId> m = member_list(t, members);
  const int n = static_cast<int>(m.size());
  std::vector<char> is_member(t.num_nodes(), 0);
  for (NodeId v : m) is_member[v] = 1;

  // Start from the best one-node sets: S = {u} and S = all but v. ({u} drains through its own
  // out-links: found in O(links), the set made only for the best.)
  CutBound best = allgather_ingress_bound(t, m);
  std::optional<NodeId> best_one;
  for (NodeId u : m) {
    Bandwidth out = 0;
    for (LinkId l : t.out_links(u))
      if (t.link(l).dst != u) out += t.link(l).bandwidth;
    if (ratio_greater(1, out, best.members_inside, best.out_bandwidth)) {
      best.members_inside = 1;
      best.out_bandwidth = out;
      best_one = u;
    }
  }
  if (best_one) {
    std::vector<char> in_set(t.num_nodes(), 0);
    in_set[*best_one] = 1;
    best = make_bound(t, in_set, is_member, n);
  }

  // Graph: the topology's nodes plus a super-source s (last) with an arc of capacity 1 to every
  // member. For lambda = best ratio, links carry lambda * bandwidth. A source-side set X = {s} ∪ S
  // has out-capacity |members \ S| + lambda * B+(S), which is below N exactly when S beats lambda.
  const int s = t.num_nodes();
  std::vector<std::pair<int, int>> arcs;
  for (const Link& l : t.links()) arcs.emplace_back(l.src, l.dst);
  for (NodeId v : m) arcs.emplace_back(s, v);

  if (static_cast<int64_t>(s + 1) * static_cast<int64_t>(arcs.size()) > max_work) {
    island_sets(t, is_member, n, best);
    best.search = CutSearch::Islands;
    return best;
  }
  detail::MinCutGraph g(s + 1, arcs);
  for (size_t a = t.num_links(); a < arcs.size(); ++a) g.set_capacity(static_cast<int>(a), 1.0);

  const double tolerance = 1e-9 * n;
  std::vector<char> side;
  auto cuts_off_member = [&](const std::vector<char>& x) {
    for (NodeId v : m)
      if (!x[v]) return true;
    return false;
  };
  for (int iteration = 0; iteration < 1000; ++iteration) {
    const double lambda = static_cast<double>(best.members_inside) / best.out_bandwidth;
    for (LinkId l = 0; l < t.num_links(); ++l)
      g.set_capacity(l, lambda * static_cast<double>(t.link(l).bandwidth));
    double value = g.min_cut_from(s, side);
    if (!cuts_off_member(side)) {
      // The cheapest cut separates only non-members: take the least cut per member sink instead.
      value = std::numeric_limits<double>::infinity();
      std::vector<char> side_v;
      for (NodeId v : m) {
        double cut = g.min_st_cut(s, v, side_v);
        if (cut < value) {
          value = cut;
          side = side_v;
        }
      }
    }
    if (value >= n - tolerance) break;
    std::vector<char> in_set(side.begin(), side.begin() + t.num_nodes());
    CutBound c = make_bound(t, in_set, is_member, n);
    if (c.out_bandwidth == 0 ||
        !ratio_greater(c.members_inside, c.out_bandwidth, best.members_inside, best.out_bandwidth))
      break;  // no exact improvement: floating-point noise, best is optimal
    best = std::move(c);
  }
  return best;
}

CutBound broadcast_cut_bound(const Topology& t, NodeId root, std::span<const NodeId> members,
                             bool large_root_side) {
  const std::vector<NodeId> m = member_list(t, members);
  if (!std::binary_search(m.begin(), m.end(), root))
    throw Error(fmt::format("broadcast root {} is not a member", root));
  std::vector<std::pair<int, int>> arcs;
  for (const Link& l : t.links()) arcs.emplace_back(l.src, l.dst);
  std::vector<char> is_member(t.num_nodes(), 0);
  for (NodeId v : m) is_member[v] = 1;
  auto as_bound = [&](const std::vector<char>& in_set) {
    CutBound c = make_bound(t, in_set, is_member, 1);
    c.members_inside = 1;
    return c;
  };
  // Hao-Orlin's cheapest set around the root serves when it leaves a member out; otherwise one
  // Preflow per member.
  auto least_cut = [&](detail::MinCutGraph& g) {
    std::vector<char> side;
    g.min_cut_from(root, side);
    bool cuts_off_member = false;
    for (NodeId v : m) cuts_off_member = cuts_off_member || !side[v];
    if (cuts_off_member) return as_bound(side);
    std::optional<CutBound> best;
    for (NodeId v : m) {
      if (v == root) continue;
      g.min_st_cut(root, v, side);
      CutBound c = as_bound(side);
      if (!best || c.out_bandwidth < best->out_bandwidth) best = std::move(c);
    }
    return *best;
  };
  detail::MinCutGraph g(t.num_nodes(), arcs);
  for (LinkId l = 0; l < t.num_links(); ++l)
    g.set_capacity(l, static_cast<double>(t.link(l).bandwidth));
  CutBound best = least_cut(g);
  if (!large_root_side || best.out_bandwidth == 0) return best;
  // The tie-break: an arc of a hair's capacity from the root to every other node, so that of cuts
  // equally narrow the one leaving fewer nodes out is cheaper. The hairs sum to a ten-thousandth
  // of the narrowest link: where they would pick a wider cut, it is measured exactly and dropped.
  Bandwidth narrowest = std::numeric_limits<Bandwidth>::max();
  for (const Link& l : t.links()) narrowest = std::min(narrowest, l.bandwidth);
  for (NodeId v = 0; v < t.num_nodes(); ++v)
    if (v != root) arcs.emplace_back(root, v);
  detail::MinCutGraph tie(t.num_nodes(), arcs);
  for (LinkId l = 0; l < t.num_links(); ++l)
    tie.set_capacity(l, static_cast<double>(t.link(l).bandwidth));
  const double hair = 1e-4 * static_cast<double>(narrowest) / t.num_nodes();
  for (size_t a = t.num_links(); a < arcs.size(); ++a) tie.set_capacity(static_cast<int>(a), hair);
  CutBound large = least_cut(tie);
  bool cuts_off_member = false;
  for (NodeId v : m)
    cuts_off_member = cuts_off_member || !std::binary_search(large.set.begin(), large.set.end(), v);
  return cuts_off_member && large.out_bandwidth == best.out_bandwidth ? large : best;
}

}  // namespace tenet::topo
