#include <fmt/format.h>

#include "cli/synth_rows.hpp"
#include "synth/baselines/baselines.hpp"
#include "topo/quoting.hpp"

namespace tenet::cli {

bench::Plotted plot_rows(const std::string& label, const topo::Topology& t,
                         const synth::Collective& c, int chunks, const std::vector<Bytes>& sizes,
                         const std::vector<std::string>& names, const std::vector<SynthRow>& rows,
                         const std::string& dir) {
  bench::Suite suite;
  suite.name = "synth";
  suite.topologies.push_back({label, t,
                              c.ranks.size() == static_cast<size_t>(t.num_npus())
                                  ? std::vector<topo::NodeId>{}
                                  : c.ranks});
  suite.collectives = {c.kind};
  suite.sizes = sizes;
  suite.algorithms = names;
  suite.chunks = {chunks};
  std::vector<bench::Result> results;
  for (const SynthRow& row : rows) {
    bench::Result r;
    r.topology = label;
    r.npus = t.num_npus();
    r.collective = c.kind;
    r.size = row.size;
    r.chunks = chunks;
    r.algorithm = row.name;
    r.build_seconds = row.seconds;
    r.from_cache = row.from_cache;
    if (!row.not_applicable.empty()) {
      r.status = bench::ResultStatus::NotApplicable;
      r.note = row.not_applicable;
    } else if (row.algorithm && row.report) {
      r.status = row.report->correct() ? bench::ResultStatus::Ok : bench::ResultStatus::Incorrect;
      r.chunks_used = row.algorithm->collective.chunks_per_npu;
      r.time = row.report->collective_time;
      r.bound = row.report->bound.total;
      r.busbw = row.algbw() * synth::bus_bandwidth_factor(c.kind, c.num_ranks());
      r.transfers = row.algorithm->size();
    }
    results.push_back(std::move(r));
  }
  return bench::write_plots(suite, results, dir);
}

void say_plotted(const bench::Plotted& plotted, const std::string& plots, std::FILE* to) {
  if (plotted.outcome == bench::Plotted::Outcome::NoGnuplot)
    fmt::print(
        to,
        "gnuplot is not installed (Debian: gnuplot-nox): wrote the plot data and plots.gp only; "
        "render with `cd {} && gnuplot plots.gp`\n",
        topo::shell_quoted(plots, "the plots folder"));
  if (plotted.outcome == bench::Plotted::Outcome::Failed)
    fmt::print(stderr,
               "warning: gnuplot failed on plots.gp (exit {}): the plot data and plots.gp are "
               "written, some SVGs may be missing; `cd {} && gnuplot plots.gp` shows why\n",
               plotted.status, topo::shell_quoted(plots, "the plots folder"));
}

}  // namespace tenet::cli
