#include "synth/plans/tail_spread.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <compare>
#include <cstdint>
#include <iterator>
#include <map>
#include <queue>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "synth/cost/protocol_view.hpp"
#include "synth/cost/timing.hpp"
#include "synth/plans/full_rate_drain.hpp"
#include "synth/plans/reversed_answer.hpp"
#include "synth/tuning.hpp"

namespace tenet::synth::detail {

namespace {

// A way an algorithm sends over: one of its routes, with its ends and what one chunk at the
// route's full rate costs there.
struct Way {
  NodeId src = 0, dst = 0;
  std::vector<LinkId> route;
  Time duration = 0, occupancy = 0;
};

// The ways of an algorithm (each distinct route once), and per node those into and out of it.
struct Ways {
  std::vector<Way> ways;
  std::vector<std::vector<int>> into, out_of;
};

Ways ways_of(const topo::Topology& u, const Algorithm& a) {
  Ways w;
  w.into.resize(static_cast<size_t>(u.num_nodes()));
  w.out_of.resize(static_cast<size_t>(u.num_nodes()));
  RouteCoster coster(u, a);
  std::vector<int> one_link(static_cast<size_t>(u.num_links()), -1);  // (most routes)
  std::map<std::vector<LinkId>, int> longer;
  for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id) {
    const std::span<const LinkId> route = a.route(id);
    int& index =
        route.size() == 1
            ? one_link[static_cast<size_t>(route.front())]
            : longer.try_emplace(std::vector<LinkId>(route.begin(), route.end()), -1).first->second;
    if (index >= 0) continue;
    index = static_cast<int>(w.ways.size());
    const RouteCost cost = coster(route, 0, 1);
    w.ways.push_back({a[id].src, a[id].dst, std::vector<LinkId>(route.begin(), route.end()),
                      cost.duration, cost.occupancy});
    w.into[static_cast<size_t>(a[id].dst)].push_back(index);
    w.out_of[static_cast<size_t>(a[id].src)].push_back(index);
  }
  return w;
}

constexpr Time kNone = -1;

// Per (node, chunk) of a collective: from when it holds the chunk as the collective ends with it
// (kNone: not before a transfer brings it) and whether it must hold it after. An All-Reduce's
// chunk is held so by its owner once every partial has been reduced into it, and by a node a copy
// of it reached: `reduced_by`, the last start of a reduction, is before every cut.
struct Holdings {
  ChunkId chunks = 0;
  std::vector<Time> held;
  std::vector<bool> needs;
  bool reduces = false;
  Time reduced_by = -1;
  size_t cell(NodeId v, ChunkId ch) const {
    return static_cast<size_t>(v) * static_cast<size_t>(chunks) + static_cast<size_t>(ch);
  }
};

// The holdings `a`'s collective starts from (`u`: what `a` is timed on). For an All-Reduce, each
// chunk's owner is the one node that reduced partials of it come into and none leave
// (Reduce-Scatter then All-Gather), holding it from the last arrival; nothing where a chunk has
// none or several (a one-shot's every rank reduces), or where a transfer sends its source's input.
std::optional<Holdings> holdings_of(const topo::Topology& u, const Algorithm& a) {
  const Collective& c = a.collective;
  Holdings h;
  h.chunks = c.num_chunks();
  h.reduces = reduces(c.kind);
  h.held.assign(static_cast<size_t>(u.num_nodes()) * static_cast<size_t>(h.chunks), kNone);
  h.needs.assign(h.held.size(), false);
  for (int r = 0; r < c.num_ranks(); ++r)
    for (ChunkId ch = 0; ch < h.chunks; ++ch) {
      const size_t at = h.cell(c.ranks[static_cast<size_t>(r)], ch);
      if (!h.reduces && c.initially_holds(r, ch)) h.held[at] = 0;
      h.needs[at] = c.finally_needs(r, ch);
    }
  if (!h.reduces) return h;
  // (Per (node, chunk): 1 a reduction came in, 2 one left; the last reduction's arrival.)
  std::vector<uint8_t> seen(h.held.size(), 0);
  std::vector<Time> last(h.held.size(), kNone);
  for (const Transfer& x : a.transfers()) {
    if (x.from_input) return std::nullopt;
    if (x.op != Op::Reduce) continue;
    h.reduced_by = std::max(h.reduced_by, x.start);
    for (ChunkId ch = x.chunk; ch < x.chunk + x.count; ++ch) {
      seen[h.cell(x.dst, ch)] |= 1;
      seen[h.cell(x.src, ch)] |= 2;
      last[h.cell(x.dst, ch)] = std::max(last[h.cell(x.dst, ch)], x.end);
    }
  }
  for (ChunkId ch = 0; ch < h.chunks; ++ch) {
    int owners = 0;
    for (NodeId v = 0; v < u.num_nodes(); ++v)
      if (seen[h.cell(v, ch)] == 1) {
        ++owners;
        h.held[h.cell(v, ch)] = last[h.cell(v, ch)] + a.reduction_time();
      }
    if (owners != 1) return std::nullopt;
  }
  return h;
}

// What list scheduling makes of the run from `cut` on: its deliveries, in order of start, and when
// its schedule ends (the kept transfers' ends and the deliveries' arrivals, as it booked them).
struct Spread {
  Time cut = 0;
  Time ends = 0;
  std::vector<TransferSpec> made;
};

// List scheduling of the deliveries the cut took out, over the algorithm's ways: earliest arrival
// first (each delivery offered over every way from a holder, and made over the one that arrives
// soonest given when its links are free, each link booked whole after the last booking on it; ties
// to the lower way). Among the chunks a way's source held by the time its links are free (which
// all arrive at once), the one the fewest nodes hold goes first, then the lower chunk: rarest
// first, as in a swarm's broadcast, since a chunk few nodes hold has the most deliveries still
// ahead and the fewest senders for them (the chunks that crossed a box's NICs last, among
// chunks its GCDs hold already); among those its source holds only later, the one it held first.
//
// Each way keeps the chunks offered over it. Ways wait in one queue by their soonest, each at most
// once (a lower key where its soonest may since have moved later: a link it needs booked, a chunk
// delivered another way or held by more nodes), so a booking costs the ways that share its links,
// not every offer waiting on them (a tail of thousands of chunks over a few ways).
class Spreader {
 public:
  Spreader(const topo::Topology& u, const Algorithm& a, const Ways& ways, const Holdings& start)
      : a_(&a),
        ways_(&ways),
        start_(&start),
        held_(start.held),
        link_free_(static_cast<size_t>(u.num_links()), 0) {}

