#include "synth/ir/ring_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <limits>
#include <map>
#include <numeric>
#include <unordered_map>

#include "synth/cost/timing.hpp"
#include "topo/error.hpp"

namespace tenet::synth {

namespace {
// Throws unless every lane fits (sizes, direction, routes); returns its chunks per block.
std::vector<int32_t> chunks_per_block(const std::vector<RingPlan::Lane>& lanes) {
  std::vector<int32_t> k(lanes.size(), 0);
  for (size_t l = 0; l < lanes.size(); ++l) {
    const RingPlan::Lane& lane = lanes[l];
    const size_t p = lane.order.size();
    if (p < 2 || lane.hops.size() != p || lane.blocks.size() != p ||
        (lane.dir != 1 && lane.dir != -1))
      throw Error(fmt::format("ring plan lane {}: {} members, {} hops, {} blocks, direction {}", l,
                              p, lane.hops.size(), lane.blocks.size(), lane.dir));
    k[l] = static_cast<int32_t>(lane.blocks[0].size());
    for (size_t i = 0; i < p; ++i) {
      if (static_cast<int32_t>(lane.blocks[i].size()) != k[l])
        throw Error(fmt::format("ring plan lane {}: position {} owns {} chunks, position 0 {}", l,
                                i, lane.blocks[i].size(), k[l]));
      const RingPlan::Hop& h = lane.hops[i];
      if (h.routes.empty())
        throw Error(fmt::format("ring plan lane {}: no route from position {}", l, i));
      for (const std::vector<LinkId>& r : h.routes)
        if (r.empty())
          throw Error(fmt::format("ring plan lane {}: an empty route from position {}", l, i));
    }
  }
  return k;
}

// Per lane and position: the number of its first route among the lane's routes.
std::vector<std::vector<int32_t>> route_begins(const std::vector<RingPlan::Lane>& lanes) {
  std::vector<std::vector<int32_t>> route_begin(lanes.size());
  for (size_t l = 0; l < lanes.size(); ++l) {
    int32_t at = 0;
    for (const RingPlan::Hop& h : lanes[l].hops) {
      route_begin[l].push_back(at);
      at += static_cast<int32_t>(h.routes.size());
    }
  }
  return route_begin;
}

// The hop's sends n below its routes and `sends`, from route `pick` on, by their first link.
std::vector<std::pair<LinkId, std::vector<int32_t>>> sends_by_first_link(const RingPlan::Hop& h,
                                                                         uint32_t pick,
                                                                         int64_t sends) {
  const int period = static_cast<int>(h.routes.size());
  std::vector<std::pair<LinkId, std::vector<int32_t>>> by_link;  // in order of first take
  for (int n = 0; n < period && n < sends; ++n) {
    const LinkId first = h.routes[(pick + n) % period][0];
    auto it = std::find_if(by_link.begin(), by_link.end(),
                           [&](const auto& e) { return e.first == first; });
    if (it == by_link.end())
      by_link.push_back({first, {n}});
    else
      it->second.push_back(n);
  }
  return by_link;
}

// Per lane, position and route: the rate as listed (`listed_rate`) and as moved at (`moved_rate`).
void lane_rates(const topo::Topology& t, const std::vector<RingPlan::Lane>& lanes,
                Bytes chunk_bytes, LinkModel model, double efficiency,
                std::vector<std::vector<std::vector<Bandwidth>>>& listed_rate,
                std::vector<std::vector<std::vector<Bandwidth>>>& moved_rate) {
  RouteCoster cost(t, chunk_bytes, model, t.charges_steps());
  listed_rate.resize(lanes.size());
  moved_rate.resize(lanes.size());
  for (size_t l = 0; l < lanes.size(); ++l)
    for (const RingPlan::Hop& h : lanes[l].hops) {
      std::vector<Bandwidth> listed, moved;
      for (const std::vector<LinkId>& r : h.routes) {
        Bandwidth narrowest = std::numeric_limits<Bandwidth>::max();
        for (LinkId id : r) {
          if (id < 0 || id >= t.num_links())
            throw Error(fmt::format("ring plan: link {} is not in the topology", id));
          narrowest = std::min(narrowest, t.link(id).bandwidth);
        }
        Bandwidth rate = lanes[l].rate > 0 && lanes[l].rate < narrowest ? lanes[l].rate : 0;
        if (efficiency < 1.0)
          rate = std::max<Bandwidth>(
              1, static_cast<Bandwidth>(static_cast<double>(rate > 0 ? rate : narrowest) *
                                        efficiency));
        listed.push_back(rate);
        moved.push_back(cost(r, rate).rate);
      }
      listed_rate[l].push_back(std::move(listed));
      moved_rate[l].push_back(std::move(moved));
    }
}
}  // namespace

RingPlan::RingPlan(const topo::Topology& t, std::string name, const Collective& c,
                   Bytes chunk_bytes, LinkModel model, Bandwidth reduce_bandwidth,
                   double efficiency, std::vector<Lane> lanes)
    : name_(std::move(name)),
      collective_(c),
      chunk_bytes_(chunk_bytes),
      model_(model),
      step_costs_(t.charges_steps()),
      lanes_(std::move(lanes)) {
  const bool rs = c.kind == CollectiveKind::ReduceScatter || c.kind == CollectiveKind::AllReduce;
  const bool ag = c.kind == CollectiveKind::AllGather || c.kind == CollectiveKind::AllReduce;
  if (!rs && !ag)
    throw Error(fmt::format("a ring plan runs reduce-scatter, all-gather or all-reduce, not {}",
                            to_string(c.kind)));
  if (chunk_bytes < 1) throw Error("chunk size must be at least 1 byte");
  const std::vector<int32_t> k = chunks_per_block(lanes_);
  // Groups: Reduce-Scatter lane by lane, then All-Gather; per group and position, where its sends
  // start in the hop's routes (the ring baseline takes a pair's routes in turn over all its sends).
  int64_t next = 0;
  std::map<std::pair<NodeId, NodeId>, uint64_t> sent;
  std::vector<int> gather_of(lanes_.size(), -1);
  for (int phase = 0; phase < 2; ++phase) {
    if ((phase == 0 && !rs) || (phase == 1 && !ag)) continue;
    for (size_t l = 0; l < lanes_.size(); ++l) {
      if (k[l] == 0) continue;
      const Lane& lane = lanes_[l];
      const int p = static_cast<int>(lane.order.size());
      Group g;
      g.base = static_cast<TransferId>(next);
      g.lane = static_cast<int>(l);
      g.reduce = phase == 0;
      g.k = k[l];
      g.pick.resize(p);
      for (int i = 0; i < p; ++i) {
        uint64_t& before = sent[{lane.order[i], lane.order[wrap(i + lane.dir, p)]}];
        g.pick[i] =
            static_cast<uint32_t>((lane.hops[i].first + before) % lane.hops[i].routes.size());
        before += static_cast<uint64_t>(p - 1) * g.k;
      }
      next += static_cast<int64_t>(p - 1) * p * g.k;
      if (next > INT32_MAX)
        throw Error(fmt::format("ring plan too large: over 2^31 transfers ({} ranks)", p));
      if (phase == 1) gather_of[l] = static_cast<int>(groups_.size());
      groups_.push_back(std::move(g));
    }
  }
  size_ = static_cast<TransferId>(next);
  for (Group& g : groups_)
    if (g.reduce) g.then = gather_of[g.lane];
  route_begin_ = route_begins(lanes_);
  // Queues per (first link, channel), numbered in order of first use (as TransferQueues numbers
  // them). A hop whose routes leave over several links (parallel links) feeds each of their queues
  // every so many sends: send n takes route (pick + n) mod routes.
  std::unordered_map<uint64_t, int32_t> key_index;  // -> keys' and segments' index
  std::vector<std::vector<Segment>> segments;
  std::vector<TransferId> first_use;
  auto key_of = [](LinkId first, uint16_t channel) {
    return static_cast<uint64_t>(first) << 16 | channel;
  };
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    const Group& g = groups_[gi];
    const Lane& lane = lanes_[g.lane];
    for (size_t i = 0; i < lane.order.size(); ++i) {
      const Hop& h = lane.hops[i];
      const int period = static_cast<int>(h.routes.size());
      const int64_t sends = static_cast<int64_t>(lane.order.size() - 1) * g.k;  // over the hop
      for (const auto& [first, ns] : sends_by_first_link(h, g.pick[i], sends)) {
        auto [it, fresh] = key_index.try_emplace(key_of(first, lane.channel),
                                                 static_cast<int32_t>(segments.size()));
        if (fresh) {
          segments.emplace_back();
          first_use.push_back(id_of(g, ns[0] / g.k, static_cast<int>(i), ns[0] % g.k));
        }
        segments[it->second].push_back({static_cast<int>(gi), static_cast<int>(i), period,
                                        static_cast<int>(residues_.size()),
                                        static_cast<int>(ns.size())});
        residues_.insert(residues_.end(), ns.begin(), ns.end());
      }
    }
  }
  std::vector<int32_t> by_first(segments.size()), number(segments.size());
  std::iota(by_first.begin(), by_first.end(), 0);
  std::sort(by_first.begin(), by_first.end(),
            [&](int32_t x, int32_t y) { return first_use[x] < first_use[y]; });
  for (size_t q = 0; q < by_first.size(); ++q) number[by_first[q]] = static_cast<int32_t>(q);
  queue_offset_.assign(1, 0);
  for (int32_t x : by_first) {
    queue_segments_.insert(queue_segments_.end(), segments[x].begin(), segments[x].end());
    queue_offset_.push_back(static_cast<int32_t>(queue_segments_.size()));
  }
  for (Group& g : groups_) {
    const Lane& lane = lanes_[g.lane];
    g.queue.resize(static_cast<size_t>(route_begin_[g.lane].back()) +
                   lane.hops.back().routes.size());
    for (size_t i = 0; i < lane.order.size(); ++i)
      for (size_t r = 0; r < lane.hops[i].routes.size(); ++r)
        if (auto it = key_index.find(key_of(lane.hops[i].routes[r][0], lane.channel));
            it != key_index.end())
          g.queue[route_begin_[g.lane][i] + r] = number[it->second];  // else: a route no send takes
  }
  // Rates as the ring baseline lists them (Builder::send_on, Builder::finish) and as they move.
  lane_rates(t, lanes_, chunk_bytes, model, efficiency, listed_rate_, rate_);
  // As Builder::finish: an algorithm without reductions keeps no reduction bandwidth.
  if (std::any_of(groups_.begin(), groups_.end(), [](const Group& g) { return g.reduce; }))
    reduce_bandwidth_ = reduce_bandwidth;
}

