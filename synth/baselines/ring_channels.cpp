#include "synth/baselines/ring_channels.hpp"

#include <algorithm>
#include <functional>
#include <limits>
#include <optional>
#include <span>

#include "topo/analysis.hpp"
#include "topo/routing.hpp"

namespace tenet::synth {
namespace {

using topo::LinkId;
using topo::NodeId;

// The ways from each member to each other one and the capacity the channels found so far left.
class Ways {
 public:
  // Every member's ways to every other; with `servers` (the members' servers, as
  // topo::servers_of gives them), only those inside its own server and into the servers before and
  // after it, the ways server_ring takes.
  Ways(const topo::Topology& t, const std::vector<NodeId>& members,
       const std::vector<std::vector<NodeId>>* servers = nullptr)
      : t_(t), members_(members), left_(t.num_links()) {
    for (LinkId l = 0; l < t.num_links(); ++l) left_[l] = t.link(l).bandwidth;
    const int p = static_cast<int>(members.size());
    index_.assign(t.num_npus(), -1);
    for (int i = 0; i < p; ++i) index_[members[i]] = i;
    ways_.resize(p);
    links_.resize(p);
    topo::Router router(t);
    std::vector<int> server_of;  // per NPU (with `servers`)
    std::vector<char> near;      // the NPUs a member's ways go to (with `servers`)
    if (servers) {
      server_of.assign(t.num_npus(), -1);
      for (size_t s = 0; s < servers->size(); ++s)
        for (NodeId v : (*servers)[s]) server_of[v] = static_cast<int>(s);
      near.assign(t.num_npus(), 0);
    }
    // Marks (or clears) the NPUs of member u's server and the servers before and after it.
    auto mark_near = [&](NodeId u, char on) {
      const int count = static_cast<int>(servers->size());
      for (int d : {-1, 0, 1})
        for (NodeId v : (*servers)[(server_of[u] + d + count) % count]) near[v] = on;
    };
    // (Each member's routes in one array, its ways' spans set once it is whole.)
    std::vector<std::pair<size_t, size_t>> spans;  // per way of the member: first link, count
    for (int i = 0; i < p; ++i) {
      const NodeId u = members[i];
      std::vector<LinkId>& links = links_[i];
      spans.clear();
      auto add = [&](int j, std::span<const LinkId> route) {
        ways_[i].push_back({j, {}});
        spans.emplace_back(links.size(), route.size());
        links.insert(links.end(), route.begin(), route.end());
      };
      for (LinkId l : t.out_links(u))
        if (t.is_npu(t.link(l).dst) && index_[t.link(l).dst] >= 0)
          add(index_[t.link(l).dst], {&l, 1});
      if (servers) mark_near(u, 1);
      if (t.num_switches() > 0)
        router.for_each_switch_route(
            u, 8, 0,
            [&](NodeId v, std::span<const LinkId> route) {
              if (const int j = index(v); j >= 0 && j != i) add(j, route);
            },
            servers ? &near : nullptr);
      if (servers) mark_near(u, 0);
      for (size_t k = 0; k < spans.size(); ++k)
        ways_[i][k].route = {links.data() + spans[k].first, spans[k].second};
      std::stable_sort(ways_[i].begin(), ways_[i].end(),
                       [](const Way& a, const Way& b) { return a.to < b.to; });
    }
  }

  // (Its ways' routes point into links_: moved, never copied.)
  Ways(const Ways&) = delete;
  Ways& operator=(const Ways&) = delete;
  Ways(Ways&&) = default;

