#include "synth/groups/team_relay.hpp"

#include <algorithm>
#include <limits>
#include <numeric>
#include <tuple>

#include "synth/cost/timing.hpp"
#include "topo/analysis.hpp"
#include "topo/routing.hpp"

namespace tenet::synth {

std::optional<RelayTeams> relay_teams(const topo::Topology& t, const Collective& c,
                                      bool borrow_servers) {
  if (c.kind != CollectiveKind::AllGather && c.kind != CollectiveKind::ReduceScatter &&
      c.kind != CollectiveKind::AllReduce)
    return std::nullopt;
  if (c.num_ranks() >= t.num_npus() || c.num_ranks() < 2) return std::nullopt;
  const std::vector<std::vector<topo::NodeId>> servers = topo::detect_servers(t);
  if (servers.size() < 2 || servers[0].size() < 2) return std::nullopt;
  std::vector<int> server_of(static_cast<size_t>(t.num_npus()), -1), place(server_of.size(), -1);
  for (size_t s = 0; s < servers.size(); ++s)
    for (size_t i = 0; i < servers[s].size(); ++i) {
      server_of[static_cast<size_t>(servers[s][i])] = static_cast<int>(s);
      place[static_cast<size_t>(servers[s][i])] = static_cast<int>(i);
    }
  std::vector<int> members_in(servers.size(), 0);
  for (topo::NodeId member : c.ranks) {
    const int s = server_of[static_cast<size_t>(member)];
    if (s < 0) return std::nullopt;
    ++members_in[static_cast<size_t>(s)];
  }
  RelayTeams r;
  const int home = server_of[static_cast<size_t>(c.ranks[0])];
  if (members_in[static_cast<size_t>(home)] == c.num_ranks()) {  // one server's group: mirrors
    if (!borrow_servers) return std::nullopt;
    r.mirrors = true;
    const std::vector<topo::NodeId>& next =
        servers[(static_cast<size_t>(home) + 1) % servers.size()];
    for (topo::NodeId member : c.ranks)
      r.teams.push_back({member, next[static_cast<size_t>(place[static_cast<size_t>(member)])]});
    return r;
  }
  for (topo::NodeId member : c.ranks) {
    const int s = server_of[static_cast<size_t>(member)];
    if (members_in[static_cast<size_t>(s)] > 1) return std::nullopt;  // two members share a server
    std::vector<topo::NodeId>& team = r.teams.emplace_back(1, member);
    for (topo::NodeId v : servers[static_cast<size_t>(s)])
      if (v != member) team.push_back(v);
  }
  return r;
}

std::vector<int> equal_slices(int k, int team_size) {
  if (team_size < 1 || k % team_size != 0) return {};
  return std::vector<int>(static_cast<size_t>(team_size), k / team_size);
}

std::optional<Algorithm> team_relay(const topo::Topology& t, const Collective& c, Bytes chunk_bytes,
                                    LinkModel model,
                                    const std::function<Algorithm(const Collective&)>& sub) {
  const std::optional<RelayTeams> teams = relay_teams(t, c);
  if (!teams) return std::nullopt;
  const std::vector<int> slices =
      equal_slices(c.chunks_per_npu, static_cast<int>(teams->teams[0].size()));
  if (slices.empty()) return std::nullopt;
  return team_relay(t, c, chunk_bytes, model, *teams, slices, sub);
}

std::optional<Algorithm> team_relay(const topo::Topology& t, const Collective& c, Bytes chunk_bytes,
                                    LinkModel model, const RelayTeams& relay,
                                    const std::vector<int>& slices,
                                    const std::function<Algorithm(const Collective&)>& sub) {
  const std::vector<std::vector<topo::NodeId>>& teams = relay.teams;
  const int m = c.num_ranks(), k = c.chunks_per_npu, team_size = static_cast<int>(teams[0].size());
  if (static_cast<int>(slices.size()) != team_size ||
      std::accumulate(slices.begin(), slices.end(), 0) != k ||
      std::any_of(slices.begin(), slices.end(), [](int n) { return n < 0; }))
    return std::nullopt;
  // Where each slice's chunks sit among a rank's k: position p goes to the slice furthest behind
  // its share of the first p + 1 (ties: the lower slice), so equal slices deal round robin.
  std::vector<std::vector<int>> place(static_cast<size_t>(team_size));
  for (int p = 0; p < k; ++p) {
    int pick = -1;
    int64_t behind = 0;
    for (int s = 0; s < team_size; ++s) {
      const int64_t b =
          int64_t{slices[s]} * (p + 1) - int64_t{k} * static_cast<int64_t>(place[s].size());
      if (static_cast<int>(place[s].size()) < slices[s] && (pick < 0 || b > behind))
        pick = s, behind = b;
    }
    place[static_cast<size_t>(pick)].push_back(p);
  }
  auto chunk = [&](int origin, int q, int s) {
    return static_cast<ChunkId>(origin * k + place[s][q]);
  };
  const topo::Router router(t);
  // Member-to-mate routes, both ways (inside a server: its NVSwitch or NVLinks; to a mirror: its
  // NIC).
  std::vector<std::vector<LinkId>> to_mate(static_cast<size_t>(m * team_size)),
      from_mate(to_mate.size());
  for (int i = 0; i < m; ++i)
    for (int s = 1; s < team_size; ++s) {
      const auto there = router.route(teams[i][0], teams[i][s]);
      const auto back = router.route(teams[i][s], teams[i][0]);
      if (!there || !back) return std::nullopt;
      to_mate[i * team_size + s] = there->links;
      from_mate[i * team_size + s] = back->links;
    }

  // The slices' sub-collectives first: when each needs a chunk at a mate, and when the chunk is
  // final there, order the hand-overs (a ring wants its chunks in its own order, not the member's).
  const size_t chunks = static_cast<size_t>(c.num_chunks());
  // Per member i and chunk (its slice names the mate).
  auto at = [&](int i, ChunkId ch) {
    return static_cast<size_t>(i) * chunks + static_cast<size_t>(ch);
  };
  std::vector<Algorithm> subs(static_cast<size_t>(team_size));
  std::vector<Time> need(static_cast<size_t>(m) * chunks, std::numeric_limits<Time>::max());
  std::vector<Time> ready(need.size(), 0);
  std::vector<int> rank_of(static_cast<size_t>(t.num_nodes()), -1);
  for (int s = 0; s < team_size; ++s) {
    if (slices[s] == 0) continue;
    Collective sc = c;
    sc.chunks_per_npu = slices[s];
    for (int i = 0; i < m; ++i) sc.ranks[i] = teams[i][s];
    // Its chunks are renamed one by one: a message of several is sent chunk by chunk.
    Algorithm& sa = subs[static_cast<size_t>(s)] = sub(sc);
    if (sa.has_messages()) {
      sa = split_messages(sa);
      time(t, sa);
    }
    if (sa.chunk_bytes != chunk_bytes || sa.collective.chunks_per_npu != slices[s] ||
        !sa.fully_timed())
      return std::nullopt;
    for (int i = 0; i < m; ++i) rank_of[static_cast<size_t>(sc.ranks[i])] = i;
    for (TransferId id = 0; id < static_cast<TransferId>(sa.size()); ++id) {
      const Transfer& x = sa[id];
      // A relay outside the slice's mates may be a member or another slice's mate, whose copy of
      // the chunk it would overwrite: not composed.
      if (rank_of[static_cast<size_t>(x.src)] < 0 || rank_of[static_cast<size_t>(x.dst)] < 0)
        return std::nullopt;
      const ChunkId ch = chunk(x.chunk / slices[s], x.chunk % slices[s], s);
      const int from = rank_of[static_cast<size_t>(x.src)],
                to = rank_of[static_cast<size_t>(x.dst)];
      need[at(from, ch)] = std::min(need[at(from, ch)], x.start);
      need[at(to, ch)] = std::min(need[at(to, ch)], x.start);
      ready[at(to, ch)] = std::max(ready[at(to, ch)], x.end);
    }
    for (int i = 0; i < m; ++i) rank_of[static_cast<size_t>(sc.ranks[i])] = -1;
  }

  Algorithm a = empty_algorithm("tenet", t, c, chunk_bytes, model);
  // What goes through member i's mates, in the order `when` gives (ties: slice, then chunk).
  struct Item {
    Time when;
    int s;
    ChunkId ch;
    bool operator<(const Item& o) const {
      return std::tie(when, s, ch) < std::tie(o.when, o.s, o.ch);
    }
  };
  std::vector<Item> items;
  auto through_mates = [&](int i, auto&& wanted, const std::vector<Time>& when, auto&& emit) {
    items.clear();
    for (int origin = 0; origin < m; ++origin)
      if (wanted(origin))
        for (int s = 1; s < team_size; ++s)
          for (int q = 0; q < slices[s]; ++q)
            items.push_back({when[at(i, chunk(origin, q, s))], s, chunk(origin, q, s)});
    std::sort(items.begin(), items.end());
    for (const Item& it : items) emit(it.s, it.ch);
  };
  // 1. Member -> mates: its own chunks (All-Gather), or its contribution to every chunk, each as
  // soon as its slice's sub-collective wants it.
  std::vector<TransferId> handed(need.size(), -1);
  for (int i = 0; i < m; ++i)
    through_mates(
        i, [&](int origin) { return c.kind != CollectiveKind::AllGather || origin == i; }, need,
        [&](int s, ChunkId ch) {
          handed[at(i, ch)] = a.add(ch, teams[i][0], teams[i][s], to_mate[i * team_size + s]);
        });
  // 2. Each slice's mates among themselves.
  std::vector<TransferId> deps;
  for (int s = 0; s < team_size; ++s) {
    if (slices[s] == 0) continue;
    const Algorithm& sa = subs[static_cast<size_t>(s)];
    for (int i = 0; i < m; ++i) rank_of[static_cast<size_t>(teams[i][s])] = i;
    const auto base = static_cast<TransferId>(a.size());
    for (TransferId id = 0; id < static_cast<TransferId>(sa.size()); ++id) {
      const Transfer& x = sa[id];
      const ChunkId ch = chunk(x.chunk / slices[s], x.chunk % slices[s], s);
      deps.clear();
      for (TransferId d : sa.deps(id)) deps.push_back(base + d);
      // Whatever lands on a mate waits until the mate holds the member's chunk.
      if (const int i = rank_of[static_cast<size_t>(x.dst)]; s > 0 && i >= 0)
        if (const TransferId h = handed[at(i, ch)]; h >= 0) deps.push_back(h);
      a.add(ch, x.src, x.dst, sa.route(id), x.op, deps, -1, -1, sa.rate(id), x.channel);
    }
    for (int i = 0; i < m; ++i) rank_of[static_cast<size_t>(teams[i][s])] = -1;
  }
  // 3. Mates -> member: what the member must end with, as it becomes final at the mate.
  for (int i = 0; i < m; ++i)
    through_mates(
        i,
        [&](int origin) {
          return c.kind == CollectiveKind::AllReduce ||
                 (c.kind == CollectiveKind::AllGather ? origin != i : origin == i);
        },
        ready,
        [&](int s, ChunkId ch) {
          a.add(ch, teams[i][s], teams[i][0], from_mate[i * team_size + s]);
        });
  time(t, a);
  return a;
}

}  // namespace tenet::synth
