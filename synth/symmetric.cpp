#include "synth/symmetric.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <queue>
#include <tuple>

#include "synth/timing.hpp"

namespace tenet::synth {

namespace {

// A transfer of rank 0's schedule: `chunk` (0..k-1) from NPU `from` over its slot `slot`.
struct Send {
  Time start = 0, end = 0;  // end: when it has arrived
  ChunkId chunk = 0;
  topo::NodeId from = 0;
  int slot = 0;
};

enum class Pick : uint8_t { Scarce, Waiting, Latest };

struct Schedule {
  std::vector<Send> sends;  // in start order
  Time makespan = 0;
};

// Rank 0's All-Gather on the slots (see symmetric.hpp), its chunks picked by `pick`.
Schedule one_rank(const topo::Topology& t, const topo::Translations& tr, int k, Bytes chunk_bytes, LinkModel model,
                  Pick pick) {
  const int n = tr.num_npus(), slots = tr.num_slots();
  constexpr Time kNever = std::numeric_limits<Time>::max();
  std::vector<Time> busy(slots), delay(slots);  // how long a send holds its slot; when it arrives
  std::vector<topo::NodeId> to(static_cast<size_t>(slots) * n), from(static_cast<size_t>(slots) * n);
  for (int j = 0; j < slots; ++j) {
    const topo::Link& l = t.link(tr.link(0, j));
    const Time tx = transfer_time(chunk_bytes, l.bandwidth);
    delay[j] = tx + l.latency;
    busy[j] = model == LinkModel::Hold ? delay[j] : tx;
    for (topo::NodeId x = 0; x < n; ++x) {
      const topo::NodeId y = t.link(tr.link(x, j)).dst;
      to[static_cast<size_t>(j) * n + x] = y;
      from[static_cast<size_t>(j) * n + y] = x;
    }
  }
  std::vector<char> reached(static_cast<size_t>(k) * n, 0);  // holds the chunk or has it coming
  auto at = [n](ChunkId c, topo::NodeId x) { return static_cast<size_t>(c) * n + x; };
  // The other slots' NPUs that could feed y chunk c over their link (scarce: fewer first).
  auto suppliers = [&](ChunkId c, topo::NodeId y, int slot) {
    int64_t count = 0;
    for (int j = 0; j < slots; ++j)
      if (j != slot && reached[at(c, from[static_cast<size_t>(j) * n + y])]) ++count;
    return count;
  };

  struct Candidate {
    int64_t key = 0;  // what the pick ranks first (scarce: suppliers); then `order`, then `seq`
    Time order = 0;
    Time ready = 0;
    int64_t seq = 0;
    ChunkId chunk = 0;
    topo::NodeId x = 0;
  };
  auto later_ready = [](const Candidate& a, const Candidate& b) { return std::tie(a.ready, a.seq) > std::tie(b.ready, b.seq); };
  auto worse = [](const Candidate& a, const Candidate& b) { return std::tie(a.key, a.order, a.seq) > std::tie(b.key, b.order, b.seq); };
  using Pending = std::priority_queue<Candidate, std::vector<Candidate>, decltype(later_ready)>;
  using Ready = std::priority_queue<Candidate, std::vector<Candidate>, decltype(worse)>;
  std::vector<Pending> pending(slots, Pending(later_ready));
  std::vector<Ready> ready(slots, Ready(worse));
  std::vector<Time> next(slots, 0), free(slots, 0);  // when each slot decides next; is free
  int64_t seq = 0;
  auto offer = [&](ChunkId c, topo::NodeId x, Time when) {
    for (int j = 0; j < slots; ++j) {
      if (reached[at(c, to[static_cast<size_t>(j) * n + x])]) continue;
      pending[j].push(Candidate{0, 0, when, seq++, c, x});
      next[j] = std::min(next[j], std::max(when, free[j]));
    }
  };
  for (ChunkId c = 0; c < k; ++c) {
    reached[at(c, 0)] = 1;
    offer(c, 0, 0);
  }

  Schedule s;
  s.sends.reserve(static_cast<size_t>(n - 1) * k);
  const int64_t needed = static_cast<int64_t>(n - 1) * k;
  while (static_cast<int64_t>(s.sends.size()) < needed) {
    const int j = static_cast<int>(std::min_element(next.begin(), next.end()) - next.begin());
    const Time now = next[j];
    if (now == kNever) break;  // no NPU can feed another: cannot happen on a connected topology
    const topo::NodeId* way = to.data() + static_cast<size_t>(j) * n;
    while (!pending[j].empty() && pending[j].top().ready <= now) {
      Candidate cand = pending[j].top();
      pending[j].pop();
      if (reached[at(cand.chunk, way[cand.x])]) continue;
      cand.order = pick == Pick::Latest ? -cand.ready : cand.ready;
      if (pick == Pick::Scarce) cand.key = suppliers(cand.chunk, way[cand.x], j);
      ready[j].push(cand);
    }
    std::optional<Candidate> chosen;
    while (!ready[j].empty()) {
      Candidate cand = ready[j].top();
      ready[j].pop();
      const topo::NodeId y = way[cand.x];
      if (reached[at(cand.chunk, y)]) continue;
      if (pick == Pick::Scarce) {
        // Suppliers only grow: a key still right is the least of all.
        const int64_t key = suppliers(cand.chunk, y, j);
        if (key > cand.key) {
          cand.key = key;
          ready[j].push(cand);
          continue;
        }
      }
      chosen = cand;
      break;
    }
    if (!chosen) {
      next[j] = pending[j].empty() ? kNever : pending[j].top().ready;
      continue;
    }
    const topo::NodeId y = way[chosen->x];
    reached[at(chosen->chunk, y)] = 1;
    s.sends.push_back(Send{now, now + delay[j], chosen->chunk, chosen->x, j});
    s.makespan = std::max(s.makespan, now + delay[j]);
    free[j] = next[j] = now + busy[j];
    offer(chosen->chunk, y, now + delay[j]);
  }
  if (static_cast<int64_t>(s.sends.size()) < needed) s.makespan = kNever;
  return s;
}

}  // namespace

std::optional<Algorithm> synthesize_symmetric(const topo::Topology& t, const Collective& c, Bytes chunk_bytes,
                                              LinkModel model, std::string* why) {
  auto no = [&](std::string reason) -> std::optional<Algorithm> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  const bool gathers = c.kind == CollectiveKind::AllGather;
  if (!gathers && c.kind != CollectiveKind::ReduceScatter && c.kind != CollectiveKind::AllReduce)
    return no("translation covers All-Gather, Reduce-Scatter and All-Reduce");
  if (c.all_reduce_chunks > 0) return no("translation needs chunks per NPU, not chunks in all");
  if (c.num_ranks() != t.num_npus()) return no("translation needs every NPU in the collective");
  const std::optional<topo::Translations> tr = topo::translation_symmetry(t);
  if (!tr)
    return no("the topology does not look the same from every NPU (translations of its dimensions carrying "
              "every link to a link of the same bandwidth and latency, no switches)");
  if (!gathers && !tr->reversible()) return no("some link has no link back of the same bandwidth and latency");

  const int k = c.chunks_per_npu;
  std::optional<Schedule> best;
  for (Pick pick : {Pick::Scarce, Pick::Waiting, Pick::Latest}) {
    Schedule s = one_rank(t, *tr, k, chunk_bytes, model, pick);
    if (!best || s.makespan < best->makespan) best = std::move(s);
  }
  if (best->makespan == std::numeric_limits<Time>::max()) return no("some NPU cannot be reached");

  Algorithm a;
  a.name = "tenet";
  a.collective = c;
  a.topology_fingerprint = t.fingerprint();
  a.topology_name = t.name();
  a.chunk_bytes = chunk_bytes;
  a.link_model = model;
  const int p = c.num_ranks();
  std::vector<int> rank_of(t.num_npus());
  for (int r = 0; r < p; ++r) rank_of[c.ranks[r]] = r;
  const size_t per_phase = best->sends.size() * static_cast<size_t>(p);
  const size_t transfers = c.kind == CollectiveKind::AllReduce ? 2 * per_phase : per_phase;
  a.reserve(transfers, transfers, 0);
  if (!gathers) {
    // Reduce-Scatter: every send reversed in time, the last to arrive the first to leave; a
    // chunk's reductions into an NPU then all come before the NPU passes it on.
    std::vector<size_t> order(best->sends.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t x, size_t y) { return best->sends[x].end > best->sends[y].end; });
    for (size_t i : order) {
      const Send& send = best->sends[i];
      const int back = tr->reverse(send.slot);
      tr->for_each_shift(t.link(tr->link(send.from, send.slot)).dst, [&](topo::NodeId s, topo::NodeId y) {
        const LinkId l = tr->link(y, back);
        a.add(rank_of[s] * k + send.chunk, y, t.link(l).dst, {&l, 1}, Op::Reduce);
      });
    }
  }
  if (gathers) {
    // Every transfer at rank 0's time for it: the moved schedules keep their slots' order, so
    // these are the times synth::time gives (the verifier checks them).
    for (const Send& send : best->sends)
      tr->for_each_shift(send.from, [&](topo::NodeId s, topo::NodeId x) {
        const LinkId l = tr->link(x, send.slot);
        a.add(rank_of[s] * k + send.chunk, x, t.link(l).dst, {&l, 1}, Op::Copy, {}, send.start, send.end);
      });
    a.claimed_time = best->makespan;
  } else if (c.kind == CollectiveKind::AllReduce) {
    for (const Send& send : best->sends)
      tr->for_each_shift(send.from, [&](topo::NodeId s, topo::NodeId x) {
        const LinkId l = tr->link(x, send.slot);
        a.add(rank_of[s] * k + send.chunk, x, t.link(l).dst, {&l, 1}, Op::Copy, {}, -1, -1, 0, 1);
      });
  }
  if (!gathers) time(t, a);
  a.method = fmt::format("symmetric (rank 0's schedule on {}, moved to every NPU)", tr->describe());
  return a;
}

}  // namespace tenet::synth