  // Keeps transfer `id` (it starts before the cut): what it delivers, and its links held until
  // it left them.
  void keep(TransferId id, RouteCoster& coster) {
    const Transfer& x = (*a_)[id];
    for (ChunkId ch = x.chunk; ch < x.chunk + x.count; ++ch) {
      if (x.op != Op::Copy) continue;  // (an All-Reduce's partial: its owner's, Holdings)
      // (Where the collective reduces, a copy sent before its source held the chunk whole is a
      // partial's: nothing to list again after it.)
      const Time from = held_[start_->cell(x.src, ch)];
      if (start_->reduces && (from == kNone || x.start < from)) whole_ = false;
      Time& h = held_[start_->cell(x.dst, ch)];
      h = std::max(h, x.end);  // (a send listed after it reads its last arrival)
    }
    const RouteCost cost = coster(*a_, id);
    for (LinkId l : a_->route(id)) {
      Time& free = link_free_[static_cast<size_t>(l)];
      free = std::max(free, x.start + cost.occupancy);
    }
  }

  // Whether every copy kept sent its chunk whole (an All-Reduce's after its last reduction).
  bool whole() const { return whole_; }

  // A floor on when the deliveries still needed once every kept transfer is in (spread()) can
  // have arrived, whatever their order: each node's arrive over its ways into it, and those that
  // end in one link are booked on it one after another, each no sooner than the link is free
  // (after the kept transfers) and each holding it for its way's occupancy at least. The latest
  // over the nodes of the least time their ways' last links can take the node's deliveries, with
  // a link's whole occupancies relaxed to fractions. -1: some way holds its link for no time.
  Time arrivals_floor() const {
    struct Last {
      Time free = 0, duration = 0, occupancy = 0;
    };
    std::map<LinkId, Last> last;  // per link ending at the node: its ways' least costs
    Time floor = 0;
    for (NodeId v = 0; v < static_cast<NodeId>(ways_->into.size()); ++v) {
      int64_t missing = 0;
      for (ChunkId ch = 0; ch < start_->chunks; ++ch)
        if (start_->needs[start_->cell(v, ch)] && held_[start_->cell(v, ch)] == kNone) ++missing;
      if (missing == 0) continue;
      last.clear();
      for (int w : ways_->into[static_cast<size_t>(v)]) {
        const Way& way = ways_->ways[static_cast<size_t>(w)];
        if (way.occupancy <= 0) return -1;
        const LinkId l = way.route.back();
        const auto [it, added] = last.try_emplace(
            l, Last{link_free_[static_cast<size_t>(l)], way.duration, way.occupancy});
        if (!added) {
          it->second.duration = std::min(it->second.duration, way.duration);
          it->second.occupancy = std::min(it->second.occupancy, way.occupancy);
        }
      }
      if (last.empty()) continue;  // (spread() cannot make them: no schedule to floor)
      // By time T a link can have delivered at most (T - a) / occupancy, for a = its free time
      // plus a duration less an occupancy (its n-th delivery arrives at a + n x occupancy at the
      // soonest): the least T at which the links' sum reaches `missing`, links joining in order
      // of their a.
      std::vector<std::pair<double, double>> links;  // (a, occupancy)
      for (const auto& [l, x] : last)
        links.emplace_back(static_cast<double>(x.free + x.duration - x.occupancy),
                           static_cast<double>(x.occupancy));
      std::sort(links.begin(), links.end());
      double rate = 0, offset = 0, least = 0;
      for (size_t i = 0; i < links.size(); ++i) {
        rate += 1 / links[i].second;
        offset += links[i].first / links[i].second;
        least = (static_cast<double>(missing) + offset) / rate;
        if (i + 1 == links.size() || least <= links[i + 1].first) break;
      }
      floor = std::max(floor, static_cast<Time>(least));
    }
    return floor;
  }

