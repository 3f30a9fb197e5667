// A ring Reduce-Scatter, All-Gather or All-Reduce held as its structure, not its transfers: the
// rings ("lanes"), what each member starts with, and the routes between neighbours. Every
// transfer is computed from its number on demand, so a replay needs memory for the members, not
// for the p^2 transfers (a 1 GiB All-Reduce ring over 4096 ranks is 33.5 million of them).
//
// The plan numbers its transfers exactly as the ring baseline lists them
// (synth/baselines/baselines.cpp, which materializes its rings from a plan): phase by phase
// (Reduce-Scatter, then All-Gather), lane by lane, step by step, member by member in ring position,
// chunk by chunk. Transfer (phase, lane, step s, position i, j) sends the j-th chunk of the block
// at position i - dir (s + 1) (Reduce-Scatter) or i - dir s (All-Gather) from position i to i + dir
// over the hop's routes in turn. Its one dependency is the arrival that brought its chunk to its
// source (the previous step's; All-Gather's first step waits for the Reduce-Scatter's last): the
// same dependency the materialized algorithm has, explicitly and implicitly (an All-Reduce's
// earlier Reduce-Scatter arrival of the chunk at the source precedes it transitively), so a plan
// replays in exactly its algorithm's time. Queues are the materialized algorithm's too: one per
// (first link, channel), in list order.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "synth/ir/algorithm.hpp"
#include "synth/ir/collective.hpp"
#include "topo/topology.hpp"

namespace tenet::synth {

class RingPlan {
 public:
  struct Hop {
    std::vector<std::vector<LinkId>> routes;  // used in turn, from `first` on
    uint32_t first = 0;
  };
  struct Lane {
    std::vector<NodeId> order;  // the members in ring order
    int dir = 1;                // position i sends to position i + dir (mod p)
    std::vector<Hop> hops;      // per position: from order[i] to order[i + dir]
    Bandwidth rate = 0;  // what its sends ask for; 0 (or above a route's narrowest): that narrowest
    uint16_t channel = 0;
    std::vector<std::vector<ChunkId>>
        blocks;  // per position: the chunks it owns, as many at every position
  };
  // What a transfer is, as the materialized algorithm lists it.
  struct Send {
    ChunkId chunk;
    NodeId src, dst;
    Op op;
    std::span<const LinkId> route;
    Bandwidth rate;  // as listed (Transfer::rate): 0 for the route's narrowest
    uint16_t channel;
  };

  // The plan of `c` (Reduce-Scatter, All-Gather or All-Reduce) over `lanes`. `efficiency` (at most
  // 1) scales every rate (a calibrated system's, Builder::finish). Throws tenet::Error for lanes
  // that do not fit (positions, routes, block sizes) or over 2^31 transfers.
  RingPlan(const topo::Topology& t, std::string name, const Collective& c, Bytes chunk_bytes,
           LinkModel model, Bandwidth reduce_bandwidth, double efficiency, std::vector<Lane> lanes);

  const std::string& name() const { return name_; }
  const Collective& collective() const { return collective_; }
  Bytes chunk_bytes() const { return chunk_bytes_; }
  LinkModel link_model() const { return model_; }
  // Whether its sends pay their routes' per-step costs (Algorithm::step_costs): as the topology
  // it was made for charges them.
  bool step_costs() const { return step_costs_; }
  // As Algorithm::reduce_bandwidth and Algorithm::reduction_time.
  Bandwidth reduce_bandwidth() const { return reduce_bandwidth_; }
  Time reduction_time() const {
    return reduce_bandwidth_ > 0 ? transfer_time(chunk_bytes_, reduce_bandwidth_) : 0;
  }
  const std::vector<Lane>& lanes() const { return lanes_; }

