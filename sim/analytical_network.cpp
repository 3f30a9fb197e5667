#include "sim/network_backends.hpp"

#include <algorithm>
#include <functional>
#include <limits>
#include <utility>
#include <vector>

#include "synth/cost/timing.hpp"

namespace tenet::sim::detail {
namespace {

// No contention: every message moves at its own rate whatever else shares its links. What it would
// have needed is still measured: per link, the rates of the messages on it at once (a heap of their
// end times), so a report can say where the model's time is optimistic.
class Analytical final : public Network {
 public:
  Analytical(const topo::Topology& t, EventQueue& events)
      : Network(t, events),
        on_link_(t.num_links()),
        demand_(t.num_links(), 0),
        peak_(t.num_links(), 0),
        peak_at_(t.num_links(), -1) {}
  std::string_view name() const override { return "analytical"; }
  bool shares_links() const override { return false; }
  void send(Message m, std::function<void()> on_release,
            std::function<void()> on_arrival) override {
    Bandwidth narrowest = std::numeric_limits<Bandwidth>::max();
    for (topo::LinkId l : m.route) narrowest = std::min(narrowest, topo_.link(l).bandwidth);
    const Bandwidth rate = m.rate > 0 ? std::min(m.rate, narrowest) : narrowest;
    // The step's cost is paid holding the rate, as synth::time charges it (synth/cost/timing.hpp).
    const Time serialization = m.route.empty() ? 0 : m.step + transfer_time(m.bytes, rate);
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
          static_cast<double>(peak_[l]) /
          static_cast<double>(topo_.link(static_cast<topo::LinkId>(l)).bandwidth);
      r.links[l].peak_demand_at = std::max<Time>(peak_at_[l], 0);
    }
    return r;
  }

 private:
  // Adds a message of `rate` on link `l` until `end`; those that ended by now leave first.
  void demand(topo::LinkId l, Bandwidth rate, Time end) {
    auto& on = on_link_[l];
    const auto later = [](const std::pair<Time, Bandwidth>& a,
                          const std::pair<Time, Bandwidth>& b) { return a.first > b.first; };
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

}  // namespace

std::unique_ptr<Network> make_analytical_network(const topo::Topology& t, EventQueue& events) {
  return std::make_unique<Analytical>(t, events);
}

}  // namespace tenet::sim::detail