  // The deliveries still needed once every kept transfer is in, in order of start; nothing where
  // some cannot be made over the ways.
  std::optional<std::vector<TransferSpec>> spread() {
    queues_.assign(ways_->ways.size(), {});
    holders_.assign(static_cast<size_t>(start_->chunks), 0);
    for (NodeId v = 0; v < static_cast<NodeId>(ways_->into.size()); ++v)
      for (ChunkId ch = 0; ch < start_->chunks; ++ch)
        if (held_[start_->cell(v, ch)] != kNone) ++holders_[static_cast<size_t>(ch)];
    int64_t missing = 0;
    for (NodeId v = 0; v < static_cast<NodeId>(ways_->into.size()); ++v)
      for (ChunkId ch = 0; ch < start_->chunks; ++ch)
        if (start_->needs[start_->cell(v, ch)] && held_[start_->cell(v, ch)] == kNone) {
          ++missing;
          for (int w : ways_->into[static_cast<size_t>(v)]) offer(w, ch);
        }
    std::vector<TransferSpec> made;
    made.reserve(static_cast<size_t>(missing));
    while (!waiting_.empty() && missing > 0) {
      const Offer o = waiting_.top();
      waiting_.pop();
      WayQueue& q = queues_[static_cast<size_t>(o.way)];
      if (!q.queued || *q.queued != o) continue;  // (a later key of the way's is waiting)
      q.queued.reset();
      const std::optional<Offer> soonest = soonest_of(o.way);
      if (!soonest) continue;
      if (*soonest != o) {  // it moved later since: waits again, at its soonest now
        enqueue(*soonest);
        continue;
      }
      const Way& w = ways_->ways[static_cast<size_t>(o.way)];
      const Time start = o.arrival - w.duration;
      for (LinkId l : w.route) link_free_[static_cast<size_t>(l)] = start + w.occupancy;
      held_[start_->cell(w.dst, o.chunk)] = o.arrival;
      ++holders_[static_cast<size_t>(o.chunk)];
      --missing;
      TransferSpec s;
      s.chunk = o.chunk;
      s.src = w.src;
      s.dst = w.dst;
      s.route = w.route;
      s.start = start;
      s.end = o.arrival;
      made.push_back(std::move(s));
      if (const std::optional<Offer> next = soonest_of(o.way)) enqueue(*next);
      for (int next : ways_->out_of[static_cast<size_t>(w.dst)]) offer(next, o.chunk);
    }
    if (missing > 0) return std::nullopt;
    // (In order of start: a send of a chunk is listed after its arrival at the sender.)
    std::stable_sort(made.begin(), made.end(), [](const TransferSpec& x, const TransferSpec& y) {
      return x.start < y.start;
    });
    return made;
  }

