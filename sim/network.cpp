#include "sim/network.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <utility>

#include "sim/packet_network.hpp"
#include "synth/timing.hpp"
#include "topo/error.hpp"
#include "topo/suggest.hpp"

namespace tenet::sim {
namespace {

Time route_latency(const topo::Topology& t, std::span<const topo::LinkId> route) {
  Time l = 0;
  for (topo::LinkId id : route) l += t.link(id).latency;
  return l;
}

// No contention: every message moves at its own rate whatever else shares its links. What it would
// have needed is still measured: per link, the rates of the messages on it at once (a heap of their
// end times), so a report can say where the model's time is optimistic.
class Analytical final : public Network {
 public:
  Analytical(const topo::Topology& t, EventQueue& events)
      : Network(t, events), on_link_(t.num_links()), demand_(t.num_links(), 0), peak_(t.num_links(), 0),
        peak_at_(t.num_links(), -1) {}
  std::string_view name() const override { return "analytical"; }
  void send(Message m, std::function<void()> on_release, std::function<void()> on_arrival) override {
    Bandwidth narrowest = std::numeric_limits<Bandwidth>::max();
    for (topo::LinkId l : m.route) narrowest = std::min(narrowest, topo_.link(l).bandwidth);
    const Bandwidth rate = m.rate > 0 ? std::min(m.rate, narrowest) : narrowest;
    const Time serialization = m.route.empty() ? 0 : transfer_time(m.bytes, rate);
    for (topo::LinkId l : m.route) {
      const Bandwidth bw = topo_.link(l).bandwidth;
      if (serialization > 0) demand(l, rate, events_.now() + serialization);
      busy_[l] += synth::busy_share(serialization, rate, bw);
      record_activity(l, events_.now(), events_.now() + serialization,
                      rate >= bw ? 1.0 : static_cast<double>(rate) / static_cast<double>(bw));
    }
    events_.schedule_after(serialization, std::move(on_release));
    events_.schedule_after(serialization + route_latency(topo_, m.route), std::move(on_arrival));
  }

  NetworkReport report() override {
    NetworkReport r = Network::report();
    for (size_t l = 0; l < r.links.size(); ++l) {
      r.links[l].peak_demand =
          static_cast<double>(peak_[l]) / static_cast<double>(topo_.link(static_cast<topo::LinkId>(l)).bandwidth);
      r.links[l].peak_demand_at = std::max<Time>(peak_at_[l], 0);
    }
    return r;
  }

 private:
  // Adds a message of `rate` on link `l` until `end`; those that ended by now leave first.
  void demand(topo::LinkId l, Bandwidth rate, Time end) {
    auto& on = on_link_[l];
    const auto later = [](const std::pair<Time, Bandwidth>& a, const std::pair<Time, Bandwidth>& b) { return a.first > b.first; };
    while (!on.empty() && on.front().first <= events_.now()) {
      demand_[l] -= on.front().second;
      std::pop_heap(on.begin(), on.end(), later);
      on.pop_back();
    }
    on.emplace_back(end, rate);
    std::push_heap(on.begin(), on.end(), later);
    demand_[l] += rate;
    if (demand_[l] > peak_[l]) {
      peak_[l] = demand_[l];
      if (demand_[l] > topo_.link(l).bandwidth && peak_at_[l] < 0) peak_at_[l] = events_.now();
    }
  }

  std::vector<std::vector<std::pair<Time, Bandwidth>>> on_link_;  // (end, rate), a min-heap by end
  std::vector<Bandwidth> demand_, peak_;
  std::vector<Time> peak_at_;
};

// Flow-level sharing: every active message gets its max-min fair rate over its route's links
// (progressive filling). When a message starts or finishes, only the flows connected to it
// through shared links (transitively) are re-shared; a flow's bytes are settled when its rate
// changes. Completion events carry the flow's version, so a rate change makes older ones stale.
class Congestion final : public Network {
 public:
  Congestion(const topo::Topology& t, EventQueue& events, PacketConfig::Routing routing)
      : Network(t, events),
        ecmp_(routing == PacketConfig::Routing::Ecmp ? std::make_unique<EcmpRoutes>(t) : nullptr),
        flows_on_(t.num_links()),
        carried_(t.num_links(), 0.0),
        rate_sum_(t.num_links(), 0.0),
        rate_since_(t.num_links(), 0) {}
  std::string_view name() const override { return "analytical-congestion"; }

