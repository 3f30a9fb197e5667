#include "bench/harness.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "bench/table.hpp"
#include "chakra/et.hpp"
#include "sim/system.hpp"
#include "sim/workload.hpp"
#include "sim/collective_engine.hpp"
#include "synth/producers.hpp"
#include "synth/verify.hpp"
#include "topo/error.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"

namespace tenet::bench {

// How a row travels from the process that computed it to rank 0 (bench/pool.hpp): every field, as
// JSON (integers exact, doubles round-tripped; enums as their numbers).
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Result, topology, npus, collective, size, chunks, chunks_used, algorithm, status, note,
                                   time, bound, busbw, build_seconds, transfers, simulated)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SimRun, topology, npus, workload, network, algorithm, status, note, iteration, compute,
                                   communication, exposed, collectives, events, max_link_utilization, seconds)

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

Result run_algorithm(const Suite& s, const Case& c, const std::string& name) {
  const topo::Topology& t = c.topology->topology;
  Result r;
  r.topology = c.topology->label;
  r.npus = t.num_npus();
  r.collective = c.kind;
  r.size = c.size;
  r.chunks = c.chunks;
  r.algorithm = name;
  const auto begin = std::chrono::steady_clock::now();
  try {
    synth::Collective coll = synth::Collective::over_all(t, c.kind, std::max(1, c.chunks));
    if (!c.topology->ranks.empty()) coll.ranks = c.topology->ranks;
    synth::SynthOptions o;
    o.restarts = s.restarts;
    o.baselines = false;  // the portfolio is applied by take_fastest, from the baselines' own rows
    const synth::Algorithm a = c.chunks == 0 ? synth::make_algorithm_auto_chunks(name, t, coll, c.size, o).algorithm
                                             : synth::make_algorithm(name, t, coll, coll.chunk_bytes_for(c.size), o);
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
  return r;
}

// As `tenet synth` does (SynthOptions::baselines), the synthesizer's row of a case is the fastest
// of its own schedule and every baseline's, which the case has built already.
void take_fastest(std::vector<Result>& case_rows) {
  auto tenet = std::find_if(case_rows.begin(), case_rows.end(), [](const Result& r) { return r.algorithm == "tenet"; });
  if (tenet == case_rows.end() || !tenet->ok()) return;
  for (const Result& b : case_rows)
    if (b.algorithm != "tenet" && b.ok() && b.time < tenet->time) {
      const double build = tenet->build_seconds;
      *tenet = b;
      tenet->algorithm = "tenet";
      tenet->note = "baseline " + b.algorithm;
      tenet->build_seconds = build;
    }
}

// The key of a row of results.csv: topology, collective, size in bytes, chunks label, algorithm.
std::string row_key(std::string_view topology, std::string_view collective, std::string_view size, std::string_view chunks,
                    std::string_view algorithm) {
  return fmt::format("{}|{}|{}|{}|{}", topology, collective, size, chunks, algorithm);
}

struct SimCase {
  const SuiteTopology* topology;
  const SuiteWorkload* workload;
  sim::NetworkKind network;
  std::string algorithm;
};

SimRun run_simulation(const SimCase& c) {
  const topo::Topology& t = c.topology->topology;
  const SuiteWorkload& w = *c.workload;
  SimRun r;
  r.topology = c.topology->label;
  r.npus = t.num_npus();
  r.workload = w.label;
  r.network = c.network;
  r.algorithm = c.algorithm;
  const auto begin = std::chrono::steady_clock::now();
  try {
    std::vector<chakra::EtFile> workload;
    if (!w.preset.empty()) {
      sim::Parallelism par;
      try {
        par = sim::layout(t.num_npus(), w.tp, w.pp, w.microbatches, w.schedule);
      } catch (const Error& e) {  // the layout does not fit this topology
        r.status = "not-applicable";
        r.note = e.message();
        return r;
      }
      workload = sim::training_iteration(sim::model_preset(w.preset, sim::batch_shape(w.preset, w.shape)), par);
    } else {
      workload = chakra::read_prefix(w.prefix);
      if (static_cast<int64_t>(workload.size()) > t.num_npus()) {
        r.status = "not-applicable";
        r.note = fmt::format("the trace has {} ranks, the topology {} NPUs", workload.size(), t.num_npus());
        return r;
      }
    }
    sim::SimConfig cfg;
    cfg.network = c.network;
    cfg.chunks_per_npu = 0;  // auto, as tenet sim defaults to
    // The producer for every collective the workload runs that it applies to; tenet for the others.
    std::set<synth::CollectiveKind> used;
    for (const chakra::EtFile& f : workload)
      for (const chakra::Node& n : f.nodes)
        if (n.type() == ChakraProtoMsg::COMM_COLL_NODE)
          if (const auto type = chakra::int_attr(n, "comm_type"))
            if (const auto kind = sim::collective_of_comm_type(*type)) used.insert(*kind);
    std::vector<std::string> by_tenet;
    for (synth::CollectiveKind k : used) {
      if (c.algorithm == "tenet") continue;
      const auto names = synth::algorithm_names(k);
      if (std::find(names.begin(), names.end(), c.algorithm) != names.end())
        cfg.algorithms[k] = c.algorithm;
      else
        by_tenet.emplace_back(synth::to_string(k));
    }
    const sim::SimResult res = sim::simulate(t, workload, cfg, w.label);
    r.status = "ok";
    r.iteration = res.iteration;
    for (const sim::RankStats& s : res.ranks) {
      r.compute = std::max(r.compute, s.compute);
      r.communication = std::max(r.communication, s.communication);
      r.exposed = std::max(r.exposed, s.exposed);
    }
    r.collectives = res.collectives;
    r.events = res.events;
    for (Time b : res.link_busy)
      if (res.iteration > 0)
        r.max_link_utilization = std::max(r.max_link_utilization, static_cast<double>(b) / static_cast<double>(res.iteration));
    std::vector<std::string> notes = res.warnings;
    if (!by_tenet.empty())
      notes.insert(notes.begin(), fmt::format("{} by tenet ({} does not apply)", fmt::join(by_tenet, ", "), c.algorithm));
    r.note = fmt::format("{}", fmt::join(notes, "; "));
  } catch (const synth::NotApplicable& e) {  // the producer cannot run one of the workload's collectives here
    r.status = "not-applicable";
    r.note = e.message();
  } catch (const std::exception& e) {
    r.status = "error";
    r.note = e.what();
  }
  r.seconds = seconds_since(begin);
  return r;
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

// A file-name-safe form of `s`; names over 80 characters keep their first 64 and a hash of the
// whole (file systems refuse names over 255 bytes, and plot names add to the topology's).
std::string slug(std::string s) {
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '.') ch = '_';
  if (s.size() > 80) s = fmt::format("{}-{:016x}", s.substr(0, 64), std::hash<std::string>{}(s));
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

// Every algorithm the suite runs, in a fixed order: tenet, then the baselines as the suite's
// collectives list them. Columns and plot colours follow it, whatever ran first.
std::vector<std::string> algorithm_order(const Suite& s) {
  std::vector<std::string> out{"tenet"};
  for (synth::CollectiveKind k : s.collectives)
    for (const std::string& a : algorithms_for(s, k))
      if (std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
  return out;
}

// Tenet's speed-up over every baseline, per topology (in suite order) and baseline name.
struct SpeedUps {
  std::vector<std::string> baselines;  // in algorithm_order
  Samples per_topology;
};

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
    s.per_topology[r.topology][r.algorithm].push_back(static_cast<double>(r.time) / static_cast<double>(it->second->time));
  }
  for (const std::string& a : algorithm_order(suite))
    if (a != "tenet" && seen.count(a)) s.baselines.push_back(a);
  for (const Result& r : results)  // an algorithm the suite does not list (cannot happen today)
    if (seen.count(r.algorithm) && std::find(s.baselines.begin(), s.baselines.end(), r.algorithm) == s.baselines.end())
      s.baselines.push_back(r.algorithm);
  return s;
}

// What plots and headings call a topology: its name when the suite gave a file path (not
// "../topologies/leaf-spine.json"), else the label (a spec, a preset, an inline topology's name).
std::string display_name(const SuiteTopology& t) {
  const std::filesystem::path p(t.label);
  const bool path_like = t.label.find('/') != std::string::npos ||
                         (p.has_extension() && !topo::looks_like_spec(t.label));
  return path_like ? t.topology.name() : t.label;
}

// Each algorithm's colour, the same in every plot (its place in algorithm_order).
class Colours {
 public:
  explicit Colours(const Suite& suite) : order_(algorithm_order(suite)) {}
  const std::vector<std::string>& order() const { return order_; }
  std::string of(const std::string& algorithm) const {
    static constexpr const char* kPalette[] = {"#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
                                               "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939"};
    const auto it = std::find(order_.begin(), order_.end(), algorithm);
    return kPalette[static_cast<size_t>(it - order_.begin()) % std::size(kPalette)];
  }

 private:
  std::vector<std::string> order_;
};

const std::vector<std::string> kColumns{"topology", "npus", "collective", "size_bytes", "chunks_per_npu", "chunks_used", "algorithm",
                                        "status", "time_ps", "lower_bound_ps", "ratio_to_bound", "busbw_GBps",
                                        "build_s", "transfers", "note"};

// A clustered bar chart: a group per topology, a bar per column (coloured as everywhere), each the
// geometric mean of its values; writes <name>.dat and appends the plot to the gnuplot script `gp`.
void bar_chart(const Suite& suite, const Colours& colours, const std::filesystem::path& plots, std::string& gp,
               const std::string& name,
               const std::string& title, const std::string& ylabel, const std::string& yrange,
               const std::vector<std::string>& columns, const Samples& values, const std::string& comment = "") {
  if (columns.empty()) return;
  std::string data = comment.empty() ? "" : "# " + comment + "\n";
  data += "topology";
  for (const std::string& c : columns) data += fmt::format(" \"{}\"", c);
  data += "\n";
  for (const SuiteTopology& topo : suite.topologies) {
    data += fmt::format("\"{}\"", display_name(topo));
    for (const std::string& c : columns) {
      const auto mean = mean_of(values, topo.label, c);
      data += mean ? fmt::format(" {:.4f}", *mean) : " ?";
    }
    data += "\n";
  }
  topo::write_file_atomically((plots / (name + ".dat")).string(), data);
  gp += fmt::format(
      "\nset output '{0}.svg'\nset title \"{1}\" noenhanced\nset style data histograms\n"
      "set style histogram clustered gap 1\nset style fill solid 0.8 border -1\nset xtics rotate by -30 noenhanced\n"
      "set xlabel ''\nset ylabel '{2}'\nset yrange {3}\nset key outside right noenhanced\nplot ",
      name, title, ylabel, yrange);
  for (size_t i = 0; i < columns.size(); ++i)
    gp += fmt::format("{}'{}.dat' using {}:xtic(1) lc rgb '{}' title columnheader({})", i ? ", \\\n     " : "", name,
                      i + 2, colours.of(columns[i]), i + 2);
  gp += "\nset yrange [*:*]\nset xtics norotate autofreq\n";
}

// An earlier results.csv, checked: its header has the columns both readers use, every row its width.
struct OldResults {
  std::vector<std::vector<std::string>> rows;  // the header first
  std::map<std::string, size_t> col;
  const std::string& cell(size_t line, const char* column) const { return rows[line][col.at(column)]; }
};

OldResults read_old_results(std::string_view old_csv, const std::string& old_file) {
  OldResults old{parse_csv(old_csv), {}};
  if (old.rows.empty()) throw Error("empty results file", Location(old_file));
  const std::vector<std::string>& header = old.rows.front();
  for (size_t i = 0; i < header.size(); ++i) old.col[header[i]] = i;
  for (const char* c : {"topology", "collective", "size_bytes", "chunks_per_npu", "algorithm", "status", "time_ps", "build_s"})
    if (!old.col.count(c))
      throw Error(fmt::format("not a tenet bench results.csv: no '{}' column", c), Location(old_file, 1));
  for (size_t line = 1; line < old.rows.size(); ++line)
    if (old.rows[line].size() != header.size())
      throw Error(fmt::format("{} cells where the header has {}", old.rows[line].size(), header.size()),
                  Location(old_file, static_cast<int>(line + 1)));
  return old;
}

}  // namespace

