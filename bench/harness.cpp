#include "bench/harness.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "bench/table.hpp"
#include "sim/collective_engine.hpp"
#include "synth/producers.hpp"
#include "synth/verify.hpp"
#include "topo/error.hpp"
#include "topo/io.hpp"

namespace tenet::bench {
namespace {

struct Case {
  const SuiteTopology* topology;
  synth::CollectiveKind kind;
  Bytes size;
  int chunks;
};

double seconds_since(std::chrono::steady_clock::time_point begin) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
}

std::vector<std::string> algorithms_for(const Suite& s, synth::CollectiveKind kind) {
  std::vector<std::string> out;
  for (const std::string& a : s.algorithms)
    for (const std::string& name : a == "all" ? synth::algorithm_names(kind) : std::vector<std::string>{a})
      if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  return out;
}

std::vector<Result> run_case(const Suite& s, const Case& c) {
  const topo::Topology& t = c.topology->topology;
  synth::Collective coll = synth::Collective::over_all(t, c.kind, std::max(1, c.chunks));
  const Bytes chunk = coll.chunk_bytes_for(c.size);
  std::vector<Result> out;
  for (const std::string& name : algorithms_for(s, c.kind)) {
    Result r;
    r.topology = c.topology->label;
    r.npus = t.num_npus();
    r.collective = c.kind;
    r.size = c.size;
    r.chunks = c.chunks;
    r.algorithm = name;
    const auto begin = std::chrono::steady_clock::now();
    try {
      synth::SynthOptions o;
      o.restarts = s.restarts;
      o.baselines = false;  // the portfolio is applied below, from the baselines' own rows
      const synth::Algorithm a = c.chunks == 0 ? synth::make_algorithm_auto_chunks(name, t, coll, c.size, o).algorithm
                                               : synth::make_algorithm(name, t, coll, chunk, o);
      r.chunks_used = a.collective.chunks_per_npu;
      r.build_seconds = seconds_since(begin);
      const synth::Report rep = synth::verify(t, a, {.max_reported = 1});
      r.time = rep.collective_time;
      r.bound = rep.bound.total;
      r.transfers = a.size();
      const double seconds = static_cast<double>(r.time) / static_cast<double>(kPicosPerSecond);
      r.busbw = seconds > 0 ? static_cast<double>(c.size) / seconds * synth::bus_bandwidth_factor(c.kind, coll.num_ranks()) : 0;
      if (rep.correct()) {
        r.status = "ok";
      } else {
        r.status = "incorrect";
        r.note = fmt::format("{} violations; first: {}", rep.violation_count,
                             rep.violations.empty() ? "" : rep.violations.front().message);
      }
      for (sim::NetworkKind n : s.networks) r.simulated.push_back(sim::replay(t, a, n));
    } catch (const synth::NotApplicable& e) {
      r.status = "not-applicable";
      r.note = e.message();
    } catch (const std::exception& e) {
      r.status = "error";
      r.note = e.what();
    }
    out.push_back(std::move(r));
  }
  // As `tenet synth` does (SynthOptions::baselines), the synthesizer's row is the fastest of its own
  // schedule and every baseline's, which this case has built already.
  auto tenet = std::find_if(out.begin(), out.end(), [](const Result& r) { return r.algorithm == "tenet"; });
  if (tenet != out.end() && tenet->ok())
    for (const Result& b : out)
      if (b.algorithm != "tenet" && b.ok() && b.time < tenet->time) {
        const double build = tenet->build_seconds;
        *tenet = b;
        tenet->algorithm = "tenet";
        tenet->note = "baseline " + b.algorithm;
        tenet->build_seconds = build;
      }
  return out;
}

std::string case_key(const Result& r) {
  return fmt::format("{} | {} | {} | {} chunks", r.topology, synth::to_string(r.collective), format_bytes(r.size), r.chunks_label());
}

double geomean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double s = 0;
  for (double x : v) s += std::log(x);
  return std::exp(s / static_cast<double>(v.size()));
}

std::string slug(std::string s) {
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '.') ch = '_';
  return s;
}

// Ratios per topology and column (a baseline or an algorithm name).
using Samples = std::map<std::string, std::map<std::string, std::vector<double>>>;