  std::vector<Time> link_busy() const override {
    std::vector<Time> out(carried_.size());
    for (size_t l = 0; l < carried_.size(); ++l)
      out[l] = static_cast<Time>(carried_[l] / static_cast<double>(topo_.link(static_cast<topo::LinkId>(l)).bandwidth) *
                                 static_cast<double>(kPicosPerSecond));
    return out;
  }

  void send(Message m, std::function<void()> on_release, std::function<void()> on_arrival) override {
    if (m.route.empty() || m.bytes == 0) {
      events_.schedule_after(0, std::move(on_release));
      events_.schedule_after(route_latency(topo_, m.route), std::move(on_arrival));
      return;
    }
    int id;
    if (!free_.empty()) {
      id = free_.back();
      free_.pop_back();
    } else {
      id = static_cast<int>(flows_.size());
      flows_.emplace_back();
    }
    Flow& f = flows_[id];
    if (ecmp_)
      f.route = ecmp_->pick(m, messages_++);
    else
      f.route.assign(m.route.begin(), m.route.end());
    f.left = static_cast<double>(m.bytes);
    f.rate = 0;
    f.cap = static_cast<double>(m.rate);
    if (m.rate > 0) ++capped_;
    f.settled = events_.now();
    ++f.version;
    f.on_release = std::move(on_release);
    f.on_arrival = std::move(on_arrival);
    f.active = true;
    for (topo::LinkId l : f.route) flows_on_[l].push_back(id);
    reshare_around(f.route);
  }

 private:
  struct Flow {
    std::vector<topo::LinkId> route;
    double left = 0;  // bytes still to send, as of `settled`
    double rate = 0;  // bytes per second
    double cap = 0;   // its own rate, never exceeded; 0: none
    Time settled = 0;
    int version = 0;
    std::function<void()> on_release, on_arrival;
    bool active = false;
  };

  // Brings a flow's remaining bytes (and the links' carried bytes) up to now.
  void settle(Flow& f) {
    const double dt = static_cast<double>(events_.now() - f.settled) / static_cast<double>(kPicosPerSecond);
    if (dt > 0 && f.rate > 0) {
      const double sent = std::min(f.left, f.rate * dt);
      f.left -= sent;
      for (topo::LinkId l : f.route) carried_[l] += sent;
    }
    f.settled = events_.now();
  }

