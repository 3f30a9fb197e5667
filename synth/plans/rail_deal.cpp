#include "synth/plans/rail_deal.hpp"

#include <algorithm>
#include <limits>
#include <numeric>
#include <optional>

#include "synth/tuning.hpp"

namespace tenet::synth {

namespace {

// The narrowest link of `plan`'s way from u to v.
Bandwidth narrowest(const topo::Topology& t, const ServerPlan& plan, NodeId u, NodeId v) {
  Bandwidth least = std::numeric_limits<Bandwidth>::max();
  for (LinkId l : plan.ways()[static_cast<size_t>(plan.way_between(u, v))].route)
    least = std::min(least, t.link(l).bandwidth);
  return least;
}

// `seats` shared out in proportion to `weights` by the largest remainder, ties to the lower index.
std::vector<int> largest_remainder(const std::vector<double>& weights, int seats) {
  const double sum = std::accumulate(weights.begin(), weights.end(), 0.0);
  std::vector<int> share(weights.size());
  std::vector<double> rest(weights.size());
  int given = 0;
  for (size_t q = 0; q < weights.size(); ++q) {
    const double exact = seats * weights[q] / sum;
    share[q] = static_cast<int>(exact);
    rest[q] = exact - share[q];
    given += share[q];
  }
  std::vector<size_t> order(weights.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t x, size_t y) { return rest[x] > rest[y]; });
  for (size_t i = 0; given < seats; i = (i + 1) % order.size(), ++given) ++share[order[i]];
  return share;
}

// Each ordered pair of servers' rails: the narrowest link of each position's way. Relayed (server
// a's chunks entering b's pod by e), a's chunks cross into e and every server they enter by e at
// one position: the rails of all those pairs are the narrowest of that position's ways on the
// way (a to e, and e on to the server), so that their shares, and deals, are the same.
std::vector<std::vector<double>> rails_of(const topo::Topology& t, const ServerPlan& plan) {
  const auto& servers = plan.servers();
  const size_t count = servers.size(), per = servers[0].size();
  std::vector<std::vector<double>> rails(count * count);
  const auto entry = [&](size_t a, size_t b) {
    return static_cast<size_t>(plan.entry(static_cast<int>(a), static_cast<int>(b)));
  };
  for (size_t a = 0; a < count; ++a)
    for (size_t b = 0; b < count; ++b)
      if (a != b)
        for (size_t q = 0; q < per; ++q) {
          const size_t e = entry(a, b);
          double bw =
              static_cast<double>(narrowest(t, plan, servers[e == b ? a : e][q], servers[b][q]));
          if (e != b)
            bw =
                std::min(bw, static_cast<double>(narrowest(t, plan, servers[a][q], servers[e][q])));
          rails[a * count + b].push_back(bw);
        }
  for (size_t a = 0; a < count; ++a)
    for (size_t b = 0; b < count; ++b)
      if (const size_t e = entry(a, b); a != b && e != b)
        for (size_t q = 0; q < per; ++q)
          rails[a * count + e][q] = std::min(rails[a * count + e][q], rails[a * count + b][q]);
  for (size_t a = 0; a < count; ++a)
    for (size_t b = 0; b < count; ++b)
      if (const size_t e = entry(a, b); a != b && e != b)
        rails[a * count + b] = rails[a * count + e];
  return rails;
}

bool equal(const std::vector<double>& bw) {
  return std::all_of(bw.begin(), bw.end(), [&](double x) { return x == bw[0]; });
}

// The plan's busiest link, in chunk-times (its load in chunks over its bandwidth), where each
// ordered pair of servers sends the share `shares[a S + b][q]` of a server's chunks across at
// position q (one chunk per NPU, fractions allowed): a rail way carries its share of the G chunks,
// a way inside a server its source's own chunk and the shares that enter the server at its
// source's position.
double busiest(const topo::Topology& t, const ServerPlan& plan,
               const std::vector<std::vector<double>>& shares) {
  const auto& servers = plan.servers();
  const size_t count = servers.size(), per = servers[0].size();
  std::vector<double> link_load(t.num_links(), 0);
  auto carry = [&](NodeId u, NodeId v, double load) {
    for (LinkId l : plan.ways()[static_cast<size_t>(plan.way_between(u, v))].route)
      link_load[l] += load;
  };
  for (size_t a = 0; a < count; ++a)
    for (size_t q = 0; q < per; ++q) {
      double entering = 0;  // chunks entering server a at position q
      for (size_t b = 0; b < count; ++b)
        if (b != a) {
          entering += static_cast<double>(per) * shares[b * count + a][q];
          // (Relayed: a's chunks enter b from the server they entered b's pod by.)
          const auto e = static_cast<size_t>(plan.entry(static_cast<int>(a), static_cast<int>(b)));
          carry(servers[e == b ? a : e][q], servers[b][q],
                static_cast<double>(per) * shares[a * count + b][q]);
        }
      for (size_t i = 0; i < per; ++i)
        if (i != q) carry(servers[a][q], servers[a][i], 1 + entering);
    }
  double most = 0;
  for (LinkId l = 0; l < t.num_links(); ++l)
    most = std::max(most, link_load[l] / static_cast<double>(t.link(l).bandwidth));
  return most;
}

// (Shares in proportion to the rails alone were slower than even ones on random clusters whose fast
// NICs' NPUs then had more to forward over their NVSwitch ports than the ports carry: the deal goes
// only as far towards them as unloads the busiest link, kRailDealSteps.)
// A step must unload the busiest link by more than this (rounding) to leave the even shares.
constexpr double kNoGain = 1e-9;

// How far towards the rails the deal goes and its shares, or nothing where the even shares do as
// well (equal rails, a flat plan).
struct Shares {
  double towards = 0;
  std::vector<std::vector<double>> of_pair;  // per ordered pair of servers a S + b, per position
};
std::optional<Shares> rail_shares(const topo::Topology& t, const ServerPlan& plan) {
  if (plan.flat()) return std::nullopt;
  const auto rails = rails_of(t, plan);
  if (std::all_of(rails.begin(), rails.end(), equal)) return std::nullopt;
  const size_t per = plan.servers()[0].size();
  auto mix = [&](double towards) {
    std::vector<std::vector<double>> shares(rails.size());
    for (size_t pair = 0; pair < rails.size(); ++pair) {
      if (rails[pair].empty()) continue;  // a server to itself
      const double sum = std::accumulate(rails[pair].begin(), rails[pair].end(), 0.0);
      for (double bw : rails[pair])
        shares[pair].push_back((1 - towards) / static_cast<double>(per) + towards * bw / sum);
    }
    // Relayed chunks cross into b at the position they crossed into b's pod at.
    const size_t count = plan.servers().size();
    for (size_t a = 0; a < count; ++a)
      for (size_t b = 0; b < count; ++b)
        if (const auto e =
                static_cast<size_t>(plan.entry(static_cast<int>(a), static_cast<int>(b)));
            a != b && e != b)
          shares[a * count + b] = shares[a * count + e];
    return shares;
  };
  std::optional<Shares> best;
  double least = busiest(t, plan, mix(0)) * (1 - kNoGain);
  for (double towards : kRailDealSteps) {
    auto shares = mix(towards);
    if (const double b = busiest(t, plan, shares); b < least) {
      least = b;
      best = Shares{towards, std::move(shares)};
    }
  }
  return best;
}

}  // namespace

