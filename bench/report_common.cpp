#include "bench/report_common.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <initializer_list>
#include <set>

#include "bench/table.hpp"
#include "synth/producers.hpp"
#include "topo/error.hpp"
#include "topo/generators.hpp"

namespace tenet::bench {

std::vector<std::string> algorithms_for(const Suite& s, synth::CollectiveKind kind) {
  std::vector<std::string> out;
  for (const std::string& a : s.algorithms)
    for (const std::string& name :
         a == "all" ? synth::algorithm_names(kind) : std::vector<std::string>{a})
      if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  return out;
}

std::string row_key(std::string_view topology, std::string_view collective, std::string_view size,
                    std::string_view chunks, std::string_view algorithm) {
  return fmt::format("{}|{}|{}|{}|{}", topology, collective, size, chunks, algorithm);
}

std::string case_key(const Result& r) {
  return fmt::format("{} | {} | {} | {} chunks", r.topology, synth::to_string(r.collective),
                     format_bytes(r.size), r.chunks_label());
}

double geomean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double s = 0;
  for (double x : v) s += std::log(x);
  return std::exp(s / static_cast<double>(v.size()));
}

std::optional<double> mean_of(const Samples& samples, const std::string& topology,
                              const std::string& column) {
  const auto row = samples.find(topology);
  if (row == samples.end()) return std::nullopt;
  const auto cell = row->second.find(column);
  if (cell == row->second.end() || cell->second.empty()) return std::nullopt;
  return geomean(cell->second);
}

std::vector<std::string> algorithm_order(const Suite& s) {
  std::vector<std::string> out{"tenet"};
  for (synth::CollectiveKind k : s.collectives)
    for (const std::string& a : algorithms_for(s, k))
      if (std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
  return out;
}

SpeedUps speed_ups(const Suite& suite, const std::vector<Result>& results) {
  SpeedUps s;
  std::map<std::string, const Result*> tenet;  // by case
  for (const Result& r : results)
    if (r.algorithm == "tenet" && r.ok()) tenet[case_key(r)] = &r;
  std::set<std::string> seen;
  for (const Result& r : results) {
    if (r.algorithm == "tenet" || !r.ok()) continue;
    seen.insert(r.algorithm);
    auto it = tenet.find(case_key(r));
    if (it == tenet.end() || it->second->time <= 0) continue;
    s.per_topology[r.topology][r.algorithm].push_back(static_cast<double>(r.time) /
                                                      static_cast<double>(it->second->time));
  }
  for (const std::string& a : algorithm_order(suite))
    if (a != "tenet" && seen.count(a)) s.baselines.push_back(a);
  for (const Result& r : results)  // an algorithm the suite does not list (cannot happen today)
    if (seen.count(r.algorithm) &&
        std::find(s.baselines.begin(), s.baselines.end(), r.algorithm) == s.baselines.end())
      s.baselines.push_back(r.algorithm);
  return s;
}

std::string display_name(const SuiteTopology& t) {
  const std::filesystem::path p(t.label);
  const bool path_like = t.label.find('/') != std::string::npos ||
                         (p.has_extension() && !topo::looks_like_spec(t.label));
  return path_like ? t.topology.name() : t.label;
}

std::string report_name(const SuiteTopology& t) {
  const std::string shown = display_name(t);
  return shown == t.label ? t.label : fmt::format("{} ({})", shown, t.label);
}

namespace {

// `old_csv` with every row as long as its header, which holds `columns` (a tenet bench `what`).
OldResults read_old_csv(std::string_view old_csv, const std::string& old_file,
                        std::initializer_list<const char*> columns, std::string_view what) {
  OldResults old{parse_csv(old_csv), {}};
  if (old.rows.empty())
    throw Error(fmt::format("empty {} file", what.substr(0, what.find('.'))), Location(old_file));
  const std::vector<std::string>& header = old.rows.front();
  for (size_t i = 0; i < header.size(); ++i) old.col[header[i]] = i;
  for (const char* c : columns)
    if (!old.col.count(c))
      throw Error(fmt::format("not a tenet bench {}: no '{}' column", what, c),
                  Location(old_file, 1));
  for (size_t line = 1; line < old.rows.size(); ++line)
    if (old.rows[line].size() != header.size())
      throw Error(
          fmt::format("{} cells where the header has {}", old.rows[line].size(), header.size()),
          Location(old_file, static_cast<int>(line + 1)));
  return old;
}

}  // namespace

OldResults read_old_results(std::string_view old_csv, const std::string& old_file) {
  return read_old_csv(old_csv, old_file,
                      {"topology", "collective", "size_bytes", "chunks_per_npu", "algorithm",
                       "status", "time_ps", "build_s"},
                      "results.csv");
}

OldResults read_old_simulations(std::string_view old_csv, const std::string& old_file) {
  return read_old_csv(old_csv, old_file,
                      {"topology", "workload", "network", "algorithm", "status", "iteration_ps"},
                      "simulations.csv");
}

}  // namespace tenet::bench
