#include "synth/timing.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <utility>

#include "synth/link_admission.hpp"
#include "synth/link_ledger.hpp"
#include "topo/error.hpp"

namespace tenet::synth {

RouteCost route_cost(const topo::Topology& t, std::span<const LinkId> route, Bytes bytes,
                     LinkModel model, Bandwidth rate) {
  if (route.empty()) throw Error("a transfer's route is empty");
  RouteCost c;
  c.bottleneck = std::numeric_limits<Bandwidth>::max();
  for (LinkId l : route) {
    if (l < 0 || l >= t.num_links())
      throw Error(fmt::format("link {} does not exist (the topology has {} links)", l, t.num_links()));
    c.bottleneck = std::min(c.bottleneck, t.link(l).bandwidth);
    c.latency += t.link(l).latency;
  }
  if (rate < 0 || rate > c.bottleneck)
    throw Error(fmt::format("rate {} is {} the narrowest bandwidth on its route, {}", format_bandwidth(rate),
                            rate < 0 ? "negative, not up to" : "above", format_bandwidth(c.bottleneck)));
  c.rate = rate == 0 ? c.bottleneck : rate;
  const Time serialization = transfer_time(bytes, c.rate);
  c.duration = serialization + c.latency;
  c.occupancy = model == LinkModel::Pipelined ? serialization : c.duration;
  return c;
}

RouteCoster::RouteCoster(const topo::Topology& t, Bytes bytes, LinkModel model)
    : t_(t), bytes_(bytes), model_(model), bandwidth_(t.num_links()), latency_(t.num_links()) {
  for (LinkId l = 0; l < t.num_links(); ++l) {
    bandwidth_[l] = t.link(l).bandwidth;
    latency_[l] = t.link(l).latency;
  }
}

RouteCost RouteCoster::operator()(std::span<const LinkId> route, Bandwidth rate) {
  RouteCost c;
  c.bottleneck = std::numeric_limits<Bandwidth>::max();
  for (LinkId l : route) {
    if (l < 0 || l >= static_cast<LinkId>(bandwidth_.size()))
      return route_cost(t_, route, bytes_, model_, rate);  // throws the error
    c.bottleneck = std::min(c.bottleneck, bandwidth_[l]);
    c.latency += latency_[l];
  }
  if (route.empty() || rate < 0 || rate > c.bottleneck) return route_cost(t_, route, bytes_, model_, rate);
  c.rate = rate == 0 ? c.bottleneck : rate;
  Time serialization;
  if (c.rate == rates_[0]) {
    serialization = times_[0];
  } else if (c.rate == rates_[1]) {
    serialization = times_[1];
    std::swap(rates_[0], rates_[1]);
    std::swap(times_[0], times_[1]);
  } else {
    serialization = transfer_time(bytes_, c.rate);
    rates_[1] = rates_[0];
    times_[1] = times_[0];
    rates_[0] = c.rate;
    times_[0] = serialization;
  }
  c.duration = serialization + c.latency;
  c.occupancy = model_ == LinkModel::Pipelined ? serialization : c.duration;
  return c;
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
    if (x.src < 0 || x.src >= t.num_nodes() || x.dst < 0 || x.dst >= t.num_nodes())
      throw Error(where() + "source or destination is not a node of the topology");
    for (TransferId d : a.deps(id))
      if (d < 0 || d >= id)
        throw Error(where() + fmt::format("depends on transfer {}, which is not listed before it", d));
    routed = routed || x.route_size > 1 || x.channel != 0;
  }
  return routed;
}

constexpr TransferId kReadyPrefetch = 16;

