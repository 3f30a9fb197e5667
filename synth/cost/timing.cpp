#include "synth/cost/timing.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <utility>

#include "synth/cost/grid.hpp"
#include "synth/cost/link_admission.hpp"
#include "synth/cost/link_ledger.hpp"
#include "synth/cost/monotone_queue.hpp"
#include "synth/cost/protocol_view.hpp"
#include "synth/ir/ring_plan.hpp"
#include "topo/error.hpp"

namespace tenet::synth {

RouteCost route_cost(const topo::Topology& t, std::span<const LinkId> route, Bytes bytes,
                     LinkModel model, bool steps, Bandwidth rate) {
  if (route.empty()) throw Error("a transfer's route is empty");
  RouteCost c;
  c.bottleneck = std::numeric_limits<Bandwidth>::max();
  for (LinkId l : route) {
    if (l < 0 || l >= t.num_links())
      throw Error(
          fmt::format("link {} does not exist (the topology has {} links)", l, t.num_links()));
    c.bottleneck = std::min(c.bottleneck, t.link(l).bandwidth);
    c.latency += t.link(l).latency;
    if (steps) c.step = std::max(c.step, t.link(l).step);
  }
  if (rate < 0 || rate > c.bottleneck)
    throw Error(fmt::format("rate {} is {} the narrowest bandwidth on its route, {}",
                            format_bandwidth(rate), rate < 0 ? "negative, not up to" : "above",
                            format_bandwidth(c.bottleneck)));
  c.rate = rate == 0 ? c.bottleneck : rate;
  const Time serialization = c.step + transfer_time(bytes, c.rate);
  c.duration = serialization + c.latency;
  c.occupancy = model == LinkModel::Pipelined ? serialization : c.duration;
  return c;
}

RouteCoster::RouteCoster(const topo::Topology& t, const Algorithm& a)
    : RouteCoster(t, a.chunk_bytes, a.link_model, a.step_costs) {
  if (!timed_on(t, a))
    throw Error(
        fmt::format("an algorithm running protocol '{}' costed on topology '{}' as described, "
                    "not under its protocol",
                    a.protocol, t.name()));
}

RouteCoster::RouteCoster(const topo::Topology& t, Bytes bytes, LinkModel model, bool steps)
    : t_(t),
      bytes_(bytes),
      model_(model),
      steps_(steps),
      bandwidth_(t.num_links()),
      latency_(t.num_links()),
      step_(t.num_links(), 0) {
  for (LinkId l = 0; l < t.num_links(); ++l) {
    bandwidth_[l] = t.link(l).bandwidth;
    latency_[l] = t.link(l).latency;
    if (steps) step_[l] = t.link(l).step;
  }
}

RouteCost RouteCoster::operator()(std::span<const LinkId> route, Bandwidth rate, int count) {
  RouteCost c;
  c.bottleneck = std::numeric_limits<Bandwidth>::max();
  for (LinkId l : route) {
    if (l < 0 || l >= static_cast<LinkId>(bandwidth_.size()))
      return route_cost(t_, route, bytes_ * count, model_, steps_, rate);  // throws the error
    c.bottleneck = std::min(c.bottleneck, bandwidth_[l]);
    c.latency += latency_[l];
    c.step = std::max(c.step, step_[l]);
  }
  if (route.empty() || rate < 0 || rate > c.bottleneck)
    return route_cost(t_, route, bytes_ * count, model_, steps_, rate);
  c.rate = rate == 0 ? c.bottleneck : rate;
  const Time serialization = serialization_time(c.rate, count);
  c.duration = c.step + serialization + c.latency;
  c.occupancy = model_ == LinkModel::Pipelined ? c.step + serialization : c.duration;
  return c;
}

Time RouteCoster::serialization_time(Bandwidth rate, int count) {
  const uint64_t mixed = (static_cast<uint64_t>(rate) ^ static_cast<uint64_t>(count) << 40) *
                         0x9E3779B97F4A7C15ULL;  // (Fibonacci hashing: the high bits)
  Remembered& slot = remembered_[mixed >> (64 - std::countr_zero(kRemembered))];
  if (slot.rate != rate || slot.count != count)
    slot = {rate, count, transfer_time(bytes_ * count, rate)};
  return slot.time;
}

namespace {

// Checks what the timing needs (chunk, node and dependency ids) and tells whether some route has
// more than one link or some transfer a channel of its own (then a link has several queues).
bool check_and_find_routed(const topo::Topology& t, const Algorithm& a) {
  const int64_t chunks = a.collective.num_chunks();
  bool routed = false;
  for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id) {
    const Transfer& x = a[id];
    auto where = [&] { return fmt::format("transfer {}: ", id); };
    if (x.chunk < 0 || x.chunk >= chunks)
      throw Error(where() + fmt::format("chunk {} out of range (0..{})", x.chunk, chunks - 1));
    if (x.count < 1 || x.count > chunks - x.chunk)
      throw Error(where() + fmt::format("carries chunks {}..{}, out of range (0..{})", x.chunk,
                                        x.chunk + x.count - 1, chunks - 1));
    if (x.src < 0 || x.src >= t.num_nodes() || x.dst < 0 || x.dst >= t.num_nodes())
      throw Error(where() + "source or destination is not a node of the topology");
    for (TransferId d : a.deps(id))
      if (d < 0 || d >= id)
        throw Error(where() +
                    fmt::format("depends on transfer {}, which is not listed before it", d));
    routed = routed || x.route_size > 1 || x.channel != 0;
  }
  return routed;
}

constexpr TransferId kReadyPrefetch = 16;

// Where the timing puts the times it finds, and reads back ends (a dependency's): two lists, the
// algorithm itself (time(): no 16 B per transfer beside it, 268 MB for a 64x64 torus All-Gather),
// or the ends alone (a collective time).
struct SpanTimes {
  std::span<Time> starts, ends;
  void set(TransferId id, Time start, Time end) {
    starts[id] = start;
    ends[id] = end;
  }
  Time end(TransferId id) const { return ends[id]; }
  const Time* end_address(TransferId id) const { return &ends[id]; }
};
struct IntoAlgorithm {
  Algorithm& a;
  void set(TransferId id, Time start, Time end) { a.set_times(id, start, end); }
  Time end(TransferId id) const { return a[id].end; }
  const Time* end_address(TransferId id) const { return &a[id].end; }
};
// The ends alone, and only from the first that differs from the algorithm's own (nothing at all for
// an algorithm that carries the model's times, as everything synthesized does).
struct EndsOnly {
  const Algorithm& a;
  std::vector<Time> ends;
  void set(TransferId id, Time, Time end) {
    if (ends.empty() && end == a[id].end) return;
    if (ends.empty()) {
      ends.resize(a.size());
      for (TransferId x = 0; x < id; ++x) ends[x] = a[x].end;
    }
    ends[id] = end;
  }
  Time end(TransferId id) const { return ends.empty() ? a[id].end : ends[id]; }
  const Time* end_address(TransferId id) const { return ends.empty() ? &a[id].end : &ends[id]; }
};

template <typename Times>
TimingResult one_pass(const topo::Topology& t, const Algorithm& a, Times& times) {
  const int64_t chunks = a.collective.num_chunks();
  TimingResult result;
  result.link_busy.assign(t.num_links(), 0);
  LinkLedger ledger(t);
  RouteCoster coster(t, a);
  const bool hold = a.link_model == LinkModel::Hold;
  // When each (node, chunk) last received data, for the implicit data dependency.
  Grid<Time> ready(static_cast<uint64_t>(t.num_nodes()), static_cast<uint64_t>(chunks),
                   std::max<uint64_t>(kFlatCellsPerTransfer * a.size(), kFlatCells));
  const Time reduction = a.reduction_time();
  const auto n = static_cast<TransferId>(a.size());
  for (TransferId id = 0; id < n; ++id) {
    const Transfer& x = a[id];
    // (node, chunk) is all over the table (8 MB for 1024 NPUs x 1024 chunks), and a dependency
    // anywhere earlier in the list: ask for what a transfer a few ahead reads, so that the loads
    // overlap instead of each waiting on memory.
    if (id + kReadyPrefetch < n) {
      const Transfer& ahead = a[id + kReadyPrefetch];
      if (ready.flat()) {
        __builtin_prefetch(ready.flat_address(ahead.src, ahead.chunk));
        __builtin_prefetch(ready.flat_address(ahead.dst, ahead.chunk), 1);
      }
      for (TransferId d : a.deps(id + kReadyPrefetch)) {
        __builtin_prefetch(times.end_address(d));
        __builtin_prefetch(&a[d]);
      }
    }
    Time start = 0;
    if (!x.from_input)
      for (ChunkId c = x.chunk; c < x.chunk + x.count; ++c)
        start = std::max(start, ready(x.src, c));
    for (TransferId d : a.deps(id))
      start = std::max(start, a.usable_at(d, times.end(d), reduction));
    RouteCost cost;
    try {
      cost = coster(a, id);
    } catch (const Error& e) {
      throw Error(fmt::format("transfer {}: {}", id, e.message()));
    }
    // Under hold a transfer takes the whole of every link.
    const Bandwidth held = hold ? std::numeric_limits<Bandwidth>::max() : cost.rate;
    for (LinkId l : a.route(id)) start = ledger.earliest(l, start, held);
    const Time end = start + cost.duration;
    for (LinkId l : a.route(id)) {
      ledger.admit(l, start, start + cost.occupancy, held);
      result.link_busy[l] += busy_share(cost.occupancy, held, ledger.capacity(l));
    }
    const Time usable = a.usable_at(id, end, reduction);
    for (ChunkId c = x.chunk; c < x.chunk + x.count; ++c) {
      Time& r = ready(x.dst, c);
      r = std::max(r, usable);
    }
    times.set(id, start, end);
    result.collective_time = std::max(result.collective_time, usable);
  }
  return result;
}

// Routes through switches or router NPUs: links shared by several senders admit by capacity in
// order of readiness (synth/cost/link_admission.hpp), so the schedule unfolds event by event.
template <typename Times>
TimingResult event_driven(const topo::Topology& t, const Algorithm& a, Times& times) {
  TimingResult result;
  result.link_busy.assign(t.num_links(), 0);
  const ArrivalGraph graph(a);
  LinkAdmission admission(t, a);
  const TransferQueues& queues = admission.transfer_queues();
  const bool hold = a.link_model == LinkModel::Hold;
  const Time reduction = a.reduction_time();
  // What a transfer holds of each link it crosses does not depend on when it starts: the links'
  // busy time is summed in list order, before the replay.
  for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id) {
    const Bandwidth held = hold ? std::numeric_limits<Bandwidth>::max() : queues.rate(id);
    for (LinkId l : queues.route(id))
      result.link_busy[l] += busy_share(queues.occupancy(id), held, t.link(l).bandwidth);
  }
  // Events in order of time; those of one instant in any order (each instant's releases and
  // arrivals are all taken before anything is admitted, and none depends on another's order).
  struct Event {
    Time at;
    TransferId id;
    bool arrival;
  };
  const auto at = [](const Event& e) { return e.at; };
  MonotoneQueue<Event, decltype(at)> events(at);  // every event at or after the instant replayed
  auto push = [&](Event e) { events.push(e); };
  std::vector<int32_t> waiting = graph.waits();
  for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id)
    if (waiting[id] == 0) admission.dependencies_met(id);
  Time now = 0;
  size_t started = 0;
  auto start = [&](TransferId id) {
    const Time duration = queues.duration(id);
    times.set(id, now, now + duration);
    ++started;
    const Time usable =
        a.usable_at(id, now + duration, reduction);  // what waits for it waits for this
    result.collective_time = std::max(result.collective_time, usable);
    push({now + queues.occupancy(id), id, false});
    if (graph.waited_on(id)) push({usable, id, true});  // (its time is counted above)
  };
  admission.admit(start);
  // An instant's events, taken at once: what each reads is asked for across the batch before the
  // first is handled (an instant of a large pipeline holds tens of events, each a cache miss
  // where its transfer's records are).
  std::vector<Event> batch;
  while (!events.empty()) {
    now = static_cast<Time>(events.least());
    events.take_least(batch);
    for (const Event& e : batch)
      if (e.arrival)
        graph.prefetch_list(e.id);
      else
        admission.prefetch(e.id);
    for (const Event& e : batch)
      if (e.arrival) graph.prefetch_users(e.id);
    for (const Event& e : batch)
      if (e.arrival)
        graph.prefetch_waits(e.id, waiting.data(),
                             [&](TransferId u) { admission.prefetch_met(u); });
    for (const Event& e : batch) {
      if (!e.arrival) {
        admission.released(e.id);
      } else {
        graph.arrived(e.id, waiting, [&](TransferId u) { admission.dependencies_met(u); });
      }
    }
    admission.admit(start);
  }
  if (started !=
      a.size())  // cannot happen: dependencies point backwards and every rate fits an idle link
    throw Error(fmt::format("timing stopped with {} of {} transfers never started",
                            a.size() - started, a.size()));
  return result;
}