SuiteResults run_suite(const Suite& suite, const HarnessOptions& options) {
  // Items: every algorithm of every case (the unit of work: one case's baselines together can take
  // a minute), then the simulations.
  std::vector<Case> cases;
  for (const SuiteTopology& t : suite.topologies)
    for (synth::CollectiveKind k : suite.collectives)
      for (Bytes size : suite.sizes)
        for (int chunks : suite.chunks) cases.push_back({&t, k, size, chunks});
  struct Item {
    size_t c;
    std::string algorithm;
  };
  std::vector<Item> items;
  for (size_t c = 0; c < cases.size(); ++c)
    for (const std::string& name : algorithms_for(suite, cases[c].kind)) items.push_back({c, name});
  std::vector<SimCase> sims;
  for (const SuiteTopology& t : suite.topologies)
    for (const SuiteWorkload& w : suite.workloads)
      for (sim::NetworkKind n : suite.sim_networks())
        for (const std::string& a : suite.sim_algorithms) sims.push_back({&t, &w, n, a});

  // Each item returns its row as JSON, so that a row computed on another MPI process arrives
  // exactly as computed here.
  auto run = [&](size_t i) -> std::string {
    if (i < items.size()) return nlohmann::json(run_algorithm(suite, cases[items[i].c], items[i].algorithm)).dump();
    return nlohmann::json(run_simulation(sims[i - items.size()])).dump();
  };
  auto describe = [&](size_t i) {
    if (i < items.size()) {
      const Case& c = cases[items[i].c];
      return fmt::format("{} | {} | {} | {} chunks | {}", c.topology->label, synth::to_string(c.kind), format_bytes(c.size),
                         c.chunks == 0 ? "auto" : std::to_string(c.chunks), items[i].algorithm);
    }
    const SimCase& c = sims[i - items.size()];
    return fmt::format("{} | {} | {} network | {}", c.topology->label, c.workload->label, sim::to_string(c.network),
                       c.algorithm);
  };
  // Dealing order, most expensive first: the build seconds an earlier run measured (items it did
  // not have go first), else an estimate (transfers grow with the square of the NPUs and with the
  // chunks; All-to-All's with one more factor of NPUs). Outputs do not depend on it.
  std::vector<double> cost;
  const bool measured = options.costs && !options.costs->empty();
  double most = 0;
  if (measured)
    for (const auto& [key, seconds] : *options.costs) most = std::max(most, seconds);
  for (const Item& item : items) {
    const Case& c = cases[item.c];
    const double n = c.topology->num_ranks();
    if (!measured) {
      cost.push_back(n * n * std::max(c.chunks, 4) * (c.kind == synth::CollectiveKind::AllToAll ? n : 1.0));
      continue;
    }
    const auto it = options.costs->find(row_key(c.topology->label, synth::to_string(c.kind), std::to_string(c.size),
                                                c.chunks == 0 ? "auto" : std::to_string(c.chunks), item.algorithm));
    cost.push_back(it != options.costs->end() ? it->second : most);
  }
  for (const SimCase& c : sims) {
    const double n = c.topology->topology.num_npus();
    cost.push_back(measured ? most : n * n * 64);
  }
  static const Processes alone{Processes::Alone{}};
  const std::vector<std::string> outputs =
      run_items(options.processes ? *options.processes : alone, items.size() + sims.size(), run, describe,
                {.threads = options.threads, .progress = options.progress, .cost = std::move(cost)}, options.stats);
  SuiteResults out;
  if (outputs.empty()) return out;  // another rank's share was run; rank 0 has the rows
  for (size_t i = 0; i < items.size();) {  // a case's rows, then its portfolio
    std::vector<Result> rows;
    for (const size_t c = items[i].c; i < items.size() && items[i].c == c; ++i)
      rows.push_back(nlohmann::json::parse(outputs[i]).get<Result>());
    take_fastest(rows);
    for (Result& r : rows) out.cases.push_back(std::move(r));
  }
  for (size_t i = items.size(); i < outputs.size(); ++i)
    out.simulations.push_back(nlohmann::json::parse(outputs[i]).get<SimRun>());
  return out;
}

