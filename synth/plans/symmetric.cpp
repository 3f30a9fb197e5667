#include "synth/plans/symmetric.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <numeric>
#include <queue>
#include <span>
#include <tuple>

#include "synth/cost/timing.hpp"

namespace tenet::synth {

namespace {

// A way out of NPU 0: a link to an NPU, or a link to a switch and one on from it to an NPU. Moved
// to NPU x it leaves x for x + to.
struct Way {
  topo::NodeId to = 0;
  int links = 1;
  std::array<int, 2> orbits{-1, -1};  // its links' orbits (topo::Translations::orbit)
  Time busy = 0, delay = 0;           // how long a send holds its links; when it arrives
  int group = 0;                      // ways on the same orbits decide together
};

std::vector<Way> ways_out(const topo::Topology& t, const topo::Translations& tr, Bytes chunk_bytes,
                          LinkModel model) {
  std::vector<Way> ways;
  auto add = [&](topo::NodeId to, std::span<const LinkId> route) {
    Way w;
    w.to = to;
    w.links = static_cast<int>(route.size());
    Bandwidth narrowest = t.link(route[0]).bandwidth;
    Time latency = 0;
    for (int i = 0; i < w.links; ++i) {
      w.orbits[i] = tr.orbit(route[i]);
      narrowest = std::min(narrowest, t.link(route[i]).bandwidth);
      latency += t.link(route[i]).latency;
    }
    const Time tx = transfer_time(chunk_bytes, narrowest);
    w.delay = tx + latency;
    w.busy = model == LinkModel::Hold ? w.delay : tx;
    ways.push_back(w);
  };
  for (int j = 0; j < tr.num_out_slots(); ++j) {
    const LinkId l = tr.out_link(0, j);
    const topo::NodeId v = t.link(l).dst;
    if (t.is_npu(v)) {
      add(v, std::array{l});
      continue;
    }
    for (LinkId m : t.out_links(v))
      if (t.link(m).dst != 0) add(t.link(m).dst, std::array{l, m});
  }
  std::map<std::array<int, 2>, int> groups;
  for (Way& w : ways) {
    std::array<int, 2> key = w.orbits;
    std::sort(key.begin(), key.end());
    w.group = groups.emplace(key, static_cast<int>(groups.size())).first->second;
  }
  return ways;
}

// A transfer of rank 0's schedule: `chunk` (0..k-1) from NPU `from` over way `way`.
struct Send {
  Time start = 0, end = 0;  // end: when it has arrived
  ChunkId chunk = 0;
  topo::NodeId from = 0;
  int way = 0;
};

enum class Pick : uint8_t { Scarce, Waiting, Latest };

struct Schedule {
  std::vector<Send> sends;  // in start order
  Time makespan = 0;
  void add(const Send& send) {
    sends.push_back(send);
    makespan = std::max(makespan, send.end);
  }
};

// Where each way leads from each NPU: [w * n + x].
std::vector<topo::NodeId> way_ends(const topo::Translations& tr, const std::vector<Way>& ways) {
  const int n = tr.num_npus();
  std::vector<topo::NodeId> to(ways.size() * static_cast<size_t>(n));
  for (size_t w = 0; w < ways.size(); ++w) {
    topo::Translations::Walker walk(tr, ways[w].to);
    for (topo::NodeId x = 0; x < n; ++x, walk.step()) to[w * n + x] = walk.at();
  }
  return to;
}

int group_count(const std::vector<Way>& ways) {
  int groups = 0;
  for (const Way& w : ways) groups = std::max(groups, w.group + 1);
  return groups;
}

constexpr Time kNever = std::numeric_limits<Time>::max();

// The orbits' clock: when each orbit's links are free, and when each group of ways (ways over the
// same orbits) decides next.
class Clock {
 public:
  Clock(const std::vector<Way>& ways, int orbits)
      : free_(orbits, 0), next_(group_count(ways), kNever), first_(next_.size()) {
    for (const Way& w : ways) first_[w.group] = &w;
  }
  // Group g has something to send from `when` on: it decides then, or once its links are free.
  void wake(int g, Time when) { next_[g] = std::min(next_[g], std::max(when, free_at(g))); }
  // Group g has nothing to send before `when` (kNever: nothing until woken).
  void sleep(int g, Time when) { next_[g] = when; }
  // The group that decides next and when: the earliest whose links are free then. Nothing when no
  // group has anything left to send.
  std::optional<std::pair<int, Time>> next() {
    for (;;) {
      const int g = static_cast<int>(std::min_element(next_.begin(), next_.end()) - next_.begin());
      const Time now = next_[g];
      if (now == kNever) return std::nullopt;
      if (const Time f = free_at(g); f > now) {
        next_[g] = f;  // another group took a link it shares
        continue;
      }
      return std::pair{g, now};
    }
  }
  // `way` sends at `now`: its links are busy, and its group decides again once they are free.
  void send(const Way& way, Time now) {
    for (int i = 0; i < way.links; ++i) free_[way.orbits[i]] = now + way.busy;
    next_[way.group] = now + way.busy;
  }