 private:
  // Chunk `chunk` over way `way`, arriving at `arrival`.
  struct Offer {
    Time arrival;
    int way;
    ChunkId chunk;
    auto operator<=>(const Offer&) const = default;
  };
  // The chunks offered over one way, not yet made: those its source held by the time its links
  // were last seen free (by how many nodes held them when last looked at, then chunk: the count
  // only grows), and the others (by when the source held them, then chunk).
  struct WayQueue {
    std::priority_queue<std::pair<int32_t, ChunkId>, std::vector<std::pair<int32_t, ChunkId>>,
                        std::greater<>>
        ready;
    std::priority_queue<std::pair<Time, ChunkId>, std::vector<std::pair<Time, ChunkId>>,
                        std::greater<>>
        later;
    std::optional<Offer> queued;  // its key in waiting_, where it waits there
  };

  // When way `w`'s links are all free.
  Time links_free(const Way& w) const {
    Time free = 0;
    for (LinkId l : w.route) free = std::max(free, link_free_[static_cast<size_t>(l)]);
    return free;
  }
  // Way `w`'s soonest delivery now (its chunks already at their destination dropped).
  std::optional<Offer> soonest_of(int w) {
    const Way& way = ways_->ways[static_cast<size_t>(w)];
    WayQueue& q = queues_[static_cast<size_t>(w)];
    const Time free = links_free(way);
    const auto delivered = [&](ChunkId ch) { return held_[start_->cell(way.dst, ch)] != kNone; };
    const auto holders = [&](ChunkId ch) { return holders_[static_cast<size_t>(ch)]; };
    while (!q.later.empty() && (q.later.top().first <= free || delivered(q.later.top().second))) {
      const ChunkId ch = q.later.top().second;
      if (!delivered(ch)) q.ready.emplace(holders(ch), ch);
      q.later.pop();
    }
    while (!q.ready.empty()) {
      const auto [seen, ch] = q.ready.top();
      if (!delivered(ch) && seen == holders(ch)) break;
      q.ready.pop();
      if (!delivered(ch)) q.ready.emplace(holders(ch), ch);  // (held by more nodes since)
    }
    if (!q.ready.empty()) return Offer{free + way.duration, w, q.ready.top().second};
    if (!q.later.empty()) return Offer{q.later.top().first + way.duration, w, q.later.top().second};
    return std::nullopt;
  }
  // `o` waits for its turn, unless its way waits already at no later a key.
  void enqueue(const Offer& o) {
    std::optional<Offer>& queued = queues_[static_cast<size_t>(o.way)].queued;
    if (queued && *queued <= o) return;
    queued = o;
    waiting_.push(o);
  }
  // Way `w` for chunk `ch`, where its source holds the chunk and its destination needs it.
  void offer(int w, ChunkId ch) {
    const Way& way = ways_->ways[static_cast<size_t>(w)];
    const Time from = held_[start_->cell(way.src, ch)];
    if (from == kNone || !start_->needs[start_->cell(way.dst, ch)] ||
        held_[start_->cell(way.dst, ch)] != kNone)
      return;
    queues_[static_cast<size_t>(w)].later.emplace(from, ch);
    if (const std::optional<Offer> soonest = soonest_of(w)) enqueue(*soonest);
  }

