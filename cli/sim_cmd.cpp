// tenet sim
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "astra/system_json.hpp"
#include "chakra/algorithm_files.hpp"
#include "cli/commands.hpp"
#include "cli/progress.hpp"
#include "cli/sim_collectives.hpp"
#include "sim/gpt_model.hpp"
#include "sim/recorded_trace.hpp"
#include "sim/system.hpp"
#include "sim/workload.hpp"
#include "synth/baselines/baselines.hpp"
#include "synth/cache/algorithm_cache.hpp"
#include "topo/io.hpp"
#include "topo/output_folder.hpp"
#include "topo/suggest.hpp"

namespace tenet::cli {
namespace {

struct SimArgs {
  std::string workload, topology, network = "analytical", coll, trace, schedule = "1f1b";
  std::string chunks = "auto";
  std::string deps = "auto", comm_groups, system, remote_memory;
  int replicate = 0;
  bool chunks_given = false, in_flight_given = false;
  int tp = 1, pp = 1, microbatches = 1, in_flight = 0, links = 8, bins = 24, collective_rows = 12;
  int64_t batch = 0, sequence = 0;
  double peak_perf = 0;           // --peak-perf, TFLOP/s; 0: the default or system.json's
  double compute_efficiency = 0;  // --compute-efficiency; 0: 1 (peak)
  double memory_efficiency = 0;   // --memory-efficiency; 0: 1 (the whole bandwidth)
  bool one_replica = false;       // --one-replica
  bool json = false;
  bool step_costs = true;  // --step-costs
  CacheArgs cache;         // --cache, --no-cache
  std::string time_limit;  // --time-limit
  // Packet network options.
  std::string mtu = "4KiB", header = "0B", buffer = "auto", routing = "source",
              arbitration = "round-robin";
  uint64_t max_packets = sim::PacketConfig{}.max_packets;
  bool cut_through = false;
  std::vector<std::string> packet_flags_given;
};

sim::PacketConfig packet_config(const SimArgs& args) {
  sim::PacketConfig p;
  p.mtu = size_flag("--mtu", args.mtu);
  if (p.mtu < 1) throw Error("--mtu must be at least 1 B");
  p.header = size_flag("--header", args.header);
  if (args.buffer != "auto") {
    p.buffer = size_flag("--buffer", args.buffer);
    if (p.buffer < 1) throw Error("--buffer must be a size of at least one packet, or auto");
  }
  p.cut_through = args.cut_through;
  p.routing = sim::parse_routing(args.routing);
  p.arbitration = sim::parse_arbitration(args.arbitration);
  p.max_packets = args.max_packets;
  return p;
}

// "▁▃█▇▁" from fractions in [0, 1].
std::string sparkline(const std::vector<double>& values) {
  static const char* const kBars[] = {" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  std::string out;
  for (double v : values) out += kBars[std::clamp(static_cast<int>(std::lround(v * 8)), 0, 8)];
  return out;
}

void print_links(const sim::SimResult& r, int shown, int bins) {
  const sim::NetworkReport& n = r.network;
  std::vector<size_t> order;
  for (size_t l = 0; l < n.links.size(); ++l)
    if (n.links[l].busy > 0) order.push_back(l);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return n.links[a].busy > n.links[b].busy; });
  if (order.empty() || shown == 0) return;
  // Past Network::kExactActivity busy intervals the network sums them into finer slices of its own.
  fmt::print("\nbusiest links (utilization over the iteration, {} slices of {}{})\n", bins,
             format_time(r.iteration / std::max(bins, 1)),
             n.activity_slice > 0
                 ? fmt::format(", from activity summed per {}", format_time(n.activity_slice))
                 : "");
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < order.size() && i < static_cast<size_t>(shown); ++i) {
    const sim::LinkReport& k = n.links[order[i]];
    std::vector<std::string> row{
        k.name, fmt::format("{:.1f} %", 100.0 * k.busy / std::max<Time>(r.iteration, 1)),
        "|" + sparkline(sim::utilization_over_time(k.activity, r.iteration, bins)) + "|"};
    if (n.packet_level)
      for (std::string cell :
           {std::to_string(k.packets),
            fmt::format("{} / {}", format_bytes(k.deepest_queue), format_bytes(k.buffer)),
            fmt::format("{} ({})", k.credit_stalls, format_time(k.stall_time))})
        row.push_back(cell);
    rows.push_back(std::move(row));
  }
  std::vector<std::string> head{"link", "busy", "over time"};
  if (n.packet_level)
    for (const char* h : {"packets", "deepest queue / buffer", "credit stalls (time)"})
      head.push_back(h);
  std::vector<size_t> width(head.size());
  for (size_t c = 0; c < head.size(); ++c) {
    width[c] = head[c].size();
    for (const auto& row : rows)
      width[c] = std::max(width[c], c == 2 ? static_cast<size_t>(bins) + 2 : row[c].size());
  }
  auto line = [&](const std::vector<std::string>& row) {
    std::string out = " ";
    for (size_t c = 0; c < row.size(); ++c) {
      const size_t w = c == 2 ? static_cast<size_t>(bins) + 2 : row[c].size();
      out += " " + row[c] + std::string(width[c] - std::min(width[c], w), ' ') + " ";
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    fmt::print("{}\n", out);
  };
  line(head);
  for (const auto& row : rows) line(row);
  if (order.size() > static_cast<size_t>(shown))
    fmt::print("  ... {} more links carried data (--links N shows more)\n", order.size() - shown);
}

// The workload to simulate: a model preset's training iteration, or Chakra ET files.
struct SimWorkload {
  std::vector<chakra::EtFile> files;
  std::string name;
  std::optional<sim::TraceSummary> summary;  // for a Chakra ET workload
  int ranks = 0;  // the workload's ranks when the files are one replica's (--one-replica)
};

SimWorkload load_workload(const SimArgs& args, const topo::Topology& t) {
  SimWorkload w;
  w.name = args.workload;
  const auto& presets = sim::model_presets();
  if (sim::is_model_preset(args.workload)) {
    if (args.deps != "auto" || args.replicate > 0 || !args.comm_groups.empty())
      throw Error(
          "--deps, --replicate and --comm-groups apply to a Chakra ET workload, not to a model "
          "preset");
    sim::PresetIteration it =
        sim::preset_iteration(args.workload, t.num_npus(), args.tp, args.pp, args.microbatches,
                              args.schedule, {args.batch, args.sequence}, args.one_replica);
    w.files = std::move(it.files);
    w.name = std::move(it.name);
    if (args.one_replica) {
      w.ranks = t.num_npus();
      w.name += fmt::format("; replica 1 of {} simulated, the others mirroring it",
                            t.num_npus() / static_cast<int>(w.files.size()));
    }
  } else {
    if (args.one_replica)
      throw Error("--one-replica applies to a model preset, whose replicas are identical");
    std::error_code ec;
    if (args.workload.find('/') == std::string::npos &&
        !std::filesystem::exists(chakra::et_path(args.workload, 0), ec))
      throw Error(fmt::format(
          "--workload '{}': not a model preset{} (presets: {}) and no Chakra ET files {}, {}, ...",
          args.workload, did_you_mean(args.workload, presets), fmt::join(presets, ", "),
          chakra::et_path(args.workload, 0), chakra::et_path(args.workload, 1)));
    if (args.batch > 0 || args.sequence > 0)
      throw Error(
          "--batch and --seq-len shape a model preset; a Chakra ET workload carries its own sizes");
    w.files = chakra::read_prefix(args.workload);
    sim::TraceOptions options;
    options.deps = sim::parse_deps_mode(args.deps);
    options.replicate = args.replicate;
    if (!args.comm_groups.empty()) options.groups = sim::read_comm_groups(args.comm_groups);
    w.summary = sim::prepare_trace(w.files, options, w.name);
  }
  return w;
}

// The simulator's settings: the flags, with ASTRA-sim's system.json and remote-memory file (when
// given) merged under them. `system_notes` gets what reading those files found.
sim::SimConfig sim_config(const SimArgs& args, std::vector<std::string>& system_notes) {
  sim::SimConfig cfg;
  cfg.network = sim::parse_network(args.network);
  if (cfg.network == sim::NetworkKind::Packet) {
    cfg.packet = packet_config(args);
  } else {
    for (const std::string& flag : args.packet_flags_given)
      if (flag != "--routing" || cfg.network != sim::NetworkKind::AnalyticalCongestion)
        throw Error(fmt::format("{} applies to --network packet{} only", flag,
                                flag == "--routing" ? " and analytical-congestion" : ""));
    cfg.packet.routing = sim::parse_routing(args.routing);
  }
  cfg.link_activity = true;
  sim::choose_algorithms(args.coll, cfg);
  cfg.chunks_per_npu = parse_chunks(args.chunks, 0);
  cfg.max_in_flight = args.in_flight;
  if (!args.system.empty())  // ASTRA-sim's settings, under the flags given on the command line
    system_notes =
        astra::apply_astra_system(astra::read_astra_system(args.system), cfg, args.in_flight_given);
  if (!args.remote_memory.empty()) {
    const astra::AstraRemoteMemory mem = astra::read_astra_remote_memory(args.remote_memory);
    for (const std::string& n : astra::apply_astra_remote_memory(mem, cfg))
      system_notes.push_back(fmt::format("{}: {}", args.remote_memory, n));
  }
  // Given here, they win over system.json's peak-perf.
  if (args.peak_perf > 0) cfg.peak_flops = args.peak_perf * 1e12;
  sim::set_efficiency(cfg, args.workload, args.compute_efficiency, args.memory_efficiency);
  cfg.trace = !args.trace.empty();
  return cfg;
}

// A long packet run says so before it starts (one over --max-packets is refused by simulate()).
void say_packet_estimate(const std::vector<chakra::EtFile>& workload,
                         const sim::PacketConfig& packet) {
  const uint64_t packets = sim::estimate_packets(workload, packet.mtu);
  const double seconds = static_cast<double>(packets) / sim::kPacketsPerSecond;
  if (seconds > 5 && packets <= packet.max_packets)
    fmt::print(stderr,
               "packet network: about {} packets to simulate at a {} MTU, about {:.0f} s at {:.0f} "
               "million a "
               "second (--mtu {} cuts them to about {})\n",
               packets, format_bytes(packet.mtu), seconds, sim::kPacketsPerSecond / 1e6,
               format_bytes(packet.mtu * 16), packets / 16);
}

// Per rank maxima, and the utilization of the links that carried data.
struct SimTotals {
  Time compute_max = 0, cpu_max = 0, comm_max = 0, exposed_max = 0;
  double util_sum = 0, util_max = 0;
  int used = 0;
};

SimTotals totals_of(const sim::SimResult& r) {
  SimTotals s;
  for (const sim::RankStats& k : r.ranks) {
    s.compute_max = std::max(s.compute_max, k.compute);
    s.cpu_max = std::max(s.cpu_max, k.cpu);
    s.comm_max = std::max(s.comm_max, k.communication);
    s.exposed_max = std::max(s.exposed_max, k.exposed);
  }
  for (Time b : r.link_busy)
    if (b > 0) {
      const double u = r.iteration > 0 ? static_cast<double>(b) / r.iteration : 0;
      s.util_sum += u;
      s.util_max = std::max(s.util_max, u);
      ++s.used;
    }
  return s;
}

nlohmann::ordered_json trace_summary_json(const sim::TraceSummary& summary) {
  nlohmann::ordered_json tr;
  tr["rank_files"] = summary.ranks_recorded;
  tr["ranks"] = summary.ranks;
  tr["from_pytorch"] = summary.from_pytorch;
  tr["dependencies"] = summary.deps == sim::DepsMode::Data ? "data" : "all";
  tr["nodes"] = summary.nodes;
  tr["node_types"] = summary.node_types;
  tr["cpu_operators"] = summary.cpu_ops;
  tr["gpu_kernels"] = summary.gpu_kernels;
  tr["gpu_streams"] = summary.gpu_streams;
  tr["collectives"] = summary.collectives;
  tr["process_groups"] = summary.groups;
  tr["control_dependencies_dropped"] = summary.ctrl_deps_dropped;
  tr["absent_dependencies_dropped"] = summary.absent_deps_dropped;
  tr["notes"] = summary.notes;
  return tr;
}

// The links that carried data, with their utilization over the iteration in `bins` slices.
nlohmann::ordered_json links_json(const sim::SimResult& r, int bins) {
  const sim::NetworkReport& n = r.network;
  auto links = nlohmann::ordered_json::array();
  for (const sim::LinkReport& k : n.links) {
    if (k.busy == 0) continue;
    nlohmann::ordered_json l{{"link", k.name}, {"busy_ps", k.busy}};
    if (n.packet_level) {
      l["packets"] = k.packets;
      l["buffer_bytes"] = k.buffer;
      l["deepest_queue_bytes"] = k.deepest_queue;
      l["credit_stalls"] = k.credit_stalls;
      l["stall_ps"] = k.stall_time;
    }
    l["utilization_over_time"] = sim::utilization_over_time(k.activity, r.iteration, bins);
    links.push_back(std::move(l));
  }
  return links;
}

void print_json(const SimArgs& args, const SimWorkload& w, const sim::SimConfig& cfg,
                const std::vector<std::string>& system_notes, const sim::SimResult& r,
                const SimTotals& s) {
  nlohmann::ordered_json j;
  j["workload"] = w.name;
  j["network"] = args.network;
  j["iteration_ps"] = r.iteration;
  // A search stopped at --time-limit or an interruption: its collectives are the best found then.
  j["stopped_early"] = cfg.deadline != nullptr && cfg.deadline->stopped();
  if (cfg.cache)
    j["cache"] = {{"folder", cfg.cache->folder()}, {"hits", cfg.cache->hits()},
                  {"misses", cfg.cache->misses()}, {"rejected", cfg.cache->rejected()},
                  {"stores", cfg.cache->stores()}, {"failed_stores", cfg.cache->failed_stores()}};
  else
    j["cache"] = nullptr;  // --no-cache
  j["collectives"] = r.collectives;
  j["algorithms_made"] = r.algorithms_made;
  j["algorithms_renamed"] = r.algorithms_renamed;
  j["ring_plans"] = r.ring_plans;
  j["compute"] = {
      {"peak_flops_per_npu", cfg.peak_flops},
      {"efficiency", cfg.compute_efficiency},
      {"memory_efficiency", cfg.memory_efficiency},
      {"roofline", cfg.roofline},
      {"flops", r.flops},
      {"mfu", cfg.roofline ? nlohmann::json(sim::model_flops_utilization(r, cfg.peak_flops))
                           : nlohmann::json()}};      // null: durations replayed
  j["activity_slice_ps"] = r.network.activity_slice;  // 0: utilization from exact busy intervals
  j["events"] = r.events;
  j["warnings"] = r.warnings;
  if (w.summary) j["trace"] = trace_summary_json(*w.summary);
  if (!args.system.empty() || !args.remote_memory.empty()) {
    auto& sys = j["system"];
    if (!args.system.empty()) sys["file"] = args.system;
    if (!args.remote_memory.empty()) sys["remote_memory"] = args.remote_memory;
    for (const auto& [kind, algo] : cfg.algorithms)
      sys["algorithms"][std::string(synth::to_string(kind))] = algo;
    sys["notes"] = system_notes;
  }
  auto& over = j["overloaded_links"] = nlohmann::ordered_json::array();
  for (const sim::LinkReport& k : r.network.links)
    if (k.peak_demand > 1.0)
      over.push_back(
          {{"link", k.name}, {"peak_demand", k.peak_demand}, {"first_over_ps", k.peak_demand_at}});
  auto& ranks = j["ranks"] = nlohmann::ordered_json::array();
  for (const sim::RankStats& k : r.ranks)
    ranks.push_back({{"finish_ps", k.finish},
                     {"compute_ps", k.compute},
                     {"cpu_ps", k.cpu},
                     {"communication_ps", k.communication},
                     {"exposed_communication_ps", k.exposed}});
  j["links_used"] = s.used;
  j["mean_link_utilization"] = s.used ? s.util_sum / s.used : 0;
  j["max_link_utilization"] = s.util_max;
  const sim::NetworkReport& n = r.network;
  if (n.packet_level) {
    j["packets"] = n.packets;
    j["packet_hops"] = n.packet_hops;
    j["credit_stalls"] = n.credit_stalls;
  }
  j["collective_rows"] = collective_rows_json(r);
  j["message_rows"] = message_rows_json(r);
  j["links"] = links_json(r, args.bins);
  fmt::print("{}\n", j.dump(2));
}

void print_text(const SimArgs& args, const topo::Topology& t, const SimWorkload& w,
                const sim::SimConfig& cfg, const std::vector<std::string>& system_notes,
                const sim::SimResult& r, const SimTotals& s) {
  fmt::print("workload        {}, {} ranks\n", w.name, r.ranks.size());
  fmt::print("topology        {} ({} NPUs), {} network\n", t.name(), t.num_npus(), args.network);
  if (w.summary) fmt::print("{}", sim::describe(*w.summary));
  if (!args.system.empty() || !args.remote_memory.empty()) {
    std::vector<std::string> algos;
    for (const auto& [kind, algo] : cfg.algorithms)
      algos.push_back(fmt::format("{} {}", synth::to_string(kind), algo));
    if (!args.system.empty())
      fmt::print("system          {}: {}\n", args.system, fmt::join(algos, ", "));
    if (cfg.remote_memory)
      fmt::print(
          "remote memory   {}: {} + bytes / {} per access, one memory {}\n", args.remote_memory,
          format_time(cfg.remote_memory->latency), format_bandwidth(cfg.remote_memory->bandwidth),
          cfg.remote_memory->kind == sim::RemoteMemory::Kind::Pool ? std::string("for all NPUs")
          : cfg.remote_memory->kind == sim::RemoteMemory::Kind::PerNode
              ? fmt::format("per {} NPUs", cfg.remote_memory->npus_per_node)
              : std::string("per NPU"));
    for (const std::string& n : system_notes) fmt::print("system note     {}\n", n);
  }
  // The analytical network does not share links: where it booked one past its bandwidth, the
  // iteration time is a floor, said on its own line (the warning below names the link).
  const bool overbooked = std::any_of(r.network.links.begin(), r.network.links.end(),
                                      [](const sim::LinkReport& k) { return k.peak_demand > 1.0; });
  fmt::print("iteration time  {}{}\n", format_time(r.iteration),
             overbooked ? " (optimistic: links booked past their bandwidth; --network "
                          "analytical-congestion shares them)"
                        : "");
  fmt::print("per rank (max)  compute {}, {}communication {}, exposed communication {}\n",
             format_time(s.compute_max),
             s.cpu_max > 0 ? fmt::format("CPU {}, ", format_time(s.cpu_max)) : std::string(),
             format_time(s.comm_max), format_time(s.exposed_max));
  // Model FLOPs utilization, and how the COMP nodes were timed. Without the roofline they replay
  // their durations (1 ns where they have none), whatever their operations: no MFU then.
  if (r.flops > 0 && cfg.roofline)
    fmt::print(
        "compute         MFU {:.1f} % ({:.4g} FLOP of COMP nodes over {} ranks x {} at {:.4g} "
        "TFLOP/s each); COMP nodes run at {:.3g} % of the peak (--compute-efficiency), their "
        "bytes at {:.3g} % of {} (--memory-efficiency)\n",
        100 * sim::model_flops_utilization(r, cfg.peak_flops), r.flops, r.ranks.size(),
        format_time(r.iteration), cfg.peak_flops / 1e12, 100 * cfg.compute_efficiency,
        100 * cfg.memory_efficiency, format_bandwidth(cfg.memory_bandwidth));
  else if (r.flops > 0)
    fmt::print(
        "compute         no MFU: COMP nodes replay their durations, 1 ns where they have none (no "
        "roofline, as ASTRA-sim without roofline-enabled), not their {:.4g} FLOP\n",
        r.flops);
  fmt::print("collectives     {} run; links used {}, utilization mean {:.1f} %, max {:.1f} %\n",
             r.collectives, s.used, s.used ? 100 * s.util_sum / s.used : 0.0, 100 * s.util_max);
  if (r.algorithms_made + r.algorithms_renamed > 0)
    fmt::print("algorithms      {} made, {} renamed from a group of the same shape\n",
               r.algorithms_made, r.algorithms_renamed);
  if (r.ring_plans > 0)
    fmt::print(
        "ring plans      {} (rings replayed from their plan, transfers computed as they run)\n",
        r.ring_plans);
  fmt::print("events          {}\n", r.events);
  if (r.network.packet_level) {
    const sim::PacketConfig& p = cfg.packet;
    fmt::print("packets         {} ({} MTU + {} header, {}), {} packet-hops, {} credit stalls\n",
               r.network.packets, format_bytes(p.mtu), format_bytes(p.header),
               p.cut_through ? "cut-through" : "store-and-forward", r.network.packet_hops,
               r.network.credit_stalls);
    Bytes deepest = 0;
    std::string where = "none";
    for (const sim::LinkReport& k : r.network.links)
      if (k.deepest_queue > deepest) {
        deepest = k.deepest_queue;
        where = fmt::format("{} (buffer {})", k.name, format_bytes(k.buffer));
      }
    fmt::print("deepest queue   {} at {}; {} routing, {} arbitration\n", format_bytes(deepest),
               where, sim::to_string(p.routing), sim::to_string(p.arbitration));
  }
  if (!args.trace.empty()) fmt::print("trace           {} (open in Perfetto)\n", args.trace);
  for (const std::string& warning : r.warnings) fmt::print("warning         {}\n", warning);
  print_collective_rows(r, args.collective_rows);
  print_links(r, args.links, args.bins);
}

void run_sim(const SimArgs& args) {
  const topo::Topology t = load_topology(args.topology, args.step_costs);
  const SimWorkload w = load_workload(args, t);
  std::vector<std::string> system_notes;
  sim::SimConfig cfg = sim_config(args, system_notes);
  cfg.workload_ranks = w.ranks;
  if (cfg.network == sim::NetworkKind::Packet) say_packet_estimate(w.files, cfg.packet);
  const std::unique_ptr<synth::AlgorithmCache> cache = open_cache(args.cache);
  cfg.cache = cache.get();
  const TimeLimit deadline(args.time_limit);
  cfg.deadline = deadline.get();
  ProgressBar bar("simulating");
  cfg.progress = [&](double f) { bar(f); };
  const sim::SimResult r = sim::simulate(t, w.files, cfg, w.name);
  bar.done();
  if (!args.trace.empty()) topo::write_file_atomically(args.trace, sim::trace_json(r));
  if (args.json) {
    print_json(args, w, cfg, system_notes, r, totals_of(r));
    return;
  }
  print_text(args, t, w, cfg, system_notes, r, totals_of(r));
  if (deadline.get()->stopped())
    fmt::print("stopped early   {}: synthesized collectives are the best found by then\n",
               describe_stop(args.time_limit));
  if (cache && cache->hits() + cache->stores() > 0)
    fmt::print(
        "cache           {} synthesized algorithm{} read from {} (verified), {} kept there\n",
        cache->hits(), cache->hits() == 1 ? "" : "s", cache->folder(), cache->stores());
}

// What to simulate, and on which topology.
void add_workload_flags(CLI::App* cmd, SimArgs& args) {
  cmd->add_option(
         "-w,--workload", args.workload,
         "Chakra ET prefix (<prefix>.<rank>.et), or a model preset run data-parallel over "
         "every NPU: " +
             fmt::format("{}", fmt::join(sim::model_presets(), ", ")) +
             ", or a Megatron-LM GPT of your shape: gpt:layers=L,hidden=H,heads=A[,vocab=V]"
             "\n(default vocabulary 51200; Megatron's FLOPs, tensor-parallel All-Reduces, "
             "activation\nrecomputation and scattered stage boundaries: docs/simulation.md)")
      ->required();
  cmd->add_option("-t,--topo", args.topology, "Topology file or generator spec")->required();
  add_step_costs_flag(cmd, args.step_costs);
  add_cache_flags(cmd, args.cache);
  add_time_limit_flag(cmd, args.time_limit);
}

// The network model, and the options of the packet network.
void add_network_flags(CLI::App* cmd, SimArgs& args) {
  cmd->add_option("-n,--network", args.network,
                  "analytical (no contention), analytical-congestion (flows share links max-min "
                  "fairly) or packet\n"
                  "(packets through finite credit-controlled buffers; see the packet options)")
      ->capture_default_str();
  auto packet_flag = [&args](const std::string& name) {
    return [&args, name](const auto&) { args.packet_flags_given.push_back(name); };
  };
  cmd->add_option("--mtu", args.mtu, "Packet network: payload bytes per packet")
      ->capture_default_str()
      ->each(packet_flag("--mtu"));
  cmd->add_option("--header", args.header,
                  "Packet network: header bytes added to every packet on the wire")
      ->capture_default_str()
      ->each(packet_flag("--header"));
  cmd->add_option(
         "--buffer", args.buffer,
         "Packet network: input buffer per port (a size), or auto: the link's credit round trip\n"
         "(2 x latency x bandwidth) + 1 packet + at a switch one packet per multiple the link is "
         "faster\n"
         "than the slowest link out, so that the link runs at full rate; a link's own `buffer` in "
         "the\n"
         "topology file takes precedence")
      ->capture_default_str()
      ->each(packet_flag("--buffer"));
  cmd->add_flag("--cut-through", args.cut_through,
                "Packet network: forward a packet once its header has arrived (default: "
                "store-and-forward)")
      ->each(packet_flag("--cut-through"));
  cmd->add_option(
         "--routing", args.routing,
         "Packet and analytical-congestion networks: source (the algorithm's routes; shortest "
         "paths\n"
         "for sends) or ecmp (each message a flow hashed onto one of the least-cost routes, as\n"
         "switches spread flows; an algorithm's own routes are not kept)")
      ->capture_default_str()
      ->each(packet_flag("--routing"));
  cmd->add_option("--arbitration", args.arbitration,
                  "Packet network: round-robin (fair over a port's inputs) or fixed-priority "
                  "(lowest input first)")
      ->capture_default_str()
      ->each(packet_flag("--arbitration"));
  cmd->add_option(
         "--max-packets", args.max_packets,
         "Packet network: stop with an error past this many packets (a run cuts about 7 million a\n"
         "second on one core)")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 50))
      ->each(packet_flag("--max-packets"));
}