  struct Way {
    int to;                         // member index
    std::span<const LinkId> route;  // into its member's links_
  };
  // Every link's whole capacity back (a new search).
  void refill() {
    for (LinkId l = 0; l < t_.num_links(); ++l) left_[l] = t_.link(l).bandwidth;
  }
  int size() const { return static_cast<int>(members_.size()); }
  NodeId member(int i) const { return members_[i]; }
  int index(NodeId v) const { return v < static_cast<NodeId>(index_.size()) ? index_[v] : -1; }
  const std::vector<Way>& from(int i) const { return ways_[i]; }
  // The ways from i to j (from(i) is in the order of the members they go to).
  std::span<const Way> between(int i, int j) const {
    const auto [first, last] =
        std::equal_range(ways_[i].begin(), ways_[i].end(), Way{j, {}},
                         [](const Way& a, const Way& b) { return a.to < b.to; });
    return {first, last};
  }
  Bandwidth left(std::span<const LinkId> route) const {
    Bandwidth m = std::numeric_limits<Bandwidth>::max();
    for (LinkId l : route) m = std::min(m, left_[l]);
    return m;
  }
  // The way from i to j with the most capacity left (the first of equals), or null.
  const Way* best(int i, int j) const {
    const Way* out = nullptr;
    Bandwidth most = 0;
    for (const Way& w : between(i, j)) {
      const Bandwidth b = left(w.route);
      if (!out || b > most) {
        out = &w;
        most = b;
      }
    }
    return out;
  }
  void take(std::span<const LinkId> route, Bandwidth r) {
    for (LinkId l : route) left_[l] -= r;
  }
  // The rate a ring over these routes can take from what is left: on every link, the routes
  // crossing it share what is left equally.
  Bandwidth rate_of(const std::vector<std::vector<LinkId>>& routes) const {
    std::vector<std::pair<LinkId, int>> uses;
    for (const auto& r : routes)
      for (LinkId l : r) uses.emplace_back(l, 1);
    std::sort(uses.begin(), uses.end());
    Bandwidth rate = std::numeric_limits<Bandwidth>::max();
    for (size_t i = 0; i < uses.size();) {
      size_t j = i;
      while (j < uses.size() && uses[j].first == uses[i].first) ++j;
      rate = std::min(rate, left_[uses[i].first] / static_cast<Bandwidth>(j - i));
      i = j;
    }
    return std::max<Bandwidth>(rate, 0);
  }

 private:
  const topo::Topology& t_;
  std::vector<NodeId> members_;
  std::vector<Bandwidth> left_;
  std::vector<int> index_;
  std::vector<std::vector<Way>> ways_;
  std::vector<std::vector<LinkId>> links_;  // per member, its ways' routes
};

// A ring in member indices through the given ways (the best one per hop); nothing when a hop has
// no way.
std::optional<RingChannel> ring_through(const Ways& w, const std::vector<int>& order) {
  RingChannel ring;
  const int p = static_cast<int>(order.size());
  for (int i = 0; i < p; ++i) {
    const Ways::Way* way = w.best(order[i], order[(i + 1) % p]);
    if (!way) return std::nullopt;
    ring.order.push_back(w.member(order[i]));
    ring.routes.emplace_back(way->route.begin(), way->route.end());
  }
  ring.rate = w.rate_of(ring.routes);
  return ring;
}

// The widest Hamiltonian cycle a bounded depth-first search finds: for a threshold, only ways with
// that much left; the largest threshold for which a cycle is found (binary search over the
// capacities left).
class CycleSearch {
 public:
  explicit CycleSearch(Ways& w) : w_(w) {}

