// Replaying an algorithm event by event under the rate-shared link model: the one rule that both
// synth::time (with analytical arrivals and releases) and the simulator's collective engine
// (with whatever network decides them) follow, so the two agree exactly on the analytical network.
//
// A transfer is *eligible* once its dependencies have arrived (explicit ones, and every
// earlier-listed arrival of its chunk at its source) and the transfer listed before it with the
// same first link and channel has been admitted: a sender's port serves each channel's transfers
// in list order (NCCL's channels and MSCCL's are independent queues that share the port by
// capacity). In a serial queue (Algorithm::serial_channels) the transfer before it must also have
// left the link (its last byte is out): one at a time. An eligible transfer is *admitted* when
// every link of its route has its rate to spare (under `hold`, is free). At each instant, after
// every arrival and release of that instant, eligible transfers are considered in list order. One
// that does not fit waits on the first link of its route lacking capacity and is reconsidered when
// that link frees capacity. Links further
// along a route (a switch's uplink, a router NPU's port) impose no order across senders: a ready
// transfer uses their spare capacity even if an earlier-listed one from another sender is not
// ready yet, as a network shares a link among flows (a strict list order there would make a
// 100 GB/s spine slower than four 25 GB/s spines). Where a producer lists transfers in start
// order (the synthesizer does), admission follows its order.
#pragma once

#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

#include "synth/ir/algorithm.hpp"
#include "topo/topology.hpp"

namespace tenet::synth {

// Who waits for each transfer's arrival: its explicit users, and the transfers that read its
// chunk where it lands (the implicit data dependency; none for a transfer that sends its source's
// input); and how many arrivals each transfer waits
// for. Where a chunk arrives at a node several times (reductions into it) and leaves it several
// times, the arrivals so far are joined: a join node waits for them (and for the join before it)
// and each departure waits for the join, so the graph grows with arrivals plus departures, not
// their product (an All-Reduce's 1024-NPU server plan: over a hundred of each per node and chunk).
// Joins are numbered after the transfers; a join has arrived once all it waits for has. Built in
// two passes straight into 32-bit CSR lists. What it keeps per (node, chunk) is a table where that
// is small beside the transfers, else a map of the cells they touch (synth/cost/grid.hpp: an
// All-to-All's chunk touches two nodes); `slots` forces either (the graph is the same).
enum class SlotTable : uint8_t { Auto, Whole, Touched };
class ArrivalGraph {
 public:
  explicit ArrivalGraph(const Algorithm& a, SlotTable slots = SlotTable::Auto);
  // Transfers and joins: the length of a table of waits.
  int32_t size() const { return static_cast<int32_t>(waits_.size()); }
  // Per transfer and join, how many arrivals (transfers or joins) it waits for (size() entries):
  // a replay's counts to tick off.
  const std::vector<int32_t>& waits() const { return waits_; }
  // Asks for what arrived(id, ...) reads, in three steps a batch of arrivals takes in turn (each
  // step reads what the one before asked for): where its users are listed, the list, and their
  // counts in `waiting` (and, by ahead(u), what readiness reads of each user u that is a transfer).
  void prefetch_list(TransferId id) const { __builtin_prefetch(&offset_[id]); }
  void prefetch_users(TransferId id) const { __builtin_prefetch(&users_[offset_[id]]); }
  template <typename Ahead>
  void prefetch_waits(TransferId id, const int32_t* waiting, Ahead&& ahead) const {
    for (int32_t i = offset_[id]; i < offset_[id + 1]; ++i) {
      __builtin_prefetch(&waiting[users_[i]], 1);
      if (users_[i] < transfers_) ahead(users_[i]);
    }
  }
  // Whether anything waits for transfer `id`'s arrival.
  bool waited_on(TransferId id) const { return offset_[id] != offset_[id + 1]; }
  // Transfer `id` has arrived: counts it off in `waiting` (a copy of waits()) and calls ready(u)
  // for each transfer u left waiting for nothing (joins pass on at once).
  template <typename Ready>
  void arrived(TransferId id, std::span<int32_t> waiting, Ready&& ready) const {
    for (int32_t i = offset_[id]; i < offset_[id + 1]; ++i) {
      const int32_t u = users_[i];
      if (--waiting[u] != 0) continue;
      if (u < transfers_)
        ready(u);
      else
        arrived(u, waiting, ready);
    }
  }

