#include "synth/team_relay.hpp"

#include <algorithm>
#include <limits>
#include <tuple>

#include "synth/timing.hpp"
#include "topo/analysis.hpp"
#include "topo/routing.hpp"

namespace tenet::synth {

std::optional<std::vector<std::vector<topo::NodeId>>> relay_teams(const topo::Topology& t, const Collective& c) {
  if (c.kind != CollectiveKind::AllGather && c.kind != CollectiveKind::ReduceScatter &&
      c.kind != CollectiveKind::AllReduce)
    return std::nullopt;
  if (c.num_ranks() >= t.num_npus()) return std::nullopt;
  const std::vector<std::vector<topo::NodeId>> servers = topo::detect_servers(t);
  if (servers.empty() || servers[0].size() < 2) return std::nullopt;
  std::vector<int> server_of(static_cast<size_t>(t.num_npus()), -1);
  for (size_t s = 0; s < servers.size(); ++s)
    for (topo::NodeId v : servers[s]) server_of[static_cast<size_t>(v)] = static_cast<int>(s);
  std::vector<char> taken(servers.size(), 0);
  std::vector<std::vector<topo::NodeId>> teams;
  for (topo::NodeId member : c.ranks) {
    const int s = server_of[static_cast<size_t>(member)];
    if (s < 0 || taken[static_cast<size_t>(s)]) return std::nullopt;  // two members share a server
    taken[static_cast<size_t>(s)] = 1;
    std::vector<topo::NodeId>& team = teams.emplace_back(1, member);
    for (topo::NodeId v : servers[static_cast<size_t>(s)])
      if (v != member) team.push_back(v);
  }
  return teams;
}

std::optional<Algorithm> team_relay(const topo::Topology& t, const Collective& c, Bytes chunk_bytes, LinkModel model,
                                    const std::function<Algorithm(const Collective&)>& sub) {
  const auto teams = relay_teams(t, c);
  if (!teams) return std::nullopt;
  const int m = c.num_ranks(), k = c.chunks_per_npu, team_size = static_cast<int>((*teams)[0].size());
  if (k % team_size != 0) return std::nullopt;
  const int slice_chunks = k / team_size;  // k' chunks per NPU in each slice's sub-collective
  auto chunk = [&](int origin, int q, int s) { return static_cast<ChunkId>(origin * k + q * team_size + s); };
  const topo::Router router(t);
  // Member-to-mate routes, both ways (inside a server: its NVSwitch or NVLinks).
  std::vector<std::vector<LinkId>> to_mate(static_cast<size_t>(m * team_size)), from_mate(to_mate.size());
  for (int i = 0; i < m; ++i)
    for (int s = 1; s < team_size; ++s) {
      const auto there = router.route((*teams)[i][0], (*teams)[i][s]);
      const auto back = router.route((*teams)[i][s], (*teams)[i][0]);
      if (!there || !back) return std::nullopt;
      to_mate[i * team_size + s] = there->links;
      from_mate[i * team_size + s] = back->links;
    }

  // The slices' sub-collectives first: when each needs a chunk at a mate, and when the chunk is
  // final there, order the hand-overs (a ring wants its chunks in its own order, not the member's).
  const size_t chunks = static_cast<size_t>(c.num_chunks());
  // Per member i and chunk: the chunk's slice names the mate (chunk ch is slice (ch % k) % T).
  auto at = [&](int i, ChunkId ch) { return static_cast<size_t>(i) * chunks + static_cast<size_t>(ch); };
  std::vector<Algorithm> subs;
  std::vector<Time> need(static_cast<size_t>(m) * chunks, std::numeric_limits<Time>::max());
  std::vector<Time> ready(need.size(), 0);
  std::vector<int> rank_of(static_cast<size_t>(t.num_nodes()), -1);
  for (int s = 0; s < team_size; ++s) {
    Collective sc = c;
    sc.chunks_per_npu = slice_chunks;
    for (int i = 0; i < m; ++i) sc.ranks[i] = (*teams)[i][s];
    const Algorithm& sa = subs.emplace_back(sub(sc));
    if (sa.chunk_bytes != chunk_bytes || sa.collective.chunks_per_npu != slice_chunks || !sa.fully_timed())
      return std::nullopt;
    for (int i = 0; i < m; ++i) rank_of[static_cast<size_t>(sc.ranks[i])] = i;
    for (TransferId id = 0; id < static_cast<TransferId>(sa.size()); ++id) {
      const Transfer& x = sa[id];
      // A relay outside the slice's mates may be a member or another slice's mate, whose copy of
      // the chunk it would overwrite: not composed.
      if (rank_of[static_cast<size_t>(x.src)] < 0 || rank_of[static_cast<size_t>(x.dst)] < 0) return std::nullopt;
      const ChunkId ch = chunk(x.chunk / slice_chunks, x.chunk % slice_chunks, s);
      const int from = rank_of[static_cast<size_t>(x.src)], to = rank_of[static_cast<size_t>(x.dst)];
      need[at(from, ch)] = std::min(need[at(from, ch)], x.start);
      need[at(to, ch)] = std::min(need[at(to, ch)], x.start);
      ready[at(to, ch)] = std::max(ready[at(to, ch)], x.end);
    }
    for (int i = 0; i < m; ++i) rank_of[static_cast<size_t>(sc.ranks[i])] = -1;
  }

  Algorithm a;
  a.name = "tenet";
  a.collective = c;
  a.chunk_bytes = chunk_bytes;
  a.link_model = model;
  a.topology_fingerprint = t.fingerprint();
  a.topology_name = t.name();
  // What goes through member i's mates, in the order `when` gives (ties: slice, then chunk).
  struct Item {
    Time when;
    int s;
    ChunkId ch;
    bool operator<(const Item& o) const { return std::tie(when, s, ch) < std::tie(o.when, o.s, o.ch); }
  };
  std::vector<Item> items;
  auto through_mates = [&](int i, auto&& wanted, const std::vector<Time>& when, auto&& emit) {
    items.clear();
    for (int origin = 0; origin < m; ++origin)
      if (wanted(origin))
        for (int q = 0; q < slice_chunks; ++q)
          for (int s = 1; s < team_size; ++s) items.push_back({when[at(i, chunk(origin, q, s))], s, chunk(origin, q, s)});
    std::sort(items.begin(), items.end());
    for (const Item& it : items) emit(it.s, it.ch);
  };
  // 1. Member -> mates: its own chunks (All-Gather), or its contribution to every chunk, each as
  // soon as its slice's sub-collective wants it.
  std::vector<TransferId> handed(need.size(), -1);
  for (int i = 0; i < m; ++i)
    through_mates(
        i, [&](int origin) { return c.kind != CollectiveKind::AllGather || origin == i; }, need,
        [&](int s, ChunkId ch) { handed[at(i, ch)] = a.add(ch, (*teams)[i][0], (*teams)[i][s], to_mate[i * team_size + s]); });
  // 2. Each slice's mates among themselves.
  std::vector<TransferId> deps;
  for (int s = 0; s < team_size; ++s) {
    const Algorithm& sa = subs[static_cast<size_t>(s)];
    for (int i = 0; i < m; ++i) rank_of[static_cast<size_t>((*teams)[i][s])] = i;
    const auto base = static_cast<TransferId>(a.size());
    for (TransferId id = 0; id < static_cast<TransferId>(sa.size()); ++id) {
      const Transfer& x = sa[id];
      const ChunkId ch = chunk(x.chunk / slice_chunks, x.chunk % slice_chunks, s);
      deps.clear();
      for (TransferId d : sa.deps(id)) deps.push_back(base + d);
      // Whatever lands on a mate waits until the mate holds the member's chunk.
      if (const int i = rank_of[static_cast<size_t>(x.dst)]; s > 0 && i >= 0)
        if (const TransferId h = handed[at(i, ch)]; h >= 0) deps.push_back(h);
      a.add(ch, x.src, x.dst, sa.route(id), x.op, deps, -1, -1, sa.rate(id), x.channel);
    }
    for (int i = 0; i < m; ++i) rank_of[static_cast<size_t>((*teams)[i][s])] = -1;
  }
  // 3. Mates -> member: what the member must end with, as it becomes final at the mate.
  for (int i = 0; i < m; ++i)
    through_mates(
        i,
        [&](int origin) {
          return c.kind == CollectiveKind::AllReduce || (c.kind == CollectiveKind::AllGather ? origin != i : origin == i);
        },
        ready, [&](int s, ChunkId ch) { a.add(ch, (*teams)[i][s], (*teams)[i][0], from_mate[i * team_size + s]); });
  time(t, a);
  return a;
}

}  // namespace tenet::synth