  TransferId size() const { return size_; }
  Send send(TransferId id) const {
    const At x = at(id);
    const Group& g = groups_[x.g];
    const Lane& lane = lanes_[g.lane];
    const int p = static_cast<int>(lane.order.size());
    const int r = route_index(g, x);
    return {lane.blocks[wrap(x.i - lane.dir * (x.s + (g.reduce ? 1 : 0)), p)][x.j],
            lane.order[x.i],
            lane.order[wrap(x.i + lane.dir, p)],
            g.reduce ? Op::Reduce : Op::Copy,
            lane.hops[x.i].routes[r],
            listed_rate_[g.lane][x.i][r],
            lane.channel};
  }
  std::span<const LinkId> route(TransferId id) const { return entry(id).route; }
  // What admission reads of a transfer, at once (TransferQueues::Entry): its route, the rate it
  // moves at and its queue.
  struct Entry {
    std::span<const LinkId> route;
    Bandwidth rate;
    int32_t queue;
  };
  // (TransferQueues::prefetch: a plan's transfers are computed, nothing to ask for ahead.)
  void prefetch(TransferId) const {}
  void prefetch_queue(TransferId) const {}
  Entry entry(TransferId id) const {
    const At x = at(id);
    const Group& g = groups_[x.g];
    const int r = route_index(g, x);
    return {lanes_[g.lane].hops[x.i].routes[r], rate_[g.lane][x.i][r],
            g.queue[route_begin_[g.lane][x.i] + r]};
  }
  // The rate it moves at: as listed, or its route's narrowest bandwidth (LinkAdmission::rate).
  Bandwidth rate(TransferId id) const { return entry(id).rate; }
  // The transfer that waits for `id`'s arrival (its chunk's next send from where it arrived), or
  // -1.
  TransferId user(TransferId id) const {
    const At x = at(id);
    const Group& g = groups_[x.g];
    const Lane& lane = lanes_[g.lane];
    const int p = static_cast<int>(lane.order.size());
    const int next = wrap(x.i + lane.dir, p);
    if (x.s + 2 < p) return id_of(g, x.s + 1, next, x.j);
    if (g.then < 0) return -1;
    return id_of(groups_[g.then], 0, next, x.j);
  }
  // Calls f(id) for each transfer that waits for nothing (the first phase's first step), in list
  // order.
  template <typename F>
  void first_sends(F&& f) const {
    for (const Group& g : groups_) {
      if (g.reduce != groups_.front().reduce) break;
      const TransferId first_step = static_cast<TransferId>(lanes_[g.lane].order.size()) * g.k;
      for (TransferId id = g.base; id < g.base + first_step; ++id) f(id);
    }
  }

  // Queues: transfers leaving over one first link in one channel, in list order (LinkAdmission).
  int32_t num_queues() const { return static_cast<int32_t>(queue_offset_.size()) - 1; }
  bool serial(int32_t) const {
    return false;
  }  // (a ring's channels are shared: Algorithm::serial_channels)
  int32_t queue_of(TransferId id) const { return entry(id).queue; }
  // The n-th transfer of queue q, or -1 past its end.
  TransferId queue_entry(int32_t q, int32_t n) const {
    for (int32_t e = queue_offset_[q]; e < queue_offset_[q + 1]; ++e) {
      const Segment& seg = queue_segments_[e];
      const Group& g = groups_[seg.group];
      const int64_t sends =
          static_cast<int64_t>(lanes_[g.lane].order.size() - 1) * g.k;  // from the position
      if (seg.period == 1) {  // one route (or one first link): every send
        if (n < sends) return id_of(g, n / g.k, seg.position, n % g.k);
        n -= static_cast<int32_t>(sends);
        continue;
      }
      // The position's sends n with n mod `period` among the segment's residues (sorted).
      int64_t length = 0;
      for (int r = 0; r < seg.residues; ++r)
        if (const int64_t first = residues_[seg.residue + r]; first < sends)
          length += (sends - first + seg.period - 1) / seg.period;
      if (n < length) {
        const int64_t m = static_cast<int64_t>(n / seg.residues) * seg.period +
                          residues_[seg.residue + n % seg.residues];
        return id_of(g, static_cast<int>(m / g.k), seg.position, static_cast<int>(m % g.k));
      }
      n -= static_cast<int32_t>(length);
    }
    return -1;
  }