bool even_rails(const topo::Topology& t, const ServerPlan& plan) { return !rail_shares(t, plan); }

RailDeal::RailDeal(const topo::Topology& t, const ServerPlan& plan, int chunks_per_npu)
    : plan_(&plan), k_(chunks_per_npu), servers_(plan.servers().size()) {
  const auto shares = rail_shares(t, plan);
  even_ = !shares;
  if (even_) return;
  towards_ = shares->towards;
  const auto& servers = plan.servers();
  const size_t per = servers[0].size();
  position_.assign(static_cast<size_t>(t.num_npus()) * k_ * servers_, -1);
  for (size_t a = 0; a < servers_; ++a)
    for (size_t b = 0; b < servers_; ++b) {
      if (a == b) continue;
      std::vector<int> room =
          largest_remainder(shares->of_pair[a * servers_ + b], static_cast<int>(per) * k_);
      auto at = [&](NodeId root, int j) -> int& {
        return position_[(static_cast<size_t>(root) * k_ + j) * servers_ + b];
      };
      for (size_t q = 0; q < per; ++q)
        for (int j = 0; j < k_ && room[q] > 0; ++j, --room[q])
          at(servers[a][q], j) = static_cast<int>(q);
      size_t next = 0;
      for (size_t q = 0; q < per; ++q)
        for (int j = 0; j < k_; ++j)
          if (at(servers[a][q], j) < 0) {
            while (room[next] == 0) ++next;
            at(servers[a][q], j) = static_cast<int>(next);
            --room[next];
          }
    }
}

int RailDeal::way(NodeId root, int j, NodeId v) const {
  const ServerPlan& plan = *plan_;
  if (even_) return plan.way(root, v);
  const int a = plan.server_of(root), b = plan.server_of(v);
  if (a == b) return plan.way_between(root, v);
  const auto& servers = plan.servers();
  const auto q = static_cast<size_t>(position(root, j, b));
  const NodeId entry = servers[static_cast<size_t>(b)][q];
  if (v != entry) return plan.way_between(entry, v);
  // (Relayed: from the server the chunk entered b's pod by, at the same position: its shares of
  // that pair's are the same, and so its deal.)
  const int e = plan.entry(a, b);
  return plan.way_between(servers[static_cast<size_t>(e == b ? a : e)][q], entry);
}

std::vector<double> RailDeal::loads() const {
  const ServerPlan& plan = *plan_;
  std::vector<double> load(plan.ways().size(), 0);
  const auto n = static_cast<NodeId>(plan.servers().size() * plan.servers()[0].size());
  for (NodeId root = 0; root < n; ++root)
    for (int j = 0; j < k_; ++j)
      for (NodeId v = 0; v < n; ++v)
        if (v != root) load[static_cast<size_t>(way(root, j, v))] += 1;
  return load;
}

}  // namespace tenet::synth
