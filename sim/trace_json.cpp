#include "sim/trace_json.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>
#include <vector>

namespace tenet::sim {

std::string trace_json(const SimResult& r) {
  nlohmann::json events = nlohmann::json::array();
  // Track ids per rank: 0 compute, 1 CPU, 2 remote memory, 3 + k the k-th communication lane. A
  // slice goes to the first lane free at its start, so slices of one lane never overlap (Perfetto
  // nests by time).
  std::vector<size_t> order(r.trace.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::tie(r.trace[a].rank, r.trace[a].start) <
           std::tie(r.trace[b].rank, r.trace[b].start);
  });
  std::map<int, std::vector<Time>> lanes;  // per rank: when each communication lane is free again
  std::map<int, std::set<int>> tracks;
  for (size_t i : order) {
    const TraceSlice& s = r.trace[i];
    int tid = s.stream == Stream::Compute ? 0 : s.stream == Stream::Cpu ? 1 : 2;
    if (s.stream == Stream::Communication) {
      std::vector<Time>& free_at = lanes[s.rank];
      size_t lane = 0;
      while (lane < free_at.size() && free_at[lane] > s.start) ++lane;
      if (lane == free_at.size()) free_at.push_back(0);
      free_at[lane] = s.end;
      tid = 3 + static_cast<int>(lane);
    }
    tracks[s.rank].insert(tid);
    nlohmann::json e = {{"name", s.name},
                        {"ph", "X"},
                        {"pid", s.rank},
                        {"tid", tid},
                        {"ts", static_cast<double>(s.start) / 1e6},
                        {"dur", static_cast<double>(s.end - s.start) / 1e6}};
    if (s.stream == Stream::Communication) {
      nlohmann::json args = {{"bytes", s.bytes}};
      if (!s.algorithm.empty()) {
        args["group"] = s.group;
        args["algorithm"] = s.algorithm;
        if (!s.method.empty()) args["method"] = s.method;
        args["chunks_per_npu"] = s.chunks_per_npu;
      }
      e["args"] = std::move(args);
    }
    events.push_back(std::move(e));
  }
  std::set<int> ranks;
  for (const auto& [rank, tids] : tracks) {
    ranks.insert(rank);
    events.push_back({{"name", "process_name"},
                      {"ph", "M"},
                      {"pid", rank},
                      {"args", {{"name", fmt::format("rank {}", rank)}}}});
    for (int tid : tids)
      events.push_back({{"name", "thread_name"},
                        {"ph", "M"},
                        {"pid", rank},
                        {"tid", tid},
                        {"args",
                         {{"name", tid == 0   ? std::string("compute")
                                   : tid == 1 ? std::string("CPU")
                                   : tid == 2 ? std::string("remote memory")
                                   : tid == 3 ? std::string("communication")
                                              : fmt::format("communication {}", tid - 2)}}}});
  }
  // Per-link activity: one process for the network, a counter per link that carried data, the
  // share of its bandwidth in use (its intervals summed: they overlap where messages share it, so
  // slices would not nest), sampled where it changes.
  const int network_pid = ranks.empty() ? 0 : *ranks.rbegin() + 1;
  bool any = false;
  std::vector<std::pair<Time, double>> steps;  // (time, change of the share in use)
  for (size_t l = 0; l < r.network.links.size(); ++l) {
    const LinkReport& k = r.network.links[l];
    if (k.activity.empty()) continue;
    any = true;
    steps.clear();
    for (const Interval& iv : k.activity) {
      steps.emplace_back(iv.start, iv.share);
      steps.emplace_back(iv.end, -iv.share);
    }
    std::sort(steps.begin(), steps.end());
    double in_use = 0;
    for (size_t i = 0; i < steps.size();) {
      const Time at = steps[i].first;
      for (; i < steps.size() && steps[i].first == at; ++i) in_use += steps[i].second;
      if (std::abs(in_use) < 1e-9) in_use = 0;  // back to idle, whatever the rounding
      events.push_back({{"name", k.name},
                        {"ph", "C"},
                        {"pid", network_pid},
                        {"ts", static_cast<double>(at) / 1e6},
                        {"args", {{"in use", in_use}}}});
    }
  }
  if (any)
    events.push_back({{"name", "process_name"},
                      {"ph", "M"},
                      {"pid", network_pid},
                      {"args", {{"name", "network links"}}}});
  return nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ns"}}.dump() + "\n";
}

}  // namespace tenet::sim
