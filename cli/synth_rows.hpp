// The rows `tenet synth` builds (one algorithm for one size each), and a sweep's or comparison's
// rows drawn as `tenet bench` draws a suite.
#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "bench/harness.hpp"
#include "synth/bounds/lower_bound.hpp"
#include "synth/synthesizer.hpp"
#include "synth/verify/verify.hpp"
#include "topo/topology.hpp"

namespace tenet::cli {

// One algorithm built for one size: a row of the comparison table or of a size sweep.
struct SynthRow {
  std::string name;
  Bytes size = 0;
  std::optional<synth::Algorithm> algorithm;
  std::optional<synth::Report> report;
  // An All-Reduce's halves in turn (synth::halves_in_turn_bound), where their bandwidth terms are
  // above the lower bound's.
  std::optional<synth::HalvesInTurn> halves;
  // The synthesizer's baselines left out for the collective's size (tenet at --method auto).
  std::vector<synth::BaselineLeftOut> left_out;
  std::string not_applicable;
  std::vector<synth::ChunkingResult::Try> tried;  // -k auto: chunks per NPU tried, and their times
  std::string target_note;  // --target msccl: what was picked, and what the runtime cannot hold
  double seconds = 0;
  bool from_cache = false;     // read from the algorithm cache (verified), not made
  bool stopped_early = false;  // a search stopped at --time-limit or an interruption

  double algbw() const {  // bytes per second
    return static_cast<double>(size) /
           (static_cast<double>(report->collective_time) / kPicosPerSecond);
  }
};

// The rows of `c` on `t` (`label`: the topology as the user named it; `chunks`: per NPU, 0 for
// -k auto) as the bench harness's suite and results, drawn into `dir`/plots (bench/plots.hpp):
// time and bus bandwidth over size per algorithm, tenet's speed-up over each baseline, percent of
// the lower bound.
bench::Plotted plot_rows(const std::string& label, const topo::Topology& t,
                         const synth::Collective& c, int chunks, const std::vector<Bytes>& sizes,
                         const std::vector<std::string>& names, const std::vector<SynthRow>& rows,
                         const std::string& dir);

// Says what became of plots written to `plots` (a folder): nothing when gnuplot rendered them;
// that gnuplot is missing on `to`, that it failed on stderr.
void say_plotted(const bench::Plotted& plotted, const std::string& plots, std::FILE* to = stdout);

}  // namespace tenet::cli