  bool whole_ = true;  // every copy kept so far sent the chunk whole
  // (Pointers, not references: a cut's state is copied for the next, kept_at.)
  const Algorithm* a_;
  const Ways* ways_;
  const Holdings* start_;
  std::vector<Time> held_;  // per (node, chunk): its last arrival listed so far, or kNone
  std::vector<Time> link_free_;
  std::vector<WayQueue> queues_;  // per way (spread())
  std::vector<int32_t> holders_;  // per chunk: the nodes that hold it so far (spread())
  std::priority_queue<Offer, std::vector<Offer>, std::greater<>> waiting_;
};

bool applies(const Algorithm& a) {
  const CollectiveKind kind = a.collective.kind;
  return (!reduces(kind) || kind == CollectiveKind::AllReduce) && !a.collective.uneven() &&
         a.size() > 0 && static_cast<int64_t>(a.size()) <= kDrainTransferBudget &&
         a.fully_timed() && a.claimed_time > 0;
}

// What a cut keeps of `a`: the list scheduling's state once every transfer that starts before it is
// in, and when the last of those ends.
struct Kept {
  Time cut = 0;
  Time ends = 0;
  Spreader spreader;
};

// What each of `cuts` (ascending; `u`: what `a` is timed on) keeps, in one pass over `a` (what a
// cut keeps, a later one keeps too). Nothing for a cut where no transfer starts at or after it, or
// where a transfer before it waits for one after it (times not of `a`'s model).
std::vector<std::optional<Kept>> kept_at(const topo::Topology& u, const Algorithm& a,
                                         const Ways& ways, const Holdings& start,
                                         std::span<const Time> cuts) {
  const auto n = static_cast<TransferId>(a.size());
  // Per cut, the transfers it keeps and the one before it does not; per cut, whether it keeps a
  // transfer and not one that transfer waits for.
  const auto first_keeping = [&](Time at) {
    return static_cast<size_t>(std::upper_bound(cuts.begin(), cuts.end(), at) - cuts.begin());
  };
  std::vector<std::vector<TransferId>> kept_from(cuts.size());
  std::vector<bool> broken(cuts.size(), false);
  Time last_start = -1;
  for (TransferId id = 0; id < n; ++id) {
    const Time at = a[id].start;
    last_start = std::max(last_start, at);
    const size_t k = first_keeping(at);
    if (k < cuts.size()) kept_from[k].push_back(id);
    for (TransferId d : a.deps(id))
      for (size_t c = k; c < first_keeping(a[d].start); ++c) broken[c] = true;
  }
  RouteCoster coster(u, a);
  Kept kept{0, 0, Spreader(u, a, ways, start)};
  std::vector<std::optional<Kept>> out(cuts.size());
  for (size_t k = 0; k < cuts.size(); ++k) {
    for (TransferId id : kept_from[k]) {
      kept.spreader.keep(id, coster);
      kept.ends = std::max(kept.ends, a[id].end);
    }
    kept.cut = cuts[k];
    // (An All-Reduce's cut keeps every reduction: what it lists again is copies alone.)
    if (!broken[k] && last_start >= cuts[k] && cuts[k] > start.reduced_by && kept.spreader.whole())
      out[k] = kept;
  }
  return out;
}

// The schedule list scheduling makes from what `kept` keeps; nothing where some delivery cannot be
// made.
std::optional<Spread> spread_of(Kept kept) {
  std::optional<std::vector<TransferSpec>> made = kept.spreader.spread();
  if (!made) return std::nullopt;
  Spread s;
  s.cut = kept.cut;
  s.ends = kept.ends;
  for (const TransferSpec& x : *made) s.ends = std::max(s.ends, x.end);
  s.made = std::move(*made);
  return s;
}

// `a` with the transfers that start at or after `s.cut` replaced by `s`'s deliveries, timed.
Algorithm spread_into(const topo::Topology& t, const Algorithm& a, const Spread& s) {
  Algorithm b = with_transfers(a, {});
  b.reserve(a.size(), a.size(), 0);
  std::vector<TransferId> renamed(a.size(), -1);
  std::vector<TransferId> deps;
  for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id) {
    const Transfer& x = a[id];
    if (x.start >= s.cut) continue;
    deps.clear();
    for (TransferId d : a.deps(id)) deps.push_back(renamed[static_cast<size_t>(d)]);
    renamed[static_cast<size_t>(id)] =
        b.add(x.chunk, x.src, x.dst, a.route(id), x.op, deps, x.start, x.end, a.rate(id), x.channel,
              x.from_input, x.count);
  }
  for (const TransferSpec& x : s.made) b.add(x);
  time(t, b);
  return b;
}

}  // namespace

