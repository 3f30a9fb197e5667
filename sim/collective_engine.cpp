#include "sim/collective_engine.hpp"

#include <algorithm>
#include <climits>

#include "topo/error.hpp"

namespace tenet::sim {

using synth::TransferId;

CollectiveRun::CollectiveRun(const synth::Algorithm& a, Network& net, EventQueue& events, std::function<void()> on_done)
    : a_(a), net_(net), events_(events), on_done_(std::move(on_done)) {
  const auto n = static_cast<TransferId>(a.size());
  remaining_ = a.size();
  waiting_.assign(n, 0);
  arrive_offset_.assign(n + 1, 0);
  release_offset_.assign(n + 1, 0);
  // The dependency edges (dependency -> user) are walked twice, straight into CSR lists: the
  // first pass counts them per dependency, the second places them. Arrivals so far per
  // (node, chunk) are kept as chains: the last one, and each one's predecessor.
  topo::NodeId nodes = 0;
  for (const synth::Transfer& x : a.transfers()) nodes = std::max({nodes, x.src + 1, x.dst + 1});
  const int64_t chunks = a.collective.num_chunks();
  std::vector<TransferId> last_arrival(static_cast<size_t>(nodes) * chunks);
  std::vector<TransferId> previous_arrival(n);
  std::vector<TransferId> last_on_link(net.num_links());
  auto slot = [&](topo::NodeId v, synth::ChunkId c) { return static_cast<size_t>(v) * chunks + c; };
  auto walk = [&](auto&& on_arrival, auto&& on_release) {
    std::fill(last_arrival.begin(), last_arrival.end(), -1);
    std::fill(last_on_link.begin(), last_on_link.end(), -1);
    for (TransferId id = 0; id < n; ++id) {
      const synth::Transfer& x = a[id];
      for (TransferId d : a.deps(id)) on_arrival(d, id);
      for (TransferId d = last_arrival[slot(x.src, x.chunk)]; d >= 0; d = previous_arrival[d]) on_arrival(d, id);
      TransferId counted = -1;  // a predecessor on several links counts once
      for (topo::LinkId l : a.route(id)) {
        const TransferId before = last_on_link[l];
        if (before >= 0 && before != counted) {
          on_release(before, id);
          counted = before;
        }
        last_on_link[l] = id;
      }
      TransferId& last = last_arrival[slot(x.dst, x.chunk)];
      previous_arrival[id] = last;
      last = id;
    }
  };
  auto count = [this](std::vector<int32_t>& offset) {
    return [this, &offset](TransferId from, TransferId to) {
      ++offset[from + 1];
      ++waiting_[to];
    };
  };
  walk(count(arrive_offset_), count(release_offset_));
  auto prefix_sums = [n](std::vector<int32_t>& offset) {
    int64_t total = 0;
    for (TransferId i = 0; i <= n; ++i) {
      total += offset[i];
      if (total > INT32_MAX) throw Error("algorithm too large to replay: over 2^31 dependencies");
      offset[i] = static_cast<int32_t>(total);
    }
  };
  prefix_sums(arrive_offset_);
  prefix_sums(release_offset_);
  arrive_users_.resize(arrive_offset_[n]);
  release_users_.resize(release_offset_[n]);
  // Placing an edge advances its dependency's start by one; afterwards every start sits where the
  // next dependency's list begins, so shifting the array by one restores the offsets.
  auto place = [](std::vector<int32_t>& offset, std::vector<TransferId>& users) {
    return [&offset, &users](TransferId from, TransferId to) { users[offset[from]++] = to; };
  };
  walk(place(arrive_offset_, arrive_users_), place(release_offset_, release_users_));
  for (auto* offset : {&arrive_offset_, &release_offset_}) {
    std::copy_backward(offset->begin(), offset->end() - 1, offset->end());
    (*offset)[0] = 0;
  }
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
    if (waiting_[id] == 0) issue(id);
}

void CollectiveRun::satisfied(TransferId id) {
  if (--waiting_[id] == 0) issue(id);
}

void CollectiveRun::issue(TransferId id) {
  const synth::Transfer& x = a_[id];
  net_.send(
      Message{x.src, x.dst, a_.chunk_bytes, a_.route(id)},
      [this, id] {
        for (int32_t k = release_offset_[id]; k < release_offset_[id + 1]; ++k) satisfied(release_users_[k]);
      },
      [this, id] {
        for (int32_t k = arrive_offset_[id]; k < arrive_offset_[id + 1]; ++k) satisfied(arrive_users_[k]);
        if (--remaining_ == 0) on_done_();
      });
}

}  // namespace tenet::sim
