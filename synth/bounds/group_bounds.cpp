// The bounds of All-to-All, Gather and Scatter (lower_bound.cpp's terms for them): distances over
// the links' capacity, cuts around groups of nodes, and the maximum concurrent flow.
#include "synth/bounds/group_bounds.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include <boost/pending/disjoint_sets.hpp>

#include "topo/analysis.hpp"
#include "topo/cut_words.hpp"
#include "topo/flow_bound.hpp"

namespace tenet::synth::detail {

// All-to-All: every byte from s to t crosses the links of some s-t path. For any link weights w,
// sum_l w_l bytes_l >= k sum_{s != t} d_w(s, t) (d_w the w-shortest distance) and
// sum_l w_l bytes_l <= T sum_l w_l bw_l (no link carries more than its bandwidth), so
// T >= k sum d_w / sum_l w_l bw_l: the dual of the maximum concurrent flow, evaluated at w = 1 (hop
// counts over the total bandwidth) and w = 1 / bw (link time over the number of links). `k` is the
// bytes each member sends each other member. Returns {time, label} of the larger.
std::pair<Time, const char*> all_to_all_distance_bound(const topo::Topology& t,
                                                       const std::vector<topo::NodeId>& m,
                                                       Bytes k) {
  Int128 hops = 0;
  double link_time = 0;  // seconds per byte, summed over the pairs
  for (topo::NodeId s : m) {
    const std::vector<int> h = topo::hop_distances(t, s);
    const std::vector<double> w = topo::link_time_distances(t, s);
    for (topo::NodeId d : m)
      if (d != s && h[d] > 0) {
        hops += h[d];
        link_time += w[d];
      }
  }
  Int128 total_bandwidth = 0;
  for (const topo::Link& l : t.links()) total_bandwidth += l.bandwidth;
  if (total_bandwidth == 0 || t.num_links() == 0) return {0, "hop-count bound"};
  const Int128 by_hops =
      (static_cast<Int128>(k) * hops * kPicosPerSecond + total_bandwidth - 1) / total_bandwidth;
  // Rounded down a hair: a double sum must not lift the bound above the exact value.
  const double by_time =
      std::floor(static_cast<double>(k) * link_time / static_cast<double>(t.num_links()) *
                 static_cast<double>(kPicosPerSecond) * (1 - 1e-9));
  const Time a = static_cast<Time>(std::min<Int128>(by_hops, std::numeric_limits<Time>::max() / 2));
  const Time b = static_cast<Time>(
      std::min(by_time, static_cast<double>(std::numeric_limits<Time>::max() / 2)));
  return a >= b ? std::pair{a, "hop-count bound"} : std::pair{b, "link-time bound"};
}

namespace {

// The bandwidth term a group S of nodes sets (0 when it sets none): holding `inside` of the p
// members (the root among them or not), it must send `send` bytes over the `out` B/s of links
// leaving it and receive `receive` over the `in` B/s entering. All-to-All: |S ∩ m| x |m \ S| x k
// each way. Gather: the members outside the root's side send their k bytes across. Scatter: the
// same the other way.
Time group_time(CollectiveKind kind, int64_t inside, bool has_root, int64_t p, Bytes k, Int128 out,
                Int128 in) {
  Int128 send = 0, receive = 0;
  switch (kind) {
    case CollectiveKind::Gather:
      (has_root ? receive : send) = static_cast<Int128>(has_root ? p - inside : inside) * k;
      break;
    case CollectiveKind::Scatter:
      (has_root ? send : receive) = static_cast<Int128>(has_root ? p - inside : inside) * k;
      break;
    default:
      if (inside > 0 && inside < p) send = receive = static_cast<Int128>(inside) * (p - inside) * k;
  }
  Time best = 0;
  for (const auto& [bytes, cap] : {std::pair{send, out}, std::pair{receive, in}}) {
    if (bytes == 0 || cap == 0) continue;
    const Int128 ps = (bytes * kPicosPerSecond + cap - 1) / cap;
    best = std::max(best,
                    static_cast<Time>(std::min<Int128>(ps, std::numeric_limits<Time>::max() / 2)));
  }
  return best;
}

}  // namespace

// The widths at which a topology's links fall into islands: every distinct link bandwidth, or 64
// of them spread over the range (work linear in the topology).
std::vector<Bandwidth> island_widths(const topo::Topology& t) {
  std::vector<Bandwidth> widths;
  for (const topo::Link& l : t.links()) widths.push_back(l.bandwidth);
  std::sort(widths.begin(), widths.end());
  widths.erase(std::unique(widths.begin(), widths.end()), widths.end());
  if (widths.size() > 64) {
    std::vector<Bandwidth> some;
    for (size_t i = 0; i < 64; ++i) some.push_back(widths[i * widths.size() / 64]);
    widths = std::move(some);
  }
  return widths;
}

// Group cuts for All-to-All, Gather and Scatter (see group_time) over two families of groups: for
// each link bandwidth b of the topology, the components of the links at least b wide (taken both
// ways), and each switch with the NPUs linked to it. (Servers behind their NICs, racks behind their
// uplinks, islands joined by a thin bridge.)
Time group_cut_bound(const topo::Topology& t, const Collective& c, Bytes k) {
  const std::vector<topo::NodeId>& m = c.ranks;
  const topo::NodeId root = m[c.root];
  const std::vector<Bandwidth> widths = island_widths(t);
  std::vector<char> member(t.num_nodes(), 0);
  for (topo::NodeId v : m) member[v] = 1;
  const int64_t p = static_cast<int64_t>(m.size());
  const int n = t.num_nodes();
  Time best = 0;
  for (size_t w = 1; w < widths.size(); ++w) {  // the narrowest width joins everything
    boost::disjoint_sets_with_storage<> islands(n);
    for (const topo::Link& l : t.links())
      if (l.bandwidth >= widths[w]) islands.union_set(l.src, l.dst);
    std::vector<int64_t> members(n, 0);
    std::vector<Int128> out(n, 0), in(n, 0);
    for (topo::NodeId v = 0; v < n; ++v)
      if (member[v]) ++members[islands.find_set(v)];
    for (const topo::Link& l : t.links()) {
      const auto a = islands.find_set(l.src), b = islands.find_set(l.dst);
      if (a == b) continue;
      out[a] += l.bandwidth;
      in[b] += l.bandwidth;
    }
    const auto root_island = static_cast<int>(islands.find_set(root));
    for (int i = 0; i < n; ++i)
      if (members[i] > 0 || i == root_island)
        best =
            std::max(best, group_time(c.kind, members[i], i == root_island, p, k, out[i], in[i]));
  }
  std::vector<char> inside(n, 0);
  std::vector<topo::NodeId> set;
  for (topo::NodeId v = t.num_npus(); v < n; ++v) {
    set.assign(1, v);
    for (topo::LinkId l : t.out_links(v))
      if (t.is_npu(t.link(l).dst)) set.push_back(t.link(l).dst);
    for (topo::LinkId l : t.in_links(v))
      if (t.is_npu(t.link(l).src)) set.push_back(t.link(l).src);
    for (topo::NodeId u : set) inside[u] = 1;
    int64_t count = 0;
    Int128 out = 0, in = 0;
    for (topo::NodeId u : set) {
      if (inside[u] != 1) continue;  // listed twice
      inside[u] = 2;
      count += member[u];
      for (topo::LinkId l : t.out_links(u))
        if (!inside[t.link(l).dst]) out += t.link(l).bandwidth;
      for (topo::LinkId l : t.in_links(u))
        if (!inside[t.link(l).src]) in += t.link(l).bandwidth;
    }
    const bool has_root = inside[root] != 0;
    for (topo::NodeId u : set) inside[u] = 0;
    if (count > 0) best = std::max(best, group_time(c.kind, count, has_root, p, k, out, in));
  }
  return best;
}

FlowTerm flow_bound(BoundMemo::State* memo, const topo::Topology& t, const Collective& c, Bytes k) {
  constexpr Bytes kUnit = Bytes{1} << 20;
  BoundMemo::State::FlowKey key{t.fingerprint(), c.kind, is_rooted(c.kind) ? c.root : 0, c.ranks,
                                c.pair_units};
  BoundMemo::State::FlowUnit unit;
  if (memo) {
    std::lock_guard lock(memo->mutex);
    if (auto it = memo->flows.find(key); it != memo->flows.end()) unit = it->second;
  }
  if (unit.label.empty()) {
    std::vector<topo::Demand> demands;
    const int p = c.num_ranks();
    for (int s = 0; s < p; ++s)
      for (int d = 0; d < p; ++d) {
        Bytes bytes = 0;
        switch (c.kind) {
          case CollectiveKind::AllToAll:  // All-to-Allv: `k` is the bytes of a unit
            bytes = c.uneven() ? c.pair_units[static_cast<size_t>(s) * p + d] * kUnit : kUnit;
            break;
          case CollectiveKind::Gather:
            bytes = d == c.root ? kUnit : 0;
            break;
          default:
            bytes = s == c.root ? kUnit : 0;  // Scatter
        }
        if (s != d && bytes > 0) demands.push_back({c.ranks[s], c.ranks[d], bytes});
      }
    // The bound is rounded down to the picosecond: scaled, it stays a bound.
    const topo::FlowBound b = topo::concurrent_flow_bound(t, demands);
    unit.seconds = static_cast<double>(b.time) / static_cast<double>(kPicosPerSecond);
    unit.label = fmt::format("max-concurrent-flow bound ({})", topo::describe(b));
    unit.limit = topo::describe_limit(t, b);
    if (memo) {
      std::lock_guard lock(memo->mutex);
      if (memo->flows.size() >= kBoundMemoEntries) memo->flows.clear();
      memo->flows.emplace(std::move(key), unit);
    }
  }
  const double ps = std::floor(unit.seconds * static_cast<double>(k) / static_cast<double>(kUnit) *
                               static_cast<double>(kPicosPerSecond) * (1 - 1e-9));
  return {static_cast<Time>(
              std::clamp(ps, 0.0, static_cast<double>(std::numeric_limits<Time>::max() / 2))),
          unit.label, unit.limit};
}

}  // namespace tenet::synth::detail
