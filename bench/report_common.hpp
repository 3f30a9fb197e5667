// Internal to bench/: what the harness's writers share (results.csv, the Markdown report, the
// plots, the regressions against an earlier run) and the run itself uses: the keys of cases and
// rows, geometric means, the synthesizer's speed-ups, the algorithms' order, display names and the
// reading of an earlier results.csv.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench/harness.hpp"

namespace tenet::bench {

// The algorithms the suite runs on a collective: its list, "all" expanded, each name once.
std::vector<std::string> algorithms_for(const Suite& s, synth::CollectiveKind kind);

// The key of a row of results.csv: topology, collective, size in bytes, chunks label, algorithm.
std::string row_key(std::string_view topology, std::string_view collective, std::string_view size,
                    std::string_view chunks, std::string_view algorithm);

// A case as people read it: "topology | collective | size | chunks label chunks".
std::string case_key(const Result& r);

double geomean(const std::vector<double>& v);

// Ratios per topology and column (a baseline or an algorithm name).
using Samples = std::map<std::string, std::map<std::string, std::vector<double>>>;

// The geometric mean of a topology's samples in a column; nothing when it has none.
std::optional<double> mean_of(const Samples& samples, const std::string& topology,
                              const std::string& column);

// Every algorithm the suite runs, in a fixed order: tenet, then the baselines as the suite's
// collectives list them. Columns and plot colours follow it, whatever ran first.
std::vector<std::string> algorithm_order(const Suite& s);

// Tenet's speed-up over every baseline, per topology (in suite order) and baseline name.
struct SpeedUps {
  std::vector<std::string> baselines;  // in algorithm_order
  Samples per_topology;
};

SpeedUps speed_ups(const Suite& suite, const std::vector<Result>& results);

// What plots and headings call a topology: its name when the suite gave a file path (not
// "../topologies/leaf-spine.json"), else the label (a spec, a preset, an inline topology's name).
std::string display_name(const SuiteTopology& t);
// How report.md names a topology: its display name, followed by the suite's label in parentheses
// where they differ ("cluster16 (examples/topologies/cluster16.yaml)"), so that every heading
// holds the `topology` column of results.csv and simulations.csv.
std::string report_name(const SuiteTopology& t);

// An earlier results.csv, checked: its header has the columns both readers use, every row its
// width.
struct OldResults {
  std::vector<std::vector<std::string>> rows;  // the header first
  std::map<std::string, size_t> col;
  const std::string& cell(size_t line, const char* column) const {
    return rows[line][col.at(column)];
  }
};

// `old_file` names the file in errors (a missing column, a short row).
OldResults read_old_results(std::string_view old_csv, const std::string& old_file);
// The same for an earlier simulations.csv (its topology, workload, network, algorithm, status and
// iteration_ps columns).
OldResults read_old_simulations(std::string_view old_csv, const std::string& old_file);

}  // namespace tenet::bench
