#include "sim/network.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <memory>
#include <utility>

#include "sim/network_backends.hpp"
#include "sim/packet_network.hpp"
#include "topo/error.hpp"
#include "topo/suggest.hpp"

namespace tenet::sim {
namespace {

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
  const uint64_t h =
      mix(flow ^ (static_cast<uint64_t>(m.src) << 40) ^ (static_cast<uint64_t>(m.dst) << 20));
  return it->second[h % it->second.size()].links;
}

bool Network::deferred_by_step(const Message& m, std::function<void()>& on_release,
                               std::function<void()>& on_arrival) {
  if (m.step <= 0) return false;
  auto route = std::make_shared<std::vector<topo::LinkId>>(m.route.begin(), m.route.end());
  Message later = m;
  later.step = 0;
  events_.schedule_after(m.step, [this, later, route, release = std::move(on_release),
                                  arrival = std::move(on_arrival)]() mutable {
    later.route = *route;
    send(later, std::move(release), std::move(arrival));
  });
  return true;
}

void Network::to_slices() {
  slice_ = 1;
  shift_ = 0;
  while (slice_ * kActivitySlices < latest_) slice_ = Time{1} << ++shift_;
  slices_.resize(activity_.size());
  pending_.assign(activity_.size(), {});
  for (size_t l = 0; l < activity_.size(); ++l) {
    for (const Interval& iv : activity_[l])
      add_to_slices(static_cast<topo::LinkId>(l), iv.start, iv.end, iv.share);
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
    const double amount =
        share * static_cast<double>(std::min(end, (k + 1) * slice_) - std::max(start, k * slice_));
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
    if (!activity_.empty())
      r.links[l].activity = std::exchange(activity_[l], {});  // handed over, not copied
    if (slice_ > 0 && !slices_[l].empty()) {
      for (int k = 0; k < kActivitySlices; ++k)
        if (slices_[l][k] > 0)
          r.links[l].activity.push_back(
              {k * slice_, (k + 1) * slice_, slices_[l][k] / static_cast<double>(slice_)});
      slices_[l] = std::vector<double>();
    }
  }
  return r;
}

std::vector<double> utilization_over_time(const std::vector<Interval>& activity, Time end,
                                          int bins) {
  std::vector<double> out(std::max(bins, 0), 0.0);
  if (end <= 0 || bins <= 0) return out;
  const double width = static_cast<double>(end) / bins;
  for (const Interval& iv : activity) {
    const Time a = std::max<Time>(iv.start, 0), b = std::min(iv.end, end);
    for (int k = std::min(bins - 1, static_cast<int>(a / width)); k < bins && k * width < b; ++k) {
      const double lo = std::max(static_cast<double>(a), k * width),
                   hi = std::min(static_cast<double>(b), (k + 1) * width);
      if (hi > lo) out[k] += iv.share * (hi - lo) / width;
    }
  }
  for (double& u : out) u = std::min(u, 1.0);
  return out;
}

namespace {
template <class Enum, size_t N>
Enum parse_name(std::string_view what, std::string_view name,
                const std::array<std::pair<Enum, std::string_view>, N>& names) {
  for (const auto& [value, text] : names)
    if (text == name) return value;
  std::string known;
  std::vector<std::string> candidates;
  for (const auto& [value, text] : names) {
    known += fmt::format("{}{}", known.empty() ? "" : ", ", text);
    candidates.emplace_back(text);
  }
  throw Error(
      fmt::format("unknown {} '{}'{} ({})", what, name, did_you_mean(name, candidates), known));
}
template <class Enum, size_t N>
std::string_view name_of(Enum e, const std::array<std::pair<Enum, std::string_view>, N>& names) {
  for (const auto& [value, text] : names)
    if (value == e) return text;
  return "?";
}
constexpr std::array<std::pair<NetworkKind, std::string_view>, 3> kNetworks{
    {{NetworkKind::Analytical, "analytical"},
     {NetworkKind::AnalyticalCongestion, "analytical-congestion"},
     {NetworkKind::Packet, "packet"}}};
constexpr std::array<std::pair<PacketConfig::Routing, std::string_view>, 2> kRoutings{
    {{PacketConfig::Routing::Source, "source"}, {PacketConfig::Routing::Ecmp, "ecmp"}}};
constexpr std::array<std::pair<PacketConfig::Arbitration, std::string_view>, 2> kArbitrations{
    {{PacketConfig::Arbitration::RoundRobin, "round-robin"},
     {PacketConfig::Arbitration::FixedPriority, "fixed-priority"}}};
}  // namespace

NetworkKind parse_network(std::string_view name) { return parse_name("network", name, kNetworks); }
std::string_view to_string(NetworkKind k) { return name_of(k, kNetworks); }
PacketConfig::Routing parse_routing(std::string_view name) {
  return parse_name("routing", name, kRoutings);
}
std::string_view to_string(PacketConfig::Routing r) { return name_of(r, kRoutings); }
PacketConfig::Arbitration parse_arbitration(std::string_view name) {
  return parse_name("arbitration", name, kArbitrations);
}
std::string_view to_string(PacketConfig::Arbitration a) { return name_of(a, kArbitrations); }

std::unique_ptr<Network> make_network(NetworkKind kind, const topo::Topology& t, EventQueue& events,
                                      const PacketConfig& packet) {
  switch (kind) {
    case NetworkKind::Analytical:
      return detail::make_analytical_network(t, events);
    case NetworkKind::AnalyticalCongestion:
      return detail::make_congestion_network(t, events, packet.routing);
    case NetworkKind::Packet:
      break;
  }
  return std::make_unique<PacketNetwork>(t, events, packet);
}

}  // namespace tenet::sim