 private:
  int32_t transfers_ = 0;
  std::vector<int32_t> offset_, waits_;
  std::vector<int32_t> users_;
};

// An algorithm's transfers as admission reads them: each one's route and rate, and its queue (one
// per first link and channel) in list order. A transfer's rate, duration, occupancy, queue and
// (where its route is one link, as every route over direct links is) that link sit together in 32
// bytes: admission and the replay read them for transfers all over the list, a cache miss each.
class TransferQueues {
 public:
  // Throws tenet::Error for a link id out of range, an empty route, or a rate that is negative
  // or above the route's narrowest bandwidth.
  TransferQueues(const topo::Topology& t, const Algorithm& a);
  TransferId size() const { return static_cast<TransferId>(slots_.size()); }
  // What admission reads of a transfer, at once.
  struct Entry {
    std::span<const LinkId> route;
    Bandwidth rate;
    int32_t queue;
  };
  Entry entry(TransferId id) const {
    const Slot& s = slots_[id];
    return {route_of(id, s), s.rate, s.queue};
  }
  // Asks for what entry(id) reads, ahead of it (a transfer made a candidate is read when its turn
  // comes: on a large algorithm, a cache miss each).
  void prefetch(TransferId id) const {
    __builtin_prefetch(&slots_[id]);
    __builtin_prefetch(&a_[id]);  // (what a started transfer is costed from)
  }
  // Asks for the queue `id` is in (queue_of).
  void prefetch_queue(TransferId id) const { __builtin_prefetch(&slots_[id]); }
  std::span<const LinkId> route(TransferId id) const { return route_of(id, slots_[id]); }
  Bandwidth rate(TransferId id) const { return slots_[id].rate; }
  // Its duration and occupancy (RouteCost), costed once here: a replay reads them beside its rate
  // when it starts the transfer, not its record and route again.
  Time duration(TransferId id) const { return slots_[id].duration; }
  Time occupancy(TransferId id) const { return slots_[id].occupancy; }
  int32_t num_queues() const { return static_cast<int32_t>(queue_offset_.size()) - 1; }
  int32_t queue_of(TransferId id) const { return slots_[id].queue; }
  // Whether queue q sends one transfer at a time (Algorithm::serial_channels, a channel other than
  // 0).
  bool serial(int32_t q) const { return serial_[q] != 0; }
  // The n-th transfer of queue q, or -1 past its end.
  TransferId queue_entry(int32_t q, int32_t n) const {
    const int32_t at = queue_offset_[q] + n;
    return at < queue_offset_[q + 1] ? queue_list_[at] : -1;
  }

 private:
  struct alignas(32) Slot {
    Bandwidth rate = 0;  // what it moves at: its own rate, or its route's narrowest bandwidth
    Time duration = 0, occupancy = 0;
    int32_t queue = 0;
    LinkId link = -1;  // its route's one link; -1 where the route has several (the algorithm's)
  };
  std::span<const LinkId> route_of(TransferId id, const Slot& s) const {
    return s.link >= 0 ? std::span<const LinkId>(&s.link, 1) : a_.route(id);
  }

