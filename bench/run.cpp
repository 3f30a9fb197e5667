// Running a suite: every algorithm of every case (synthesized or built, verified, timed, replayed)
// and every simulation, dealt over threads and MPI processes (bench/pool.hpp).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <exception>
#include <optional>
#include <set>
#include <stdexcept>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "bench/harness.hpp"
#include "bench/report_common.hpp"
#include "chakra/et.hpp"
#include "sim/collective_engine.hpp"
#include "sim/gpt_model.hpp"
#include "sim/system.hpp"
#include "sim/workload.hpp"
#include "synth/cache/algorithm_cache.hpp"
#include "synth/memo.hpp"
#include "synth/producers.hpp"
#include "synth/verify/verify.hpp"
#include "topo/error.hpp"

namespace tenet::sim {
// A simulation's collective rows travel with it between processes (bench/pool.hpp), every field.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(CollectiveRow, group, groups, kind, bytes, algorithm, method,
                                   chunks_per_npu, protocol, calls, time, wait, exposed,
                                   busiest_link, busiest_busy)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(MessageRow, group, messages, bytes, wait, exposed)
}  // namespace tenet::sim

namespace tenet::bench {

namespace {

constexpr std::array<std::pair<ResultStatus, std::string_view>, 4> kStatusText{{
    {ResultStatus::Ok, "ok"},
    {ResultStatus::Incorrect, "incorrect"},
    {ResultStatus::NotApplicable, "not-applicable"},
    {ResultStatus::Error, "error"},
}};

}  // namespace

std::string_view to_string(ResultStatus status) {
  for (const auto& [s, text] : kStatusText)
    if (s == status) return text;
  return "error";  // not reached: kStatusText names every status
}

std::optional<ResultStatus> parse_result_status(std::string_view text) {
  for (const auto& [s, t] : kStatusText)
    if (t == text) return s;
  return std::nullopt;
}

// A status travels between processes as its text, as it is written everywhere else.
void to_json(nlohmann::json& j, ResultStatus status) { j = std::string(to_string(status)); }
void from_json(const nlohmann::json& j, ResultStatus& status) {
  const std::string text = j.get<std::string>();
  const std::optional<ResultStatus> s = parse_result_status(text);
  if (!s) throw std::runtime_error(fmt::format("unknown result status '{}'", text));
  status = *s;
}

// How a row travels from the process that computed it to rank 0 (bench/pool.hpp): every field, as
// JSON (integers exact, doubles round-tripped; the status as its text, the other enums as their
// numbers).
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Result, topology, npus, collective, size, chunks, chunks_used,
                                   algorithm, method, protocol, status, note, time, bound, busbw,
                                   build_seconds, from_cache, transfers, simulated)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SimRun, topology, npus, workload, network, algorithm, status,
                                   note, iteration, compute, communication, exposed, collectives,
                                   events, max_link_utilization, seconds, collective_rows,
                                   message_rows)

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

