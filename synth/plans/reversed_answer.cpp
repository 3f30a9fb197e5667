#include "synth/plans/reversed_answer.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <utility>
#include <vector>

#include "synth/cost/timing.hpp"

namespace tenet::synth::detail {

namespace {

// Whether `a` delivers each chunk to each node at most once, every transfer a copy.
bool one_tree_per_chunk(const Algorithm& a) {
  std::vector<uint64_t> reached;
  reached.reserve(a.size());
  for (const Transfer& x : a.transfers()) {
    if (x.op != Op::Copy) return false;
    for (int i = 0; i < x.count; ++i)
      reached.push_back(static_cast<uint64_t>(x.dst) << 32 | static_cast<uint32_t>(x.chunk + i));
  }
  std::sort(reached.begin(), reached.end());
  return std::adjacent_find(reached.begin(), reached.end()) == reached.end();
}

// Whether `a` sends each chunk from each node at most once (each node's partial of it, in a
// Reduce-Scatter), every transfer a copy or a reduction.
bool one_send_per_chunk(const Algorithm& a) {
  std::vector<uint64_t> sent;
  sent.reserve(a.size());
  for (const Transfer& x : a.transfers())
    for (int i = 0; i < x.count; ++i)
      sent.push_back(static_cast<uint64_t>(x.src) << 32 | static_cast<uint32_t>(x.chunk + i));
  std::sort(sent.begin(), sent.end());
  return std::adjacent_find(sent.begin(), sent.end()) == sent.end();
}

// `a`'s transfers turned around in time: in reversed time, by decreasing forward end (ties: later
// listed first), so that a transfer that waited for another (its chunk's arrival, or explicitly)
// comes after it turned around. Calls `add(k, id, route, deps)` for the k-th of them, forward
// transfer `id`, with its route over the twins of the forward route's links in reverse order and
// its explicit dependencies turned around (x waited for y: y's reversal waits for x's, by index k).
template <typename Add>
void for_each_reversed(const Algorithm& a, std::span<const LinkId> twins, Add add) {
  const size_t n = a.size();
  std::vector<TransferId> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](TransferId x, TransferId y) {
    return a[x].end != a[y].end ? a[x].end > a[y].end : x > y;
  });
  std::vector<TransferId> index(n);
  for (size_t k = 0; k < n; ++k) index[order[k]] = static_cast<TransferId>(k);
  // Per forward transfer, those that waited for it explicitly (their reversals, it waits for).
  std::vector<int64_t> offset(n + 1, 0);
  for (size_t i = 0; i < n; ++i)
    for (TransferId d : a.deps(static_cast<TransferId>(i))) ++offset[d + 1];
  std::partial_sum(offset.begin(), offset.end(), offset.begin());
  std::vector<TransferId> waited(offset.back());
  std::vector<int64_t> next(offset.begin(), offset.end() - 1);
  for (size_t i = 0; i < n; ++i)
    for (TransferId d : a.deps(static_cast<TransferId>(i))) waited[next[d]++] = index[i];
  std::vector<LinkId> route;
  std::vector<TransferId> deps;
  for (size_t k = 0; k < n; ++k) {
    const TransferId id = order[k];
    const std::span<const LinkId> forward = a.route(id);
    route.clear();
    for (auto l = forward.rbegin(); l != forward.rend(); ++l) route.push_back(twins[*l]);
    deps.assign(waited.begin() + offset[id], waited.begin() + offset[id + 1]);
    if (!add(k, id, route, deps)) return;
  }
}

// An empty algorithm of `kind` over `a`'s collective, chunks and chunk size on `t`, with `a`'s
// name, method, provenance, link model and protocol (its channels one queue per port: the
// header's model).
Algorithm empty_reversal(const topo::Topology& t, const Algorithm& a, CollectiveKind kind) {
  Collective c = a.collective;
  c.kind = kind;
  Algorithm r = empty_algorithm(a.name, t, c, a.chunk_bytes, a.link_model);
  r.method = a.method;
  r.provenance = a.provenance;
  r.protocol = a.protocol;
  return r;
}

bool reversible(const topo::Topology& t, const Algorithm& a, CollectiveKind kind,
                std::span<const LinkId> twins) {
  return a.collective.kind == kind && a.size() > 0 && a.fully_timed() &&
         twins.size() == static_cast<size_t>(t.num_links());
}

}  // namespace

std::optional<Algorithm> reduce_scatter_reversed(const topo::Topology& t,
                                                 const Algorithm& all_gather,
                                                 std::span<const LinkId> twins) {
  const Algorithm& a = all_gather;
  if (!reversible(t, a, CollectiveKind::AllGather, twins) || !one_tree_per_chunk(a))
    return std::nullopt;
  Algorithm r = empty_reversal(t, a, CollectiveKind::ReduceScatter);
  std::vector<char> member(t.num_nodes(), 0);
  for (NodeId v : r.collective.ranks) member[v] = 1;
  // A node that holds nothing (a relay outside the communicator) takes its first partial of a
  // chunk as a copy; later ones reduce into it and wait for that copy.
  std::map<std::pair<NodeId, ChunkId>, TransferId> first_copy;
  bool made = true;
  for_each_reversed(
      a, twins,
      [&](size_t k, TransferId id, std::span<const LinkId> route, std::vector<TransferId>& deps) {
        const Transfer& x = a[id];
        Op op = Op::Reduce;
        if (!member[x.src]) {
          if (x.count != 1) return made = false;  // (a relay's first copy: one chunk)
          const auto [at, fresh] =
              first_copy.emplace(std::pair(x.src, x.chunk), static_cast<int>(k));
          if (fresh)
            op = Op::Copy;
          else
            deps.push_back(at->second);
        }
        std::sort(deps.begin(), deps.end());
        r.add(x.chunk, x.dst, x.src, route, op, deps, -1, -1, a.rate(id), 0, false, x.count);
        return true;
      });
  if (!made) return std::nullopt;
  time(t, r);
  return r;
}

std::optional<Algorithm> all_gather_reversed(const topo::Topology& t,
                                             const Algorithm& reduce_scatter,
                                             std::span<const LinkId> twins) {
  const Algorithm& a = reduce_scatter;
  if (!reversible(t, a, CollectiveKind::ReduceScatter, twins) || !one_send_per_chunk(a))
    return std::nullopt;
  Algorithm g = empty_reversal(t, a, CollectiveKind::AllGather);
  for_each_reversed(
      a, twins,
      [&](size_t, TransferId id, std::span<const LinkId> route, std::vector<TransferId>& deps) {
        const Transfer& x = a[id];
        std::sort(deps.begin(), deps.end());
        g.add(x.chunk, x.dst, x.src, route, Op::Copy, deps, -1, -1, a.rate(id), 0, false, x.count);
        return true;
      });
  time(t, g);
  return g;
}

}  // namespace tenet::synth::detail
