#include "sim/network_backends.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <utility>
#include <vector>

namespace tenet::sim::detail {
namespace {

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
      out[l] = static_cast<Time>(
          carried_[l] / static_cast<double>(topo_.link(static_cast<topo::LinkId>(l)).bandwidth) *
          static_cast<double>(kPicosPerSecond));
    return out;
  }

  void send(Message m, std::function<void()> on_release,
            std::function<void()> on_arrival) override {
    if (deferred_by_step(m, on_release, on_arrival)) return;
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
    const double dt =
        static_cast<double>(events_.now() - f.settled) / static_cast<double>(kPicosPerSecond);
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
      const Time eta =
          static_cast<Time>(std::ceil(f.left / f.rate * static_cast<double>(kPicosPerSecond)));
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
  std::vector<double> carried_;   // bytes per link
  std::vector<double> rate_sum_;  // bytes per second per link, since rate_since_
  std::vector<Time> rate_since_;
  std::vector<uint64_t> link_mark_, flow_mark_;
  std::vector<topo::LinkId> comp_links_;
  std::vector<int> comp_flows_;
  uint64_t stamp_ = 0;
  int64_t capped_ = 0;  // active flows with a rate of their own
};

}  // namespace

std::unique_ptr<Network> make_congestion_network(const topo::Topology& t, EventQueue& events,
                                                 PacketConfig::Routing routing) {
  return std::make_unique<Congestion>(t, events, routing);
}

}  // namespace tenet::sim::detail
