// The time-expanded network's event loop, shared by the matchers (spread, route, way): arrivals and
// link releases in time order, and after each instant the dirty channels matched.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <numeric>
#include <queue>
#include <vector>

#include "synth/ten/channel_graph.hpp"
#include "synth/ten/raw_list.hpp"
#include "topo/topology.hpp"

namespace tenet::synth::detail {

// The event loop shared by both matchers: arrivals and link releases in time order; after each
// instant's events, the dirty channels are matched, fastest first. A link carries concurrent
// transfers whose rates sum to at most its bandwidth (under `hold`, one transfer at a time).
class EventLoop {
 public:
  EventLoop(const topo::Topology& t, const ChannelGraph& g, LinkModel model)
      : g_(g),
        hold_(model == LinkModel::Hold),
        spare_(t.num_links()),
        dirty_flag_(g.size(), 0),
        in_flight_(g.size(), 0) {
    // Under hold a link serves one transfer at a time: count it as 1 unit that a transfer takes.
    for (LinkId l = 0; l < t.num_links(); ++l) spare_[l] = hold_ ? 1 : t.link(l).bandwidth;
    for (ChannelId c = 1; c < static_cast<ChannelId>(g.size()); ++c)
      uniform_ = uniform_ && g[c].duration == g[0].duration;
    for (ChannelId c = 0; c < static_cast<ChannelId>(g.size()); ++c)
      routed_ = routed_ || g[c].route_size > 1;
    // Channels whose rates fit every link they share at once (a server plan's ways at their fluid
    // shares) never wait for each other: a release frees its own channel only.
    independent_ = !hold_;
    for (LinkId l = 0; independent_ && l < t.num_links(); ++l) {
      Bandwidth sum = 0;
      for (ChannelId c : g.on_link(l)) sum += held(g[c]);
      independent_ = sum <= spare_[l];
    }
    npus_ = t.num_npus();
    if (routed_) {  // per channel, its duration's rank and (dst - src) mod N: the routed order's
                    // keys
      shift_.resize(g.size());
      for (ChannelId c = 0; c < static_cast<ChannelId>(g.size()); ++c)
        shift_[c] = static_cast<int>(((g[c].dst - g[c].src) % npus_ + npus_) % npus_);
      std::vector<Time> durations;
      for (ChannelId c = 0; c < static_cast<ChannelId>(g.size()); ++c)
        durations.push_back(g[c].duration);
      std::sort(durations.begin(), durations.end());
      durations.erase(std::unique(durations.begin(), durations.end()), durations.end());
      speeds_ = static_cast<int>(durations.size());
      speed_.resize(g.size());
      for (ChannelId c = 0; c < static_cast<ChannelId>(g.size()); ++c)
        speed_[c] =
            static_cast<int>(std::lower_bound(durations.begin(), durations.end(), g[c].duration) -
                             durations.begin());
    }
    // Events scheduled `delay` after now are pushed in time order for a fixed delay: one FIFO per
    // distinct delay (and kind), and a small heap of the FIFOs' heads, instead of one big heap.
    std::vector<Time> delays;
    for (ChannelId c = 0; c < static_cast<ChannelId>(g.size()); ++c) {
      delays.push_back(g[c].duration);
      delays.push_back(g[c].occupancy);
    }
    std::sort(delays.begin(), delays.end());
    delays.erase(std::unique(delays.begin(), delays.end()), delays.end());
    arrival_class_.resize(g.size());
    free_class_.resize(g.size());
    for (ChannelId c = 0; c < static_cast<ChannelId>(g.size()); ++c) {
      auto index = [&](Time d) {
        return static_cast<int>(std::lower_bound(delays.begin(), delays.end(), d) - delays.begin());
      };
      arrival_class_[c] = 2 * index(g[c].duration);
      free_class_[c] = 2 * index(g[c].occupancy) + 1;
    }
    fifos_.resize(2 * delays.size());
  }