template <typename Times>
TimingResult times_into(const topo::Topology& described, const Algorithm& a, Times& times) {
  const ProtocolView view(described, a);
  const topo::Topology& t = view.topology();
  return check_and_find_routed(t, a) ? event_driven(t, a, times) : one_pass(t, a, times);
}

}  // namespace

TimingResult compute_times(const topo::Topology& t, const Algorithm& a, std::span<Time> starts,
                           std::span<Time> ends) {
  SpanTimes times{starts, ends};
  return times_into(t, a, times);
}

TimingResult time(const topo::Topology& t, Algorithm& a) {
  IntoAlgorithm times{a};
  TimingResult result = times_into(t, a, times);
  a.claimed_time = result.collective_time;
  return result;
}

Time model_time(const topo::Topology& t, const Algorithm& a) {
  EndsOnly times{a, {}};
  return times_into(t, a, times).collective_time;
}

namespace {

// x + y, or the largest time where that is past it: a link's load on links of a few bytes per
// second passes 2^63 ps, and a floor held there is still one (no schedule finishes sooner).
Time saturated_sum(Time x, Time y) {
  Time sum = 0;
  return __builtin_add_overflow(x, y, &sum) ? std::numeric_limits<Time>::max() : sum;
}

}  // namespace

namespace {

// One transfer as time_floor reads it.
struct FloorTransfer {
  ChunkId chunk;
  int count;
  NodeId src, dst;
  bool from_input;
  Op op;
  uint16_t channel;
  std::span<const LinkId> route;
  Bandwidth rate;  // as listed: 0 for the route's narrowest
};

// An algorithm's transfers, with their explicit dependencies.
struct AlgorithmTransfers {
  const Algorithm& a;
  static constexpr bool kExplicitDependencies = true;
  TransferId size() const { return static_cast<TransferId>(a.size()); }
  FloorTransfer operator[](TransferId id) const {
    const Transfer& x = a[id];
    return {x.chunk, x.count, x.src, x.dst, x.from_input, x.op, x.channel, a.route(id), a.rate(id)};
  }
  std::span<const TransferId> deps(TransferId id) const { return a.deps(id); }
  Op op(TransferId id) const { return a[id].op; }
  uint16_t channel(TransferId id) const { return a[id].channel; }
};

// A ring plan's transfers, computed from their numbers: each waits for its chunk's arrival at its
// source alone (RingPlan), which the (node, chunk) table of arrivals already gives.
struct PlanTransfers {
  const RingPlan& plan;
  static constexpr bool kExplicitDependencies = false;
  TransferId size() const { return plan.size(); }
  FloorTransfer operator[](TransferId id) const {
    const RingPlan::Send x = plan.send(id);
    return {x.chunk, 1, x.src, x.dst, false, x.op, x.channel, x.route, x.rate};
  }
  std::span<const TransferId> deps(TransferId) const { return {}; }
  Op op(TransferId id) const { return plan.send(id).op; }
  uint16_t channel(TransferId id) const { return plan.send(id).channel; }
};

// time_floor over `transfers` (AlgorithmTransfers or PlanTransfers) costed by `coster`.
template <typename Transfers>
Time floor_of(const topo::Topology& t, const Transfers& transfers, RouteCoster& coster,
              LinkModel model, Time reduction, int64_t chunks) {
  const TransferId n = transfers.size();
  const bool hold = model == LinkModel::Hold;
  const auto reduced = [&](Op op) { return op == Op::Reduce ? reduction : Time{0}; };
  const auto cost_of = [&](TransferId id, const FloorTransfer& x) {
    try {
      return coster(x.route, x.rate, x.count);
    } catch (const Error& e) {
      throw Error(fmt::format("transfer {}: {}", id, e.message()));
    }
  };
  // Per transfer, its start and duration: for what waits for it explicitly.
  constexpr bool kExplicit = Transfers::kExplicitDependencies;
  std::vector<Time> start(kExplicit ? n : 0), duration(kExplicit ? n : 0);
  // (node, chunk): its last arrival usable.
  Grid<Time> ready(
      static_cast<uint64_t>(t.num_nodes()), static_cast<uint64_t>(chunks),
      std::max<uint64_t>(kFlatCellsPerTransfer * static_cast<uint64_t>(n), kFlatCells));
  struct Queued {
    Time start = 0, occupancy = 0;
    Bandwidth rate = 0;
  };
  uint64_t channels = 1;
  for (TransferId id = 0; id < n; ++id)
    channels = std::max<uint64_t>(channels, transfers.channel(id) + 1u);
  // (first link, channel): its last transfer (24 B a cell: a table of at most one per transfer).
  Grid<Queued> queued(static_cast<uint64_t>(t.num_links()), channels,
                      std::max<uint64_t>(static_cast<uint64_t>(n), uint64_t{1} << 20));
  std::vector<Time> head(t.num_links(), std::numeric_limits<Time>::max());
  std::vector<Time> load(t.num_links(), 0);
  Time floor = 0;
  for (TransferId id = 0; id < n; ++id) {
    const FloorTransfer x = transfers[id];
    Time s = 0;
    if (!x.from_input)
      for (ChunkId c = x.chunk; c < x.chunk + x.count; ++c) s = std::max(s, ready(x.src, c));
    for (TransferId d : transfers.deps(id))
      s = std::max(s,
                   saturated_sum(saturated_sum(start[d], duration[d]), reduced(transfers.op(d))));
    const RouteCost cost = cost_of(id, x);
    const Bandwidth held = hold ? std::numeric_limits<Bandwidth>::max() : cost.rate;
    // The queue's last transfer started first; where both rates do not fit the link together, it
    // also left the link first.
    Queued& queue = queued(static_cast<uint64_t>(x.route.front()), x.channel);
    s = std::max(s, queue.start);
    if (queue.rate >
        t.link(x.route.front()).bandwidth - std::min(held, t.link(x.route.front()).bandwidth))
      s = std::max(s, saturated_sum(queue.start, queue.occupancy));
    queue = {s, cost.occupancy, held};
    if constexpr (kExplicit) {
      start[id] = s;
      duration[id] = cost.duration;
    }
    for (LinkId l : x.route) {
      head[l] = std::min(head[l], s);
      load[l] = saturated_sum(load[l], busy_share(cost.occupancy, held, t.link(l).bandwidth));
    }
    const Time usable = saturated_sum(saturated_sum(s, cost.duration), reduced(x.op));
    for (ChunkId c = x.chunk; c < x.chunk + x.count; ++c) {
      Time& r = ready(x.dst, c);
      r = std::max(r, usable);
    }
    floor = std::max(floor, usable);
  }
  // Backwards: what each transfer still has ahead once it ended (its reduction, then the longest
  // chain of what waits for it), and per link the least of it.
  std::vector<Time> after(kExplicit ? n : 0,
                          0);  // per transfer: the longest chain of its explicit dependants
  ready.clear();  // now per (node, chunk): the longest chain leaving it later in the list
  std::vector<Time> tail(t.num_links(), std::numeric_limits<Time>::max());
  for (TransferId id = n - 1; id >= 0; --id) {
    const FloorTransfer x = transfers[id];
    Time later = kExplicit ? after[id] : 0;
    for (ChunkId c = x.chunk; c < x.chunk + x.count; ++c) later = std::max(later, ready(x.dst, c));
    const Time ahead = saturated_sum(reduced(x.op), later);
    const Time chain = saturated_sum(kExplicit ? duration[id] : cost_of(id, x).duration, ahead);
    for (TransferId d : transfers.deps(id)) after[d] = std::max(after[d], chain);
    if (!x.from_input)  // a send of its source's input waits for no arrival there
      for (ChunkId c = x.chunk; c < x.chunk + x.count; ++c) {
        Time& r = ready(x.src, c);
        r = std::max(r, chain);
      }
    for (LinkId l : x.route) tail[l] = std::min(tail[l], ahead);
  }
  for (LinkId l = 0; l < t.num_links(); ++l)
    if (load[l] > 0)
      floor = std::max(floor, saturated_sum(saturated_sum(head[l], load[l]), tail[l]));
  return floor;
}

}  // namespace

