#include "sim/collective_engine.hpp"

#include <algorithm>
#include <climits>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "topo/error.hpp"

namespace tenet::sim {

using synth::TransferId;

CollectiveRun::CollectiveRun(const synth::Algorithm& a, Network& net, EventQueue& events, std::function<void()> on_done)
    : a_(a), net_(net), events_(events), on_done_(std::move(on_done)) {
  const topo::Topology& t = net.topology();
  const auto n = static_cast<TransferId>(a.size());
  remaining_ = a.size();
  hold_ = a.link_model == synth::LinkModel::Hold;
  waiting_.assign(n, 0);
  arrive_offset_.assign(n + 1, 0);
  capacity_.resize(t.num_links());
  for (topo::LinkId l = 0; l < t.num_links(); ++l) capacity_[l] = t.link(l).bandwidth;
  used_.assign(t.num_links(), 0);
  admitted_.assign(t.num_links(), 0);
  std::vector<int64_t> per_link(t.num_links() + 1, 0);
  for (TransferId id = 0; id < n; ++id) {
    Bandwidth narrowest = std::numeric_limits<Bandwidth>::max();
    for (topo::LinkId l : a.route(id)) {
      if (l < 0 || l >= t.num_links())
        throw Error(fmt::format("cannot replay transfer {}: link {} does not exist", id, l));
      narrowest = std::min(narrowest, capacity_[l]);
      ++per_link[l + 1];
    }
    if (a[id].rate < 0 || (a[id].rate > narrowest && !a.route(id).empty()))
      throw Error(fmt::format("cannot replay transfer {}: its rate {} is not between 0 and its route's narrowest "
                              "bandwidth, {}", id, format_bandwidth(a[id].rate), format_bandwidth(narrowest)));
  }
  link_offset_.resize(per_link.size());
  for (size_t l = 0; l < per_link.size(); ++l) {
    if (l > 0) per_link[l] += per_link[l - 1];
    if (per_link[l] > INT32_MAX) throw Error("algorithm too large to replay: over 2^31 route links");
    link_offset_[l] = static_cast<int32_t>(per_link[l]);
  }
  on_link_.resize(link_offset_.back());
  {
    std::vector<int32_t> next(link_offset_.begin(), link_offset_.end() - 1);
    for (TransferId id = 0; id < n; ++id)
      for (topo::LinkId l : a.route(id)) on_link_[next[l]++] = id;
  }
  // The dependency edges (dependency -> user) are walked twice, straight into CSR lists: the
  // first pass counts them per dependency, the second places them. Arrivals so far per
  // (node, chunk) are kept as chains: the last one, and each one's predecessor.
  topo::NodeId nodes = 0;
  for (const synth::Transfer& x : a.transfers()) nodes = std::max({nodes, x.src + 1, x.dst + 1});
  const int64_t chunks = a.collective.num_chunks();
  std::vector<TransferId> last_arrival(static_cast<size_t>(nodes) * chunks);
  std::vector<TransferId> previous_arrival(n);
  auto slot = [&](topo::NodeId v, synth::ChunkId c) { return static_cast<size_t>(v) * chunks + c; };
  auto walk = [&](auto&& on_arrival) {
    std::fill(last_arrival.begin(), last_arrival.end(), -1);
    for (TransferId id = 0; id < n; ++id) {
      const synth::Transfer& x = a[id];
      for (TransferId d : a.deps(id)) on_arrival(d, id);
      for (TransferId d = last_arrival[slot(x.src, x.chunk)]; d >= 0; d = previous_arrival[d]) on_arrival(d, id);
      TransferId& last = last_arrival[slot(x.dst, x.chunk)];
      previous_arrival[id] = last;
      last = id;
    }
  };
  walk([this](TransferId from, TransferId to) {
    ++arrive_offset_[from + 1];
    ++waiting_[to];
  });
  int64_t total = 0;
  for (TransferId i = 0; i <= n; ++i) {
    total += arrive_offset_[i];
    if (total > INT32_MAX) throw Error("algorithm too large to replay: over 2^31 dependencies");
    arrive_offset_[i] = static_cast<int32_t>(total);
  }
  arrive_users_.resize(arrive_offset_[n]);
  // Placing an edge advances its dependency's start by one; afterwards every start sits where the
  // next dependency's list begins, so shifting the array by one restores the offsets.
  walk([this](TransferId from, TransferId to) { arrive_users_[arrive_offset_[from]++] = to; });
  std::copy_backward(arrive_offset_.begin(), arrive_offset_.end() - 1, arrive_offset_.end());
  arrive_offset_[0] = 0;
}

Time replay(const topo::Topology& t, const synth::Algorithm& a, NetworkKind kind, const PacketConfig& packet) {
  EventQueue events;
  auto net = make_network(kind, t, events, packet);
  Time finish = 0;
  CollectiveRun run(a, *net, events, [&] { finish = events.now(); });
  run.start();
  events.run();
  net->check_drained();
  if (!run.done()) throw Error("the algorithm's replay stopped before its last transfer arrived");
  return finish;
}

void CollectiveRun::start() {
  if (remaining_ == 0) {
    events_.schedule_after(0, on_done_);
    return;
  }
  for (TransferId id = 0; id < static_cast<TransferId>(a_.size()); ++id)
    if (waiting_[id] == 0) candidates_.push_back(id);
  drain();
}

void CollectiveRun::satisfied(TransferId id) {
  if (--waiting_[id] != 0) return;
  if (draining_) {
    candidates_.push_back(id);
    return;
  }
  draining_ = true;  // try it at once; what that frees goes through the candidates
  try_issue(id);
  draining_ = false;
  if (!candidates_.empty()) drain();
}

Bandwidth CollectiveRun::rate(TransferId id) const {
  if (a_[id].rate > 0) return a_[id].rate;
  const auto route = a_.route(id);
  if (route.size() == 1) return capacity_[route[0]];
  Bandwidth narrowest = std::numeric_limits<Bandwidth>::max();
  for (topo::LinkId l : route) narrowest = std::min(narrowest, capacity_[l]);
  return narrowest;
}

// The next transfer `l` admits becomes a candidate when nothing else holds it back.
void CollectiveRun::next_on(topo::LinkId l) {
  const int32_t at = link_offset_[l] + admitted_[l];
  if (at < link_offset_[l + 1] && waiting_[on_link_[at]] == 0) candidates_.push_back(on_link_[at]);
}

void CollectiveRun::released(TransferId id) {
  const Bandwidth r = hold_ ? 0 : rate(id);
  for (topo::LinkId l : a_.route(id)) {
    used_[l] -= hold_ ? capacity_[l] : r;
    next_on(l);
  }
  if (!candidates_.empty()) drain();
}

// Candidates are tried in the order they became candidates, so transfers ready at one instant are
// issued in list order.
void CollectiveRun::drain() {
  if (draining_) return;
  draining_ = true;
  for (size_t i = 0; i < candidates_.size(); ++i) try_issue(candidates_[i]);
  candidates_.clear();
  draining_ = false;
}

void CollectiveRun::try_issue(TransferId id) {
  if (waiting_[id] != 0) return;  // dependencies unmet, or issued already (-1)
  const auto route = a_.route(id);
  const Bandwidth r = hold_ ? 0 : rate(id);
  for (topo::LinkId l : route)
    if (on_link_[link_offset_[l] + admitted_[l]] != id || used_[l] + (hold_ ? capacity_[l] : r) > capacity_[l]) return;
  for (topo::LinkId l : route) {
    used_[l] += hold_ ? capacity_[l] : r;
    ++admitted_[l];
  }
  waiting_[id] = -1;
  issue(id);
  for (topo::LinkId l : route) next_on(l);
}

void CollectiveRun::issue(TransferId id) {
  const synth::Transfer& x = a_[id];
  net_.send(
      Message{x.src, x.dst, a_.chunk_bytes, a_.route(id), x.rate},
      [this, id] { released(id); },
      [this, id] {
        for (int32_t k = arrive_offset_[id]; k < arrive_offset_[id + 1]; ++k) satisfied(arrive_users_[k]);
        if (--remaining_ == 0) on_done_();
      });
}

}  // namespace tenet::sim