  const Channel& channel(ChannelId id) const { return g_[id]; }
  // Whether dirty channels are matched in the order they were marked (else sorted by speed and,
  // through switches, by shift): then which were marked, and when, changes the schedule.
  bool matches_in_marking_order() const { return uniform_ && !routed_; }
  void mark_dirty(ChannelId c) {
    if (!dirty_flag_[c]) {
      dirty_flag_[c] = 1;
      dirty_.push_back(c);
    }
  }
  void mark_all_dirty() {
    for (ChannelId c = 0; c < static_cast<ChannelId>(g_.size()); ++c) mark_dirty(c);
  }
  // Whether every link of the channel has the channel's rate to spare now.
  bool free_now(const Channel& c) const {
    for (LinkId l : g_.route(c))
      if (spare_[l] < held(c)) return false;
    return true;
  }
  // Occupies the channel's links from `t` (now); returns the arrival time.
  Time occupy(ChannelId id, Time t, int32_t transfer) {
    const Channel& c = g_[id];
    for (LinkId l : g_.route(c)) spare_[l] -= held(c);
    push(free_class_[id], {t + c.occupancy, 1, id});
    ++in_flight_[id];
    push(arrival_class_[id], {t + c.duration, 0, transfer});
    return t + c.duration;
  }

  // Runs until no event is left. `arrive(transfer)` handles an arrival; `match(channel, now)`
  // tries a dirty channel that is free.
  template <typename Arrive, typename Match>
  void run(Arrive&& arrive, Match&& match) {
    Time now = 0;
    process(now, match);
    while (!heads_.empty()) {
      now = heads_.top().event.time;
      while (!heads_.empty() && heads_.top().event.time == now) {
        const Event e = pop();
        if (e.kind == 0) {
          arrive(e.id);
        } else {  // the channel's transfer releases its links
          const Channel& ch = g_[e.id];
          --in_flight_[e.id];
          for (LinkId l : g_.route(ch)) {
            spare_[l] += held(ch);
            if (!independent_)
              for (ChannelId c : g_.on_link(l)) mark_dirty(c);
          }
          if (independent_) mark_dirty(e.id);
        }
      }
      process(now, match);
    }
  }

 private:
  struct Event {
    Time time;
    int kind;  // 0 arrival (id = transfer), 1 release of a channel's links (id = channel)
    int32_t id;
    bool operator>(const Event& o) const {
      if (time != o.time) return time > o.time;
      if (kind != o.kind) return kind > o.kind;
      return id > o.id;
    }
  };
  struct Head {
    Event event;
    int fifo;
    bool operator>(const Head& o) const { return event > o.event; }
  };
  struct Fifo {
    std::vector<Event> items;
    size_t front = 0;
  };
  void push(int fifo, const Event& e) {
    Fifo& f = fifos_[fifo];
    if (f.front == f.items.size()) {
      f.items.clear();
      f.front = 0;
      heads_.push({e, fifo});
    }
    f.items.push_back(e);
  }
  Event pop() {
    const int fifo = heads_.top().fifo;
    heads_.pop();
    Fifo& f = fifos_[fifo];
    const Event e = f.items[f.front++];
    if (f.front < f.items.size()) {
      heads_.push({f.items[f.front], fifo});
      if (f.front > 4096 && 2 * f.front > f.items.size()) {  // drop what was consumed
        f.items.erase(f.items.begin(), f.items.begin() + static_cast<std::ptrdiff_t>(f.front));
        f.front = 0;
      }
    }
    return e;
  }
  template <typename Match>
  void process(Time now, Match& match) {
    if (dirty_.empty()) return;
    if (routed_) {
      // Channels through switches compete for shared up- and downlinks. Considering them by the
      // shift (dst - src - round) mod N makes each round's greedy matching the perfect shift
      // permutation on a star, and rotates the shift from round to round.
      const int n = npus_;
      const int64_t round = round_ % n;
      auto shift_of = [&](ChannelId c) {
        const int s = shift_[c] - static_cast<int>(round);
        return s < 0 ? s + n : s;
      };
      const size_t buckets = static_cast<size_t>(speeds_) * n;
      if (dirty_.size() > static_cast<size_t>(n) && buckets <= 4 * dirty_.size()) {
        // Few distinct channel speeds (a switched fabric, where thousands of channels are dirty
        // each instant): the dirty channels in id order (from the flags when they are many), then
        // a stable counting sort by (speed, shift): the general sort's order below at a fraction of
        // its cost.
        if (dirty_.size() * 16 >= g_.size()) {
          dirty_.clear();
          for (ChannelId c = 0; c < static_cast<ChannelId>(g_.size()); ++c)
            if (dirty_flag_[c]) dirty_.push_back(c);
        } else {
          std::sort(dirty_.begin(), dirty_.end());
        }
        auto bucket = [&](ChannelId c) { return static_cast<size_t>(speed_[c]) * n + shift_of(c); };
        bucket_start_.assign(buckets + 1, 0);
        for (ChannelId c : dirty_) ++bucket_start_[bucket(c) + 1];
        std::partial_sum(bucket_start_.begin(), bucket_start_.end(), bucket_start_.begin());
        sorted_.resize(dirty_.size());
        for (ChannelId c : dirty_) sorted_[bucket_start_[bucket(c)]++] = c;
        dirty_.swap(sorted_);
      } else {
        keyed_.clear();
        for (ChannelId c : dirty_)
          keyed_.push_back(
              {g_[c].duration, static_cast<int64_t>(shift_of(c)) << 32 | static_cast<uint32_t>(c)});
        std::sort(keyed_.begin(), keyed_.end());
        for (size_t i = 0; i < keyed_.size(); ++i)
          dirty_[i] = static_cast<ChannelId>(keyed_[i].second & 0xffffffff);
      }
    } else if (!uniform_) {
      std::sort(dirty_.begin(), dirty_.end(), [&](ChannelId a, ChannelId b) {
        return g_[a].duration != g_[b].duration ? g_[a].duration < g_[b].duration : a < b;
      });
    }
    batch_.swap(dirty_);  // matching may dirty channels again: they go to the next round
    dirty_.clear();
    for (ChannelId c : batch_) dirty_flag_[c] = 0;
    bool matched = false;
    for (ChannelId c : batch_)
      if (free_now(g_[c]) && !(g_[c].pinned && in_flight_[c] > 0))
        matched = match(c, now) || matched;
    if (matched) ++round_;  // the shift rotates from one round of matches to the next
  }