  const Algorithm& a_;
  std::vector<Slot> slots_;
  std::vector<int32_t> queue_offset_;  // CSR: per queue, its transfers in list order
  std::vector<TransferId> queue_list_;
  std::vector<char> serial_;  // per queue
};

// The admission rule above over `Queues`: TransferQueues (an algorithm's list), or a plan that
// computes its transfers on demand (synth/ir/ring_plan.hpp's RingPlan), which the caller keeps
// alive. `ports_only`: capacity is reserved on each transfer's first link (its sender's port)
// alone, and the links further along are left to a network that shares them as it carries the
// flows (the simulator's congestion-aware and packet networks): a flow starts once its sender's
// port has room, whatever the spine holds.
template <typename Queues>
class BasicLinkAdmission {
 public:
  BasicLinkAdmission(const topo::Topology& t, const Queues& q, bool hold, bool ports_only = false);

  // `id`'s dependencies have all arrived (once per transfer).
  void dependencies_met(TransferId id);
  // `id` has left its links (its last byte is out); its share of them is free again.
  void released(TransferId id);
  // After every event of an instant: admits what fits, in list order, calling start(id) for each
  // admitted transfer (which then holds its share of its links).
  template <typename Start>
  void admit(Start&& start) {
    using F = std::remove_reference_t<Start>;
    admit_all([](void* f, TransferId id) { (*static_cast<F*>(f))(id); }, &start);
  }
  // Asks for what released(id) reads.
  void prefetch(TransferId id) const { q_.prefetch(id); }
  // Asks for what dependencies_met(id) reads.
  void prefetch_met(TransferId id) const {
    __builtin_prefetch(&deps_met_[id], 1);
    q_.prefetch_queue(id);
  }
  // Something may be admitted at the next admit().
  bool has_candidates() const { return !candidates_.empty() || !freed_.empty(); }
  // What `id` moves at: its own rate, or its route's narrowest bandwidth.
  Bandwidth rate(TransferId id) const { return q_.rate(id); }
  // Transfers eligible but not admitted (for diagnosing a replay that stops).
  size_t waiting() const;

 private:
  using Heap = std::vector<TransferId>;  // min-heaps: list order
  static void push(Heap& h, TransferId id);
  static TransferId pop(Heap& h);

  void admit_all(void (*call)(void*, TransferId), void* start);
  // What a transfer moving at `rate` holds of link l (its rate looked up once for its whole route).
  Bandwidth held_at(topo::LinkId l, Bandwidth rate) const { return hold_ ? capacity_[l] : rate; }
  Bandwidth held(topo::LinkId l, TransferId id) const { return held_at(l, q_.rate(id)); }
  void next_on_route(int32_t queue);
  // The links a transfer's admission reserves: its route, or its first link alone (ports_only).
  std::span<const LinkId> reserved(std::span<const LinkId> route) const {
    return ports_only_ ? route.first(1) : route;
  }

  const Queues& q_;
  bool hold_;
  bool ports_only_;
  std::vector<Bandwidth> capacity_, used_;
  std::vector<char> deps_met_;
  std::vector<int32_t> admitted_;  // per queue: how many it admitted
  std::vector<char> busy_;         // per serial queue: one of its transfers is on its first link
  std::vector<Heap> waiters_;      // per link
  Heap candidates_;
  std::vector<topo::LinkId> freed_;  // links that freed capacity since the last admit()
  std::vector<topo::LinkId> wake_;   // admit()'s working list
  std::vector<char> freed_mark_;
};

namespace detail {
struct OwnQueues {  // constructed before the admission that reads them
  TransferQueues queues;
};
}  // namespace detail

// Admission over an algorithm's list (what synth::time and the simulator's replay use).
class LinkAdmission : private detail::OwnQueues, public BasicLinkAdmission<TransferQueues> {
 public:
  // Throws tenet::Error as TransferQueues does.
  LinkAdmission(const topo::Topology& t, const Algorithm& a)
      : detail::OwnQueues{TransferQueues(t, a)},
        BasicLinkAdmission<TransferQueues>(t, queues, a.link_model == LinkModel::Hold) {}
  // The algorithm's transfers as admission reads them (rates, costs, queues).
  const TransferQueues& transfer_queues() const { return queues; }
};

}  // namespace tenet::synth
