#include "synth/cost/link_admission.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <limits>
#include <unordered_map>

#include "synth/cost/grid.hpp"
#include "synth/cost/min_heap.hpp"
#include "synth/cost/timing.hpp"
#include "synth/ir/ring_plan.hpp"
#include "topo/error.hpp"

namespace tenet::synth {

namespace {
constexpr uint64_t kArrivalCellsPerCarried = 16;
}  // namespace

ArrivalGraph::ArrivalGraph(const Algorithm& a, SlotTable slots) {
  const auto n = static_cast<TransferId>(a.size());
  transfers_ = n;
  // The dependency edges (dependency -> user) are walked twice, straight into CSR lists: the
  // first pass counts them per dependency (and numbers the joins), the second places them. Per
  // (node, chunk): the arrival or join that stands for every arrival there so far, and the
  // arrivals since, as a chain (the last one, and each one's predecessor).
  NodeId nodes = 0;
  for (const Transfer& x : a.transfers()) nodes = std::max({nodes, x.src + 1, x.dst + 1});
  const int64_t chunks = a.collective.num_chunks();
  // Per transfer and chunk it carries: the arrival at that (node, chunk) before it in the chain of
  // arrivals since the standing one.
  const CarriedChunks places(a);
  std::vector<TransferId> previous_arrival(places.size());
  auto previous = [&](TransferId id, ChunkId c) -> TransferId& {
    return previous_arrival[places.index(id, c)];
  };
  const auto carried = [&](const Transfer& x) {
    return x.chunk >= 0 && x.count >= 1 && x.chunk <= chunks - x.count;
  };
  // Per (node, chunk): a table, or where that is far larger than the cells the transfers touch
  // (each a cell per chunk it carries, at either end) a map of those (Grid). A cell here is 4
  // bytes, a map's entry about 40 (a node and its bucket): up to kArrivalCellsPerCarried cells per
  // chunk carried the table costs at most about twice the map's memory, and a lookup is an index,
  // not a hash (an uneven All-to-All's units make chunks that each few transfers carry: what it
  // costs, docs/simulation.md).
  const uint64_t flat_limit =
      slots == SlotTable::Whole ? std::numeric_limits<uint64_t>::max()
      : slots == SlotTable::Touched
          ? 0
          : std::max<uint64_t>(kArrivalCellsPerCarried * places.size(), kFlatCells);
  Grid<int32_t> standing(static_cast<uint64_t>(nodes), static_cast<uint64_t>(chunks), flat_limit,
                         -1),
      since(static_cast<uint64_t>(nodes), static_cast<uint64_t>(chunks), flat_limit, -1);
  auto walk = [&](auto&& edge) {
    standing.clear();
    since.clear();
    int64_t next_join = n;
    for (TransferId id = 0; id < n; ++id) {
      const Transfer& x = a[id];
      for (TransferId d : a.deps(id))
        if (d >= 0 && d < id) edge(d, id);
      // A transfer that sends its source's input reads no arrival.
      if (!x.from_input && carried(x) && x.src >= 0)
        for (ChunkId c = x.chunk; c < x.chunk + x.count; ++c) {
          int32_t& stands = standing(x.src, c);
          int32_t& latest = since(x.src, c);
          if (latest >= 0) {  // arrivals since the standing one: one alone stands for itself
            if (stands < 0 && previous(latest, c) < 0) {
              stands = latest;
            } else {
              if (next_join >= INT32_MAX)
                throw Error("algorithm too large to replay: over 2^31 transfers and joins");
              const auto join = static_cast<int32_t>(next_join++);
              if (stands >= 0) edge(stands, join);
              for (TransferId d = latest; d >= 0; d = previous(d, c)) edge(d, join);
              stands = join;
            }
            latest = -1;
          }
          if (stands >= 0) edge(stands, id);
        }
      if (carried(x) && x.dst >= 0)
        for (ChunkId c = x.chunk; c < x.chunk + x.count; ++c) {
          int32_t& last = since(x.dst, c);
          previous(id, c) = last;
          last = id;
        }
    }
  };
  offset_.assign(static_cast<size_t>(n) + 1, 0);
  waits_.assign(n, 0);
  walk([this](int32_t from, int32_t to) {
    if (static_cast<size_t>(to) >= waits_.size()) {  // a new join
      waits_.resize(static_cast<size_t>(to) + 1, 0);
      offset_.resize(static_cast<size_t>(to) + 2, 0);
    }
    ++offset_[from + 1];
    ++waits_[to];
  });
  int64_t total = 0;
  for (size_t i = 0; i < offset_.size(); ++i) {
    total += offset_[i];
    if (total > INT32_MAX) throw Error("algorithm too large to replay: over 2^31 dependencies");
    offset_[i] = static_cast<int32_t>(total);
  }
  users_.resize(static_cast<size_t>(offset_.back()));
  // Placing an edge advances its dependency's start by one; afterwards every start sits where the
  // next dependency's list begins, so shifting the array by one restores the offsets.
  walk([this](int32_t from, int32_t to) { users_[offset_[from]++] = to; });
  std::copy_backward(offset_.begin(), offset_.end() - 1, offset_.end());
  offset_[0] = 0;
}

TransferQueues::TransferQueues(const topo::Topology& t, const Algorithm& a) : a_(a) {
  const auto n = static_cast<TransferId>(a.size());
  const int links = t.num_links();
  slots_.resize(n);
  RouteCoster cost(t, a);
  // Queues: one per (first link, channel), numbered in order of first use; channel 0's by link in
  // a flat table (most transfers: a hash lookup each weighs on building a large ring).
  std::vector<int32_t> plain(static_cast<size_t>(links), -1);
  std::unordered_map<uint64_t, int32_t> channelled;
  int32_t queues = 0;
  for (TransferId id = 0; id < n; ++id) {
    Slot& s = slots_[id];
    const std::span<const LinkId> route = a.route(id);
    try {
      const RouteCost c = cost(route, a.rate(id), a[id].count);
      s.rate = c.rate;
      s.duration = c.duration;
      s.occupancy = c.occupancy;
    } catch (const Error& e) {
      throw Error(fmt::format("transfer {}: {}", id, e.message()));
    }
    if (route.size() == 1) s.link = route[0];
    const LinkId first = route[0];
    int32_t& q =
        a[id].channel == 0
            ? plain[static_cast<size_t>(first)]
            : channelled.try_emplace(static_cast<uint64_t>(first) << 16 | a[id].channel, -1)
                  .first->second;
    if (q < 0) q = queues++;
    s.queue = q;
  }
  queue_offset_.assign(static_cast<size_t>(queues) + 1, 0);
  for (TransferId id = 0; id < n; ++id) ++queue_offset_[slots_[id].queue + 1];
  for (int32_t q = 0; q < queues; ++q) queue_offset_[q + 1] += queue_offset_[q];
  queue_list_.resize(n);
  std::vector<int32_t> next(queue_offset_.begin(), queue_offset_.end() - 1);
  for (TransferId id = 0; id < n; ++id) queue_list_[next[slots_[id].queue]++] = id;
  serial_.assign(static_cast<size_t>(queues), 0);
  if (a.serial_channels)
    for (TransferId id = 0; id < n; ++id) serial_[slots_[id].queue] = a[id].channel != 0;
}

template <typename Queues>
BasicLinkAdmission<Queues>::BasicLinkAdmission(const topo::Topology& t, const Queues& q, bool hold,
                                               bool ports_only)
    : q_(q), hold_(hold), ports_only_(ports_only) {
  const int links = t.num_links();
  capacity_.resize(links);
  for (LinkId l = 0; l < links; ++l) capacity_[l] = t.link(l).bandwidth;
  used_.assign(links, 0);
  admitted_.assign(static_cast<size_t>(q.num_queues()), 0);
  busy_.assign(static_cast<size_t>(q.num_queues()), 0);
  waiters_.resize(links);
  deps_met_.assign(static_cast<size_t>(q.size()), 0);
  freed_mark_.assign(links, 0);
}

namespace {
constexpr auto kListOrder = [](TransferId id) { return id; };
}  // namespace

template <typename Queues>
void BasicLinkAdmission<Queues>::push(Heap& h, TransferId id) {
  push_min(h, id, kListOrder);
}

template <typename Queues>
TransferId BasicLinkAdmission<Queues>::pop(Heap& h) {
  return pop_min(h, kListOrder);
}

template <typename Queues>
void BasicLinkAdmission<Queues>::dependencies_met(TransferId id) {
  deps_met_[id] = 1;
  const int32_t q = q_.queue_of(id);
  if (q_.queue_entry(q, admitted_[q]) == id && !busy_[q]) {
    q_.prefetch(id);
    push(candidates_, id);
  }
}

template <typename Queues>
void BasicLinkAdmission<Queues>::next_on_route(int32_t q) {
  const TransferId next = q_.queue_entry(q, admitted_[q]);
  if (next >= 0 && deps_met_[next] == 1) {
    q_.prefetch(next);
    push(candidates_, next);
  }
}

template <typename Queues>
void BasicLinkAdmission<Queues>::released(TransferId id) {
  const auto [route, rate, queue] = q_.entry(id);
  if (q_.serial(queue)) {  // its queue's next may go now
    busy_[queue] = 0;
    next_on_route(queue);
  }
  for (LinkId l : reserved(route)) {
    used_[l] -= held_at(l, rate);
    // Only a link with waiters has any to wake: waiters join a link inside admit() alone, and a
    // link that one joins there has no room left for it until something releases it again.
    if (!freed_mark_[l] && !waiters_[l].empty()) {
      freed_mark_[l] = 1;
      freed_.push_back(l);
    }
  }
}

template <typename Queues>
size_t BasicLinkAdmission<Queues>::waiting() const {
  return static_cast<size_t>(std::count(deps_met_.begin(), deps_met_.end(), 1));
}

template <typename Queues>
void BasicLinkAdmission<Queues>::admit_all(void (*call)(void*, TransferId), void* start) {
  std::vector<LinkId>& wake = wake_;
  wake.swap(freed_);
  freed_.clear();
  for (LinkId l : wake) freed_mark_[l] = 0;
  for (;;) {
    // Wake, per link that freed capacity, as many waiters (in priority order) as its room takes
    // (links in any order: each one's room and waiters are its own, and candidates go in list
    // order).
    for (LinkId l : wake) {
      if (waiters_[l].empty()) continue;
      Bandwidth room = capacity_[l] - used_[l];
      while (!waiters_[l].empty()) {
        const Bandwidth h = held(l, waiters_[l].front());
        if (h > room) break;
        room -= h;
        push(candidates_, pop(waiters_[l]));
      }
    }
    if (candidates_.empty()) break;
    while (!candidates_.empty()) {
      const TransferId id = pop(candidates_);
      const auto [route, rate, q] = q_.entry(id);
      LinkId blocked = -1;
      for (LinkId l : reserved(route))
        if (used_[l] + held_at(l, rate) > capacity_[l]) {
          blocked = l;
          break;
        }
      if (blocked >= 0) {
        push(waiters_[blocked], id);
        continue;
      }
      for (LinkId l : reserved(route)) used_[l] += held_at(l, rate);
      deps_met_[id] = 2;
      ++admitted_[q];
      call(start, id);
      if (q_.serial(q))
        busy_[q] = 1;  // its queue's next waits for it to leave the link
      else
        next_on_route(q);
    }
    // A woken waiter parked on another link left room for the next ones: wake again.
    std::erase_if(wake, [&](LinkId l) {
      return waiters_[l].empty() || held(l, waiters_[l].front()) > capacity_[l] - used_[l];
    });
    if (wake.empty()) break;
  }
  wake.clear();
}

template class BasicLinkAdmission<TransferQueues>;
template class BasicLinkAdmission<RingPlan>;

}  // namespace tenet::synth