  const ChannelGraph& g_;
  bool uniform_ = true;       // every channel equally fast: match in the order they became dirty
  bool routed_ = false;       // some channels go through switches
  bool independent_ = false;  // the channels' rates fit every link at once
  int npus_ = 0;
  int64_t round_ = 0;
  Bandwidth held(const Channel& c) const { return hold_ ? 1 : c.rate; }

  bool hold_;
  std::vector<Bandwidth> spare_;  // per link: bandwidth not held now (hold: 1 when free)
  std::vector<char> dirty_flag_;
  // Per channel, its transfers holding their links. A pinned channel (a way at its fluid share
  // of a fat link) carries one at a time: where the ways' rates fit every link at once, only a
  // way's own release wakes it, and a way that doubled up on a link's spare capacity would hold
  // its sibling off with nothing left to wake it (a Broadcast's double binary trees, two ways
  // sharing a NIC, stopped with chunks undelivered).
  std::vector<int32_t> in_flight_;
  std::vector<ChannelId> dirty_, batch_;
  std::vector<std::pair<Time, int64_t>> keyed_;  // (duration, shift and channel): the routed order
  std::vector<int> shift_;                       // per channel, (dst - src) mod N (routed only)
  std::vector<int>
      speed_;  // per channel, its duration's rank among the distinct ones (routed only)
  int speeds_ = 1;
  std::vector<int64_t> bucket_start_;  // the routed order's counting sort by (speed, shift)
  std::vector<ChannelId> sorted_;
  std::vector<int> arrival_class_, free_class_;  // per channel, its FIFO for each kind of event
  std::vector<Fifo> fifos_;
  std::priority_queue<Head, std::vector<Head>, std::greater<Head>> heads_;
};

// Channel `id` carries chunk `c` from `now`, `dep` having brought it to the channel's source (-1:
// held from the start): the matchers' one way to send. Returns the transfer's index.
inline int32_t send(RawList& raw, EventLoop& loop, ChunkId c, ChannelId id, Time now, int32_t dep) {
  const auto x = static_cast<int32_t>(raw.size());
  raw.push_back({.chunk = c,
                 .channel = id,
                 .dep = dep,
                 .queue = 0,
                 .more = 0,
                 .start = now,
                 .end = 0,
                 .rate = 0});
  raw.back().end = loop.occupy(id, now, x);
  if (loop.channel(id).pinned) raw.back().rate = loop.channel(id).rate;
  return x;
}

}  // namespace tenet::synth::detail