// The per-collective and busiest links' tables.
void add_link_flags(CLI::App* cmd, SimArgs& args) {
  cmd->add_option("--collectives", args.collective_rows,
                  "Rows of the per-collective table to list (each collective, size, group kind "
                  "and algorithm; the slowest first; --json has every row)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  cmd->add_option("--links", args.links, "Busiest links to list")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  cmd->add_option("--bins", args.bins, "Time slices of the per-link utilization over time")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
}

// The algorithm of every collective.
void add_algorithm_flags(CLI::App* cmd, SimArgs& args) {
  cmd->add_option(
      "--coll", args.coll,
      "Algorithm per collective: tenet (default), a baseline name, or an algorithm file (.json, "
      ".xml,\n"
      "Chakra prefix), e.g. all-reduce=ring,all-gather=out/ag.json; a collective named again with\n"
      "files (all-reduce=ar-1MiB.json,all-reduce=ar-64MiB.json) runs, per call, the file made for "
      "the\n"
      "nearest size. A file runs every call with its chunks scaled to the call's size (a warning\n"
      "names each call of another size than a JSON or Chakra file was made for)");
  cmd->add_option("-k,--chunks-per-npu", args.chunks,
                  "Chunks per NPU of every collective's algorithm (1-4096), or auto: per "
                  "collective and size,\n"
                  "try 1, 2, 4, ... and keep the fastest, as `tenet synth -k auto` does (stops "
                  "when doubling\n"
                  "stops helping twice, at 64 (Broadcast and Reduce: 64 x the ranks), or before a "
                  "collective would pass about "
                  "32K transfers).\nAn All-Reduce over a cluster of servers too large to "
                  "synthesize flat (over 5,793 NPUs)\n"
                  "is composed per level: k then counts chunks per NPU inside a server, and auto "
                  "searches up\n"
                  "to 8M transfers, as `tenet synth` does")
      ->capture_default_str()
      ->each([&args](const std::string&) { args.chunks_given = true; });
}

// The shape of a model preset's training iteration.
void add_preset_flags(CLI::App* cmd, SimArgs& args) {
  cmd->add_option("--tp", args.tp, "Tensor-parallel degree, for a preset")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--pp", args.pp, "Pipeline stages, for a preset (data parallel over the rest)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--microbatches", args.microbatches, "Micro-batches per iteration, for a preset")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--schedule", args.schedule, "Pipeline schedule: gpipe or 1f1b")
      ->capture_default_str();
  cmd->add_option(
         "--batch", args.batch,
         "For a preset: samples per data-parallel replica and iteration (default: the preset's "
         "own:\n"
         "resnet50 64 images, dlrm 2048 queries, transformers 1 sequence per micro-batch); it "
         "must\n"
         "split into --microbatches of whole samples; the output states the effective (global) "
         "batch")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  cmd->add_option("--seq-len", args.sequence,
                  "For a transformer preset: tokens per sequence (default 2048)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
}

// How fast the NPUs compute.
void add_compute_flags(CLI::App* cmd, SimArgs& args) {
  cmd->add_option("--peak-perf", args.peak_perf,
                  "Peak compute per NPU in TFLOP/s (ASTRA-sim's peak-perf; default 312, an A100's "
                  "BF16 dense\n"
                  "peak; given here, it wins over a --system file's)")
      ->check(CLI::Range(1e-6, 1e9));
  cmd->add_option(
         "--compute-efficiency", args.compute_efficiency,
         "The share of --peak-perf a COMP node's operations run at, in (0, 1] (default 1: "
         "at peak,\n"
         "as ASTRA-sim's roofline; a gpt: model 0.689, its matmuls on A100s as Megatron-LM "
         "reaches\nthem, calibrated on its paper's Table 1). End to end, trained models "
         "reach well below the\npeak: the summary prints the run's MFU")
      ->check(CLI::Range(1e-6, 1.0));
  cmd->add_option(
         "--memory-efficiency", args.memory_efficiency,
         "The share of the memory bandwidth (2.039 TB/s, an A100 80 GB's HBM2e; a --system "
         "file's\nlocal-mem-bw) a COMP node's bytes move at, in (0, 1] (default 1; a gpt: model "
         "0.784,\nMegatron-LM's calibration): the elementwise kernels of a gpt: model are bound "
         "by it, its\nmatmuls by --compute-efficiency")
      ->check(CLI::Range(1e-6, 1.0));
  cmd->add_flag("--one-replica", args.one_replica,
                "For a model preset with data parallelism: simulate its first replica only, every "
                "other\nmirroring it (their collectives run over every replica). On the "
                "analytical network (the\nonly one it is allowed on) the iteration is the whole "
                "run's: identical replicas reach each\ncollective together and do not share "
                "links. Per-rank and link figures are the replica's");
}

// ASTRA-sim's system settings.
void add_system_flags(CLI::App* cmd, SimArgs& args) {
  cmd->add_option(
         "--in-flight", args.in_flight,
         "Sends and collectives a rank may have in flight at once (0: no limit; ASTRA-sim: 1)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20))
      ->each([&args](const std::string&) { args.in_flight_given = true; });
  cmd->add_option(
      "--remote-memory", args.remote_memory,
      "ASTRA-sim remote-memory configuration (memory-type, remote-mem-latency ns, remote-mem-bw\n"
      "GB/s): MEM_LOAD/MEM_STORE nodes take latency + bytes / bandwidth at their memory (per NPU,\n"
      "per node of num-npus-per-node NPUs, or one pool), one access at a time, instead of local "
      "memory");
  cmd->add_option(
      "--system", args.system,
      "ASTRA-sim system configuration (system.json): its collective implementations become\n"
      "Tenet's baselines (ring -> ring:1, direct, halvingDoubling -> rhd, doubleBinaryTree -> "
      "dbt;\n"
      "per dimension -> hierarchical), its custom ones algorithm files; the native collectives "
      "run\n"
      "as preferred-dataset-splits pieces, active-chunks-per-dimension at a time, one chunk per "
      "NPU\n"
      "each; endpoint-delay (default 10 ns) at both ends of each message, reductions read twice "
      "and\n"
      "written once at local-mem-bw; peak-perf and local-mem-bw the roofline; one operation in\n"
      "flight per rank. --coll and --in-flight given here win; keys Tenet does not model are "
      "listed");
}

// How a Chakra ET workload is read.
void add_trace_flags(CLI::App* cmd, SimArgs& args) {
  cmd->add_option(
         "--deps", args.deps,
         "For a Chakra ET workload: which dependencies order nodes: all (data and control), data\n"
         "(data only, as ASTRA-sim's feeder), or auto (data for a trace from Chakra's PyTorch\n"
         "converter, whose control dependencies name operator parents; all otherwise). "
         "Dependencies\n"
         "on nodes that are not in the rank's file are dropped and counted")
      ->capture_default_str();
  cmd->add_option(
         "--replicate", args.replicate,
         "Run a one-rank Chakra ET trace as N data-parallel ranks (every collective spans all N)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option(
      "--comm-groups", args.comm_groups,
      "ASTRA-sim communicator-group JSON ({\"1\": [0, 1], ...}) naming the ranks of the pg_name\n"
      "process groups the trace's collectives use (the trace's own process-group table wins)");
}

// What is written besides the summary.
void add_output_flags(CLI::App* cmd, SimArgs& args) {
  cmd->add_option("--trace", args.trace,
                  "Write a Chrome trace-event timeline (Perfetto) to this file");
  cmd->add_flag("--json", args.json, "Print JSON for machines");
}

// `tenet sim`: its flags in the order --help lists them.
void add_sim_command(CLI::App& app) {
  static SimArgs args;
  CLI::App* cmd =
      app.add_subcommand("sim",
                         "Simulate a training iteration: Chakra ET workload in, iteration time "
                         "out, with every collective\n"
                         "run by a synthesized or baseline algorithm on a network model");
  add_workload_flags(cmd, args);
  add_network_flags(cmd, args);
  add_link_flags(cmd, args);
  add_algorithm_flags(cmd, args);
  add_preset_flags(cmd, args);
  add_compute_flags(cmd, args);
  add_system_flags(cmd, args);
  add_trace_flags(cmd, args);
  add_output_flags(cmd, args);
  cmd->callback([] { run_sim(args); });
}

}  // namespace

void add_sim_commands(CLI::App& app) {
  add_sim_command(app);
  add_workload_gen_command(app);  // workload_cmd.cpp
}

}  // namespace tenet::cli