// The geometric mean of a topology's samples in a column; nothing when it has none.
std::optional<double> mean_of(const Samples& samples, const std::string& topology, const std::string& column) {
  const auto row = samples.find(topology);
  if (row == samples.end()) return std::nullopt;
  const auto cell = row->second.find(column);
  if (cell == row->second.end() || cell->second.empty()) return std::nullopt;
  return geomean(cell->second);
}

// Tenet's speed-up over every baseline, per topology (in suite order) and baseline name.
struct SpeedUps {
  std::vector<std::string> baselines;  // in first-seen order
  Samples per_topology;
};

SpeedUps speed_ups(const std::vector<Result>& results) {
  SpeedUps s;
  std::map<std::string, const Result*> tenet;  // by case
  for (const Result& r : results)
    if (r.algorithm == "tenet" && r.ok()) tenet[case_key(r)] = &r;
  for (const Result& r : results) {
    if (r.algorithm == "tenet" || !r.ok()) continue;
    if (std::find(s.baselines.begin(), s.baselines.end(), r.algorithm) == s.baselines.end())
      s.baselines.push_back(r.algorithm);
    auto it = tenet.find(case_key(r));
    if (it == tenet.end() || it->second->time <= 0) continue;
    s.per_topology[r.topology][r.algorithm].push_back(static_cast<double>(r.time) / static_cast<double>(it->second->time));
  }
  return s;
}

// Minimal RFC 4180 reader for results.csv (quoted cells, doubled quotes).
std::vector<std::vector<std::string>> read_csv(std::string_view text) {
  std::vector<std::vector<std::string>> rows(1);
  std::string cell;
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (quoted) {
      if (ch == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        cell += '"';
        ++i;
      } else if (ch == '"') {
        quoted = false;
      } else {
        cell += ch;
      }
    } else if (ch == '"') {
      quoted = true;
    } else if (ch == ',') {
      rows.back().push_back(std::move(cell));
      cell.clear();
    } else if (ch == '\n') {
      rows.back().push_back(std::move(cell));
      cell.clear();
      rows.emplace_back();
    } else if (ch != '\r') {
      cell += ch;
    }
  }
  if (!cell.empty() || !rows.back().empty()) rows.back().push_back(std::move(cell));
  if (rows.back().empty()) rows.pop_back();
  return rows;
}

const std::vector<std::string> kColumns{"topology", "npus", "collective", "size_bytes", "chunks_per_npu", "chunks_used", "algorithm",
                                        "status", "time_ps", "lower_bound_ps", "ratio_to_bound", "busbw_GBps",
                                        "build_s", "transfers", "note"};

// A clustered bar chart: a group per topology, a bar per column, each the geometric mean of
// its values; writes <name>.dat and appends the plot to the gnuplot script `gp`.
void bar_chart(const Suite& suite, const std::filesystem::path& plots, std::string& gp, const std::string& name,
               const std::string& title, const std::string& ylabel, const std::string& yrange,
               const std::vector<std::string>& columns,
               const Samples& values) {
  if (columns.empty()) return;
  std::string data = "topology";
  for (const std::string& c : columns) data += fmt::format(" \"{}\"", c);
  data += "\n";
  for (const SuiteTopology& topo : suite.topologies) {
    data += fmt::format("\"{}\"", topo.label);
    for (const std::string& c : columns) {
      const auto mean = mean_of(values, topo.label, c);
      data += mean ? fmt::format(" {:.4f}", *mean) : " ?";
    }
    data += "\n";
  }
  topo::write_file_atomically((plots / (name + ".dat")).string(), data);
  gp += fmt::format(
      "\nset output '{0}.svg'\nset title '{1}' noenhanced\nset style data histograms\n"
      "set style histogram clustered gap 1\nset style fill solid 0.8 border -1\nset xtics rotate by -30 noenhanced\n"
      "set xlabel ''\nset ylabel '{2}'\nset yrange {3}\nset key outside right noenhanced\n"
      "plot for [i=2:{4}] '{0}.dat' using i:xtic(1) title columnheader(i)\n",
      name, title, ylabel, yrange, columns.size() + 1);
}

}  // namespace