namespace {

// `f` of what `cut` keeps of `a` (kept_at), or nothing where spread_from would schedule nothing.
template <class F>
auto with_kept(const topo::Topology& t, const Algorithm& a, Time cut, F&& f)
    -> decltype(f(std::declval<Kept>())) {
  if (!applies(a)) return std::nullopt;
  const ProtocolView view(t, a);
  const topo::Topology& u = view.topology();
  const Ways ways = ways_of(u, a);
  const std::optional<Holdings> start = holdings_of(u, a);  // (what `kept` points into)
  if (!start) return std::nullopt;
  const Time cuts[] = {cut};
  std::optional<Kept> kept = std::move(kept_at(u, a, ways, *start, cuts).front());
  if (!kept) return std::nullopt;
  return f(std::move(*kept));
}

// A floor on when the schedule from what `kept` keeps ends: its kept transfers' ends, or its
// deliveries' arrivals (Spreader::arrivals_floor), whichever is later; nothing where there is none.
std::optional<Time> schedule_floor(const Kept& kept) {
  const Time arrivals = kept.spreader.arrivals_floor();
  if (arrivals < 0) return std::nullopt;
  return std::max(kept.ends, arrivals);
}

}  // namespace

std::optional<Algorithm> spread_from(const topo::Topology& t, const Algorithm& a, Time cut,
                                     Time* scheduled) {
  return with_kept(t, a, cut, [&](Kept kept) -> std::optional<Algorithm> {
    const std::optional<Spread> s = spread_of(std::move(kept));
    if (!s) return std::nullopt;
    if (scheduled) *scheduled = s->ends;
    return spread_into(t, a, *s);
  });
}

std::optional<Time> spread_floor(const topo::Topology& t, const Algorithm& a, Time cut) {
  return with_kept(t, a, cut, [](const Kept& kept) { return schedule_floor(kept); });
}

