// report.md: the synthesizer's speed-ups (a summary, then a table per topology) and the training
// iterations of the suite's workloads.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

#include "bench/harness.hpp"
#include "bench/report_common.hpp"
#include "bench/table.hpp"

namespace tenet::bench {

namespace {

// A topology's table: per case, the lower bound, the synthesizer's time, ratio, busbw and replayed
// times, and its speed-up over every baseline; then the geometric mean per baseline.
std::string topology_markdown(const Suite& suite, const std::vector<Result>& results,
                              const SpeedUps& su, const SuiteTopology& topo) {
  std::vector<std::string> header{"collective", "size",          "chunks/NPU",  "lower bound",
                                  "tenet",      "tenet / bound", "tenet busbw", "tenet method"};
  for (sim::NetworkKind n : suite.networks)
    header.push_back(fmt::format("sim {}", sim::to_string(n)));
  for (const std::string& b : su.baselines) header.push_back(b);
  Table t(header);
  std::map<std::string, std::map<std::string, const Result*>> by_case;
  std::vector<std::string> order;
  for (const Result& r : results) {
    if (r.topology != topo.label) continue;
    const std::string k = case_key(r);
    if (!by_case.count(k)) order.push_back(k);
    by_case[k][r.algorithm] = &r;
  }
  for (const std::string& k : order) {
    const auto& algs = by_case[k];
    const Result& any = *algs.begin()->second;
    auto it = algs.find("tenet");
    const Result* tenet = it != algs.end() && it->second->ok() ? it->second : nullptr;
    std::vector<std::string> row{
        std::string(synth::to_string(any.collective)),
        format_bytes(any.size),
        any.chunks_label(),
        tenet ? format_time(tenet->bound) : "",
        tenet ? format_time(tenet->time)
              : (it != algs.end() ? std::string(to_string(it->second->status)) : "-"),
        tenet ? fmt::format("{:.3f}", tenet->ratio()) : "",
        tenet ? format_bandwidth(static_cast<Bandwidth>(tenet->busbw)) : "",
        tenet ? tenet->method : ""};
    for (size_t n = 0; n < suite.networks.size(); ++n)
      row.push_back(tenet && n < tenet->simulated.size() ? format_time(tenet->simulated[n]) : "");
    for (const std::string& b : su.baselines) {
      auto bt = algs.find(b);
      if (bt == algs.end() || bt->second->status == ResultStatus::NotApplicable)
        row.push_back("n/a");
      else if (!bt->second->ok())
        row.push_back(std::string(to_string(bt->second->status)));
      else if (!tenet)
        row.push_back(format_time(bt->second->time));
      else
        row.push_back(fmt::format(
            "{:.2f}x", static_cast<double>(bt->second->time) / static_cast<double>(tenet->time)));
    }
    t.add_row(std::move(row));
  }
  std::vector<std::string> mean(header.size() - su.baselines.size(), "");
  mean[0] = "geometric mean";
  for (const std::string& b : su.baselines) {
    const auto m = mean_of(su.per_topology, topo.label, b);
    mean.push_back(m ? fmt::format("{:.2f}x", *m) : "n/a");
  }
  t.add_row(std::move(mean));
  const std::string group =
      topo.ranks.empty() ? ""
                         : fmt::format("; the collectives over a group of {}", topo.ranks.size());
  return fmt::format("## {} ({} NPUs{})\n\n", report_name(topo), topo.topology.num_npus(), group) +
         t.markdown() + "\n";
}

}  // namespace

std::string simulations_markdown(const Suite& suite, const std::vector<SimRun>& runs) {
  if (runs.empty()) return "";
  std::string out =
      "# Training iterations\n\n"
      "Each workload simulated on each topology and network backend, its collectives produced by "
      "each sim-algorithm (tenet where that one does not apply): the iteration time, and beside "
      "each other producer its iteration / tenet's (above 1x: tenet is faster). Exposed: "
      "communication while the compute stream is idle (the maximum over ranks); busiest link: its "
      "busy time over the iteration.\n\n";
  for (const SuiteTopology& topo : suite.topologies)
    for (const SuiteWorkload& w : suite.workloads) {
      const bool has_tenet = std::find(suite.sim_algorithms.begin(), suite.sim_algorithms.end(),
                                       "tenet") != suite.sim_algorithms.end();
      std::vector<std::string> header{"network"};
      for (const std::string& a : suite.sim_algorithms) header.push_back(a);
      if (has_tenet)
        for (const char* h : {"tenet exposed", "tenet busiest link"}) header.push_back(h);
      Table t(header);
      for (sim::NetworkKind n : suite.sim_networks()) {
        std::map<std::string, const SimRun*> by_alg;
        for (const SimRun& r : runs)
          if (r.topology == topo.label && r.workload == w.label && r.network == n)
            by_alg[r.algorithm] = &r;
        const auto it = by_alg.find("tenet");
        const SimRun* tenet = it != by_alg.end() && it->second->ok() && it->second->iteration > 0
                                  ? it->second
                                  : nullptr;
        std::vector<std::string> row{std::string(sim::to_string(n))};
        for (const std::string& a : suite.sim_algorithms) {
          const auto o = by_alg.find(a);
          if (o == by_alg.end() || !o->second->ok())
            row.push_back(o == by_alg.end() ? "-" : std::string(to_string(o->second->status)));
          else if (!tenet || a == "tenet")
            row.push_back(format_time(o->second->iteration));
          else
            row.push_back(fmt::format(
                "{} ({:.2f}x)", format_time(o->second->iteration),
                static_cast<double>(o->second->iteration) / static_cast<double>(tenet->iteration)));
        }
        if (has_tenet) {
          row.push_back(tenet ? format_time(tenet->exposed) : "");
          row.push_back(tenet ? fmt::format("{:.1f} %", 100 * tenet->max_link_utilization) : "");
        }
        t.add_row(std::move(row));
      }
      out += fmt::format("## {} on {} ({} NPUs)\n\n", w.label, report_name(topo),
                         topo.topology.num_npus()) +
             t.markdown() + "\n";
    }
  std::vector<std::string> failures;
  for (const SimRun& r : runs)
    if (!r.ok())
      failures.push_back(fmt::format("- {} on {} ({} network, {}): {}: {}", r.workload, r.topology,
                                     sim::to_string(r.network), r.algorithm, to_string(r.status),
                                     r.note));
  if (!failures.empty())
    out += "## Simulations that did not run\n\n" + fmt::format("{}\n", fmt::join(failures, "\n"));
  return out;
}

std::string summary_markdown(const Suite& suite, const std::vector<Result>& results) {
  const SpeedUps su = speed_ups(suite, results);
  std::vector<std::string> header{"topology"};
  for (const std::string& b : su.baselines) header.push_back("vs " + b);
  Table t(header);
  for (const SuiteTopology& topo : suite.topologies) {
    std::vector<std::string> row{report_name(topo)};
    for (const std::string& b : su.baselines) {
      const auto mean = mean_of(su.per_topology, topo.label, b);
      row.push_back(mean ? fmt::format("{:.2f}x", *mean) : "n/a");
    }
    t.add_row(std::move(row));
  }
  return t.markdown();
}

std::string report_markdown(const Suite& suite, const std::vector<Result>& results) {
  const SpeedUps su = speed_ups(suite, results);
  std::string out = fmt::format("# Tenet benchmark: {}\n\n", suite.name);
  out +=
      "Times under the pipelined link cost model. Speed-up = the baseline's time / the "
      "synthesizer's (above 1: tenet is faster); n/a = the baseline does not apply. busbw is "
      "nccl-tests' bus bandwidth (algbw times 2(p-1)/p for All-Reduce, (p-1)/p for All-Gather, "
      "Reduce-Scatter and All-to-All).";
  if (!suite.networks.empty())
    out +=
        " `sim <network>` columns: the synthesizer's algorithm replayed on that simulator backend.";
  out += " Every algorithm was verified.\n\n";
  out += "## Summary: the synthesizer's geometric-mean speed-up\n\n" +
         summary_markdown(suite, results) + "\n";
  std::vector<std::string> failures;
  for (const Result& r : results)
    if (r.status == ResultStatus::Incorrect || r.status == ResultStatus::Error)
      failures.push_back(fmt::format("- **{}** {} on {}: {}: {}",
                                     r.status == ResultStatus::Incorrect ? "INCORRECT" : "ERROR",
                                     r.algorithm, case_key(r), to_string(r.status), r.note));
  if (!failures.empty())
    out += "## Failures\n\n" + fmt::format("{}\n\n", fmt::join(failures, "\n"));
  for (const SuiteTopology& topo : suite.topologies)
    out += topology_markdown(suite, results, su, topo);
  return out;
}

}  // namespace tenet::bench
