#include "synth/lower_bound.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <mutex>

#include "topo/analysis.hpp"
#include "topo/bounds.hpp"

namespace tenet::synth {
namespace {

// The largest latency distance from any of `from` to any of `to` (through any nodes).
Time farthest(const topo::Topology& t, const std::vector<topo::NodeId>& from,
              const std::vector<topo::NodeId>& to) {
  // Every NPU to every NPU: the diameter, which skips Dijkstra when latencies are uniform.
  if (static_cast<int>(from.size()) == t.num_npus() && static_cast<int>(to.size()) == t.num_npus())
    return topo::npu_diameter(t).latency;
  Time worst = 0;
  for (topo::NodeId s : from) {
    std::vector<Time> d = topo::latency_distances(t, s);
    for (topo::NodeId v : to) worst = std::max(worst, d[v]);
  }
  return worst;
}

}  // namespace

namespace {

LowerBound compute(const topo::Topology& t, const Collective& c, Bytes chunk_bytes) {
  LowerBound b;
  const int p = c.num_ranks();
  const Bytes k_bytes = static_cast<Bytes>(c.chunks_per_npu) * chunk_bytes;  // one rank's share
  const std::vector<topo::NodeId>& m = c.ranks;
  const std::vector<topo::NodeId> root{m[c.root]};
  switch (c.kind) {
    case CollectiveKind::AllGather:
      b.bandwidth = topo::allgather_cut_bound(t, m).time(p * k_bytes);
      b.latency = farthest(t, m, m);
      b.label = "cut bound";
      break;
    case CollectiveKind::ReduceScatter:
      b.bandwidth = topo::allgather_cut_bound(topo::reversed(t), m).time(p * k_bytes);
      b.latency = farthest(t, m, m);
      b.label = "cut bound (reversed)";
      break;
    case CollectiveKind::AllReduce:
      b.bandwidth = topo::allgather_cut_bound(topo::reversed(t), m).time(p * k_bytes) +
                    topo::allgather_cut_bound(t, m).time(p * k_bytes);
      b.latency = farthest(t, m, m);
      b.label = "RS+AG bound";
      break;
    case CollectiveKind::Broadcast:
      b.bandwidth = topo::broadcast_cut_bound(t, root.front(), m).time(k_bytes);
      b.latency = farthest(t, root, m);
      b.label = "cut bound (from the root)";
      break;
    case CollectiveKind::Reduce:
      b.bandwidth = topo::broadcast_cut_bound(topo::reversed(t), root.front(), m).time(k_bytes);
      b.latency = farthest(t, m, root);
      b.label = "cut bound (to the root)";
      break;
    default: {
      // Bytes each member must receive and send.
      auto need = [&](int r, bool receive) -> Bytes {
        const bool is_root = r == c.root;
        switch (c.kind) {
          case CollectiveKind::Gather: return receive ? (is_root ? (p - 1) * k_bytes : 0) : (is_root ? 0 : k_bytes);
          case CollectiveKind::Scatter: return receive ? (is_root ? 0 : k_bytes) : (is_root ? (p - 1) * k_bytes : 0);
          default: return (p - 1) * k_bytes;  // All-to-All, both ways
        }
      };
      for (int r = 0; r < p; ++r) {
        Bandwidth in = topo::ingress_bandwidth(t, m[r]), out = topo::egress_bandwidth(t, m[r]);
        if (need(r, true) > 0) b.bandwidth = std::max(b.bandwidth, transfer_time(need(r, true), in));
        if (need(r, false) > 0) b.bandwidth = std::max(b.bandwidth, transfer_time(need(r, false), out));
      }
      if (c.kind == CollectiveKind::Scatter)
        b.latency = farthest(t, root, m);
      else if (c.kind == CollectiveKind::Gather)
        b.latency = farthest(t, m, root);
      else
        b.latency = farthest(t, m, m);
      b.label = "ingress/egress bound";
    }
  }
  b.min_link_latency = std::numeric_limits<Time>::max();
  for (const topo::Link& l : t.links()) b.min_link_latency = std::min(b.min_link_latency, l.latency);
  if (t.num_links() == 0) b.min_link_latency = 0;
  b.total = std::max(b.bandwidth + b.min_link_latency, b.latency);
  return b;
}

}  // namespace

// The synthesizer (deciding whether baselines are worth building) and the verifier (reporting)
// ask for the same bound, which costs a max-flow pass at 1024 NPUs: the last answer is kept.
LowerBound lower_bound(const topo::Topology& t, const Collective& c, Bytes chunk_bytes) {
  c.validate(t);
  struct Memo {
    uint64_t fingerprint = 0;
    Collective collective;
    Bytes chunk_bytes = -1;
    LowerBound bound;
  };
  static std::mutex mutex;
  static Memo memo;
  const uint64_t fingerprint = t.fingerprint();
  {
    std::lock_guard lock(mutex);
    if (memo.chunk_bytes == chunk_bytes && memo.fingerprint == fingerprint && memo.collective.kind == c.kind &&
        memo.collective.root == c.root && memo.collective.chunks_per_npu == c.chunks_per_npu &&
        memo.collective.ranks == c.ranks)
      return memo.bound;
  }
  LowerBound b = compute(t, c, chunk_bytes);
  std::lock_guard lock(mutex);
  memo = {fingerprint, c, chunk_bytes, b};
  return b;
}

std::string describe(const LowerBound& b) {
  const std::string terms = fmt::format("{} {} + {} latency", b.label, format_time(b.bandwidth), format_time(b.min_link_latency));
  if (b.total == b.bandwidth + b.min_link_latency) return terms;
  return fmt::format("latency of the farthest pair that must communicate; {} is less", terms);
}

}  // namespace tenet::synth
