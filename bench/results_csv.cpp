// results.csv and simulations.csv, and the build times an earlier results.csv measured.
#include <fmt/format.h>

#include <cstdlib>

#include "bench/harness.hpp"
#include "bench/report_common.hpp"
#include "bench/table.hpp"

namespace tenet::bench {

namespace {

const std::vector<std::string> kColumns{
    "topology",  "npus",      "collective", "size_bytes",     "chunks_per_npu", "chunks_used",
    "algorithm", "status",    "time_ps",    "lower_bound_ps", "ratio_to_bound", "busbw_GBps",
    "build_s",   "transfers", "note",       "method",         "protocol"};

}  // namespace

KnownCosts known_costs(std::string_view old_csv, const std::string& old_file) {
  const OldResults old = read_old_results(old_csv, old_file);
  KnownCosts out;
  for (size_t line = 1; line < old.rows.size(); ++line) {
    const std::string& build = old.cell(line, "build_s");
    char* end = nullptr;
    const double seconds = std::strtod(build.c_str(), &end);
    if (build.empty() || *end != '\0') continue;  // not-applicable rows have none
    out[row_key(old.cell(line, "topology"), old.cell(line, "collective"),
                old.cell(line, "size_bytes"), old.cell(line, "chunks_per_npu"),
                old.cell(line, "algorithm"))] = seconds;
  }
  return out;
}

std::string results_csv(const Suite& suite, const std::vector<Result>& results) {
  std::vector<std::string> header = kColumns;
  for (sim::NetworkKind n : suite.networks)
    header.push_back(fmt::format("sim_{}_ps", sim::to_string(n)));
  Table t(header);
  for (const Result& r : results) {
    const bool timed = r.status == ResultStatus::Ok || r.status == ResultStatus::Incorrect;
    std::vector<std::string> row{r.topology,
                                 std::to_string(r.npus),
                                 std::string(synth::to_string(r.collective)),
                                 std::to_string(r.size),
                                 r.chunks_label(),
                                 std::to_string(r.chunks_used),
                                 r.algorithm,
                                 std::string(to_string(r.status)),
                                 timed ? std::to_string(r.time) : "",
                                 timed ? std::to_string(r.bound) : "",
                                 timed ? fmt::format("{:.4f}", r.ratio()) : "",
                                 timed ? fmt::format("{:.3f}", r.busbw / 1e9) : "",
                                 timed ? fmt::format("{:.4f}", r.build_seconds) : "",
                                 timed ? std::to_string(r.transfers) : "",
                                 r.note,
                                 r.method,
                                 r.protocol};
    for (size_t i = 0; i < suite.networks.size(); ++i)
      row.push_back(i < r.simulated.size() ? std::to_string(r.simulated[i]) : "");
    t.add_row(std::move(row));
  }
  return t.csv();
}

std::string simulations_csv(const std::vector<SimRun>& runs) {
  Table t({"topology", "npus", "workload", "network", "algorithm", "status", "iteration_ps",
           "compute_ps", "communication_ps", "exposed_communication_ps", "collectives", "events",
           "max_link_utilization", "sim_s", "note"});
  for (const SimRun& r : runs) {
    auto when_ok = [&](const std::string& v) { return r.ok() ? v : std::string(); };
    t.add_row(
        {r.topology, std::to_string(r.npus), r.workload, std::string(sim::to_string(r.network)),
         r.algorithm, std::string(to_string(r.status)), when_ok(std::to_string(r.iteration)),
         when_ok(std::to_string(r.compute)), when_ok(std::to_string(r.communication)),
         when_ok(std::to_string(r.exposed)), when_ok(std::to_string(r.collectives)),
         when_ok(std::to_string(r.events)), when_ok(fmt::format("{:.4f}", r.max_link_utilization)),
         fmt::format("{:.4f}", r.seconds), r.note});
  }
  return t.csv();
}

std::string simulation_collectives_csv(const std::vector<SimRun>& runs) {
  Table t({"topology", "workload", "network", "algorithm", "group", "groups", "collective",
           "size_bytes", "producer", "method", "chunks_per_npu", "calls", "time_ps", "wait_ps",
           "exposed_ps", "busiest_link", "busiest_link_busy_ps"});
  for (const SimRun& r : runs) {
    const std::string network(sim::to_string(r.network));
    for (const sim::CollectiveRow& c : r.collective_rows)
      t.add_row({r.topology, r.workload, network, r.algorithm, c.group, std::to_string(c.groups),
                 std::string(synth::to_string(c.kind)), std::to_string(c.bytes), c.algorithm,
                 c.method, std::to_string(c.chunks_per_npu), std::to_string(c.calls),
                 std::to_string(c.time), std::to_string(c.wait), std::to_string(c.exposed),
                 c.busiest_link, std::to_string(c.busiest_busy)});
    for (const sim::MessageRow& m : r.message_rows)
      t.add_row({r.topology, r.workload, network, r.algorithm, m.group, "", "point-to-point",
                 std::to_string(m.bytes), "", "", "", std::to_string(m.messages),
                 std::to_string(m.wait), "", std::to_string(m.exposed), "", ""});
  }
  return t.csv();
}

}  // namespace tenet::bench
