#include "synth/plans/rail_deal.hpp"

#include <algorithm>
#include <limits>
#include <numeric>

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

// Each ordered pair of servers' rails: the narrowest link of each position's way.
std::vector<std::vector<double>> rails_of(const topo::Topology& t, const ServerPlan& plan) {
  const auto& servers = plan.servers();
  const size_t count = servers.size(), per = servers[0].size();
  std::vector<std::vector<double>> rails(count * count);
  for (size_t a = 0; a < count; ++a)
    for (size_t b = 0; b < count; ++b)
      if (a != b)
        for (size_t q = 0; q < per; ++q)
          rails[a * count + b].push_back(
              static_cast<double>(narrowest(t, plan, servers[a][q], servers[b][q])));
  return rails;
}

bool equal(const std::vector<double>& bw) {
  return std::all_of(bw.begin(), bw.end(), [&](double x) { return x == bw[0]; });
}

}  // namespace

bool even_rails(const topo::Topology& t, const ServerPlan& plan) {
  if (plan.flat()) return true;
  const auto rails = rails_of(t, plan);
  return std::all_of(rails.begin(), rails.end(), equal);
}

RailDeal::RailDeal(const topo::Topology& t, const ServerPlan& plan, int chunks_per_npu)
    : plan_(&plan), k_(chunks_per_npu), servers_(plan.servers().size()) {
  if (plan.flat()) return;
  const auto& servers = plan.servers();
  const size_t per = servers[0].size();
  const auto rails = rails_of(t, plan);
  even_ = std::all_of(rails.begin(), rails.end(), equal);
  if (even_) return;
  position_.assign(static_cast<size_t>(t.num_npus()) * k_ * servers_, -1);
  for (size_t a = 0; a < servers_; ++a)
    for (size_t b = 0; b < servers_; ++b) {
      if (a == b) continue;
      std::vector<int> room =
          largest_remainder(rails[a * servers_ + b], static_cast<int>(per) * k_);
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
  return v == entry ? plan.way_between(servers[static_cast<size_t>(a)][q], entry)
                    : plan.way_between(entry, v);
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