  // Re-shares the flows connected to `links` through shared links.
  void reshare_around(const std::vector<topo::LinkId>& links) {
    ++stamp_;
    if (link_mark_.size() < flows_on_.size()) link_mark_.assign(flows_on_.size(), 0);
    if (flow_mark_.size() < flows_.size()) flow_mark_.resize(flows_.size(), 0);
    comp_links_.clear();
    comp_flows_.clear();
    for (topo::LinkId l : links)
      if (link_mark_[l] != stamp_) {
        link_mark_[l] = stamp_;
        comp_links_.push_back(l);
      }
    for (size_t i = 0; i < comp_links_.size(); ++i)
      for (int id : flows_on_[comp_links_[i]]) {
        if (flow_mark_[id] == stamp_) continue;
        flow_mark_[id] = stamp_;
        comp_flows_.push_back(id);
        for (topo::LinkId l : flows_[id].route)
          if (link_mark_[l] != stamp_) {
            link_mark_[l] = stamp_;
            comp_links_.push_back(l);
          }
      }
    for (int id : comp_flows_) settle(flows_[id]);
    // Each link's utilization was constant since its last re-share: record it (when kept).
    const bool keeping = !activity_.empty();
    if (keeping)
      for (topo::LinkId l : comp_links_) {
        record_activity(l, rate_since_[l], events_.now(),
                        std::min(1.0, rate_sum_[l] / static_cast<double>(topo_.link(l).bandwidth)));
        rate_since_[l] = events_.now();
      }
    // Progressive filling over the component.
    std::sort(comp_links_.begin(), comp_links_.end());
    std::vector<double> capacity(comp_links_.size());
    std::vector<int> unfrozen(comp_links_.size(), 0);
    auto index = [&](topo::LinkId l) {
      return std::lower_bound(comp_links_.begin(), comp_links_.end(), l) - comp_links_.begin();
    };
    for (size_t i = 0; i < comp_links_.size(); ++i) {
      capacity[i] = static_cast<double>(topo_.link(comp_links_[i]).bandwidth);
      unfrozen[i] = static_cast<int>(flows_on_[comp_links_[i]].size());
    }
    ++stamp_;  // flow_mark_ == stamp_ now means "rate fixed"
    size_t left = comp_flows_.size();
    auto freeze = [&](int id, double rate) {
      flow_mark_[id] = stamp_;
      --left;
      flows_[id].rate = rate;
      for (topo::LinkId l : flows_[id].route) {
        const auto i = index(l);
        capacity[i] -= rate;
        --unfrozen[i];
      }
    };
    while (left > 0) {
      double share = std::numeric_limits<double>::infinity();
      size_t at = 0;
      for (size_t i = 0; i < comp_links_.size(); ++i)
        if (unfrozen[i] > 0 && capacity[i] / unfrozen[i] < share) {
          share = capacity[i] / unfrozen[i];
          at = i;
        }
      // A flow whose own rate is below the fair share is a bottleneck of its own.
      int capped = -1;
      if (capped_ > 0)
        for (int id : comp_flows_)
          if (flow_mark_[id] != stamp_ && flows_[id].cap > 0 && flows_[id].cap < share) {
            share = flows_[id].cap;
            capped = id;
          }
      if (capped >= 0) {
        freeze(capped, share);
        continue;
      }
      for (int id : flows_on_[comp_links_[at]])
        if (flow_mark_[id] != stamp_) freeze(id, share);
    }
    if (keeping)
      for (topo::LinkId l : comp_links_) {
        rate_sum_[l] = 0;
        for (int id : flows_on_[l]) rate_sum_[l] += flows_[id].rate;
      }
    for (int id : comp_flows_) {
      Flow& f = flows_[id];
      const int version = ++f.version;
      const Time eta = static_cast<Time>(std::ceil(f.left / f.rate * static_cast<double>(kPicosPerSecond)));
      events_.schedule_after(eta, [this, id, version] { finish(id, version); });
    }
  }

  void finish(int id, int version) {
    Flow& f = flows_[id];
    if (!f.active || f.version != version) return;  // a stale estimate
    settle(f);
    f.active = false;
    if (f.cap > 0) --capped_;
    for (topo::LinkId l : f.route) std::erase(flows_on_[l], id);
    events_.schedule_after(0, std::move(f.on_release));
    events_.schedule_after(route_latency(topo_, f.route), std::move(f.on_arrival));
    f.on_release = nullptr;
    f.on_arrival = nullptr;
    std::vector<topo::LinkId> route = std::move(f.route);
    f.route.clear();
    free_.push_back(id);
    reshare_around(route);
  }