Result run_algorithm(const Suite& s, const Case& c, const std::string& name,
                     const HarnessOptions& options) {
  synth::AlgorithmCache* cache = options.cache;
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
    o.cache = cache;
    o.deadline = options.deadline;
    o.memo = options.memo;
    const int64_t hits = cache ? cache->hits() : 0;
    o.portfolio.baselines =
        false;  // the portfolio is applied by take_fastest, from the baselines' own rows
    // A count that cuts chunks of less than a byte is an error row (whole_chunk_bytes_for), not a
    // larger collective timed in its place.
    const synth::Algorithm a =
        c.chunks == 0 ? synth::make_algorithm_auto_chunks(name, t, coll, c.size, o).algorithm
                      : synth::make_algorithm(name, t, coll, coll.whole_chunk_bytes_for(c.size), o);
    r.chunks_used = a.collective.chunks_per_npu;
    r.method = synth::method_of(a.provenance, a.name);
    r.protocol = a.protocol;
    r.build_seconds = seconds_since(begin);
    r.from_cache = cache && cache->hits() > hits;
    const synth::Report rep =
        synth::verify(t, a, {.max_reported = 1, .bounds = synth::bounds_of(o)});
    r.time = rep.collective_time;
    r.bound = rep.bound.total;
    r.transfers = a.size();
    const double seconds = static_cast<double>(r.time) / static_cast<double>(kPicosPerSecond);
    r.busbw = seconds > 0 ? static_cast<double>(c.size) / seconds *
                                synth::bus_bandwidth_factor(c.kind, coll.num_ranks())
                          : 0;
    if (rep.correct()) {
      r.status = ResultStatus::Ok;
    } else {
      r.status = ResultStatus::Incorrect;
      r.note = fmt::format("{} violations; first: {}", rep.violation_count,
                           rep.violations.empty() ? "" : rep.violations.front().message);
    }
    for (sim::NetworkKind n : s.networks) r.simulated.push_back(sim::replay(t, a, n));
  } catch (const synth::NotApplicable& e) {
    r.status = ResultStatus::NotApplicable;
    r.note = e.message();
  } catch (const std::exception& e) {
    r.status = ResultStatus::Error;
    r.note = e.what();
  }
  return r;
}

// As `tenet synth` does (SynthOptions::portfolio.baselines), the synthesizer's row of a case is the
// fastest of its own schedule and every baseline's, which the case has built already.
void take_fastest(std::vector<Result>& case_rows) {
  auto tenet = std::find_if(case_rows.begin(), case_rows.end(),
                            [](const Result& r) { return r.algorithm == "tenet"; });
  if (tenet == case_rows.end() || !tenet->ok()) return;
  for (const Result& b : case_rows)
    if (b.algorithm != "tenet" && b.ok() && b.time < tenet->time) {
      const double build = tenet->build_seconds;
      *tenet = b;
      tenet->algorithm = "tenet";
      tenet->note = "baseline " + b.algorithm;
      tenet->method = tenet->note;  // as synth::method_of says of tenet's own portfolio
      tenet->build_seconds = build;
      tenet->from_cache = false;
    }
}

struct SimCase {
  const SuiteTopology* topology;
  const SuiteWorkload* workload;
  sim::NetworkKind network;
  std::string algorithm;
};

SimRun run_simulation(const SimCase& c, const HarnessOptions& options) {
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
        r.status = ResultStatus::NotApplicable;
        r.note = e.message();
        return r;
      }
      workload = sim::training_iteration(
          sim::model_preset(w.preset, sim::batch_shape(w.preset, w.shape, w.microbatches)), par);
    } else {
      workload = chakra::read_prefix(w.prefix);
      if (static_cast<int64_t>(workload.size()) > t.num_npus()) {
        r.status = ResultStatus::NotApplicable;
        r.note = fmt::format("the trace has {} ranks, the topology {} NPUs", workload.size(),
                             t.num_npus());
        return r;
      }
    }
    sim::SimConfig cfg;
    cfg.network = c.network;
    cfg.cache = options.cache;
    cfg.deadline = options.deadline;
    cfg.chunks_per_npu = 0;              // auto, as tenet sim defaults to
    sim::set_efficiency(cfg, w.preset);  // as tenet sim takes them
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
    r.status = ResultStatus::Ok;
    r.iteration = res.iteration;
    for (const sim::RankStats& s : res.ranks) {
      r.compute = std::max(r.compute, s.compute);
      r.communication = std::max(r.communication, s.communication);
      r.exposed = std::max(r.exposed, s.exposed);
    }
    r.collectives = res.collectives;
    r.collective_rows = res.collective_rows;
    r.message_rows = res.message_rows;
    r.events = res.events;
    for (Time b : res.link_busy)
      if (res.iteration > 0)
        r.max_link_utilization = std::max(
            r.max_link_utilization, static_cast<double>(b) / static_cast<double>(res.iteration));
    std::vector<std::string> notes = res.warnings;
    if (!by_tenet.empty())
      notes.insert(notes.begin(), fmt::format("{} by tenet ({} does not apply)",
                                              fmt::join(by_tenet, ", "), c.algorithm));
    r.note = fmt::format("{}", fmt::join(notes, "; "));
  } catch (const synth::NotApplicable& e) {
    // The producer cannot run one of the workload's collectives here.
    r.status = ResultStatus::NotApplicable;
    r.note = e.message();
  } catch (const std::exception& e) {
    r.status = ResultStatus::Error;
    r.note = e.what();
  }
  r.seconds = seconds_since(begin);
  return r;
}