 private:
  Time free_at(int g) const {
    Time f = 0;
    for (int i = 0; i < first_[g]->links; ++i) f = std::max(f, free_[first_[g]->orbits[i]]);
    return f;
  }
  std::vector<Time> free_, next_;  // per orbit; per group
  std::vector<const Way*> first_;  // a way of each group: its orbits are the group's
};

// Rank 0's All-Gather on the orbits (see symmetric.hpp), its chunks picked by `pick`.
Schedule one_rank(const topo::Translations& tr, const std::vector<Way>& ways, int k, Pick pick) {
  const int n = tr.num_npus(), count = static_cast<int>(ways.size());
  constexpr int kRefreshes = 4;
  const std::vector<topo::NodeId> to = way_ends(tr, ways);
  const int groups = group_count(ways);
  std::vector<char> reached(static_cast<size_t>(k) * n, 0);    // holds the chunk or has it coming
  std::vector<int32_t> supply(static_cast<size_t>(k) * n, 0);  // ways into it from NPUs so reached
  auto at = [n](ChunkId c, topo::NodeId x) { return static_cast<size_t>(c) * n + x; };

  struct Candidate {
    int64_t key = 0;  // what the pick ranks first (scarce: the ways into the target from NPUs that
                      // have its chunk or have it coming); then `order`, then `seq`
    Time order = 0;
    Time ready = 0;
    int64_t seq = 0;
    ChunkId chunk = 0;
    topo::NodeId x = 0;
    int way = 0;
    int refreshed = 0;  // how often its key was found stale
  };
  auto later_ready = [](const Candidate& a, const Candidate& b) {
    return std::tie(a.ready, a.seq) > std::tie(b.ready, b.seq);
  };
  auto worse = [](const Candidate& a, const Candidate& b) {
    return std::tie(a.key, a.order, a.seq) > std::tie(b.key, b.order, b.seq);
  };
  using Pending = std::priority_queue<Candidate, std::vector<Candidate>, decltype(later_ready)>;
  using Ready = std::priority_queue<Candidate, std::vector<Candidate>, decltype(worse)>;
  std::vector<Pending> pending(groups, Pending(later_ready));
  std::vector<Ready> ready(groups, Ready(worse));
  Clock clock(ways, tr.num_orbits());
  auto target = [&](const Candidate& c) { return to[static_cast<size_t>(c.way) * n + c.x]; };
  int64_t seq = 0;
  auto offer = [&](ChunkId c, topo::NodeId x, Time when) {
    for (int w = 0; w < count; ++w) {
      const topo::NodeId y = to[static_cast<size_t>(w) * n + x];
      ++supply[at(c, y)];
      if (reached[at(c, y)]) continue;
      const int g = ways[w].group;
      pending[g].push(Candidate{0, 0, when, seq++, c, x, w});
      clock.wake(g, when);
    }
  };
  for (ChunkId c = 0; c < k; ++c) {
    reached[at(c, 0)] = 1;
    offer(c, 0, 0);
  }

  Schedule s;
  s.sends.reserve(static_cast<size_t>(n - 1) * k);
  const int64_t needed = static_cast<int64_t>(n - 1) * k;
  while (static_cast<int64_t>(s.sends.size()) < needed) {
    const std::optional<std::pair<int, Time>> decides = clock.next();
    if (!decides) break;  // no NPU can feed another: cannot happen on a connected topology
    const auto [g, now] = *decides;
    while (!pending[g].empty() && pending[g].top().ready <= now) {
      Candidate cand = pending[g].top();
      pending[g].pop();
      const topo::NodeId y = target(cand);
      if (reached[at(cand.chunk, y)]) continue;
      cand.order = pick == Pick::Latest ? -cand.ready : cand.ready;
      if (pick == Pick::Scarce) cand.key = supply[at(cand.chunk, y)];
      ready[g].push(cand);
    }
    std::optional<Candidate> chosen;
    while (!ready[g].empty()) {
      Candidate cand = ready[g].top();
      ready[g].pop();
      const topo::NodeId y = target(cand);
      if (reached[at(cand.chunk, y)]) continue;
      if (pick == Pick::Scarce && supply[at(cand.chunk, y)] > cand.key &&
          cand.refreshed < kRefreshes) {
        // Suppliers only grow: a key still right is the least of all, and so is one no worse
        // than the next one's, right or not. (Past a few refreshes a key is taken as it is: on
        // hundreds of ways, as on rails, every arrival raises thousands of keys.)
        cand.key = supply[at(cand.chunk, y)];
        ++cand.refreshed;
        if (!ready[g].empty() && worse(cand, ready[g].top())) {
          ready[g].push(cand);
          continue;
        }
      }
      chosen = cand;
      break;
    }
    if (!chosen) {
      clock.sleep(g, pending[g].empty() ? kNever : std::max(now, pending[g].top().ready));
      continue;
    }
    const Way& way = ways[chosen->way];
    const topo::NodeId y = target(*chosen);
    reached[at(chosen->chunk, y)] = 1;
    s.add(Send{now, now + way.delay, chosen->chunk, chosen->x, chosen->way});
    clock.send(way, now);
    offer(chosen->chunk, y, now + way.delay);
  }
  if (static_cast<int64_t>(s.sends.size()) < needed) s.makespan = kNever;
  return s;
}

// Rank 0's All-to-All on the orbits: each chunk to its destination along a way of fewest hops,
// each hop over the way (of those that keep the path shortest) whose orbits carry the least so far,
// destinations furthest first; then, whenever a group's orbits are free, the chunk ready there with
// the most hops still to go. Send::chunk is the chunk's index in `chunks` (destination, copy).
struct Routed {
  Schedule schedule;
  std::vector<std::pair<topo::NodeId, int>> chunks;
};

Routed one_rank_to_each(const topo::Translations& tr, const std::vector<Way>& ways, int k) {
  const int n = tr.num_npus();
  const std::vector<topo::NodeId> to = way_ends(tr, ways);
  const int groups = group_count(ways);
  auto end_of = [&](int w, topo::NodeId x) { return to[static_cast<size_t>(w) * n + x]; };
  Routed r;
  // Hops from NPU 0 (from x to d: hops[d - x]).
  std::vector<int> hops(n, -1);
  std::vector<topo::NodeId> queue{0};
  hops[0] = 0;
  for (size_t i = 0; i < queue.size(); ++i)
    for (size_t w = 0; w < ways.size(); ++w)
      if (const topo::NodeId y = end_of(static_cast<int>(w), queue[i]); hops[y] < 0) {
        hops[y] = hops[queue[i]] + 1;
        queue.push_back(y);
      }
  if (static_cast<int>(queue.size()) < n) {
    r.schedule.makespan = kNever;
    return r;
  }
  std::vector<topo::NodeId> order(queue.begin() + 1, queue.end());
  std::stable_sort(order.begin(), order.end(),
                   [&](topo::NodeId a, topo::NodeId b) { return hops[a] > hops[b]; });
  std::vector<Time> load(tr.num_orbits(), 0);
  std::vector<std::vector<int>> paths;  // per chunk, its ways
  for (topo::NodeId d : order)
    for (int q = 0; q < k; ++q) {
      std::vector<int> path;
      for (topo::NodeId x = 0; x != d;) {
        const int left = hops[tr.shift(d, tr.negate(x))];
        int best = -1;
        Time best_load = kNever;
        for (int w = 0; w < static_cast<int>(ways.size()); ++w) {
          const topo::NodeId y = end_of(w, x);
          if (hops[tr.shift(d, tr.negate(y))] != left - 1) continue;
          Time most = 0;
          for (int i = 0; i < ways[w].links; ++i)
            most = std::max(most, load[ways[w].orbits[i]] + ways[w].busy);
          if (most < best_load) {
            best = w;
            best_load = most;
          }
        }
        for (int i = 0; i < ways[best].links; ++i) load[ways[best].orbits[i]] += ways[best].busy;
        path.push_back(best);
        x = end_of(best, x);
      }
      r.chunks.emplace_back(d, q);
      paths.push_back(std::move(path));
    }

  // The translations commute, so a chunk's ways lead to its destination in any order: each hop
  // takes whichever of its remaining ways' orbits is free first.
  struct Candidate {
    int64_t left = 0;  // hops still to go, the most first
    Time ready = 0;
    int64_t seq = 0;
    int chunk = 0;
    int taken = 0;  // the chunk's hops taken when offered: stale once it has moved on
    topo::NodeId x = 0;
  };
  auto later_ready = [](const Candidate& a, const Candidate& b) {
    return std::tie(a.ready, a.seq) > std::tie(b.ready, b.seq);
  };
  auto worse = [](const Candidate& a, const Candidate& b) {
    return std::make_tuple(-a.left, a.ready, a.seq) > std::make_tuple(-b.left, b.ready, b.seq);
  };
  using Pending = std::priority_queue<Candidate, std::vector<Candidate>, decltype(later_ready)>;
  using Ready = std::priority_queue<Candidate, std::vector<Candidate>, decltype(worse)>;
  std::vector<Pending> pending(groups, Pending(later_ready));
  std::vector<Ready> ready(groups, Ready(worse));
  Clock clock(ways, tr.num_orbits());
  std::vector<int> taken(paths.size(),
                         0);  // hops each chunk has taken; paths[c][taken..] are still to go
  int64_t seq = 0, needed = 0;
  auto offer = [&](int chunk, topo::NodeId x, Time when) {
    const std::vector<int>& path = paths[chunk];
    for (size_t i = taken[chunk]; i < path.size(); ++i) {
      const int g = ways[path[i]].group;
      bool seen = false;  // one candidate per group
      for (size_t j = taken[chunk]; j < i && !seen; ++j) seen = ways[path[j]].group == g;
      if (seen) continue;
      pending[g].push(Candidate{static_cast<int64_t>(path.size()) - taken[chunk], when, seq++,
                                chunk, taken[chunk], x});
      clock.wake(g, when);
    }
  };
  for (int c = 0; c < static_cast<int>(paths.size()); ++c) {
    needed += static_cast<int64_t>(paths[c].size());
    offer(c, 0, 0);
  }
  Schedule& s = r.schedule;
  s.sends.reserve(static_cast<size_t>(needed));
  while (static_cast<int64_t>(s.sends.size()) < needed) {
    const std::optional<std::pair<int, Time>> decides = clock.next();
    if (!decides) break;
    const auto [g, now] = *decides;
    while (!pending[g].empty() && pending[g].top().ready <= now) {
      if (pending[g].top().taken == taken[pending[g].top().chunk]) ready[g].push(pending[g].top());
      pending[g].pop();
    }
    while (!ready[g].empty() && ready[g].top().taken != taken[ready[g].top().chunk]) ready[g].pop();
    if (ready[g].empty()) {
      clock.sleep(g, pending[g].empty() ? kNever : pending[g].top().ready);
      continue;
    }
    const Candidate chosen = ready[g].top();
    ready[g].pop();
    std::vector<int>& path = paths[chosen.chunk];
    size_t i = taken[chosen.chunk];
    while (ways[path[i]].group != g) ++i;
    std::swap(path[i], path[taken[chosen.chunk]]);
    const int w = path[taken[chosen.chunk]++];
    const Way& way = ways[w];
    s.add(Send{now, now + way.delay, chosen.chunk, chosen.x, w});
    clock.send(way, now);
    if (taken[chosen.chunk] < static_cast<int>(path.size()))
      offer(chosen.chunk, end_of(w, chosen.x), now + way.delay);
  }
  if (static_cast<int64_t>(s.sends.size()) < needed) s.makespan = kNever;
  return r;
}

}  // namespace

// What a schedule by translation keeps between its timing and its writing out: rank 0's schedule,
// how to move it, and its quotient, timed.
struct SymmetricSchedule::State {
  const topo::Topology& t;
  Collective c;
  Bytes chunk_bytes;
  LinkModel model;
  topo::Translations tr;
  std::vector<Way> ways;
  Schedule best;
  Routed routed;  // an All-to-All's
  std::vector<int> rank_of;
  Algorithm quotient;