  // Calls f(route, rate, sends) for each route of each hop of each phase: `sends` of the plan's
  // transfers take it at `rate` (as listed, Send::rate). Per hop and route, not per transfer: what
  // the links carry in all, at the cost of the hops' routes alone.
  template <typename F>
  void for_each_route_use(F&& f) const {
    for (const Group& g : groups_) {
      const Lane& lane = lanes_[g.lane];
      const int64_t sends = static_cast<int64_t>(lane.order.size() - 1) * g.k;  // over a hop
      for (size_t i = 0; i < lane.order.size(); ++i) {
        const auto routes = static_cast<int64_t>(lane.hops[i].routes.size());
        for (int64_t r = 0; r < routes; ++r) {
          // Send n takes route (pick + n) mod routes (route_index).
          const int64_t first = ((r - g.pick[i]) % routes + routes) % routes;
          const int64_t n = first < sends ? (sends - first + routes - 1) / routes : 0;
          if (n > 0)
            f(std::span<const LinkId>(lane.hops[i].routes[r]), listed_rate_[g.lane][i][r], n);
        }
      }
    }
  }

  // The same collective as a list of transfers (untimed): what the ring baseline returns.
  Algorithm materialize(const topo::Topology& t) const;

 private:
  // A phase of one lane: its transfers are numbered from `base`, (s p + i) k + j.
  struct Group {
    TransferId base = 0;
    int lane = 0;
    bool reduce = false;
    int32_t k = 0;               // chunks per block
    int then = -1;               // the lane's All-Gather group after this Reduce-Scatter, if any
    std::vector<uint32_t> pick;  // per position: the route index of its first send over the hop
    std::vector<int32_t> queue;  // per position and route (route_begin_): its queue
  };
  struct At {
    int g, s, i, j;
  };
  // A queue's transfers from one position of one group: its sends n (numbered s k + j) with
  // n mod `period` (the hop's routes) among `residues` sorted entries of residues_ from `residue`.
  struct Segment {
    int group, position;
    int period, residue, residues;
  };
  static int wrap(int64_t x, int n) { return static_cast<int>(((x % n) + n) % n); }
  At at(TransferId id) const {
    int g = 0;
    while (g + 1 < static_cast<int>(groups_.size()) && groups_[g + 1].base <= id) ++g;
    const Group& group = groups_[g];
    const int p = static_cast<int>(lanes_[group.lane].order.size());
    const TransferId r = id - group.base;
    if (group.k == 1)
      return {g, static_cast<int>(r / p), static_cast<int>(r % p), 0};  // a division saved
    const TransferId q = r / group.k;
    return {g, static_cast<int>(q / p), static_cast<int>(q % p), static_cast<int>(r % group.k)};
  }
  TransferId id_of(const Group& g, int s, int i, int j) const {
    const auto p = static_cast<TransferId>(lanes_[g.lane].order.size());
    return g.base + (static_cast<TransferId>(s) * p + i) * g.k + j;
  }
  int route_index(const Group& g, const At& x) const {
    const size_t routes = lanes_[g.lane].hops[x.i].routes.size();
    if (routes == 1) return 0;
    return static_cast<int>((g.pick[x.i] + static_cast<uint64_t>(x.s) * g.k + x.j) % routes);
  }

  std::string name_;
  Collective collective_;
  Bytes chunk_bytes_;
  LinkModel model_;
  bool step_costs_ = false;
  Bandwidth reduce_bandwidth_ = 0;
  std::vector<Lane> lanes_;
  std::vector<Group> groups_;
  TransferId size_ = 0;
  // Per lane, position and route: the rate as listed, and as moved at.
  std::vector<std::vector<std::vector<Bandwidth>>> listed_rate_, rate_;
  std::vector<std::vector<int32_t>>
      route_begin_;  // per lane and position: its first route's number
  std::vector<int32_t> queue_offset_;
  std::vector<Segment> queue_segments_;
  std::vector<int32_t> residues_;
};

}  // namespace tenet::synth