Algorithm RingPlan::materialize(const topo::Topology& t) const {
  Algorithm a;
  a.name = name_;
  a.collective = collective_;
  a.topology_fingerprint = t.fingerprint();
  a.topology_name = t.name();
  a.chunk_bytes = chunk_bytes_;
  a.link_model = model_;
  a.step_costs = step_costs_;
  a.reduce_bandwidth = reduce_bandwidth_;
  // Each transfer depends on the arrival that brought its chunk (the one whose user it is), as
  // the ring baseline lists it.
  std::vector<TransferId> brought(static_cast<size_t>(size_), -1);
  size_t route_links = 0;
  for (TransferId id = 0; id < size_; ++id) {
    if (const TransferId u = user(id); u >= 0) brought[u] = id;
    route_links += route(id).size();
  }
  a.reserve(static_cast<size_t>(size_), route_links, static_cast<size_t>(size_));
  for (TransferId id = 0; id < size_; ++id) {
    const Send x = send(id);
    const TransferId dep = brought[id];
    a.add(x.chunk, x.src, x.dst, x.route, x.op,
          dep >= 0 ? std::span<const TransferId>(&dep, 1) : std::span<const TransferId>{}, -1, -1,
          x.rate, x.channel);
  }
  return a;
}

}  // namespace tenet::synth
