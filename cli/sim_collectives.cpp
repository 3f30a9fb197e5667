#include "cli/sim_collectives.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "bench/table.hpp"
#include "topo/units.hpp"

namespace tenet::cli {
namespace {

// "tenet (flow-plan pipelines, k=16)", "ring (k=4)", "ring (k=2, LL)".
std::string algorithm_cell(const sim::CollectiveRow& row) {
  std::string inside = row.method;
  if (row.chunks_per_npu > 0)
    inside += fmt::format("{}k={}", inside.empty() ? "" : ", ", row.chunks_per_npu);
  if (!row.protocol.empty())
    inside += fmt::format("{}{}", inside.empty() ? "" : ", ", row.protocol);
  return inside.empty() ? row.algorithm : fmt::format("{} ({})", row.algorithm, inside);
}

Time per_call(Time total, int calls) { return calls > 0 ? total / calls : 0; }

}  // namespace

void print_collective_rows(const sim::SimResult& r, int shown) {
  const std::vector<sim::CollectiveRow>& rows = r.collective_rows;
  if (rows.empty() || shown == 0) return;
  std::vector<size_t> order(rows.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return rows[a].time > rows[b].time; });
  fmt::print(
      "\ncollectives (per call: the run from its last member's arrival, the wait for its "
      "members, and the part of the run its members' compute was idle)\n");
  bench::Table table({"group", "collective", "size", "calls", "algorithm", "time", "wait",
                      "exposed", "busiest link (busy)"});
  for (size_t i = 0; i < order.size() && i < static_cast<size_t>(shown); ++i) {
    const sim::CollectiveRow& row = rows[order[i]];
    table.add_row(
        {row.groups > 1 ? fmt::format("{} (x{})", row.group, row.groups) : row.group,
         std::string(synth::to_string(row.kind)), format_bytes(row.bytes),
         std::to_string(row.calls), algorithm_cell(row), format_time(per_call(row.time, row.calls)),
         format_time(per_call(row.wait, row.calls)), format_time(per_call(row.exposed, row.calls)),
         row.busiest_link.empty()
             ? "-"
             : fmt::format("{} ({:.0f} %)", row.busiest_link,
                           100.0 * static_cast<double>(row.busiest_busy) /
                               static_cast<double>(std::max<Time>(row.time, 1)))});
  }
  fmt::print("{}", table.markdown());
  if (order.size() > static_cast<size_t>(shown))
    fmt::print("... {} more rows (--json lists every one)\n", order.size() - shown);
  struct Total {
    int calls = 0;
    Time time = 0, exposed = 0;
  };
  std::map<std::string, Total> totals;
  for (const sim::CollectiveRow& row : rows) {
    Total& t = totals[row.group];
    t.calls += row.calls;
    t.time += row.time;
    t.exposed += row.exposed;
  }
  std::vector<std::string> parts;
  for (const auto& [group, t] : totals)
    parts.push_back(fmt::format("{} {} calls, {} running, {} exposed", group, t.calls,
                                format_time(t.time), format_time(t.exposed)));
  // Point-to-point messages (pipeline stages' boundaries): their receivers' waits.
  for (const sim::MessageRow& m : r.message_rows)
    parts.push_back(fmt::format("{} {} messages of {} in all, {} waited for, {} exposed", m.group,
                                m.messages, format_bytes(m.bytes), format_time(m.wait),
                                format_time(m.exposed)));
  fmt::print("per group       {}\n", fmt::join(parts, "; "));
}

nlohmann::ordered_json collective_rows_json(const sim::SimResult& r) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const sim::CollectiveRow& row : r.collective_rows)
    out.push_back({{"group", row.group},
                   {"groups", row.groups},
                   {"collective", synth::to_string(row.kind)},
                   {"bytes", row.bytes},
                   {"algorithm", row.algorithm},
                   {"method", row.method},
                   {"chunks_per_npu", row.chunks_per_npu},
                   {"protocol", row.protocol},
                   {"calls", row.calls},
                   {"time_ps", row.time},
                   {"wait_ps", row.wait},
                   {"exposed_ps", row.exposed},
                   {"busiest_link", row.busiest_link},
                   {"busiest_link_busy_ps", row.busiest_busy}});
  return out;
}

nlohmann::ordered_json message_rows_json(const sim::SimResult& r) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const sim::MessageRow& m : r.message_rows)
    out.push_back({{"group", m.group},
                   {"messages", m.messages},
                   {"bytes", m.bytes},
                   {"wait_ps", m.wait},
                   {"exposed_ps", m.exposed}});
  return out;
}

}  // namespace tenet::cli
