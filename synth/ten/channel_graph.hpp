// The matcher's channels: the ways an NPU can send to another over the topology, each a direct link
// or a route through switches (or router NPUs), with what one chunk costs on it under the link
// model. ChannelGraph holds them in CSR form by source, by destination and by link.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>
#include <queue>
#include <span>
#include <tuple>
#include <vector>

#include "synth/cost/timing.hpp"
#include "synth/ir/algorithm.hpp"
#include "synth/plans/server_plan.hpp"
#include "topo/routing.hpp"
#include "topo/topology.hpp"

namespace tenet::synth::detail {

using ChannelId = int32_t;

// A way for one NPU to send to another: a direct link, or a route through switches. It moves a
// chunk at `rate`, the narrowest bandwidth on its route, holding that much of every link on it.
struct Channel {
  NodeId src, dst;
  uint32_t route_begin, route_size;
  Time duration, occupancy;
  Bandwidth rate;
  bool pinned =
      false;  // moves at a rate below its route's narrowest bandwidth: a share of a fat link
};

class ChannelGraph {
 public:
  static constexpr int kMaxRoutedNpus = 256;
  // Every pair's direct links and routes through switches (`routes`: route searches shared with
  // other graphs of `t`, at other chunk sizes, or none).
  ChannelGraph(const topo::Topology& t, Bytes chunk_bytes, LinkModel model, int ecmp,
               topo::RouteMemo* routes = nullptr)
      : t_(t) {
    for (LinkId l = 0; l < t.num_links(); ++l) {
      const topo::Link& k = t.link(l);
      if (t.is_npu(k.src) && t.is_npu(k.dst))
        add(k.src, k.dst, std::span(&l, 1), chunk_bytes, model);
    }
    topo::Router router(t, routes);
    if (t.num_switches() > 0)
      for (NodeId u = 0; u < t.num_npus(); ++u)
        router.for_each_quickest_switch_route(
            u, chunk_bytes, ecmp,
            [&](NodeId v, std::span<const LinkId> links) { add(u, v, links, chunk_bytes, model); });
    // NPUs with on-chip routers pass traffic through: every pair they join gets a channel, as long
    // as N^2 channels stay affordable.
    bool routers = false;
    for (NodeId v = 0; v < t.num_npus(); ++v) routers = routers || t.node(v).router;
    if (routers && t.num_npus() <= kMaxRoutedNpus) {
      std::vector<char> has(static_cast<size_t>(t.num_npus()) * t.num_npus(), 0);
      for (const Channel& c : channels_) has[static_cast<size_t>(c.src) * t.num_npus() + c.dst] = 1;
      for (NodeId u = 0; u < t.num_npus(); ++u)
        for (NodeId v = 0; v < t.num_npus(); ++v)
          if (u != v && !has[static_cast<size_t>(u) * t.num_npus() + v])
            if (auto r = router.route(u, v)) add(u, v, r->links, chunk_bytes, model);
    }
    finish();
  }

  // Only the given ways (src, dst, route), each once: the channels of a flow plan.
  ChannelGraph(const topo::Topology& t, Bytes chunk_bytes, LinkModel model,
               const std::vector<std::tuple<NodeId, NodeId, std::vector<LinkId>>>& ways)
      : t_(t) {
    for (const auto& [u, v, route] : ways) add(u, v, route, chunk_bytes, model);
    finish();
  }
  // The ways of a server plan, channel i being way i, each at its own rate.
  ChannelGraph(const topo::Topology& t, Bytes chunk_bytes, LinkModel model,
               const std::vector<ServerWay>& ways)
      : t_(t) {
    for (const ServerWay& w : ways) add(w.src, w.dst, w.route, chunk_bytes, model, w.rate);
    finish();
  }

  // The channel from u to v over `route`, or -1.
  ChannelId find(NodeId u, NodeId v, std::span<const LinkId> route) const {
    for (ChannelId c : out(u))
      if (channels_[c].dst == v && std::ranges::equal(this->route(channels_[c]), route)) return c;
    return -1;
  }

