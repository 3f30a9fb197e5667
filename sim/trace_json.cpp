#include "sim/trace_json.hpp"

#include <fmt/format.h>

#include <algorithm>
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
    events.push_back({{"name", s.name},
                      {"ph", "X"},
                      {"pid", s.rank},
                      {"tid", tid},
                      {"ts", static_cast<double>(s.start) / 1e6},
                      {"dur", static_cast<double>(s.end - s.start) / 1e6}});
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
  // Per-link activity: one process for the network, a thread per link that carried data.
  const int network_pid = ranks.empty() ? 0 : *ranks.rbegin() + 1;
  bool any = false;
  for (size_t l = 0; l < r.network.links.size(); ++l) {
    const LinkReport& k = r.network.links[l];
    if (k.activity.empty()) continue;
    any = true;
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", network_pid},
                      {"tid", l},
                      {"args", {{"name", k.name}}}});
    for (const Interval& iv : k.activity)
      events.push_back({{"name", iv.share < 1 ? fmt::format("{:.0f} % busy", 100 * iv.share)
                                              : std::string("busy")},
                        {"ph", "X"},
                        {"pid", network_pid},
                        {"tid", l},
                        {"ts", static_cast<double>(iv.start) / 1e6},
                        {"dur", static_cast<double>(iv.end - iv.start) / 1e6}});
  }
  if (any)
    events.push_back({{"name", "process_name"},
                      {"ph", "M"},
                      {"pid", network_pid},
                      {"args", {{"name", "network links"}}}});
  return nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ns"}}.dump() + "\n";
}

}  // namespace tenet::sim