// Where the timing puts the times it finds, and reads back ends (a dependency's): two lists, the
// algorithm itself (time(): no 16 B per transfer beside it, 268 MB for a 64x64 torus All-Gather), or
// the ends alone (a collective time).
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
  RouteCoster coster(t, a.chunk_bytes, a.link_model);
  const bool hold = a.link_model == LinkModel::Hold;
  // When each (node, chunk) last received data, for the implicit data dependency.
  std::vector<Time> ready(static_cast<size_t>(t.num_nodes()) * chunks, 0);
  const Time reduction = a.reduction_time();
  const auto n = static_cast<TransferId>(a.size());
  for (TransferId id = 0; id < n; ++id) {
    const Transfer& x = a[id];
    // (node, chunk) is all over the table (8 MB for 1024 NPUs x 1024 chunks), and a dependency
    // anywhere earlier in the list: ask for what a transfer a few ahead reads, so that the loads
    // overlap instead of each waiting on memory (a 32x32 torus All-Gather: 0.22 s -> 0.1 s).
    if (id + kReadyPrefetch < n) {
      const Transfer& ahead = a[id + kReadyPrefetch];
      __builtin_prefetch(&ready[static_cast<size_t>(ahead.src) * chunks + ahead.chunk]);
      __builtin_prefetch(&ready[static_cast<size_t>(ahead.dst) * chunks + ahead.chunk], 1);
      for (TransferId d : a.deps(id + kReadyPrefetch)) {
        __builtin_prefetch(times.end_address(d));
        __builtin_prefetch(&a[d]);
      }
    }
    Time start = ready[static_cast<size_t>(x.src) * chunks + x.chunk];
    for (TransferId d : a.deps(id)) start = std::max(start, a.usable_at(d, times.end(d), reduction));
    RouteCost cost;
    try {
      cost = coster(a.route(id), a.rate(id));
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
    Time& r = ready[static_cast<size_t>(x.dst) * chunks + x.chunk];
    r = std::max(r, usable);
    times.set(id, start, end);
    result.collective_time = std::max(result.collective_time, usable);
  }
  return result;
}

// Routes through switches or router NPUs: links shared by several senders admit by capacity in
// order of readiness (synth/link_admission.hpp), so the schedule unfolds event by event.
template <typename Times>
TimingResult event_driven(const topo::Topology& t, const Algorithm& a, Times& times) {
  TimingResult result;
  result.link_busy.assign(t.num_links(), 0);
  const ArrivalGraph graph(a);
  LinkAdmission admission(t, a);
  RouteCoster coster(t, a.chunk_bytes, a.link_model);
  const bool hold = a.link_model == LinkModel::Hold;
  const Time reduction = a.reduction_time();
  struct Event {
    Time at;
    TransferId id;
    bool arrival;
    bool operator>(const Event& o) const { return at != o.at ? at > o.at : id > o.id; }
  };
  std::vector<Event> events;
  auto push = [&](Event e) {
    events.push_back(e);
    std::push_heap(events.begin(), events.end(), std::greater<Event>());
  };
  std::vector<int32_t> waiting = graph.waits();
  for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id)
    if (waiting[id] == 0) admission.dependencies_met(id);
  Time now = 0;
  size_t started = 0;
  auto start = [&](TransferId id) {
    const RouteCost cost = coster(a.route(id), a.rate(id));
    times.set(id, now, now + cost.duration);
    ++started;
    const Bandwidth held = hold ? std::numeric_limits<Bandwidth>::max() : cost.rate;
    for (LinkId l : a.route(id)) result.link_busy[l] += busy_share(cost.occupancy, held, t.link(l).bandwidth);
    const Time usable = a.usable_at(id, now + cost.duration, reduction);  // what waits for it waits for this
    result.collective_time = std::max(result.collective_time, usable);
    push({now + cost.occupancy, id, false});
    push({usable, id, true});
  };
  admission.admit(start);
  while (!events.empty()) {
    now = events.front().at;
    while (!events.empty() && events.front().at == now) {
      std::pop_heap(events.begin(), events.end(), std::greater<Event>());
      const Event e = events.back();
      events.pop_back();
      if (!e.arrival) {
        admission.released(e.id);
      } else {
        graph.arrived(e.id, waiting, [&](TransferId u) { admission.dependencies_met(u); });
      }
    }
    admission.admit(start);
  }
  if (started != a.size())  // cannot happen: dependencies point backwards and every rate fits an idle link
    throw Error(fmt::format("timing stopped with {} of {} transfers never started", a.size() - started, a.size()));
  return result;
}

template <typename Times>
TimingResult times_into(const topo::Topology& t, const Algorithm& a, Times& times) {
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

Time collective_time(const topo::Topology& t, const Algorithm& a) {
  return a.claimed_time >= 0 ? a.claimed_time : model_time(t, a);
}

void set_reduce_bandwidth(const topo::Topology& t, Algorithm& a, Bandwidth reduce_bandwidth) {
  if (reduce_bandwidth < 0) throw Error(fmt::format("negative reduction bandwidth ({} B/s)", reduce_bandwidth));
  if (a.reduce_bandwidth == reduce_bandwidth) return;
  if (std::none_of(a.transfers().begin(), a.transfers().end(), [](const Transfer& x) { return x.op == Op::Reduce; }))
    return;
  a.reduce_bandwidth = reduce_bandwidth;
  time(t, a);
}

}  // namespace tenet::synth