Time time_floor(const topo::Topology& described, const Algorithm& a) {
  const ProtocolView view(described, a);
  const topo::Topology& t = view.topology();
  check_and_find_routed(t, a);
  RouteCoster coster(t, a);
  return floor_of(t, AlgorithmTransfers{a}, coster, a.link_model, a.reduction_time(),
                  a.collective.num_chunks());
}

Time time_floor(const topo::Topology& t, const RingPlan& plan) {
  RouteCoster coster(t, plan.chunk_bytes(), plan.link_model(), plan.step_costs());
  return floor_of(t, PlanTransfers{plan}, coster, plan.link_model(), plan.reduction_time(),
                  plan.collective().num_chunks());
}

Time load_floor(const topo::Topology& t, const RingPlan& plan) {
  RouteCoster coster(t, plan.chunk_bytes(), plan.link_model(), plan.step_costs());
  const bool hold = plan.link_model() == LinkModel::Hold;
  std::vector<Time> load(t.num_links(), 0);
  plan.for_each_route_use([&](std::span<const LinkId> route, Bandwidth rate, int64_t sends) {
    const RouteCost cost = coster(route, rate);
    const Bandwidth held = hold ? std::numeric_limits<Bandwidth>::max() : cost.rate;
    for (LinkId l : route) {
      const Time each = busy_share(cost.occupancy, held, t.link(l).bandwidth);
      // (floor_of adds each transfer's share in turn: the same sum, saturated.)
      const Time all = each > 0 && sends > std::numeric_limits<Time>::max() / each
                           ? std::numeric_limits<Time>::max()
                           : each * sends;
      load[l] = saturated_sum(load[l], all);
    }
  });
  return load.empty() ? 0 : *std::max_element(load.begin(), load.end());
}

