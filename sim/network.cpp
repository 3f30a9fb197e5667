#include "sim/network.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "topo/error.hpp"

namespace tenet::sim {
namespace {

Time route_latency(const topo::Topology& t, const std::vector<topo::LinkId>& route) {
  Time l = 0;
  for (topo::LinkId id : route) l += t.link(id).latency;
  return l;
}

class Analytical final : public Network {
 public:
  using Network::Network;
  std::string_view name() const override { return "analytical"; }
  void send(Message m, std::function<void()> on_release, std::function<void()> on_arrival) override {
    Bandwidth narrowest = std::numeric_limits<Bandwidth>::max();
    for (topo::LinkId l : m.route) narrowest = std::min(narrowest, topo_.link(l).bandwidth);
    const Time serialization = m.route.empty() ? 0 : transfer_time(m.bytes, narrowest);
    for (topo::LinkId l : m.route) busy_[l] += serialization;
    events_.schedule_after(serialization, std::move(on_release));
    events_.schedule_after(serialization + route_latency(topo_, m.route), std::move(on_arrival));
  }
};

// Flow-level sharing: every active message gets its max-min fair rate over its route's links
// (progressive filling), recomputed when a message starts or finishes. Completion events carry
// the flow's version, so a rate change makes older events stale.
class Congestion final : public Network {
 public:
  Congestion(const topo::Topology& t, EventQueue& events) : Network(t, events), flows_on_(t.num_links()) {}
  std::string_view name() const override { return "analytical-congestion"; }

  void send(Message m, std::function<void()> on_release, std::function<void()> on_arrival) override {
    if (m.route.empty() || m.bytes == 0) {
      events_.schedule_after(0, std::move(on_release));
      events_.schedule_after(route_latency(topo_, m.route), std::move(on_arrival));
      return;
    }
    advance();
    const int id = static_cast<int>(flows_.size());
    flows_.push_back({std::move(m), static_cast<double>(0), 0.0, 0, std::move(on_release), std::move(on_arrival), true});
    flows_[id].left = static_cast<double>(flows_[id].msg.bytes);
    for (topo::LinkId l : flows_[id].msg.route) flows_on_[l].push_back(id);
    active_.push_back(id);
    reshare();
  }

 private:
  struct Flow {
    Message msg;
    double left;  // bytes still to send
    double rate;  // bytes per second
    int version;
    std::function<void()> on_release, on_arrival;
    bool active;
  };

  // Moves every active flow forward to now at its current rate.
  void advance() {
    const Time now = events_.now();
    const double dt = static_cast<double>(now - last_) / static_cast<double>(kPicosPerSecond);
    if (dt > 0)
      for (int id : active_) {
        Flow& f = flows_[id];
        f.left = std::max(0.0, f.left - f.rate * dt);
        for (topo::LinkId l : f.msg.route) busy_share_[l] += f.rate * dt;
      }
    last_ = now;
  }

  void reshare() {
    // Progressive filling over the links the active flows use.
    std::vector<topo::LinkId> links;
    for (int id : active_)
      for (topo::LinkId l : flows_[id].msg.route) links.push_back(l);
    std::sort(links.begin(), links.end());
    links.erase(std::unique(links.begin(), links.end()), links.end());
    std::vector<double> capacity(links.size());
    std::vector<int> unfrozen(links.size(), 0);
    std::vector<char> frozen(flows_.size(), 0);
    auto index = [&](topo::LinkId l) { return std::lower_bound(links.begin(), links.end(), l) - links.begin(); };
    for (size_t i = 0; i < links.size(); ++i) {
      capacity[i] = static_cast<double>(topo_.link(links[i]).bandwidth);
      for (int id : flows_on_[links[i]]) unfrozen[i] += flows_[id].active;
    }
    size_t left = active_.size();
    while (left > 0) {
      double share = std::numeric_limits<double>::infinity();
      size_t at = 0;
      for (size_t i = 0; i < links.size(); ++i)
        if (unfrozen[i] > 0 && capacity[i] / unfrozen[i] < share) {
          share = capacity[i] / unfrozen[i];
          at = i;
        }
      for (int id : flows_on_[links[at]]) {
        if (!flows_[id].active || frozen[id]) continue;
        frozen[id] = 1;
        --left;
        flows_[id].rate = share;
        for (topo::LinkId l : flows_[id].msg.route) {
          const auto i = index(l);
          capacity[i] -= share;
          --unfrozen[i];
        }
      }
    }
    for (int id : active_) {
      Flow& f = flows_[id];
      const int version = ++f.version;
      const Time eta = static_cast<Time>(std::ceil(f.left / f.rate * static_cast<double>(kPicosPerSecond)));
      events_.schedule_after(eta, [this, id, version] { finish(id, version); });
    }
  }

  void finish(int id, int version) {
    Flow& f = flows_[id];
    if (!f.active || f.version != version) return;  // a stale estimate
    advance();
    f.active = false;
    f.left = 0;
    std::erase(active_, id);
    for (topo::LinkId l : f.msg.route) std::erase(flows_on_[l], id);
    events_.schedule_after(0, std::move(f.on_release));
    events_.schedule_after(route_latency(topo_, f.msg.route), std::move(f.on_arrival));
    for (size_t l = 0; l < busy_share_.size(); ++l) {
      // Report busy time as carried bytes over capacity.
      busy_[l] = static_cast<Time>(busy_share_[l] / static_cast<double>(topo_.link(static_cast<topo::LinkId>(l)).bandwidth) *
                                   static_cast<double>(kPicosPerSecond));
    }
    if (!active_.empty()) reshare();
  }

  std::vector<Flow> flows_;
  std::vector<int> active_;
  std::vector<std::vector<int>> flows_on_;
  std::vector<double> busy_share_ = std::vector<double>(topo_.num_links(), 0.0);
  Time last_ = 0;
};

}  // namespace

NetworkKind parse_network(std::string_view name) {
  if (name == "analytical") return NetworkKind::Analytical;
  if (name == "analytical-congestion") return NetworkKind::AnalyticalCongestion;
  throw Error(fmt::format("unknown network '{}' (analytical, analytical-congestion)", name));
}

std::string_view to_string(NetworkKind k) {
  return k == NetworkKind::Analytical ? "analytical" : "analytical-congestion";
}

std::unique_ptr<Network> make_network(NetworkKind kind, const topo::Topology& t, EventQueue& events) {
  if (kind == NetworkKind::Analytical) return std::make_unique<Analytical>(t, events);
  return std::make_unique<Congestion>(t, events);
}

}  // namespace tenet::sim