  // Writes the algorithm into `a` in list order: each send of rank 0's schedule (Reduce-Scatter's
  // reversed first) moved by every s, or, for `quotient`, by s = 0 alone with each link replaced
  // by its orbit's link at NPU 0.
  void write(Algorithm& a, bool quotient) const;
  // Which chunk an All-Reduce's All-Gather sends in the place of rank 0's chunk j of the schedule:
  // the Reduce-Scatter is the schedule reversed, so the chunk rank 0 first sends (in the schedule)
  // is the one reduced into it last; the All-Gather sends, in the j-th place by first send from
  // rank 0, the chunk whose reductions end j-th (gather_order.hpp, as all_reduce_halves does for
  // the matcher's mirrored halves). A rank's chunks are interchangeable in an All-Gather, and every
  // rank's schedule is rank 0's moved, so one renaming serves them all.
  std::vector<ChunkId> gathered_as_reduced() const {
    const int k = c.chunks_per_npu;
    std::vector<Time> first(static_cast<size_t>(k), std::numeric_limits<Time>::max());
    for (const Send& send : best.sends)
      if (send.from == 0) first[send.chunk] = std::min(first[send.chunk], send.start);
    std::vector<ChunkId> by_first(static_cast<size_t>(k));
    std::iota(by_first.begin(), by_first.end(), 0);
    std::stable_sort(by_first.begin(), by_first.end(),
                     [&](ChunkId x, ChunkId y) { return first[x] < first[y]; });
    std::vector<ChunkId> as(static_cast<size_t>(k));
    for (size_t i = 0; i < by_first.size(); ++i)
      as[by_first[i]] = by_first[by_first.size() - 1 - i];
    return as;
  }
};

void SymmetricSchedule::State::write(Algorithm& a, bool quotient) const {
  const bool gathers = c.kind == CollectiveKind::AllGather;
  const bool to_each = c.kind == CollectiveKind::AllToAll;
  const bool reverses =
      c.kind == CollectiveKind::ReduceScatter || c.kind == CollectiveKind::AllReduce;
  const int p = c.num_ranks();
  const int k = c.chunks_per_npu;
  // Each link of `route`, or, for the quotient, its orbit's link at NPU 0.
  std::array<LinkId, 2> canonical{};
  auto links = [&](std::span<const LinkId> route) {
    if (!quotient) return route;
    for (size_t h = 0; h < route.size(); ++h) canonical[h] = tr.link_of(tr.orbit(route[h]), 0);
    return std::span<const LinkId>(canonical.data(), route.size());
  };
  // Calls f(s, route) with each send's route moved by every s (s = 0 alone for the quotient).
  auto moved = [&](const Send& send, auto&& f) {
    const Way& way = ways[send.way];
    topo::Translations::Walker from(tr, send.from), to(tr, tr.shift(send.from, way.to));
    std::array<LinkId, 2> route{};
    const topo::NodeId shifts = quotient ? 1 : tr.num_npus();
    for (topo::NodeId s = 0; s < shifts; ++s, from.step(), to.step()) {
      route[0] = tr.link_of(way.orbits[0], from.at());
      if (way.links == 2) route[1] = tr.link_of(way.orbits[1], to.at());
      f(s, std::span<const LinkId>(route.data(), way.links));
    }
  };
  if (to_each) {
    // Chunk q from rank s to rank d is (s * P + d) * k + q; rank 0's send of its chunk for NPU e,
    // moved by s, carries rank s's chunk for NPU e + s.
    for (const Send& send : best.sends) {
      const auto& [d, q_bound] = routed.chunks[send.chunk];
      const auto q = q_bound;  // a plain local: lambdas do not capture structured bindings (clang)
      topo::Translations::Walker dest(tr, d);
      moved(send, [&](topo::NodeId s, std::span<const LinkId> route) {
        const int64_t pair = static_cast<int64_t>(rank_of[s]) * p + rank_of[dest.at()];
        dest.step();
        a.add(static_cast<ChunkId>(pair * k + q), t.link(route.front()).src,
              t.link(route.back()).dst, links(route));
      });
    }
  }
  if (reverses) {
    // Reduce-Scatter: every send reversed in time, the last to arrive the first to leave, over
    // the links back; a chunk's reductions into an NPU then all come before the NPU passes it on.
    std::vector<size_t> order(best.sends.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t x, size_t y) { return best.sends[x].end > best.sends[y].end; });
    for (size_t i : order)
      moved(best.sends[i], [&](topo::NodeId s, std::span<const LinkId> route) {
        std::array<LinkId, 2> back{};
        for (size_t h = 0; h < route.size(); ++h) back[route.size() - 1 - h] = tr.reverse(route[h]);
        const std::span<const LinkId> way_back(back.data(), route.size());
        a.add(rank_of[s] * k + best.sends[i].chunk, t.link(way_back.front()).src,
              t.link(way_back.back()).dst, links(way_back), Op::Reduce);
      });
  }
  if (c.kind != CollectiveKind::ReduceScatter && !to_each) {
    const auto channel = static_cast<uint16_t>(gathers ? 0 : 1);
    // (An All-Reduce's: each rank sends first what it reduced first.)
    const std::vector<ChunkId> as = reverses ? gathered_as_reduced() : std::vector<ChunkId>();
    for (const Send& send : best.sends)
      moved(send, [&](topo::NodeId s, std::span<const LinkId> route) {
        a.add(rank_of[s] * k + (as.empty() ? send.chunk : as[send.chunk]),
              t.link(route.front()).src, t.link(route.back()).dst, links(route), Op::Copy, {}, -1,
              -1, 0, channel);
      });
  }
}