std::vector<Result> run_suite(const Suite& suite, const HarnessOptions& options) {
  std::vector<Case> cases;
  for (const SuiteTopology& t : suite.topologies)
    for (synth::CollectiveKind k : suite.collectives)
      for (Bytes size : suite.sizes)
        for (int chunks : suite.chunks) cases.push_back({&t, k, size, chunks});
  std::vector<std::vector<Result>> per_case(cases.size());
  std::atomic<size_t> next{0}, done{0};
  std::mutex progress_mutex;
  std::exception_ptr failure;  // the first exception a case let escape, rethrown after the join
  auto work = [&] {
    for (size_t i = next++; i < cases.size(); i = next++) {
      try {
        per_case[i] = run_case(suite, cases[i]);
      } catch (...) {
        std::lock_guard lock(progress_mutex);
        if (!failure) failure = std::current_exception();
      }
      const size_t finished = ++done;
      if (options.progress) {
        std::lock_guard lock(progress_mutex);
        options.progress(static_cast<double>(finished) / static_cast<double>(cases.size()));
      }
    }
  };
  const int threads = std::max(1, std::min<int>(options.threads > 0 ? options.threads : static_cast<int>(std::thread::hardware_concurrency()),
                                                static_cast<int>(cases.size())));
  std::vector<std::thread> pool;
  for (int i = 1; i < threads; ++i) pool.emplace_back(work);
  work();
  for (std::thread& th : pool) th.join();
  if (failure) std::rethrow_exception(failure);
  std::vector<Result> out;
  for (auto& rs : per_case)
    for (Result& r : rs) out.push_back(std::move(r));
  return out;
}

std::string results_csv(const Suite& suite, const std::vector<Result>& results) {
  std::vector<std::string> header = kColumns;
  for (sim::NetworkKind n : suite.networks) header.push_back(fmt::format("sim_{}_ps", sim::to_string(n)));
  Table t(header);
  for (const Result& r : results) {
    const bool timed = r.status == "ok" || r.status == "incorrect";
    std::vector<std::string> row{r.topology,
                                 std::to_string(r.npus),
                                 std::string(synth::to_string(r.collective)),
                                 std::to_string(r.size),
                                 r.chunks_label(),
                                 std::to_string(r.chunks_used),
                                 r.algorithm,
                                 r.status,
                                 timed ? std::to_string(r.time) : "",
                                 timed ? std::to_string(r.bound) : "",
                                 timed ? fmt::format("{:.4f}", r.ratio()) : "",
                                 timed ? fmt::format("{:.3f}", r.busbw / 1e9) : "",
                                 timed ? fmt::format("{:.4f}", r.build_seconds) : "",
                                 timed ? std::to_string(r.transfers) : "",
                                 r.note};
    for (size_t i = 0; i < suite.networks.size(); ++i)
      row.push_back(i < r.simulated.size() ? std::to_string(r.simulated[i]) : "");
    t.add_row(std::move(row));
  }
  return t.csv();
}

std::string summary_markdown(const Suite& suite, const std::vector<Result>& results) {
  const SpeedUps su = speed_ups(results);
  std::vector<std::string> header{"topology"};
  for (const std::string& b : su.baselines) header.push_back("vs " + b);
  Table t(header);
  for (const SuiteTopology& topo : suite.topologies) {
    std::vector<std::string> row{topo.label};
    for (const std::string& b : su.baselines) {
      const auto mean = mean_of(su.per_topology, topo.label, b);
      row.push_back(mean ? fmt::format("{:.2f}x", *mean) : "n/a");
    }
    t.add_row(std::move(row));
  }
  return t.markdown();
}

