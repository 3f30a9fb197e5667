#include "synth/ten/forward.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <numeric>
#include <utility>
#include <vector>

#include "synth/ten/route_matcher.hpp"
#include "synth/ten/spread_matcher.hpp"

namespace tenet::synth::detail {

ForwardPlan plan_for(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::AllGather:
    case CollectiveKind::Broadcast:
      return {Shape::Spread, false, false};
    case CollectiveKind::ReduceScatter:
    case CollectiveKind::Reduce:
      return {Shape::Spread, true, true};
    case CollectiveKind::Scatter:
    case CollectiveKind::AllToAll:
      return {Shape::Route, false, false};
    case CollectiveKind::Gather:
      return {Shape::Route, true, false};
    case CollectiveKind::AllReduce:
      break;
  }
  throw Error("All-Reduce has no single plan");
}

CollectiveKind forward_kind(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::ReduceScatter:
      return CollectiveKind::AllGather;
    case CollectiveKind::Reduce:
      return CollectiveKind::Broadcast;
    case CollectiveKind::Gather:
      return CollectiveKind::Scatter;
    default:
      return k;
  }
}

RawList run_forward(const topo::Topology& t, const ChannelGraph& g, const Collective& c,
                    const SynthOptions& o) {
  const int p = c.num_ranks();
  const ChunkId chunks = c.num_chunks();
  if (plan_for(c.kind).shape == Shape::Route) {
    RouteMatcher r(t, g, o);
    for (ChunkId ch = 0; ch < chunks; ++ch) {
      int target = c.needed_by(ch);
      r.add(ch, c.ranks[c.origin(ch)], c.ranks[target]);
    }
    return r.run();
  }
  SpreadMatcher s(t, g, chunks, o);
  for (ChunkId ch = 0; ch < chunks; ++ch) s.hold(c.ranks[c.origin(ch)], ch);
  std::vector<char> takes(t.num_npus(), 0);
  for (NodeId v : c.ranks) takes[v] = 1;
  if (p < t.num_npus()) {
    std::vector<NodeId> sources =
        c.kind == CollectiveKind::Broadcast ? std::vector<NodeId>{c.ranks[c.root]} : c.ranks;
    std::vector<char> on = relays(g, t.num_npus(), sources, c.ranks);
    for (NodeId v = 0; v < t.num_npus(); ++v) takes[v] = takes[v] || on[v];
  }
  for (NodeId v = 0; v < t.num_npus(); ++v)
    if (takes[v])
      for (ChunkId ch = 0; ch < chunks; ++ch) s.need(v, ch);
  return s.run();
}

Algorithm empty_algorithm(const topo::Topology& t, const Collective& c, Bytes chunk_bytes,
                          const SynthOptions& o) {
  return synth::empty_algorithm("tenet", t, c, chunk_bytes, o.link_model);
}

namespace {

// Drops what the matcher sent to relays (NPUs outside the communicator) that never went on to a
// member: such a relay has nothing to pass back once the schedule is reversed, and forward it only
// wasted a link. Children come after their parents, so one backward pass decides.
RawList prune_relays(const ChannelGraph& g, RawList raw, const Collective& c, int npus) {
  std::vector<char> member(npus, 0);
  for (NodeId v : c.ranks) member[v] = 1;
  std::vector<char> keep(raw.size(), 0);
  for (size_t i = raw.size(); i-- > 0;) {
    keep[i] = keep[i] || member[g[raw[i].channel].dst];
    if (keep[i] && raw[i].dep >= 0) keep[raw[i].dep] = 1;
  }
  std::vector<int32_t> index(raw.size(), -1);
  RawList out;
  for (size_t i = 0; i < raw.size(); ++i)
    if (keep[i]) {
      index[i] = static_cast<int32_t>(out.size());
      out.push_back(raw[i]);
      if (out.back().dep >= 0) out.back().dep = index[out.back().dep];
    }
  return out;
}

}  // namespace