std::optional<SymmetricSchedule> plan_symmetric(const topo::Topology& t, const Collective& c,
                                                Bytes chunk_bytes, LinkModel model,
                                                std::string* why, Bandwidth reduce_bandwidth) {
  if (reduce_bandwidth < 0)
    throw Error(fmt::format("negative reduction bandwidth ({} B/s)", reduce_bandwidth));
  auto no = [&](std::string reason) -> std::optional<SymmetricSchedule> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  const bool gathers = c.kind == CollectiveKind::AllGather;
  const bool to_each = c.kind == CollectiveKind::AllToAll;
  if (!gathers && !to_each && c.kind != CollectiveKind::ReduceScatter &&
      c.kind != CollectiveKind::AllReduce)
    return no("translation covers All-Gather, Reduce-Scatter, All-Reduce and All-to-All");
  if (c.uneven())
    return no("translation needs the same traffic between every pair (an All-to-Allv has its own)");
  if (c.all_reduce_chunks > 0) return no("translation needs chunks per NPU, not chunks in all");
  if (c.num_ranks() != t.num_npus()) return no("translation needs every NPU in the collective");
  const std::optional<topo::Translations> tr = topo::translation_symmetry(t);
  if (!tr)
    return no(
        "the topology does not look the same from every NPU (translations of its dimensions, or of "
        "its "
        "servers and their NPUs, carrying every link to a link of the same bandwidth and latency; "
        "switches "
        "linked to NPUs only)");
  const bool reverses =
      c.kind == CollectiveKind::ReduceScatter || c.kind == CollectiveKind::AllReduce;
  if (reverses && !tr->reversible())
    return no("some link has no link back of the same bandwidth and latency");

  const int k = c.chunks_per_npu;
  const std::vector<Way> ways = ways_out(t, *tr, chunk_bytes, model);
  std::optional<Schedule> best;
  Routed routed;
  if (to_each) {
    routed = one_rank_to_each(*tr, ways, k);
    best = std::move(routed.schedule);
  } else {
    for (Pick pick : {Pick::Scarce, Pick::Waiting, Pick::Latest}) {
      Schedule s = one_rank(*tr, ways, k, pick);
      if (!best || s.makespan < best->makespan) best = std::move(s);
    }
  }
  if (best->makespan == kNever) return no("some NPU cannot be reached");

  auto state = std::shared_ptr<SymmetricSchedule::State>(new SymmetricSchedule::State{
      t, c, chunk_bytes, model, *tr, ways, std::move(*best), std::move(routed), {}, {}});
  const int p = c.num_ranks();
  state->rank_of.assign(t.num_npus(), 0);
  for (int r = 0; r < p; ++r) state->rank_of[c.ranks[r]] = r;
  // Timed once, on the quotient: the moved schedules are the same from every NPU, so each moved
  // transfer starts and ends when rank 0's does, and rank 0's transfers meet on each link exactly
  // the transfers of its orbit's sends (a link x -> x + d of orbit j carries, in list order, rank
  // s's copy of every send over orbit j from x - s). The quotient puts each orbit's sends on one
  // link in the same order, so synth::time gives it the timing of every link of the orbit: the
  // readiness of a chunk at an NPU, each sender's queue (first link and channel) and each link's
  // shared capacity are those of any NPU, and admission, in list order, decides the same for
  // every moved copy (the copies of one send use disjoint links). N times less work than timing
  // the algorithm (an All-Reduce on 1024 NPUs: 2K transfers timed, not 2M);
  // tests compare the two transfer by transfer on symmetric topologies.
  state->quotient = empty_algorithm("tenet", t, c, chunk_bytes, model);
  if (reverses) state->quotient.reduce_bandwidth = reduce_bandwidth;
  state->write(state->quotient, true);
  time(t, state->quotient);
  SymmetricSchedule out;
  out.state_ = std::move(state);
  return out;
}