  std::unique_ptr<EcmpRoutes> ecmp_;  // with --routing ecmp
  uint64_t messages_ = 0;
  std::vector<Flow> flows_;
  std::vector<int> free_;
  std::vector<std::vector<int>> flows_on_;
  std::vector<double> carried_;  // bytes per link
  std::vector<double> rate_sum_;  // bytes per second per link, since rate_since_
  std::vector<Time> rate_since_;
  std::vector<uint64_t> link_mark_, flow_mark_;
  std::vector<topo::LinkId> comp_links_;
  std::vector<int> comp_flows_;
  uint64_t stamp_ = 0;
  int64_t capped_ = 0;  // active flows with a rate of their own
};

uint64_t mix(uint64_t x) {  // splitmix64's finaliser: a well-spread hash of a flow's identity
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

std::vector<topo::LinkId> EcmpRoutes::pick(const Message& m, uint64_t flow) {
  if (m.route.empty()) return {};
  auto [it, added] = routes_.try_emplace({m.src, m.dst});
  if (added) it->second = router_.equal_cost_routes(m.src, m.dst);
  if (it->second.empty()) return {m.route.begin(), m.route.end()};
  const uint64_t h = mix(flow ^ (static_cast<uint64_t>(m.src) << 40) ^ (static_cast<uint64_t>(m.dst) << 20));
  return it->second[h % it->second.size()].links;
}

void Network::to_slices() {
  slice_ = 1;
  shift_ = 0;
  while (slice_ * kActivitySlices < latest_) slice_ = Time{1} << ++shift_;
  slices_.resize(activity_.size());
  pending_.assign(activity_.size(), {});
  for (size_t l = 0; l < activity_.size(); ++l) {
    for (const Interval& iv : activity_[l]) add_to_slices(static_cast<topo::LinkId>(l), iv.start, iv.end, iv.share);
    activity_[l] = std::vector<Interval>();  // freed (`= {}` keeps the capacity)
  }
}

void Network::add_to_slices(topo::LinkId l, Time start, Time end, double share) {
  // Past the last slice: twice as wide, every link's pairs summed.
  while (end > slice_ * kActivitySlices) {
    drain_slices();
    for (std::vector<double>& s : slices_) {
      if (s.empty()) continue;
      for (int k = 0; k < kActivitySlices / 2; ++k) s[k] = s[2 * k] + s[2 * k + 1];
      std::fill(s.begin() + kActivitySlices / 2, s.end(), 0.0);
    }
    for (Pending& p : pending_)
      if (p.slice >= 0) p.slice >>= 1;
    slice_ = Time{1} << ++shift_;
  }
  Pending& p = pending_[l];
  for (Time k = start >> shift_; k * slice_ < end; ++k) {
    const double amount = share * static_cast<double>(std::min(end, (k + 1) * slice_) - std::max(start, k * slice_));
    if (p.slice != k) {
      flush_slice(l);
      p.slice = k;
    }
    p.sum += amount;
  }
}

void Network::flush_slice(topo::LinkId l) {
  Pending& p = pending_[l];
  if (p.slice < 0) return;
  flushes_.push_back({l, static_cast<int32_t>(p.slice), p.sum});
  p = {};
  if (flushes_.size() >= 4096) drain_slices();
}

void Network::drain_slices() {
  constexpr size_t kAhead = 16;
  for (size_t i = 0; i < flushes_.size(); ++i) {
    if (i + kAhead < flushes_.size()) {
      const Flush& f = flushes_[i + kAhead];
      if (!slices_[f.link].empty()) __builtin_prefetch(&slices_[f.link][f.slice], 1);
    }
    const Flush& f = flushes_[i];
    std::vector<double>& s = slices_[f.link];
    if (s.empty()) s.assign(kActivitySlices, 0.0);
    s[f.slice] += f.sum;
  }
  flushes_.clear();
}

NetworkReport Network::report() {
  NetworkReport r;
  const std::vector<Time> busy = link_busy();
  r.links.resize(busy.size());
  r.activity_slice = slice_;
  if (slice_ > 0) {
    for (size_t l = 0; l < busy.size(); ++l) flush_slice(static_cast<topo::LinkId>(l));
    drain_slices();
  }
  for (size_t l = 0; l < busy.size(); ++l) {
    r.links[l].name = topo_.describe_link(static_cast<topo::LinkId>(l));
    r.links[l].busy = busy[l];
    if (!activity_.empty()) r.links[l].activity = std::exchange(activity_[l], {});  // handed over, not copied
    if (slice_ > 0 && !slices_[l].empty()) {
      for (int k = 0; k < kActivitySlices; ++k)
        if (slices_[l][k] > 0)
          r.links[l].activity.push_back({k * slice_, (k + 1) * slice_, slices_[l][k] / static_cast<double>(slice_)});
      slices_[l] = std::vector<double>();
    }
  }
  return r;
}

std::vector<double> utilization_over_time(const std::vector<Interval>& activity, Time end, int bins) {
  std::vector<double> out(std::max(bins, 0), 0.0);
  if (end <= 0 || bins <= 0) return out;
  const double width = static_cast<double>(end) / bins;
  for (const Interval& iv : activity) {
    const Time a = std::max<Time>(iv.start, 0), b = std::min(iv.end, end);
    for (int k = std::min(bins - 1, static_cast<int>(a / width)); k < bins && k * width < b; ++k) {
      const double lo = std::max(static_cast<double>(a), k * width), hi = std::min(static_cast<double>(b), (k + 1) * width);
      if (hi > lo) out[k] += iv.share * (hi - lo) / width;
    }
  }
  for (double& u : out) u = std::min(u, 1.0);
  return out;
}

namespace {
template <class Enum, size_t N>
Enum parse_name(std::string_view what, std::string_view name, const std::array<std::pair<Enum, std::string_view>, N>& names) {
  for (const auto& [value, text] : names)
    if (text == name) return value;
  std::string known;
  std::vector<std::string> candidates;
  for (const auto& [value, text] : names) {
    known += fmt::format("{}{}", known.empty() ? "" : ", ", text);
    candidates.emplace_back(text);
  }
  throw Error(fmt::format("unknown {} '{}'{} ({})", what, name, did_you_mean(name, candidates), known));
}
template <class Enum, size_t N>
std::string_view name_of(Enum e, const std::array<std::pair<Enum, std::string_view>, N>& names) {
  for (const auto& [value, text] : names)
    if (value == e) return text;
  return "?";
}
constexpr std::array<std::pair<NetworkKind, std::string_view>, 3> kNetworks{
    {{NetworkKind::Analytical, "analytical"}, {NetworkKind::AnalyticalCongestion, "analytical-congestion"}, {NetworkKind::Packet, "packet"}}};
constexpr std::array<std::pair<PacketConfig::Routing, std::string_view>, 2> kRoutings{
    {{PacketConfig::Routing::Source, "source"}, {PacketConfig::Routing::Ecmp, "ecmp"}}};
constexpr std::array<std::pair<PacketConfig::Arbitration, std::string_view>, 2> kArbitrations{
    {{PacketConfig::Arbitration::RoundRobin, "round-robin"}, {PacketConfig::Arbitration::FixedPriority, "fixed-priority"}}};
}  // namespace

NetworkKind parse_network(std::string_view name) { return parse_name("network", name, kNetworks); }
std::string_view to_string(NetworkKind k) { return name_of(k, kNetworks); }
PacketConfig::Routing parse_routing(std::string_view name) { return parse_name("routing", name, kRoutings); }
std::string_view to_string(PacketConfig::Routing r) { return name_of(r, kRoutings); }
PacketConfig::Arbitration parse_arbitration(std::string_view name) { return parse_name("arbitration", name, kArbitrations); }
std::string_view to_string(PacketConfig::Arbitration a) { return name_of(a, kArbitrations); }

std::unique_ptr<Network> make_network(NetworkKind kind, const topo::Topology& t, EventQueue& events,
                                      const PacketConfig& packet) {
  switch (kind) {
    case NetworkKind::Analytical:
      return std::make_unique<Analytical>(t, events);
    case NetworkKind::AnalyticalCongestion:
      return std::make_unique<Congestion>(t, events, packet.routing);
    case NetworkKind::Packet:
      break;
  }
  return std::make_unique<PacketNetwork>(t, events, packet);
}

}  // namespace tenet::sim
