#include "sim/collective_engine.hpp"

#include <algorithm>

namespace tenet::sim {

using synth::TransferId;

CollectiveRun::CollectiveRun(const synth::Algorithm& a, Network& net, EventQueue& events, std::function<void()> on_done)
    : a_(a), net_(net), events_(events), on_done_(std::move(on_done)) {
  const auto n = static_cast<TransferId>(a.size());
  remaining_ = a.size();
  waiting_.assign(n, 0);
  // Dependency edges (dependency -> user), kind 0 on arrival, 1 on release, in flat arrays.
  std::vector<std::pair<TransferId, TransferId>> on_arrival, on_release;
  on_arrival.reserve(a.size() * 2);
  on_release.reserve(a.size());
  // Arrivals so far per (node, chunk), as chains: the last one, and each one's predecessor.
  topo::NodeId nodes = 0;
  for (const synth::Transfer& x : a.transfers()) nodes = std::max({nodes, x.src + 1, x.dst + 1});
  const int64_t chunks = a.collective.num_chunks();
  std::vector<TransferId> last_arrival(static_cast<size_t>(nodes) * chunks, -1);
  std::vector<TransferId> previous_arrival(n, -1);
  std::vector<TransferId> last_on_link(net.num_links(), -1);
  auto slot = [&](topo::NodeId v, synth::ChunkId c) { return static_cast<size_t>(v) * chunks + c; };
  for (TransferId id = 0; id < n; ++id) {
    const synth::Transfer& x = a[id];
    for (TransferId d : a.deps(id)) on_arrival.emplace_back(d, id);
    for (TransferId d = last_arrival[slot(x.src, x.chunk)]; d >= 0; d = previous_arrival[d]) on_arrival.emplace_back(d, id);
    TransferId counted = -1;  // a predecessor on several links counts once
    for (topo::LinkId l : a.route(id)) {
      const TransferId before = last_on_link[l];
      if (before >= 0 && before != counted) {
        on_release.emplace_back(before, id);
        counted = before;
      }
      last_on_link[l] = id;
    }
    TransferId& last = last_arrival[slot(x.dst, x.chunk)];
    previous_arrival[id] = last;
    last = id;
  }
  auto csr = [&](std::vector<std::pair<TransferId, TransferId>>& edges, std::vector<int64_t>& offset,
                 std::vector<TransferId>& users) {
    offset.assign(n + 1, 0);
    for (auto [from, to] : edges) {
      ++offset[from + 1];
      ++waiting_[to];
    }
    for (TransferId i = 0; i < n; ++i) offset[i + 1] += offset[i];
    users.resize(edges.size());
    std::vector<int64_t> next(offset.begin(), offset.end() - 1);
    for (auto [from, to] : edges) users[next[from]++] = to;
  };
  csr(on_arrival, arrive_offset_, arrive_users_);
  csr(on_release, release_offset_, release_users_);
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
        for (int64_t k = release_offset_[id]; k < release_offset_[id + 1]; ++k) satisfied(release_users_[k]);
      },
      [this, id] {
        for (int64_t k = arrive_offset_[id]; k < arrive_offset_[id + 1]; ++k) satisfied(arrive_users_[k]);
        if (--remaining_ == 0) on_done_();
      });
}

}  // namespace tenet::sim