Time SymmetricSchedule::time() const { return state_->quotient.claimed_time; }

size_t SymmetricSchedule::transfers() const {
  return state_->quotient.size() * static_cast<size_t>(state_->c.num_ranks());
}

Algorithm SymmetricSchedule::algorithm() const {
  const State& s = *state_;
  const int p = s.c.num_ranks();
  Algorithm a = empty_algorithm("tenet", s.t, s.c, s.chunk_bytes, s.model);
  a.reduce_bandwidth = s.quotient.reduce_bandwidth;
  const bool direct =
      std::all_of(s.ways.begin(), s.ways.end(), [](const Way& w) { return w.links == 1; });
  const size_t n = transfers();
  a.reserve(n, n * (direct ? 1 : 2), 0);
  s.write(a, false);
  // The list holds each send's p moved copies one after another, as the quotient holds the send.
  for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id) {
    const Transfer& q = s.quotient[id / p];
    a.set_times(id, q.start, q.end);
  }
  a.claimed_time = s.quotient.claimed_time;
  a.method =
      fmt::format("symmetric (rank 0's schedule on {}, moved to every NPU)", s.tr.describe());
  a.provenance.producer = Producer::Symmetric;
  return a;
}

std::optional<Algorithm> synthesize_symmetric(const topo::Topology& t, const Collective& c,
                                              Bytes chunk_bytes, LinkModel model, std::string* why,
                                              Bandwidth reduce_bandwidth) {
  const std::optional<SymmetricSchedule> s =
      plan_symmetric(t, c, chunk_bytes, model, why, reduce_bandwidth);
  if (!s) return std::nullopt;
  return s->algorithm();
}

}  // namespace tenet::synth