bool time_unless_floored(const topo::Topology& t, Algorithm& a, Time to_beat, Time* floor_out) {
  if (to_beat > 0) {
    const Time floor = time_floor(t, a);
    if (floor_out) *floor_out = floor;
    if (floor >= to_beat) {
      a.claimed_time = floor;
      return true;
    }
  }
  time(t, a);
  return false;
}

int balanced_message_chunks(int64_t chunks, Time step, Time chunk_time, int relays) {
  if (chunks <= 1 || step <= 0 || chunk_time <= 0 || relays < 1) return 1;
  const double m = std::round(std::sqrt(static_cast<double>(chunks) * static_cast<double>(step) /
                                        (relays * static_cast<double>(chunk_time))));
  return static_cast<int>(
      std::clamp(m, 1.0, static_cast<double>(std::min<int64_t>(chunks, kMaxChunksPerTransfer))));
}

Time collective_time(const topo::Topology& t, const Algorithm& a) {
  return a.claimed_time >= 0 ? a.claimed_time : model_time(t, a);
}

void set_reduce_bandwidth(const topo::Topology& t, Algorithm& a, Bandwidth reduce_bandwidth) {
  if (reduce_bandwidth < 0)
    throw Error(fmt::format("negative reduction bandwidth ({} B/s)", reduce_bandwidth));
  if (a.reduce_bandwidth == reduce_bandwidth) return;
  if (std::none_of(a.transfers().begin(), a.transfers().end(),
                   [](const Transfer& x) { return x.op == Op::Reduce; }))
    return;
  a.reduce_bandwidth = reduce_bandwidth;
  time(t, a);
}

}  // namespace tenet::synth