std::string report_markdown(const Suite& suite, const std::vector<Result>& results) {
  const SpeedUps su = speed_ups(results);
  std::string out = fmt::format("# Tenet benchmark: {}\n\n", suite.name);
  out += "Times under the pipelined link cost model. Speed-up = the baseline's time / the synthesizer's "
         "(above 1: tenet is faster); n/a = the baseline does not apply. Every algorithm was verified.\n\n";
  out += "## Summary: the synthesizer's geometric-mean speed-up\n\n" + summary_markdown(suite, results) + "\n";
  std::vector<std::string> failures;
  for (const Result& r : results)
    if (r.status == "incorrect" || r.status == "error")
      failures.push_back(fmt::format("- **{}** {} on {}: {}: {}", r.status == "incorrect" ? "INCORRECT" : "ERROR",
                                     r.algorithm, case_key(r), r.status, r.note));
  if (!failures.empty()) out += "## Failures\n\n" + fmt::format("{}\n\n", fmt::join(failures, "\n"));

  for (const SuiteTopology& topo : suite.topologies) {
    std::vector<std::string> header{"collective", "size", "chunks/NPU", "lower bound", "tenet", "tenet / bound"};
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
      std::vector<std::string> row{std::string(synth::to_string(any.collective)), format_bytes(any.size),
                                   any.chunks_label(), tenet ? format_time(tenet->bound) : "",
                                   tenet ? format_time(tenet->time) : (it != algs.end() ? it->second->status : "-"),
                                   tenet ? fmt::format("{:.3f}", tenet->ratio()) : ""};
      for (const std::string& b : su.baselines) {
        auto bt = algs.find(b);
        if (bt == algs.end() || bt->second->status == "not-applicable")
          row.push_back("n/a");
        else if (!bt->second->ok())
          row.push_back(bt->second->status);
        else if (!tenet)
          row.push_back(format_time(bt->second->time));
        else
          row.push_back(fmt::format("{:.2f}x", static_cast<double>(bt->second->time) / static_cast<double>(tenet->time)));
      }
      t.add_row(std::move(row));
    }
    std::vector<std::string> mean{"geometric mean", "", "", "", "", ""};
    for (const std::string& b : su.baselines) {
      const auto m = mean_of(su.per_topology, topo.label, b);
      mean.push_back(m ? fmt::format("{:.2f}x", *m) : "n/a");
    }
    t.add_row(std::move(mean));
    out += fmt::format("## {} ({} NPUs)\n\n", topo.label, topo.topology.num_npus()) + t.markdown() + "\n";
  }
  return out;
}

bool write_plots(const Suite& suite, const std::vector<Result>& results, const std::string& dir) {
  const std::filesystem::path plots = std::filesystem::path(dir) / "plots";
  std::filesystem::create_directories(plots);
  std::string gp =
      "# Renders the benchmark's plots: gnuplot plots.gp (in this folder).\n"
      "set terminal svg size 900,520 dynamic enhanced font 'sans,11' background rgb 'white'\n"
      "set datafile missing '?'\n"
      "set grid\n";
  // Time versus size, one line per algorithm, for each topology and collective.
  for (const SuiteTopology& topo : suite.topologies)
    for (synth::CollectiveKind k : suite.collectives) {
      std::vector<std::string> algs;
      std::map<Bytes, std::map<std::string, double>> points;
      for (const Result& r : results) {
        if (r.topology != topo.label || r.collective != k || !r.ok() || r.chunks != suite.chunks.front()) continue;
        if (std::find(algs.begin(), algs.end(), r.algorithm) == algs.end()) algs.push_back(r.algorithm);
        points[r.size][r.algorithm] = static_cast<double>(r.time) / 1e6;  // us
      }
      if (algs.empty()) continue;
      const std::string name = slug(topo.label) + "-" + std::string(synth::to_string(k));
      std::string data = "size_bytes";
      for (const std::string& a : algs) data += fmt::format(" \"{}\"", a);
      data += "\n";
      for (const auto& [size, by_alg] : points) {
        data += std::to_string(size);
        for (const std::string& a : algs) data += by_alg.count(a) ? fmt::format(" {:.6g}", by_alg.at(a)) : " ?";
        data += "\n";
      }
      topo::write_file_atomically((plots / (name + ".dat")).string(), data);
      gp += fmt::format(
          "\nset output 'time-{0}.svg'\nset title \"{1}: {2} ({3} chunks per NPU)\" noenhanced\n"
          "set logscale xy\nset xlabel 'size (bytes)'\nset ylabel 'collective time (us)'\nset key left top noenhanced\n"
          "plot for [i=2:{4}] '{0}.dat' using 1:i with linespoints title columnheader(i)\nunset logscale\n",
          name, topo.label, synth::to_string(k), suite.chunks.front() == 0 ? std::string("auto") : std::to_string(suite.chunks.front()),
          algs.size() + 1);
    }
  // Speed-up bars: the geometric mean per topology and baseline.
  const SpeedUps su = speed_ups(results);
  bar_chart(suite, plots, gp, "speedup", "Synthesized vs baselines: geometric-mean speed-up", "speed-up of tenet (x)",
            "[0:*]", su.baselines, su.per_topology);
  // Percent of the lower bound each algorithm reaches (geometric mean over a topology's cases).
  std::vector<std::string> algs;
  Samples pct;
  for (const Result& r : results) {
    if (!r.ok() || r.time <= 0) continue;
    if (std::find(algs.begin(), algs.end(), r.algorithm) == algs.end()) algs.push_back(r.algorithm);
    pct[r.topology][r.algorithm].push_back(100.0 * static_cast<double>(r.bound) / static_cast<double>(r.time));
  }
  bar_chart(suite, plots, gp, "bound", "Percent of the lower bound reached (geometric mean; 100 = optimal)",
            "lower bound / time (%)", "[0:105]", algs, pct);
  topo::write_file_atomically((plots / "plots.gp").string(), gp);
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) return false;
  std::string escaped;
  for (char ch : plots.string()) escaped += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return std::system(fmt::format("cd '{}' && gnuplot plots.gp 2>/dev/null", escaped).c_str()) == 0;
}