// The unit of work: one algorithm of one case (index c of the cases).
struct Item {
  size_t c;
  std::string algorithm;
};

// Dealing order, most expensive first: the build seconds an earlier run measured (items it did
// not have go first), else an estimate (transfers grow with the square of the NPUs and with the
// chunks; All-to-All's with one more factor of NPUs). Outputs do not depend on it.
std::vector<double> item_costs(const std::vector<Case>& cases, const std::vector<Item>& items,
                               const std::vector<SimCase>& sims, const KnownCosts* costs) {
  std::vector<double> cost;
  const bool measured = costs && !costs->empty();
  double most = 0;
  if (measured)
    for (const auto& [key, seconds] : *costs) most = std::max(most, seconds);
  for (const Item& item : items) {
    const Case& c = cases[item.c];
    const double n = c.topology->num_ranks();
    if (!measured) {
      cost.push_back(n * n * std::max(c.chunks, 4) *
                     (c.kind == synth::CollectiveKind::AllToAll ? n : 1.0));
      continue;
    }
    const auto it =
        costs->find(row_key(c.topology->label, synth::to_string(c.kind), std::to_string(c.size),
                            c.chunks == 0 ? "auto" : std::to_string(c.chunks), item.algorithm));
    cost.push_back(it != costs->end() ? it->second : most);
  }
  for (const SimCase& c : sims) {
    const double n = c.topology->topology.num_npus();
    cost.push_back(measured ? most : n * n * 64);
  }
  return cost;
}

}  // namespace

SuiteResults run_suite(const Suite& suite, const HarnessOptions& given) {
  synth::SynthMemo memo;  // the run's own where the caller holds none
  HarnessOptions options = given;
  if (!options.memo) options.memo = &memo;
  // Items: every algorithm of every case (the unit of work), then the simulations.
  std::vector<Case> cases;
  for (const SuiteTopology& t : suite.topologies)
    for (synth::CollectiveKind k : suite.collectives)
      for (Bytes size : suite.sizes)
        for (int chunks : suite.chunks) cases.push_back({&t, k, size, chunks});
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
    if (i < items.size())
      return nlohmann::json(run_algorithm(suite, cases[items[i].c], items[i].algorithm, options))
          .dump();
    return nlohmann::json(run_simulation(sims[i - items.size()], options)).dump();
  };
  auto describe = [&](size_t i) {
    if (i < items.size()) {
      const Case& c = cases[items[i].c];
      return fmt::format("{} | {} | {} | {} chunks | {}", c.topology->label,
                         synth::to_string(c.kind), format_bytes(c.size),
                         c.chunks == 0 ? "auto" : std::to_string(c.chunks), items[i].algorithm);
    }
    const SimCase& c = sims[i - items.size()];
    return fmt::format("{} | {} | {} network | {}", c.topology->label, c.workload->label,
                       sim::to_string(c.network), c.algorithm);
  };
  static const Processes alone{Processes::Alone{}};
  const std::vector<std::string> outputs = run_items(
      options.processes ? *options.processes : alone, items.size() + sims.size(), run, describe,
      {.threads = options.threads,
       .progress = options.progress,
       .cost = item_costs(cases, items, sims, options.costs)},
      options.stats);
  SuiteResults out;
  if (outputs.empty()) return out;         // another rank's share was run; rank 0 has the rows
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

}  // namespace tenet::bench