  size_t size() const { return channels_.size(); }
  const Channel& operator[](ChannelId id) const { return channels_[id]; }
  std::span<const LinkId> route(const Channel& c) const {
    return {routes_.data() + c.route_begin, c.route_size};
  }
  std::span<const ChannelId> out(NodeId u) const { return slice(out_offset_, out_, u); }
  std::span<const ChannelId> in(NodeId v) const { return slice(in_offset_, in_, v); }
  std::span<const ChannelId> on_link(LinkId l) const { return slice(link_offset_, on_link_, l); }

  // The fastest congestion-free time from every NPU to every NPU over channels (N x N, row =
  // source), kNever where none: one Dijkstra per NPU.
  std::vector<Time> all_pairs_durations() const {
    const int n = t_.num_npus();
    const Time never = std::numeric_limits<Time>::max();
    std::vector<Time> d(static_cast<size_t>(n) * n, never);
    using Item = std::pair<Time, NodeId>;
    for (NodeId s = 0; s < n; ++s) {
      Time* row = &d[static_cast<size_t>(s) * n];
      std::priority_queue<Item, std::vector<Item>, std::greater<Item>> q;
      row[s] = 0;
      q.push({0, s});
      while (!q.empty()) {
        auto [at, u] = q.top();
        q.pop();
        if (at > row[u]) continue;
        for (ChannelId c : out(u)) {
          const Time t = at + channels_[c].duration;
          if (t < row[channels_[c].dst]) {
            row[channels_[c].dst] = t;
            q.push({t, channels_[c].dst});
          }
        }
      }
    }
    return d;
  }

  // Hop distances between NPUs over channels, from `from` (forward) or to it (reverse).
  std::vector<int> hops(NodeId from, bool reverse) const {
    std::vector<int> d(t_.num_npus(), -1);
    std::vector<NodeId> q{from};
    d[from] = 0;
    for (size_t i = 0; i < q.size(); ++i)
      for (ChannelId c : reverse ? in(q[i]) : out(q[i])) {
        NodeId w = reverse ? channels_[c].src : channels_[c].dst;
        if (d[w] < 0) {
          d[w] = d[q[i]] + 1;
          q.push_back(w);
        }
      }
    return d;
  }

 private:
  void add(NodeId u, NodeId v, std::span<const LinkId> route, Bytes bytes, LinkModel model,
           Bandwidth rate = 0) {
    const RouteCost cost = route_cost(t_, route, bytes, model, t_.charges_steps(), rate);
    channels_.push_back({u, v, static_cast<uint32_t>(routes_.size()),
                         static_cast<uint32_t>(route.size()), cost.duration, cost.occupancy,
                         cost.rate, cost.rate < cost.bottleneck});
    routes_.insert(routes_.end(), route.begin(), route.end());
  }
  void finish() {
    csr(
        out_offset_, out_, [](const Channel& c) { return std::array<int, 1>{c.src}; },
        t_.num_npus());
    csr(
        in_offset_, in_, [](const Channel& c) { return std::array<int, 1>{c.dst}; }, t_.num_npus());
    csr(
        link_offset_, on_link_, [&](const Channel& c) { return route(c); }, t_.num_links());
  }
  template <typename Keys>
  void csr(std::vector<int64_t>& offset, std::vector<ChannelId>& ids, Keys keys, int n) {
    offset.assign(n + 1, 0);
    for (const Channel& c : channels_)
      for (int k : keys(c)) ++offset[k + 1];
    std::partial_sum(offset.begin(), offset.end(), offset.begin());
    ids.resize(offset.back());
    std::vector<int64_t> next(offset.begin(), offset.end() - 1);
    for (ChannelId id = 0; id < static_cast<ChannelId>(channels_.size()); ++id)
      for (int k : keys(channels_[id])) ids[next[k]++] = id;
  }
  static std::span<const ChannelId> slice(const std::vector<int64_t>& off,
                                          const std::vector<ChannelId>& ids, int k) {
    return {ids.data() + off[k], static_cast<size_t>(off[k + 1] - off[k])};
  }

  const topo::Topology& t_;
  std::vector<Channel> channels_;
  std::vector<LinkId> routes_;
  std::vector<int64_t> out_offset_, in_offset_, link_offset_;
  std::vector<ChannelId> out_, in_, on_link_;
};

// NPUs on shortest channel paths from any of `from` to any of `to`: the relays a spread needs.
std::vector<char> relays(const ChannelGraph& g, int n, const std::vector<NodeId>& from,
                         const std::vector<NodeId>& to);

}  // namespace tenet::synth::detail