bool spread_tail(const topo::Topology& t, Algorithm& a, const Deadline* deadline) {
  if (!applies(a)) return false;
  // (Each schedule below passes over the whole answer once, and the one timed times it.)
  if (deadline && deadline->reached(kSearchSecondsPerTransfer * static_cast<double>(a.size())))
    return false;
  const ProtocolView view(t, a);
  const topo::Topology& u = view.topology();
  const Ways ways = ways_of(u, a);
  const std::optional<Holdings> start = holdings_of(u, a);
  if (!start) return false;
  const Time span = a.makespan();
  // (Ascending cuts: the longest tail first.)
  constexpr size_t kTails = std::size(kSpreadTails);
  std::array<Time, kTails> cuts{};
  for (size_t i = 0; i < kTails; ++i) cuts[i] = drain_cut(span, kSpreadTails[kTails - 1 - i]);
  std::vector<std::optional<Kept>> kept = kept_at(u, a, ways, *start, cuts);
  const double enough = (1 - kDrainGain) * static_cast<double>(a.claimed_time);
  // The shortest tail first, on to longer ones until kSpreadTailsPast in a row end no sooner than
  // the soonest so far (the list scheduling of a longer tail costs more, and loses to the trees),
  // or cannot end soon enough to replace `a` (its schedule_floor at or past `enough`: it is not
  // scheduled).
  std::optional<Spread> best;
  double best_tail = 0;
  int past = 0;
  for (size_t i = kTails; i-- > 0 && past < kSpreadTailsPast;) {
    if (!kept[i]) continue;
    if (const std::optional<Time> floor = schedule_floor(*kept[i]);
        floor && static_cast<double>(*floor) >= enough) {
      ++past;
      continue;
    }
    std::optional<Spread> s = spread_of(std::move(*kept[i]));
    if (!s) continue;
    if (best && s->ends >= best->ends) {
      ++past;
      continue;
    }
    best = std::move(s);
    best_tail = kSpreadTails[kTails - 1 - i];
    past = 0;
  }
  if (!best || static_cast<double>(best->ends) >= enough) return false;
  Algorithm b = spread_into(t, a, *best);
  if (static_cast<double>(b.claimed_time) >= enough) return false;
  b.provenance.tail_spread = best_tail;
  b.method += fmt::format(
      "; the deliveries of its last {:g} % listed again, earliest arrival first", 100 * best_tail);
  a = std::move(b);
  return true;
}

bool spread_head(const topo::Topology& t, Algorithm& reduce_scatter, std::span<const LinkId> twins,
                 bool drain, const Deadline* deadline) {
  Algorithm& r = reduce_scatter;
  if (r.collective.kind != CollectiveKind::ReduceScatter || r.claimed_time <= 0 ||
      static_cast<int64_t>(r.size()) > kDrainTransferBudget ||
      (deadline && deadline->reached(kSearchSecondsPerTransfer * static_cast<double>(r.size()))))
    return false;
  std::optional<Algorithm> gathered = all_gather_reversed(t, r, twins);
  if (!gathered) return false;
  // The reverse finished as an All-Gather's answer is: its tail at its routes' full rate, then its
  // last deliveries listed again.
  const bool drained = drain && drain_at_full_rate(t, *gathered, deadline);
  const bool spread = spread_tail(t, *gathered, deadline);
  if (!drained && !spread) return false;
  std::optional<Algorithm> back = reduce_scatter_reversed(t, *gathered, twins);
  if (!back || static_cast<double>(back->claimed_time) >=
                   (1 - kDrainGain) * static_cast<double>(r.claimed_time))
    return false;
  const Provenance& finished = gathered->provenance;
  std::string words;
  if (drained)
    words = fmt::format("its transfers of the last {:g} % at their routes' full rate",
                        100 * finished.full_rate_drain);
  if (spread)
    words += fmt::format("{}its deliveries of the last {:g} % listed again, earliest arrival first",
                         drained ? "; " : "", 100 * finished.tail_spread);
  back->method = fmt::format("{}; its first reductions finished through its reverse in time ({})",
                             r.method, words);
  back->provenance = r.provenance;
  back->provenance.tail_spread = finished.tail_spread;
  r = std::move(*back);
  return true;
}

}  // namespace tenet::synth::detail