Algorithm build(const topo::Topology& t, const ChannelGraph& g, RawList raw,
                const ForwardPlan& plan, const Collective& c, Bytes chunk_bytes,
                const SynthOptions& o, const std::vector<int32_t>* pace) {
  // `pace`: per transfer, one more it waits for (-1: none); from the pipelines, which run over
  // every NPU, so never pruned.
  if (c.num_ranks() < t.num_npus()) raw = prune_relays(g, std::move(raw), c, t.num_npus());
  Algorithm a = empty_algorithm(t, c, chunk_bytes, o);
  const size_t n = raw.size();
  size_t route_links = 0;
  raw.for_each([&](const Raw& r) { route_links += g[r.channel].route_size; });
  a.reserve(n, route_links, n);
  std::vector<LinkId> route;
  if (!plan.reversed) {  // already in start order; dep = the transfer that brought the chunk
    for (size_t i = 0; i < n; ++i) {
      const Raw& r = raw[i];
      const Channel& ch = g[r.channel];
      std::array<TransferId, 2> deps{r.dep, pace ? (*pace)[i] : -1};
      if (deps[0] > deps[1]) std::swap(deps[0], deps[1]);
      const size_t from = deps[0] < 0 || deps[0] == deps[1] ? 1 : 0;
      a.add(r.chunk, ch.src, ch.dst, g.route(ch), Op::Copy,
            deps[1] >= 0 ? std::span<const TransferId>(deps.data() + from, 2 - from)
                         : std::span<const TransferId>(),
            -1, -1, r.rate, r.queue, false, static_cast<uint16_t>(r.more + 1));
      raw.release_through(i);
    }
    return a;
  }
  // Reversed: forward transfer y depended on x (x brought the chunk to y's source), so the
  // reversed x waits for the reversed y. In reversed time, order by decreasing forward end.
  std::vector<int32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t x, int32_t y) { return raw[x].end > raw[y].end; });
  std::vector<TransferId> index(n);
  for (size_t k = 0; k < n; ++k) index[order[k]] = static_cast<TransferId>(k);
  // Children of each forward transfer: those it brought the chunk for, and those it paced.
  std::vector<int64_t> offset(n + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    if (raw[i].dep >= 0) ++offset[raw[i].dep + 1];
    if (pace && (*pace)[i] >= 0 && (*pace)[i] != raw[i].dep) ++offset[(*pace)[i] + 1];
  }
  std::partial_sum(offset.begin(), offset.end(), offset.begin());
  std::vector<TransferId> children(offset.back());
  std::vector<int64_t> next(offset.begin(), offset.end() - 1);
  for (size_t i = 0; i < n; ++i) {
    if (raw[i].dep >= 0) children[next[raw[i].dep]++] = index[i];
    if (pace && (*pace)[i] >= 0 && (*pace)[i] != raw[i].dep)
      children[next[(*pace)[i]]++] = index[i];
  }
  std::vector<char> member(t.num_nodes(), 0);
  for (NodeId v : c.ranks) member[v] = 1;
  // A node that holds nothing (a relay outside the communicator) takes its first partial as a
  // copy; later ones reduce into it and wait for that copy.
  std::map<std::pair<NodeId, ChunkId>, TransferId> first_copy;
  std::vector<TransferId> deps;
  for (size_t k = 0; k < n; ++k) {
    const Raw& r = raw[order[k]];
    const Channel& ch = g[r.channel];
    auto fwd = g.route(ch);
    route.assign(fwd.rbegin(), fwd.rend());
    deps.assign(children.begin() + offset[order[k]], children.begin() + offset[order[k] + 1]);
    Op op = plan.reduce ? Op::Reduce : Op::Copy;
    if (plan.reduce && !member[ch.src]) {
      auto [it, inserted] =
          first_copy.emplace(std::pair(ch.src, r.chunk), static_cast<TransferId>(k));
      if (inserted)
        op = Op::Copy;
      else
        deps.push_back(it->second);
    }
    std::sort(deps.begin(), deps.end());
    a.add(r.chunk, ch.dst, ch.src, route, op, deps, -1, -1, r.rate, r.queue, false,
          static_cast<uint16_t>(r.more + 1));
  }
  return a;
}

namespace {

double work_of(double channels, const Collective& forward) {
  return channels * static_cast<double>(transfer_estimate(forward)) /
         static_cast<double>(std::max(1, forward.num_ranks()));
}

}  // namespace

double matcher_work(const ChannelGraph& g, const Collective& forward) {
  return work_of(static_cast<double>(g.size()), forward);
}

double least_matcher_work(const topo::Topology& t, const Collective& forward) {
  int64_t channels = 0;
  for (const topo::Link& l : t.links()) channels += t.is_npu(l.src) && t.is_npu(l.dst);
  if (t.num_switches() > 0) {
    std::vector<int> seen(t.num_nodes(), -1);  // per node, the last NPU whose search reached it
    std::vector<NodeId> queue;
    for (NodeId u = 0; u < t.num_npus(); ++u) {
      queue.assign({u});
      seen[u] = u;
      for (size_t i = 0; i < queue.size(); ++i)
        for (topo::LinkId l : t.out_links(queue[i])) {
          const NodeId v = t.link(l).dst;
          if (seen[v] == u) continue;
          seen[v] = u;
          if (t.is_switch(v))
            queue.push_back(v);  // a route's interior: switches alone
          else if (queue[i] != u)
            ++channels;  // an NPU reached through switches
        }
    }
  }
  return work_of(static_cast<double>(channels), forward);
}

}  // namespace tenet::synth::detail