std::vector<std::string> regressions(std::string_view old_csv, const std::string& old_file,
                                     const std::vector<Result>& results, double speed_tolerance) {
  const auto rows = read_csv(old_csv);
  if (rows.empty()) throw Error("empty results file", Location(old_file));
  const std::vector<std::string>& header = rows.front();
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < header.size(); ++i) col[header[i]] = i;
  for (const char* c : {"topology", "collective", "size_bytes", "chunks_per_npu", "algorithm", "status", "time_ps", "build_s"})
    if (!col.count(c))
      throw Error(fmt::format("not a tenet bench results.csv: no '{}' column", c), Location(old_file, 1));
  std::map<std::string, const Result*> now;
  auto key = [](std::string_view topology, std::string_view coll, std::string_view size, std::string_view chunks,
                std::string_view alg) { return fmt::format("{}|{}|{}|{}|{}", topology, coll, size, chunks, alg); };
  for (const Result& r : results)
    now[key(r.topology, synth::to_string(r.collective), std::to_string(r.size), r.chunks_label(), r.algorithm)] = &r;
  std::vector<std::string> out;
  for (size_t line = 1; line < rows.size(); ++line) {
    const auto& row = rows[line];
    if (row.size() != header.size())
      throw Error(fmt::format("{} cells where the header has {}", row.size(), header.size()),
                  Location(old_file, static_cast<int>(line + 1)));
    auto cell = [&](const char* c) -> const std::string& { return row[col.at(c)]; };
    auto it = now.find(key(cell("topology"), cell("collective"), cell("size_bytes"), cell("chunks_per_npu"), cell("algorithm")));
    if (it == now.end()) continue;  // not in this run's suite
    const Result& r = *it->second;
    const std::string what = fmt::format("{} on {}", r.algorithm, case_key(r));
    const std::string& old_status = cell("status");
    if (old_status == "ok" && !r.ok()) {
      out.push_back(fmt::format("{}: was ok, now {} ({})", what, r.status, r.note));
      continue;
    }
    if (old_status != "ok" || !r.ok()) continue;
    try {
      const Time old_time = std::stoll(cell("time_ps"));
      if (r.time > old_time)
        out.push_back(fmt::format("{}: slower collective: {} -> {} (+{:.2f}%)", what, format_time(old_time),
                                  format_time(r.time), 100.0 * static_cast<double>(r.time - old_time) / static_cast<double>(old_time)));
      const double old_build = std::stod(cell("build_s"));
      if (r.build_seconds > old_build * (1 + speed_tolerance) && r.build_seconds > old_build + 0.05)
        out.push_back(fmt::format("{}: slower to build: {:.3f} s -> {:.3f} s", what, old_build, r.build_seconds));
    } catch (const std::logic_error&) {
      throw Error("time_ps and build_s must be numbers", Location(old_file, static_cast<int>(line + 1)));
    }
  }
  return out;
}

}  // namespace tenet::bench