  std::optional<RingChannel> widest() {
    std::vector<Bandwidth> levels;
    for (int i = 0; i < w_.size(); ++i)
      for (const Ways::Way& way : w_.from(i))
        if (const Bandwidth b = w_.left(way.route); b > 0) levels.push_back(b);
    std::sort(levels.begin(), levels.end(), std::greater<>());
    levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
    std::optional<std::vector<int>> best;
    size_t lo = 0, hi = levels.size();  // look for the smallest index (widest) that works
    while (lo < hi) {
      const size_t mid = (lo + hi) / 2;
      if (auto c = cycle(levels[mid])) {
        best = std::move(c);
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    if (!best) return std::nullopt;
    auto ring = ring_through(w_, *best);
    if (!ring || ring->rate <= 0) return std::nullopt;
    return ring;
  }

 private:
  std::optional<std::vector<int>> cycle(Bandwidth threshold) {
    const int p = w_.size();
    visited_.assign(p, 0);
    order_.assign(1, 0);
    visited_[0] = 1;
    budget_ = 20'000;
    threshold_ = threshold;
    if (p == 2) {
      if (usable(0, 1) && usable(1, 0)) return std::vector<int>{0, 1};
      return std::nullopt;
    }
    if (extend()) return order_;
    return std::nullopt;
  }
  bool usable(int i, int j) const {
    for (const Ways::Way& way : w_.between(i, j))
      if (w_.left(way.route) >= threshold_) return true;
    return false;
  }
  // The unvisited members v has a usable way to, counted up to kWarnsdorffCap (beyond that the
  // rule's choice is by member order anyway: see extend).
  int onward(int v) const {
    int n = 0;
    int last = -1;
    for (const Ways::Way& way : w_.from(v))
      if (way.to != last && !visited_[way.to] && w_.left(way.route) >= threshold_) {
        if (++n == kWarnsdorffCap) break;
        last = way.to;
      }
    return n;
  }
  bool extend() {
    const int p = w_.size();
    const int u = order_.back();
    if (static_cast<int>(order_.size()) == p) return usable(u, order_[0]);
    if (--budget_ < 0) return false;
    std::vector<std::pair<int, int>> options;  // (onward choices, member)
    int last = -1;
    for (const Ways::Way& way : w_.from(u))
      if (way.to != last && !visited_[way.to] && w_.left(way.route) >= threshold_) {
        const bool counted = static_cast<int>(options.size()) < kWarnsdorffCap;
        options.emplace_back(counted ? onward(way.to) : kWarnsdorffCap, way.to);
        last = way.to;
      }
    std::sort(options.begin(), options.end());
    for (auto [n, v] : options) {
      if (n == 0 && static_cast<int>(order_.size()) + 1 < p) continue;  // a dead end
      const Ways::Way* way = w_.best(u, v);
      w_.take(way->route, threshold_);
      visited_[v] = 1;
      order_.push_back(v);
      if (extend()) {
        w_.take(way->route, -threshold_);  // leave the capacities as they were
        return true;
      }
      order_.pop_back();
      visited_[v] = 0;
      w_.take(way->route, -threshold_);
      if (budget_ < 0) return false;
    }
    return false;
  }

  // Warnsdorff's rule counts the onward choices of the first kWarnsdorffCap members a step can go
  // to, up to as many; the others rank as having that many. Below it (a ring, torus, mesh, a switch
  // of up to 65 NPUs) the rule is exact; above it (every member of a large switch reaches every
  // other) every choice has plenty, and counting them all made a step cost members^2. Every
  // choice is still tried, so no cycle is lost.
  static constexpr int kWarnsdorffCap = 64;
  Ways& w_;
  std::vector<char> visited_;
  std::vector<int> order_;
  int64_t budget_ = 0;
  Bandwidth threshold_ = 0;
};

// Channel c of servers joined by a network: it enters server s at GPU y[s - 1] and leaves it from
// GPU y[s] (positions within the servers), y chosen so that every channel leaves each server from
// another GPU (its own NIC / rail) and consecutive servers differ.
std::optional<std::vector<int>> server_ring(const Ways& w,
                                            const std::vector<std::vector<NodeId>>& servers,
                                            int c) {
  const int count = static_cast<int>(servers.size()), g = static_cast<int>(servers[0].size());
  if (g < 2 || (count % 2 == 1 && g < 3)) return std::nullopt;
  std::vector<int> y(count);
  for (int s = 0; s < count; ++s) y[s] = (c + s % 2) % g;
  if (count % 2 == 1) y[count - 1] = (c + 2) % g;
  std::vector<int> order;
  for (int s = 0; s < count; ++s) {
    const int entry = y[(s + count - 1) % count], exit = y[s];
    order.push_back(w.index(servers[s][entry]));
    for (int k = 1; k < g; ++k) {
      const int at = (entry + k) % g;
      if (at != exit) order.push_back(w.index(servers[s][at]));
    }
    order.push_back(w.index(servers[s][exit]));
  }
  return order;
}

}  // namespace

namespace {
Bandwidth total_rate(const std::vector<RingChannel>& rings) {
  Bandwidth sum = 0;
  for (const RingChannel& r : rings) sum += r.rate;
  return sum;
}
}  // namespace

struct RingWays::Impl {
  const topo::Topology& t;
  std::vector<NodeId> members;
  std::optional<Ways> ways;     // from the first search
  bool every_way;               // RingWays' `every_way`
  bool around_servers = false;  // `ways` holds only the ways round servers (server_ring's)
  bool cycles = false;          // no ring goes round the servers: the cycle search, every way
};

RingWays::RingWays(const topo::Topology& t, std::vector<NodeId> members, bool every_way)
    : impl_(std::make_unique<Impl>(Impl{t, std::move(members), std::nullopt, every_way})) {}
RingWays::~RingWays() = default;

std::vector<RingChannel> find_ring_channels(const topo::Topology& t,
                                            const std::vector<NodeId>& members, int wanted,
                                            bool both_ways) {
  RingWays ways(t, members);
  return find_ring_channels(wanted, both_ways,
                            [&](bool b) { return search_ring_channels(ways, wanted, b); });
}

std::vector<RingChannel> find_ring_channels(
    int wanted, bool both_ways, const std::function<std::vector<RingChannel>(bool)>& search) {
  std::vector<RingChannel> rings = search(both_ways);
  if (!both_ways && wanted == 0) {
    // A ring and its reverse are rings too: keep whichever search fed more bandwidth.
    std::vector<RingChannel> paired = search(true);
    if (total_rate(paired) > total_rate(rings)) rings = std::move(paired);
  }
  return rings;
}

std::vector<RingChannel> search_ring_channels(RingWays& ways, int wanted, bool both_ways) {
  const topo::Topology& t = ways.impl_->t;
  const std::vector<NodeId>& members = ways.impl_->members;
  const int p = static_cast<int>(members.size());
  if (p < 2 || p > kMaxSearchedNpus) return {};
  // Servers, when the members are exactly the NPUs of whole servers. Rings round them take the
  // ways inside each server and into the next one (server_ring), and only those are routed (every
  // pair's of a 1024-NPU cluster, up to 8 routes each, was 2 s of route walks); where no ring goes
  // round them, the cycle search takes every way.
  std::vector<std::vector<NodeId>> servers;
  if (!ways.impl_->cycles) servers = topo::servers_of(t, members);
  const bool around = !servers.empty() && !ways.impl_->every_way;
  if (ways.impl_->ways && ways.impl_->around_servers == around) {
    ways.impl_->ways->refill();
  } else {
    ways.impl_->ways.emplace(t, members, around ? &servers : nullptr);
    ways.impl_->around_servers = around;
  }
  Ways& w = *ways.impl_->ways;
  const int limit = wanted > 0 ? std::min(wanted, kMaxChannels) : kMaxChannels;
  std::vector<RingChannel> rings;
  CycleSearch search(w);
  Bandwidth first = 0;
  auto add = [&](RingChannel ring) {
    for (const auto& r : ring.routes) w.take(r, ring.rate);
    rings.push_back(std::move(ring));
  };
  // Both ways round, a server ring and its reverse leave every server from GPUs c and c + 1: the
  // next pair starts at c + 2.
  const int step = both_ways ? 2 : 1;
  for (int c = 0; static_cast<int>(rings.size()) < limit; c += step) {
    std::optional<RingChannel> ring;
    if (!servers.empty()) {
      if (c >= static_cast<int>(servers[0].size())) break;
      if (auto order = server_ring(w, servers, c)) ring = ring_through(w, *order);
      if (!ring && c == 0) {  // no such ring: search instead, over every way
        ways.impl_->cycles = true;
        return search_ring_channels(ways, wanted, both_ways);
      }
    }
    if (servers.empty()) ring = search.widest();
    if (!servers.empty() && ring && ring->rate <= 0) continue;  // its NICs are taken: the next one
    if (!ring || ring->rate <= 0) break;
    if (first == 0) first = ring->rate;
    if (ring->rate * 16 < first) break;
    std::vector<int> reversed;
    if (both_ways)
      for (auto it = ring->order.rbegin(); it != ring->order.rend(); ++it)
        reversed.push_back(w.index(*it));
    add(std::move(*ring));
    if (both_ways && static_cast<int>(rings.size()) < limit)
      if (auto back = ring_through(w, reversed); back && back->rate * 16 >= first)
        add(std::move(*back));
  }
  // More channels wanted than rings fit: repeat the rings, sharing their links at part rate.
  if (wanted > static_cast<int>(rings.size()) && !rings.empty()) {
    const size_t found = rings.size();
    std::vector<int> copies(found, 1);
    for (int k = static_cast<int>(found); k < std::min(wanted, kMaxChannels); ++k)
      ++copies[k % found];
    std::vector<RingChannel> shared;
    for (size_t i = 0; i < found; ++i)
      for (int k = 0; k < copies[i]; ++k) {
        shared.push_back(rings[i]);
        shared.back().rate = rings[i].rate / copies[i];
      }
    rings = std::move(shared);
  }
  return rings;
}

}  // namespace tenet::synth