KnownCosts known_costs(std::string_view old_csv, const std::string& old_file) {
  const OldResults old = read_old_results(old_csv, old_file);
  KnownCosts out;
  for (size_t line = 1; line < old.rows.size(); ++line) {
    const std::string& build = old.cell(line, "build_s");
    char* end = nullptr;
    const double seconds = std::strtod(build.c_str(), &end);
    if (build.empty() || *end != '\0') continue;  // not-applicable rows have none
    out[row_key(old.cell(line, "topology"), old.cell(line, "collective"), old.cell(line, "size_bytes"),
                old.cell(line, "chunks_per_npu"), old.cell(line, "algorithm"))] = seconds;
  }
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

std::string simulations_csv(const std::vector<SimRun>& runs) {
  Table t({"topology", "npus", "workload", "network", "algorithm", "status", "iteration_ps", "compute_ps",
           "communication_ps", "exposed_communication_ps", "collectives", "events", "max_link_utilization", "sim_s",
           "note"});
  for (const SimRun& r : runs) {
    auto when_ok = [&](const std::string& v) { return r.ok() ? v : std::string(); };
    t.add_row({r.topology, std::to_string(r.npus), r.workload, std::string(sim::to_string(r.network)), r.algorithm,
               r.status, when_ok(std::to_string(r.iteration)), when_ok(std::to_string(r.compute)),
               when_ok(std::to_string(r.communication)), when_ok(std::to_string(r.exposed)),
               when_ok(std::to_string(r.collectives)), when_ok(std::to_string(r.events)),
               when_ok(fmt::format("{:.4f}", r.max_link_utilization)), fmt::format("{:.4f}", r.seconds), r.note});
  }
  return t.csv();
}

std::string simulations_markdown(const Suite& suite, const std::vector<SimRun>& runs) {
  if (runs.empty()) return "";
  std::string out =
      "# Training iterations\n\n"
      "Each workload simulated on each topology and network backend, its collectives produced by each "
      "sim-algorithm (tenet where that one does not apply): the iteration time, and beside each other "
      "producer its iteration / tenet's (above 1x: tenet is faster). Exposed: communication while the compute "
      "stream is idle (the maximum over ranks); busiest link: its busy time over the iteration.\n\n";
  for (const SuiteTopology& topo : suite.topologies)
    for (const SuiteWorkload& w : suite.workloads) {
      const bool has_tenet = std::find(suite.sim_algorithms.begin(), suite.sim_algorithms.end(), "tenet") !=
                             suite.sim_algorithms.end();
      std::vector<std::string> header{"network"};
      for (const std::string& a : suite.sim_algorithms) header.push_back(a);
      if (has_tenet)
        for (const char* h : {"tenet exposed", "tenet busiest link"}) header.push_back(h);
      Table t(header);
      for (sim::NetworkKind n : suite.sim_networks()) {
        std::map<std::string, const SimRun*> by_alg;
        for (const SimRun& r : runs)
          if (r.topology == topo.label && r.workload == w.label && r.network == n) by_alg[r.algorithm] = &r;
        const auto it = by_alg.find("tenet");
        const SimRun* tenet = it != by_alg.end() && it->second->ok() && it->second->iteration > 0 ? it->second : nullptr;
        std::vector<std::string> row{std::string(sim::to_string(n))};
        for (const std::string& a : suite.sim_algorithms) {
          const auto o = by_alg.find(a);
          if (o == by_alg.end() || !o->second->ok())
            row.push_back(o == by_alg.end() ? "-" : o->second->status);
          else if (!tenet || a == "tenet")
            row.push_back(format_time(o->second->iteration));
          else
            row.push_back(fmt::format("{} ({:.2f}x)", format_time(o->second->iteration),
                                      static_cast<double>(o->second->iteration) / static_cast<double>(tenet->iteration)));
        }
        if (has_tenet) {
          row.push_back(tenet ? format_time(tenet->exposed) : "");
          row.push_back(tenet ? fmt::format("{:.1f} %", 100 * tenet->max_link_utilization) : "");
        }
        t.add_row(std::move(row));
      }
      out += fmt::format("## {} on {} ({} NPUs)\n\n", w.label, display_name(topo), topo.topology.num_npus()) +
             t.markdown() + "\n";
    }
  std::vector<std::string> failures;
  for (const SimRun& r : runs)
    if (!r.ok())
      failures.push_back(fmt::format("- {} on {} ({} network, {}): {}: {}", r.workload, r.topology,
                                     sim::to_string(r.network), r.algorithm, r.status, r.note));
  if (!failures.empty()) out += "## Simulations that did not run\n\n" + fmt::format("{}\n", fmt::join(failures, "\n"));
  return out;
}

std::string summary_markdown(const Suite& suite, const std::vector<Result>& results) {
  const SpeedUps su = speed_ups(suite, results);
  std::vector<std::string> header{"topology"};
  for (const std::string& b : su.baselines) header.push_back("vs " + b);
  Table t(header);
  for (const SuiteTopology& topo : suite.topologies) {
    std::vector<std::string> row{display_name(topo)};
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
  out += "Times under the pipelined link cost model. Speed-up = the baseline's time / the synthesizer's "
         "(above 1: tenet is faster); n/a = the baseline does not apply. busbw is nccl-tests' bus bandwidth "
         "(algbw times 2(p-1)/p for All-Reduce, (p-1)/p for All-Gather, Reduce-Scatter and All-to-All).";
  if (!suite.networks.empty())
    out += " `sim <network>` columns: the synthesizer's algorithm replayed on that simulator backend.";
  out += " Every algorithm was verified.\n\n";
  out += "## Summary: the synthesizer's geometric-mean speed-up\n\n" + summary_markdown(suite, results) + "\n";
  std::vector<std::string> failures;
  for (const Result& r : results)
    if (r.status == "incorrect" || r.status == "error")
      failures.push_back(fmt::format("- **{}** {} on {}: {}: {}", r.status == "incorrect" ? "INCORRECT" : "ERROR",
                                     r.algorithm, case_key(r), r.status, r.note));
  if (!failures.empty()) out += "## Failures\n\n" + fmt::format("{}\n\n", fmt::join(failures, "\n"));

  for (const SuiteTopology& topo : suite.topologies) {
    std::vector<std::string> header{"collective", "size", "chunks/NPU", "lower bound", "tenet", "tenet / bound", "tenet busbw"};
    for (sim::NetworkKind n : suite.networks) header.push_back(fmt::format("sim {}", sim::to_string(n)));
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
                                   tenet ? fmt::format("{:.3f}", tenet->ratio()) : "",
                                   tenet ? format_bandwidth(static_cast<Bandwidth>(tenet->busbw)) : ""};
      for (size_t n = 0; n < suite.networks.size(); ++n)
        row.push_back(tenet && n < tenet->simulated.size() ? format_time(tenet->simulated[n]) : "");
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
    std::vector<std::string> mean(header.size() - su.baselines.size(), "");
    mean[0] = "geometric mean";
    for (const std::string& b : su.baselines) {
      const auto m = mean_of(su.per_topology, topo.label, b);
      mean.push_back(m ? fmt::format("{:.2f}x", *m) : "n/a");
    }
    t.add_row(std::move(mean));
    const std::string heading = display_name(topo) == topo.label ? topo.label : fmt::format("{} ({})", display_name(topo), topo.label);
    const std::string group = topo.ranks.empty() ? "" : fmt::format("; the collectives over a group of {}", topo.ranks.size());
    out += fmt::format("## {} ({} NPUs{})\n\n", heading, topo.topology.num_npus(), group) + t.markdown() + "\n";
  }
  return out;
}

namespace {

// gnuplot's x tics at the suite's sizes, written as people write them ("1 MiB", not 1x10^6).
std::string size_tics(const Suite& suite) {
  std::vector<std::string> tics;
  for (Bytes b : suite.sizes) tics.push_back(fmt::format("\"{}\" {}", format_bytes(b), b));
  return fmt::format("set xtics ({})\n", fmt::join(tics, ", "));
}

// One line chart over sizes: column 2 of `name`.dat is the bound (dashed black), then one
// column per algorithm in its colour.
void size_chart(const Suite& suite, const Colours& colours, std::string& gp, const std::string& name,
                const std::string& output,
                const std::string& title, const std::string& ylabel, bool log_y, const std::string& bound_title,
                const std::vector<std::string>& algs) {
  gp += fmt::format("\nset output '{}.svg'\nset title \"{}\" noenhanced\n{}\nset xlabel 'size'\nset ylabel '{}'\n"
                    "set key {} noenhanced\n{}",
                    output, title, log_y ? "set logscale xy" : "set logscale x\nset yrange [0:*]", ylabel,
                    log_y ? "left top" : "right bottom", size_tics(suite));
  gp += fmt::format("plot '{}.dat' using 1:2 with lines dt 2 lw 2 lc rgb '#000000' title '{}'", name, bound_title);
  for (size_t i = 0; i < algs.size(); ++i)
    gp += fmt::format(", \\\n     '{}.dat' using 1:{} with linespoints pt 7 lw 2 lc rgb '{}' title '{}'", name, i + 3,
                      colours.of(algs[i]), algs[i]);
  gp += "\nunset logscale\nset yrange [*:*]\nset xtics autofreq\n";
}

}  // namespace

bool write_plots(const Suite& suite, const std::vector<Result>& results, const std::string& dir) {
  const std::filesystem::path plots = std::filesystem::path(dir) / "plots";
  topo::make_directories(plots.string());
  const Colours colours(suite);
  std::string gp =
      "# Renders the benchmark's plots: gnuplot plots.gp (in this folder).\n"
      "set terminal svg size 900,520 dynamic enhanced font 'sans,11' background rgb 'white'\n"
      "set datafile missing '?'\n"
      "set grid\n";
  // File names from the topologies' display names, made unique.
  std::map<std::string, std::string> file_of;  // label -> slug
  std::set<std::string> used;
  for (const SuiteTopology& topo : suite.topologies) {
    std::string base = slug(display_name(topo)), name = base;
    for (int i = 2; used.count(name); ++i) name = fmt::format("{}-{}", base, i);
    used.insert(name);
    file_of[topo.label] = name;
  }
  // Time and busbw versus size, a line per algorithm and the lower bound, for each topology,
  // collective and chunk count.
  for (const SuiteTopology& topo : suite.topologies)
    for (synth::CollectiveKind k : suite.collectives)
      for (int chunks : suite.chunks) {
        std::vector<std::string> algs;
        std::map<Bytes, std::map<std::string, const Result*>> points;
        std::map<Bytes, Time> bound;
        for (const Result& r : results) {
          if (r.topology != topo.label || r.collective != k || !r.ok() || r.chunks != chunks) continue;
          points[r.size][r.algorithm] = &r;
          if (!bound.count(r.size) || r.algorithm == "tenet") bound[r.size] = r.bound;
        }
        for (const std::string& a : colours.order())
          for (const auto& [size, by_alg] : points)
            if (by_alg.count(a) && std::find(algs.begin(), algs.end(), a) == algs.end()) algs.push_back(a);
        if (algs.empty()) continue;
        const int ranks = topo.num_ranks();
        const double factor = synth::bus_bandwidth_factor(k, ranks);
        const std::string chunk_label = chunks == 0 ? "auto" : std::to_string(chunks);
        const std::string name = fmt::format("{}-{}-k{}", file_of[topo.label], synth::to_string(k), chunk_label);
        std::string time_data = "size_bytes \"lower bound\"", busbw_data = "size_bytes \"bound\"";
        for (const std::string& a : algs) {
          time_data += fmt::format(" \"{}\"", a);
          busbw_data += fmt::format(" \"{}\"", a);
        }
        time_data += "\n";
        busbw_data += "\n";
        for (const auto& [size, by_alg] : points) {
          const double bound_s = static_cast<double>(bound[size]) / static_cast<double>(kPicosPerSecond);
          time_data += fmt::format("{} {:.6g}", size, static_cast<double>(bound[size]) / 1e6);
          busbw_data += fmt::format("{} {:.6g}", size, bound_s > 0 ? static_cast<double>(size) / bound_s * factor / 1e9 : 0.0);
          for (const std::string& a : algs) {
            auto it = by_alg.find(a);
            time_data += it != by_alg.end() ? fmt::format(" {:.6g}", static_cast<double>(it->second->time) / 1e6) : " ?";
            busbw_data += it != by_alg.end() ? fmt::format(" {:.6g}", it->second->busbw / 1e9) : " ?";
          }
          time_data += "\n";
          busbw_data += "\n";
        }
        topo::write_file_atomically((plots / (name + ".dat")).string(), time_data);
        topo::write_file_atomically((plots / (name + "-busbw.dat")).string(), busbw_data);
        const std::string what = fmt::format("{}: {} ({} chunk{} per NPU)", display_name(topo), synth::to_string(k),
                                             chunk_label, chunks == 1 ? "" : "s");
        size_chart(suite, colours, gp, name, "time-" + name, what, "collective time (us)", true, "lower bound", algs);
        size_chart(suite, colours, gp, name + "-busbw", "busbw-" + name, what + ", bus bandwidth", "busbw (GB/s)", false,
                   "bus bandwidth at the lower bound", algs);
      }
  // Speed-up bars: the geometric mean per topology and baseline (each over the cases both ran).
  const SpeedUps su = speed_ups(suite, results);
  bar_chart(suite, colours, plots, gp, "speedup", "Synthesized vs baselines: geometric-mean speed-up", "speed-up of tenet (x)",
            "[0:*]", su.baselines, su.per_topology);
  // Percent of the lower bound, per collective: on each topology, only the cases that every
  // algorithm shown for it ran, so that the bars compare the same work.
  for (synth::CollectiveKind k : suite.collectives) {
    Samples pct;
    std::vector<std::string> shown;
    size_t compared = 0;
    for (const SuiteTopology& topo : suite.topologies) {
      std::map<std::string, std::map<std::string, const Result*>> by_alg;  // algorithm -> case -> result
      std::set<std::string> cases;
      for (const Result& r : results)
        if (r.topology == topo.label && r.collective == k && r.ok() && r.time > 0) {
          by_alg[r.algorithm][case_key(r)] = &r;
          cases.insert(case_key(r));
        }
      std::set<std::string> common = cases;
      for (const auto& [alg, by_case] : by_alg)
        for (auto it = common.begin(); it != common.end();) it = by_case.count(*it) ? std::next(it) : common.erase(it);
      compared += common.size();
      for (const auto& [alg, by_case] : by_alg)
        for (const std::string& c : common) {
          const Result& r = *by_case.at(c);
          pct[topo.label][alg].push_back(100.0 * static_cast<double>(r.bound) / static_cast<double>(r.time));
        }
    }
    for (const std::string& a : colours.order())
      for (const auto& [topology, by_alg] : pct)
        if (by_alg.count(a) && std::find(shown.begin(), shown.end(), a) == shown.end()) shown.push_back(a);
    bar_chart(suite, colours, plots, gp, fmt::format("bound-{}", synth::to_string(k)),
              fmt::format("{}: percent of the lower bound (geometric mean over common cases)", synth::to_string(k)),
              "lower bound / time (%)", "[0:105]", shown, pct,
              fmt::format("{} cases in all, each run by every algorithm of its topology", compared));
  }
  topo::write_file_atomically((plots / "plots.gp").string(), gp);
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) return false;
  std::string escaped;
  for (char ch : plots.string()) escaped += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return std::system(fmt::format("cd '{}' && gnuplot plots.gp 2>/dev/null", escaped).c_str()) == 0;
}

