#include "synth/plans/server_plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <span>
#include <vector>

#include "synth/cost/timing.hpp"
#include "synth/plans/rail_messages.hpp"
#include "synth/tuning.hpp"
#include "topo/analysis.hpp"
#include "topo/routing.hpp"

namespace tenet::synth {

namespace {

// Whether a flat plan of `t` would be held back by the links out of its pods: some pod's NPUs
// send every other pod's NPU their chunk, |pod| (N - |pod|) chunks a count, through the links out
// of the pod's switches, and that takes longer than an NPU's N - 1 chunks through its own links.
// A pod plan sends |pod| (S - 1) there.
bool pods_hold_back_flat(const topo::Topology& t, const std::vector<std::vector<NodeId>>& pods) {
  const int n = t.num_npus();
  const std::vector<Bandwidth> out = topo::group_bandwidth(t, pods).out;
  double npu = 0;  // the slowest NPU's N - 1 chunks, in chunks per byte per second
  for (NodeId v = 0; v < n; ++v)
    npu = std::max(npu, (n - 1) / static_cast<double>(std::min(topo::ingress_bandwidth(t, v),
                                                               topo::egress_bandwidth(t, v))));
  for (size_t i = 0; i < pods.size(); ++i) {
    const auto size = static_cast<double>(pods[i].size());
    if (out[i] <= 0 || size * (n - size) / static_cast<double>(out[i]) > npu) return true;
  }
  return false;
}

}  // namespace

std::vector<std::vector<NodeId>> plan_groups(const topo::Topology& t) {
  std::vector<std::vector<NodeId>> groups = topo::detect_servers(t);
  if (!groups.empty() || !flat_servers(t)) return groups;
  if (std::vector<std::vector<NodeId>> pods = topo::detect_pods(t);
      !pods.empty() && pods_hold_back_flat(t, pods))
    return pods;
  for (NodeId v = 0; v < t.num_npus(); ++v) groups.push_back({v});
  return groups;
}

std::optional<ServerPlan> plan_servers(const topo::Topology& t, Bytes chunk_bytes, LinkModel model,
                                       int ecmp, const GiveUp* give_up, topo::RouteMemo* routes) {
  ServerPlan p;
  p.servers_ = plan_groups(t);
  p.pods_ = !p.servers_.empty() && p.servers_[0].size() > 1 && flat_servers(t);
  if (p.servers_.size() < 2) return std::nullopt;
  const int n = t.num_npus();
  const size_t count = p.servers_.size();
  p.per_ = p.servers_[0].size();
  p.server_of_.assign(n, -1);
  p.local_of_.assign(n, -1);
  for (size_t s = 0; s < count; ++s)
    for (size_t i = 0; i < p.per_; ++i) {
      p.server_of_[p.servers_[s][i]] = static_cast<int>(s);
      p.local_of_[p.servers_[s][i]] = static_cast<int>(i);
    }
  p.intra_.assign(static_cast<size_t>(n) * p.per_, -1);
  p.rail_.assign(static_cast<size_t>(n) * count, -1);

  // The data each way carries, in roots' shares: a way inside a server carries its source's own
  // data and what the source brought over its rail from the S - 1 other servers; a rail way its
  // source's own data only.
  struct Need {
    NodeId u, v;
    double load;
    int* slot;
  };
  // (Over pods the rails are placed first: their routes cross the links out of the pods, the
  // scarce ones, and they take the least loaded of them before the ways inside load the links
  // both cross.)
  std::vector<Need> needs;
  needs.reserve(static_cast<size_t>(n) * (p.per_ - 1 + count - 1));
  auto add_inside = [&] {
    for (NodeId u = 0; u < n; ++u) {
      const auto& mates = p.servers_[p.server_of_[u]];
      for (size_t i = 0; i < p.per_; ++i)
        if (mates[i] != u)
          needs.push_back({u, mates[i], static_cast<double>(count), &p.intra_[u * p.per_ + i]});
    }
  };
  if (!p.pods_) add_inside();
  for (NodeId u = 0; u < n; ++u)
    for (size_t s = 0; s < count; ++s)
      if (static_cast<int>(s) != p.server_of_[u])
        needs.push_back({u, p.servers_[s][p.local_of_[u]], 1.0, &p.rail_[u * count + s]});
  if (p.pods_) add_inside();

  // Candidate routes: the NPUs' direct links and the routes through switches, one route search per
  // source for all its ways, made when the first of its needs is placed (below) and dropped as each
  // is: a flat plan holds one source's at a time. A flat plan's ways may take any of up to
  // kFlatPlanRoutes equal-cost routes (not `ecmp`): the `ecmp` first by link ids are the same few
  // spines for every pair of a leaf-spine, which would carry the whole plan.
  const int limit = p.flat() || p.pods() ? std::max(ecmp, kFlatPlanRoutes) : ecmp;
  topo::Router router(t, routes);
  std::vector<std::vector<size_t>> needs_of(n);
  for (size_t i = 0; i < needs.size(); ++i) needs_of[needs[i].u].push_back(i);
  // Per need, its candidates' links one after another (candidate c: links[first[c], first[c + 1])),
  // in one array.
  struct Candidates {
    std::vector<LinkId> links;
    std::vector<uint32_t> first{0};
    void add(std::span<const LinkId> route) {
      links.insert(links.end(), route.begin(), route.end());
      first.push_back(static_cast<uint32_t>(links.size()));
    }
    size_t size() const { return first.size() - 1; }
    std::span<const LinkId> operator[](size_t c) const {
      return {links.data() + first[c], first[c + 1] - first[c]};
    }
  };
  std::vector<Candidates> candidates_of(needs.size());
  std::vector<char> searched(n, 0);     // whether u's candidates were found
  std::vector<int64_t> need_to(n, -1);  // u's need to each NPU, while u is at hand
  std::vector<char> wanted(n, 0);       // the NPUs u needs ways to (no route sought to the rest)
  // u's needs' candidates; false where one of them has none.
  auto search = [&](NodeId u) {
    give_up_point(give_up);
    searched[u] = 1;
    for (size_t i : needs_of[u]) {
      need_to[needs[i].v] = static_cast<int64_t>(i);
      wanted[needs[i].v] = 1;
      for (LinkId l : t.out_links(u))
        if (t.link(l).dst == needs[i].v) candidates_of[i].add({&l, 1});
    }
    if (t.num_switches() > 0)
      router.for_each_quickest_switch_route(
          u, chunk_bytes, limit,
          [&](NodeId v, std::span<const LinkId> links) {
            if (need_to[v] >= 0) candidates_of[static_cast<size_t>(need_to[v])].add(links);
          },
          &wanted);
    bool all = true;
    for (size_t i : needs_of[u]) {
      all = all && candidates_of[i].size() > 0;
      need_to[needs[i].v] = -1;
      wanted[needs[i].v] = 0;
    }
    return all;
  };

  // Each way takes the candidate route that keeps its busiest link least loaded (load over
  // bandwidth, with the way's own load added), the first such in the candidates' order.
  std::vector<double> link_load(t.num_links(), 0);
  std::vector<double> way_load;
  for (size_t i = 0; i < needs.size(); ++i) {
    const Need& need = needs[i];
    if (!searched[need.u] && !search(need.u)) return std::nullopt;
    Candidates& candidates = candidates_of[i];
    size_t best = 0;
    double best_cost = std::numeric_limits<double>::infinity();
    for (size_t c = 0; c < candidates.size(); ++c) {
      double cost = 0;
      for (LinkId l : candidates[c])
        cost =
            std::max(cost, (link_load[l] + need.load) / static_cast<double>(t.link(l).bandwidth));
      if (cost < best_cost) {
        best = c;
        best_cost = cost;
      }
    }
    for (LinkId l : candidates[best]) link_load[l] += need.load;
    *need.slot = static_cast<int>(p.ways_.size());
    p.ways_.push_back(
        {need.u, need.v, std::vector<LinkId>(candidates[best].begin(), candidates[best].end()), 0});
    way_load.push_back(need.load);
    candidates = Candidates{};  // its memory back at once
  }

  if (!p.pods_) {
    set_fluid_rates(t, model, p.ways_, way_load);
    return p;
  }
  return p.rated_over_pods(t, way_load, chunk_bytes, model);
}

ServerPlan ServerPlan::rated_over_pods(const topo::Topology& t, const std::vector<double>& way_load,
                                       Bytes chunk_bytes, LinkModel model) const {
  // Over pods a rail way and the ways inside its pod share the NPUs' own links; at one fluid
  // share for all, a rail's chunk arrives at the end of the count and is forwarded only then. The
  // rails take their shares among the rails alone. The ways inside take theirs among themselves
  // either of all the links' capacity (those that do not fit beside the rails wait for them: a
  // link admits its ways while their rates fit) or of what the rails leave (none waits; the
  // rails' part stays unused once they are through), whichever pod_estimate says ends sooner.
  const auto is_rail = [&](const ServerWay& w) { return server_of(w.src) != server_of(w.dst); };
  const auto shares = [&](bool rails, const std::vector<double>* capacity) {
    std::vector<double> load = way_load;
    for (size_t i = 0; i < load.size(); ++i)
      if (is_rail(ways_[i]) != rails) load[i] = 0;
    std::vector<ServerWay> ways = ways_;
    set_fluid_rates(t, model, ways, load, capacity);
    return ways;
  };
  const std::vector<ServerWay> rails = shares(true, nullptr);
  std::vector<double> left(t.num_links());
  for (LinkId l = 0; l < t.num_links(); ++l) left[l] = static_cast<double>(t.link(l).bandwidth);
  for (const ServerWay& w : rails)
    if (is_rail(w)) {
      Bandwidth narrowest = std::numeric_limits<Bandwidth>::max();
      for (LinkId l : w.route) narrowest = std::min(narrowest, t.link(l).bandwidth);
      for (LinkId l : w.route) left[l] -= static_cast<double>(w.rate > 0 ? w.rate : narrowest);
    }
  for (double& c : left) c = std::max(c, 1.0);
  const auto with = [&](const std::vector<ServerWay>& inside, bool beside) {
    ServerPlan q = *this;
    for (size_t i = 0; i < q.ways_.size(); ++i)
      q.ways_[i].rate = is_rail(q.ways_[i]) ? rails[i].rate : inside[i].rate;
    q.rails_beside_ = beside;
    return q;
  };
  ServerPlan waiting = with(shares(false, nullptr), false);
  ServerPlan beside = with(shares(false, &left), true);
  const std::optional<Time> wait = pod_estimate(t, waiting, 1, chunk_bytes, model);
  const std::optional<Time> room = pod_estimate(t, beside, 1, chunk_bytes, model);
  return room && (!wait || *room < *wait) ? beside : waiting;
}

std::optional<ServerPlan> relayed_over_pods(const topo::Topology& t, const ServerPlan& plan,
                                            LinkModel model) {
  if (plan.flat() || plan.pods()) return std::nullopt;
  const auto& servers = plan.servers();
  const size_t count = servers.size(), per = servers[0].size();
  // Per switch, the server all its NPU neighbours are in (-1: several, -2: none): the switches of
  // several are outside every server, and a server's pod is the set of those its NPUs link to.
  std::vector<int> owner(t.num_nodes(), -2);
  const auto see = [&](NodeId w, int server) {
    if (!t.is_npu(w)) owner[w] = owner[w] == -2 || owner[w] == server ? server : -1;
  };
  for (NodeId v = 0; v < t.num_npus(); ++v) {
    for (LinkId l : t.out_links(v)) see(t.link(l).dst, plan.server_of(v));
    for (LinkId l : t.in_links(v)) see(t.link(l).src, plan.server_of(v));
  }
  std::vector<std::vector<NodeId>> outside(count);
  for (NodeId v = 0; v < t.num_npus(); ++v)
    for (LinkId l : t.out_links(v))
      if (const NodeId w = t.link(l).dst; !t.is_npu(w) && owner[w] == -1)
        outside[static_cast<size_t>(plan.server_of(v))].push_back(w);
  std::map<std::vector<NodeId>, int> pod_of_switches;
  std::vector<std::vector<int>> pods;
  std::vector<int> pod(count), index(count);
  for (size_t a = 0; a < count; ++a) {
    std::vector<NodeId>& key = outside[a];
    std::sort(key.begin(), key.end());
    key.erase(std::unique(key.begin(), key.end()), key.end());
    const auto [it, added] = pod_of_switches.try_emplace(key, static_cast<int>(pods.size()));
    if (added) pods.emplace_back();
    pod[a] = it->second;
    index[a] = static_cast<int>(pods[static_cast<size_t>(it->second)].size());
    pods[static_cast<size_t>(it->second)].push_back(static_cast<int>(a));
  }
  if (pods.size() < 2 || std::all_of(pods.begin(), pods.end(),
                                     [](const std::vector<int>& p) { return p.size() == 1; }))
    return std::nullopt;
  ServerPlan q = plan;
  q.entry_.resize(count * count);
  for (size_t a = 0; a < count; ++a)
    for (size_t b = 0; b < count; ++b) {
      const std::vector<int>& into = pods[static_cast<size_t>(pod[b])];
      q.entry_[a * count + b] = pod[a] == pod[b]
                                    ? static_cast<int>(b)
                                    : into[static_cast<size_t>(index[a]) % into.size()];
    }
  // Each way's chunks a count: a way inside a server its source's own and what entered the server
  // at its source's position from the S - 1 others (S); a rail from server u to server v those of
  // the servers whose chunks enter v from u.
  std::vector<double> load(q.ways_.size(), 0);
  for (NodeId u = 0; u < t.num_npus(); ++u)
    for (NodeId v : servers[static_cast<size_t>(q.server_of(u))])
      if (v != u) load[static_cast<size_t>(q.way_between(u, v))] = static_cast<double>(count);
  for (size_t a = 0; a < count; ++a)
    for (size_t b = 0; b < count; ++b) {
      if (a == b) continue;
      const auto e = static_cast<size_t>(q.entry(static_cast<int>(a), static_cast<int>(b)));
      const size_t from = e == b ? a : e;
      for (size_t i = 0; i < per; ++i)
        load[static_cast<size_t>(q.way_between(servers[from][i], servers[b][i]))] += 1;
    }
  set_fluid_rates(t, model, q.ways_, load);
  return q;
}

namespace {

// A rail way moves at its NPU's own share where its rate is at least this of its narrowest link
// over the S - 1 rails (the fluid rates are rounded down to whole bytes per second).
constexpr double kOwnShare = 0.999;

// NPU u's rails under the overhead model (staggered_ways).
struct RailStagger {
  bool applies = false;    // its rails move at their NIC's share, and it forwards inside a server
  std::vector<int> rails;  // its rail ways
  std::vector<Bandwidth> narrowest;  // each rail's narrowest link
  double g = 0;                      // how many run at a time: S - 1 at the fluid shares
  double estimate = 0;               // the All-Gather's time at u, in ps (staggered_estimate)
};

RailStagger stagger_of(const topo::Topology& t, const ServerPlan& plan, NodeId u, double k,
                       Bytes chunk_bytes, LinkModel model, bool messages = false) {
  const auto& servers = plan.servers();
  const auto& ways = plan.ways();
  const double others = static_cast<double>(servers.size()) - 1;  // S - 1 rail ways per NPU
  auto cost = [&](const ServerWay& w) {
    return route_cost(t, w.route, chunk_bytes, model, t.charges_steps(), w.rate);
  };
  RailStagger r;
  double intra = 0;  // T_intra: u's busiest way inside its server, S k chunks
  double latency = 0;
  for (NodeId v : servers[static_cast<size_t>(plan.server_of(u))])
    if (v != u) {
      const RouteCost mate = cost(ways[static_cast<size_t>(plan.way_between(u, v))]);
      intra = std::max(intra, (others + 1) * k * static_cast<double>(mate.occupancy));
      latency = std::max(latency, static_cast<double>(mate.latency));
    }
  // Only where the rails share nothing but u's own links: each moves at 1 / (S - 1) of its
  // narrowest link. Where a way's share of a link other NPUs' ways cross (an oversubscribed
  // spine) is less, g at a time would not fill that link.
  double step = 0;          // s: the rails' per-step cost
  double chunk_time = 0;    // a chunk at the narrowest rail's full rate
  double rail_latency = 0;  // the rails' longest
  bool own_links = true;
  for (const auto& server : servers)
    if (NodeId v = server[static_cast<size_t>(plan.position(u))]; v != u) {
      r.rails.push_back(plan.way_between(u, v));
      const RouteCost rail = cost(ways[static_cast<size_t>(r.rails.back())]);
      r.narrowest.push_back(rail.bottleneck);
      step = std::max(step, static_cast<double>(rail.step));
      chunk_time =
          std::max(chunk_time, static_cast<double>(transfer_time(chunk_bytes, rail.bottleneck)));
      rail_latency = std::max(rail_latency, static_cast<double>(rail.latency));
      own_links = own_links && static_cast<double>(rail.rate) * others >=
                                   kOwnShare * static_cast<double>(rail.bottleneck);
    }
  if (intra <= 0 || !own_links || r.rails.empty()) return r;
  r.applies = true;
  // The integer g on either side of the optimum, kept only where it beats the fluid shares.
  const auto overhead = [&](double g) { return others * k * step / g + g * intra / (others * k); };
  const double best = std::clamp(others * k * std::sqrt(step / intra), 1.0, others);
  r.g = others;
  for (double candidate : {std::floor(best), std::ceil(best)})
    if (overhead(candidate) < overhead(r.g)) r.g = candidate;
  // The NIC's rounds and the last one's forwarding; or the first round's arrival and all the
  // forwarding, where that is longer.
  const double nic = others * k * (step / r.g + chunk_time);
  r.estimate = std::max(nic + r.g * intra / (others * k), step + r.g * chunk_time + intra) +
               rail_latency + latency;
  // The rails in messages (rail_messages.hpp), where a way's k chunks make fewer: at the fluid
  // shares, the NIC's time and a step per message on each way, then the last round's forwarding;
  // or the first message's arrival and all the forwarding. The faster of the two is the plan's.
  if (!messages || step <= 0) return r;
  const std::vector<int> sizes =
      detail::rail_message_sizes(static_cast<int>(k), kRailMessageShrink);
  if (sizes.size() == static_cast<size_t>(k)) return r;
  const auto sent = static_cast<double>(sizes.size());
  const double in_messages = std::max(others * k * chunk_time + sent * step + intra / k,
                                      others * sizes.front() * chunk_time + step + intra) +
                             rail_latency + latency;
  r.estimate = std::min(r.estimate, in_messages);
  return r;
}

}  // namespace

std::vector<ServerWay> staggered_ways(const topo::Topology& t, const ServerPlan& plan,
                                      int chunks_per_npu, Bytes chunk_bytes, LinkModel model) {
  std::vector<ServerWay> ways = plan.ways();
  if (plan.flat() || plan.relayed() || model != LinkModel::Pipelined) return ways;
  const auto others = static_cast<double>(plan.servers().size()) - 1;
  for (NodeId u = 0; u < t.num_npus(); ++u) {
    const RailStagger r = stagger_of(t, plan, u, chunks_per_npu, chunk_bytes, model);
    if (!r.applies || r.g >= others) continue;
    // (Never below the plan's rate: a rail whose narrowest link carries fewer than S - 1 of the
    // plan's ways has more than that link's (S - 1)-th part already.)
    for (size_t i = 0; i < r.rails.size(); ++i) {
      ServerWay& w = ways[static_cast<size_t>(r.rails[i])];
      if (r.g > 1)
        w.rate =
            std::max(w.rate, static_cast<Bandwidth>(static_cast<double>(r.narrowest[i]) / r.g));
      else
        w.rate = 0;
    }
  }
  return ways;
}

std::optional<Time> staggered_estimate(const topo::Topology& t, const ServerPlan& plan,
                                       int chunks_per_npu, Bytes chunk_bytes, LinkModel model,
                                       bool messages) {
  if (plan.flat() || plan.relayed() || model != LinkModel::Pipelined) return std::nullopt;
  double estimate = 0;
  for (NodeId u = 0; u < t.num_npus(); ++u) {
    const RailStagger r = stagger_of(t, plan, u, chunks_per_npu, chunk_bytes, model, messages);
    if (!r.applies) return std::nullopt;
    estimate = std::max(estimate, r.estimate);
  }
  return static_cast<Time>(estimate);
}

std::optional<Time> flat_estimate(const topo::Topology& t, const ServerPlan& plan,
                                  int chunks_per_npu, Bytes chunk_bytes, LinkModel model) {
  if (!plan.flat() || model != LinkModel::Pipelined) return std::nullopt;
  RouteCoster cost(t, chunk_bytes, model, t.charges_steps());
  Time estimate = 0;
  for (const ServerWay& w : plan.ways()) {
    const RouteCost c = cost(w.route, w.rate);
    estimate = std::max(estimate, chunks_per_npu * c.occupancy + (c.duration - c.occupancy));
  }
  return estimate;
}

std::optional<Time> pod_estimate(const topo::Topology& t, const ServerPlan& plan,
                                 int chunks_per_npu, Bytes chunk_bytes, LinkModel model) {
  if (!plan.pods() || model != LinkModel::Pipelined) return std::nullopt;
  RouteCoster cost(t, chunk_bytes, model, t.charges_steps());
  const auto k = static_cast<Time>(chunks_per_npu);
  const auto servers = static_cast<Time>(plan.servers().size());
  std::vector<Time> rails(t.num_npus(), 0), inside(t.num_npus(), 0);
  for (const ServerWay& w : plan.ways()) {
    const RouteCost c = cost(w.route, w.rate);
    const bool rail = plan.server_of(w.src) != plan.server_of(w.dst);
    Time& at = rail ? rails[w.src] : inside[w.src];
    at = std::max(at, (rail ? k : servers * k) * c.occupancy + (c.duration - c.occupancy));
  }
  Time estimate = 0;
  for (NodeId v = 0; v < t.num_npus(); ++v)
    estimate = std::max(estimate,
                        plan.rails_beside() ? std::max(rails[v], inside[v]) : rails[v] + inside[v]);
  return estimate;
}

std::optional<Time> plan_estimate(const topo::Topology& t, const ServerPlan& plan,
                                  int chunks_per_npu, Bytes chunk_bytes, LinkModel model,
                                  bool messages) {
  if (plan.flat()) return flat_estimate(t, plan, chunks_per_npu, chunk_bytes, model);
  if (plan.pods()) return pod_estimate(t, plan, chunks_per_npu, chunk_bytes, model);
  return staggered_estimate(t, plan, chunks_per_npu, chunk_bytes, model, messages);
}

bool flat_servers(const topo::Topology& t) {
  return t.num_switches() > 0 && t.num_npus() >= 2 && topo::detect_servers(t).empty();
}

void set_fluid_rates(const topo::Topology& t, LinkModel model, std::vector<ServerWay>& ways,
                     const std::vector<double>& load, const std::vector<double>* capacity) {
  for (ServerWay& w : ways) w.rate = 0;
  if (model != LinkModel::Pipelined) return;
  std::vector<double> link_load(t.num_links(), 0);
  for (size_t i = 0; i < ways.size(); ++i)
    for (LinkId l : ways[i].route) link_load[l] += load[i];
  for (size_t i = 0; i < ways.size(); ++i) {
    ServerWay& w = ways[i];
    if (load[i] <= 0) continue;  // it carries nothing (a rail a deal leaves empty): rate moot
    double rate = std::numeric_limits<double>::infinity();
    Bandwidth narrowest = std::numeric_limits<Bandwidth>::max();
    for (LinkId l : w.route) {
      const auto bw = t.link(l).bandwidth;
      narrowest = std::min(narrowest, bw);
      rate = std::min(
          rate, (capacity ? (*capacity)[l] : static_cast<double>(bw)) * load[i] / link_load[l]);
    }
    const auto fluid = std::max<Bandwidth>(1, static_cast<Bandwidth>(rate));
    w.rate = fluid < narrowest ? fluid : 0;
  }
}

}  // namespace tenet::synth