Regressions regressions(std::string_view old_csv, const std::string& old_file, const std::vector<Result>& results,
                        double speed_tolerance) {
  const OldResults old = read_old_results(old_csv, old_file);
  const auto& rows = old.rows;
  std::map<std::string, const Result*> now;
  const auto& key = row_key;
  for (const Result& r : results)
    now[key(r.topology, synth::to_string(r.collective), std::to_string(r.size), r.chunks_label(), r.algorithm)] = &r;
  Regressions out;
  for (size_t line = 1; line < rows.size(); ++line) {
    auto cell = [&](const char* c) -> const std::string& { return old.cell(line, c); };
    auto it = now.find(key(cell("topology"), cell("collective"), cell("size_bytes"), cell("chunks_per_npu"), cell("algorithm")));
    if (it == now.end()) continue;  // not in this run's suite
    const Result& r = *it->second;
    const std::string what = fmt::format("{} on {}", r.algorithm, case_key(r));
    const std::string& old_status = cell("status");
    if (old_status == "ok" && !r.ok()) {
      out.worse.push_back(fmt::format("{}: was ok, now {} ({})", what, r.status, r.note));
      continue;
    }
    if (old_status != "ok" || !r.ok()) continue;
    try {
      const Time old_time = std::stoll(cell("time_ps"));
      if (r.time > old_time)
        out.worse.push_back(fmt::format("{}: slower collective: {} -> {} (+{:.2f}%)", what, format_time(old_time),
                                  format_time(r.time), 100.0 * static_cast<double>(r.time - old_time) / static_cast<double>(old_time)));
      const double old_build = std::stod(cell("build_s"));
      if (r.build_seconds > old_build * (1 + speed_tolerance) && r.build_seconds > old_build + 0.05)
        out.slower_builds.push_back(fmt::format("{}: slower to build: {:.3f} s -> {:.3f} s", what, old_build, r.build_seconds));
    } catch (const std::logic_error&) {
      throw Error("time_ps and build_s must be numbers", Location(old_file, static_cast<int>(line + 1)));
    }
  }
  return out;
}

}  // namespace tenet::bench
