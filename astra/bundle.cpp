#include "astra/bundle.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "astra/et_set.hpp"
#include "astra/ns3_network.hpp"
#include "chakra/et.hpp"
#include "sim/system.hpp"
#include "sim/workload.hpp"
#include "synth/bounds/lower_bound.hpp"
#include "synth/cost/protocol_view.hpp"
#include "synth/cost/timing.hpp"
#include "topo/error.hpp"
#include "topo/io.hpp"
#include "topo/limits.hpp"
#include "topo/quoting.hpp"

namespace tenet::astra {

namespace fs = std::filesystem;

namespace {

// ASTRA-sim's name for `c`; throws unless it can run `c` as a custom collective over every NPU.
std::string custom_collective_name(const synth::Collective& c, const topo::Topology& t) {
  const auto name = astra_collective_name(c.kind);
  if (!name)
    throw Error(fmt::format(
        "ASTRA-sim runs custom all-reduce, all-gather, reduce-scatter and all-to-all only, not {}",
        synth::to_string(c.kind)));
  const int p = c.num_ranks();
  bool everyone = p == t.num_npus();
  for (int r = 0; r < p; ++r) everyone = everyone && c.ranks[r] == r;
  if (!everyone)
    throw Error(fmt::format(
        "the {} spans NPUs {} of the {}; ASTRA-sim runs a custom collective over every NPU of its "
        "network, rank r on NPU r",
        synth::to_string(c.kind), fmt::join(c.ranks, ","), t.num_npus()));
  return *name;
}

// network.yml and the dimensions it holds.
struct Network {
  std::vector<AstraDimension> dims;
  std::string yml;
};

// The network of `t`: its dimensions, or the nearest ones (said in `bundle`, with why).
Network astra_network(const topo::Topology& t, AstraBundle& bundle) {
  std::string why;
  std::optional<std::vector<AstraDimension>> dims = astra_dimensions(t, &why);
  std::string yml;
  if (dims) {
    yml = astra_network_yml(
        *dims, fmt::format("ASTRA-sim network configuration written by Tenet for '{}'.", t.name()));
  } else {
    bundle.exact_network = false;
    dims = nearest_astra_dimensions(t);
    const AstraDimension& d = dims->front();
    const std::string nearest = fmt::format(
        "one Switch of {} NPUs at {} (the least NPU egress) and {} per hop (half the largest "
        "NPU-to-NPU latency)",
        d.npus, format_bandwidth(d.bandwidth), format_time(d.latency));
    bundle.notes.push_back(fmt::format(
        "network.yml: '{}' is not ASTRA-sim dimensions: {}; written instead: the nearest, {}",
        t.name(), why, nearest));
    yml = astra_network_yml(
        *dims, fmt::format("The nearest ASTRA-sim network to '{}' (not the same: {}): {}.",
                           t.name(), why, nearest));
  }
  return {std::move(*dims), std::move(yml)};
}

// A workload's ET files and the file stem they are staged under.
struct Workload {
  std::vector<chakra::EtFile> files;
  std::string stem;
};

// The file stem of the workload at `path`, which its staged files are named after. Throws unless
// it is UTF-8: an output folder's names are (topo::OutputFolder's journal is JSON).
std::string workload_stem(const std::string& path) {
  std::string stem = fs::path(path).filename().string();
  if (size_t bad = 0; !topo::valid_utf8(stem, &bad))
    throw Error(fmt::format("the workload's file name '{}' is not valid UTF-8 (byte 0x{:02X} at "
                            "offset {}); the bundle names its workload files after it",
                            topo::one_line(stem), static_cast<unsigned char>(stem[bad]), bad),
                {path});
  return stem;
}

// The workload to stage: the microbenchmark of `c` at `size`, or the one at `path` (with notes).
Workload bundle_workload(const synth::Collective& c, const std::string& name, Bytes size,
                         const topo::Topology& t, const std::string& path, AstraBundle& bundle) {
  const int p = c.num_ranks();
  std::vector<chakra::EtFile> workload;
  std::string stem;
  if (path.empty()) {
    workload = sim::collective_microbenchmark(c.kind, size, p, c.root);
    stem = name;
    std::replace(stem.begin(), stem.end(), '-', '_');
  } else {
    stem = workload_stem(path);
    workload = chakra::read_prefix(path);
    if (static_cast<int>(workload.size()) != t.num_npus())
      throw Error(
          fmt::format(
              "the workload has {} ranks and the topology {} NPUs; ASTRA-sim runs one rank per NPU",
              workload.size(), t.num_npus()),
          {path});
    int64_t other_sizes = 0, same = 0;
    for (const chakra::Node& n : workload[0].nodes)
      if (n.type() == ChakraProtoMsg::COMM_COLL_NODE)
        if (auto type = chakra::int_attr(n, "comm_type");
            type && sim::collective_of_comm_type(*type) == c.kind) {
          const auto bytes = chakra::int_attr(n, "comm_size");
          ++(bytes && sim::collective_bytes_of_comm_size(c.kind, *bytes, p) == size ? same
                                                                                    : other_sizes);
        }
    if (same + other_sizes == 0)
      bundle.notes.push_back(
          fmt::format("the workload holds no {} (rank 0): the algorithm will not run",
                      synth::to_string(c.kind)));
    if (other_sizes > 0)
      bundle.notes.push_back(fmt::format(
          "{} of the workload's {} {}s (rank 0) are not of {}: ASTRA-sim runs the custom "
          "collective as it is, whatever "
          "their comm_size (export one per size to match)",
          other_sizes, same + other_sizes, synth::to_string(c.kind), format_bytes(size)));
  }
  return {std::move(workload), std::move(stem)};
}

// system.json's text: `custom` as the custom collective, ASTRA-sim's ring for the rest, a roofline.
std::string system_json(synth::CollectiveKind custom, size_t dimensions,
                        const AstraBundleOptions& options) {
  // system.json: ASTRA-sim reads every key below (astra-sim/system/Sys.cc, Sys::initialize_sys).
  const sim::SimConfig defaults;
  const double peak = options.peak_flops > 0 ? options.peak_flops : defaults.peak_flops;
  const Bandwidth memory =
      options.memory_bandwidth > 0 ? options.memory_bandwidth : defaults.memory_bandwidth;
  nlohmann::ordered_json sys;
  sys["scheduling-policy"] = "LIFO";
  sys["endpoint-delay"] = 10;
  sys["active-chunks-per-dimension"] = 1;
  // 1: Sys::generate_collective sizes a collective's DataSet for size / chunk streams but gives a
  // custom implementation one stream (astra-sim/system/Sys.cc, upstream 518bd51, around line 677),
  // so with more splits a custom collective never finishes (checked: 4 hangs, 1 runs).
  sys["preferred-dataset-splits"] = 1;
  for (auto kind : {synth::CollectiveKind::AllReduce, synth::CollectiveKind::AllGather,
                    synth::CollectiveKind::ReduceScatter, synth::CollectiveKind::AllToAll}) {
    const std::string key = *astra_collective_name(kind);
    if (kind == custom)
      sys[key + "-implementation-custom"] = nlohmann::ordered_json::array({"collective/algorithm"});
    else
      sys[key + "-implementation"] = std::vector<std::string>(dimensions, "ring");
  }
  sys["collective-optimization"] = "localBWAware";
  sys["local-mem-bw"] = static_cast<double>(memory) / 1e9;  // GB/s of 10^9 B/s
  sys["boost-mode"] = 0;
  sys["roofline-enabled"] = 1;
  sys["peak-perf"] = peak / 1e12;  // TFLOP/s
  return sys.dump(2) + "\n";
}

// What run.sh runs, in its first comment line: the collective alone or the workload.
std::string run_what(const synth::Algorithm& a, const topo::Topology& t,
                     const std::string& workload, Bytes size, const std::string& stem) {
  const synth::Collective& c = a.collective;
  return fmt::format("{} ({} on '{}', written by Tenet)",
                     workload.empty()
                         ? fmt::format("one {} of {}", synth::to_string(c.kind), format_bytes(size))
                         : fmt::format("the workload {}", topo::one_line(stem)),
                     topo::one_line(a.name), topo::one_line(t.name()));
}

// run.sh's text: ASTRA-sim's analytical network on the folder's files, run from the folder. Names
// (the algorithm's, the topology's, the workload's file) reach sh only as comment text on one line
// (topo::one_line: a line break would end the comment) or as one single-quoted word.
std::string run_script(const synth::Algorithm& a, const topo::Topology& t,
                       const AstraBundle& bundle, const std::string& workload, Bytes size,
                       const std::string& stem) {
  const std::string binary = bundle.congestion_aware ? "AstraSim_Analytical_Congestion_Aware"
                                                     : "AstraSim_Analytical_Congestion_Unaware";
  // Tenet emulates the congestion-unaware network only. On the congestion-aware one a link serves a
  // message at a time at its full bandwidth: transfers that share a link at fractional rates (the
  // flow plan's pipelines) take longer there; a ring or symmetric schedule hardly changes.
  const std::string times =
      bundle.congestion_aware
          ? fmt::format(
                "{}; Tenet does not run it as the congestion-aware network does (one message at a "
                "time at a\n"
                "# link's full bandwidth: transfers that share a link at fractional rates take "
                "longer there)",
                format_time(bundle.claimed_time))
          : fmt::format(
                "{}; run as ASTRA-sim runs it: {}{}", format_time(bundle.claimed_time),
                format_time(bundle.collective.time),
                bundle.exact_network ? "" : fmt::format(" ({})", nearest_network_words(bundle)));
  return fmt::format(
      "#!/bin/sh\n"
      "# Runs {} in ASTRA-sim's analytical network, {}.\n"
      "# Tenet's time for the collective: {}.\n"
      "# ASTRA_SIM names the binary (default: {} on the PATH); the\n"
      "# custom collective's path in system.json is relative to this folder, so it runs from "
      "here.\n"
      "set -e\n"
      "cd \"$(dirname \"$0\")\"\n"
      "exec \"${{ASTRA_SIM:-{}}}\" \\\n"
      "  --workload-configuration={} \\\n"
      "  --system-configuration=system.json \\\n"
      "  --network-configuration=network.yml \\\n"
      "  --remote-memory-configuration=remote_memory.json \"$@\"\n",
      run_what(a, t, workload, size, stem),
      bundle.congestion_aware ? "congestion-aware (messages queue at links)" : "congestion-unaware",
      times, binary, binary, topo::shell_quoted("workload/" + stem, "the workload's file name"));
}

// run.sh's text for the ns-3 backend, with the same care for names as run_script.
std::string ns3_run_script(const synth::Algorithm& a, const topo::Topology& t,
                           const AstraBundle& bundle, const std::string& workload, Bytes size,
                           const std::string& stem) {
  constexpr const char* binary = "ns3.42-AstraSimNetwork-default";
  return fmt::format(
      "#!/bin/sh\n"
      "# Runs {}\n"
      "# in ASTRA-sim's ns-3 network: packets through RDMA NICs and switches, routed by ns-3\n"
      "# (fewest hops, ECMP), queued at links.\n"
      "# Tenet's time for the collective: {}. Tenet does not emulate ns-3; without per-step\n"
      "# costs and with each message ending at its last ACK, as ASTRA-sim's ns-3 frontend ends\n"
      "# it, Tenet's schedule takes {}.\n"
      "# ASTRA_SIM_NS3 names the binary (default: {} on the PATH, which\n"
      "# ns-3's build puts in build/scratch/); the paths in system.json and ns3/config.txt are\n"
      "# relative to this folder, so it runs from here.\n"
      "set -e\n"
      "cd \"$(dirname \"$0\")\"\n"
      "exec \"${{ASTRA_SIM_NS3:-{}}}\" \\\n"
      "  --workload-configuration={} \\\n"
      "  --system-configuration=system.json \\\n"
      "  --network-configuration=ns3/config.txt \\\n"
      "  --remote-memory-configuration=remote_memory.json \\\n"
      "  --logical-topology-configuration=logical_topology.json \"$@\"\n",
      run_what(a, t, workload, size, stem), format_time(bundle.claimed_time),
      format_time(bundle.ns3_estimate), binary, binary,
      topo::shell_quoted("workload/" + stem, "the workload's file name"));
}

// The ns-3 topology file when the bundle runs on ns-3: asked (throws when ns-3 cannot hold the
// topology), or (Auto) the topology is no ASTRA-sim dimensions and ns-3 can hold it (no router
// NPUs; said in `bundle` when it cannot).
std::optional<Ns3Topology> ns3_if_runs(AstraNetwork network, const topo::Topology& t,
                                       AstraBundle& bundle) {
  if (network == AstraNetwork::Ns3) return ns3_topology(t);
  if (network == AstraNetwork::Analytical || astra_dimensions(t)) return std::nullopt;
  try {
    return ns3_topology(t);
  } catch (const Error& e) {
    bundle.notes.push_back(
        fmt::format("written for the analytical network, not ns-3: {}", e.what()));
    return std::nullopt;
  }
}

}  // namespace

std::string nearest_network_words(const AstraBundle& b) {
  return b.below_bound < 0 ? "on the nearest network"
                           : fmt::format(
                                 "on the nearest network, below the topology's lower "
                                 "bound of {}",
                                 format_time(b.below_bound));
}

AstraNetwork parse_astra_network(std::string_view name) {
  if (name == "auto") return AstraNetwork::Auto;
  if (name == "analytical") return AstraNetwork::Analytical;
  if (name == "ns3") return AstraNetwork::Ns3;
  throw Error(fmt::format("unknown ASTRA-sim network '{}' (auto, analytical, ns3)", name));
}

AstraTime astra_sim_time(const synth::Algorithm& a, const topo::Topology& t,
                         const AstraBundleOptions& options) {
  if (!a.protocol.empty()) {  // as stage_astra_bundle writes it: its bytes on the wire
    return astra_sim_time(*synth::on_the_wire(t, a), synth::wire_topology(t, a), options);
  }
  AstraBundle scratch;  // the notes the network's choice leaves (unused here)
  const std::optional<Ns3Topology> ns3 = ns3_if_runs(options.network, t, scratch);
  chakra::GraphOptions graph_options = options.graph;
  if (ns3) graph_options.link_waits = chakra::LinkWaits::Queue;
  const chakra::CollectiveGraphPlan graph(a, t, graph_options);  // throws where ASTRA-sim cannot
  AstraTime out;
  if (ns3) {
    out.ns3 = true;
    out.exact_network = ns3->notes.empty();
    out.time = ns3_estimate(a, t);
    return out;
  }
  Network network = astra_network(t, scratch);
  out.exact_network = scratch.exact_network;
  out.time = run_as_astra_sim(graph.node_graph(), t, &network.dims).time;
  return out;
}

AstraBundle stage_astra_bundle(const synth::Algorithm& a, const topo::Topology& t,
                               topo::OutputFolder& out, const std::string& subdir,
                               const AstraBundleOptions& options) {
  // ASTRA-sim has no protocols: an algorithm that runs one is written as the links carry it (its
  // bytes on the wire, at every link's per-step cost under it).
  if (!a.protocol.empty()) {
    const std::optional<synth::Algorithm> wire = synth::on_the_wire(t, a);
    const topo::Topology stepped = synth::wire_topology(t, a);
    AstraBundle b = stage_astra_bundle(*wire, stepped, out, subdir, options);
    if (wire->chunk_bytes != a.chunk_bytes)
      b.notes.push_back(fmt::format(
          "the algorithm runs protocol '{}': the files carry its bytes on the wire ({} a chunk for "
          "{} of data), as ASTRA-sim has no protocols",
          a.protocol, format_bytes(wire->chunk_bytes), format_bytes(a.chunk_bytes)));
    return b;
  }
  const synth::Collective& c = a.collective;
  const std::string name = custom_collective_name(c, t);
  AstraBundle bundle;
  const std::optional<Ns3Topology> ns3 = ns3_if_runs(options.network, t, bundle);
  bundle.ns3 = ns3.has_value();
  chakra::GraphOptions graph_options = options.graph;
  if (bundle.ns3) graph_options.link_waits = chakra::LinkWaits::Queue;
  const chakra::CollectiveGraphPlan graph(a, t, graph_options);
  bundle.claimed_time = synth::collective_time(t, a);

  // The network: the topology's dimensions, or the nearest (then ASTRA-sim's times are its own),
  // or ns-3's files.
  Network network;
  if (ns3) {
    bundle.exact_network = ns3->notes.empty();
    bundle.notes.insert(bundle.notes.end(), ns3->notes.begin(), ns3->notes.end());
    for (std::string& note : ns3_route_notes(a, t)) bundle.notes.push_back(std::move(note));
    bundle.collective.time = -1;
    bundle.ns3_estimate = ns3_estimate(a, t);
    network.dims.resize(1);  // one logical dimension: system.json's rings per dimension
  } else {
    network = astra_network(t, bundle);
    bundle.collective = run_as_astra_sim(graph.node_graph(), t, &network.dims);
    // The nearest network may be faster than the topology could ever be: then its time is no
    // figure for this topology, and that is said.
    if (!bundle.exact_network) {
      const Time bound = synth::lower_bound(t, c, a.chunk_bytes, false).total;
      if (bundle.collective.time < bound) {
        bundle.below_bound = bound;
        bundle.notes.push_back(fmt::format(
            "on the nearest network ASTRA-sim will report about {}, below the lower bound of "
            "'{}', {} (the nearest network is faster than the topology): no figure for it; "
            "--astra-network ns3 runs every NPU, switch and link",
            format_time(bundle.collective.time), topo::one_line(t.name()), format_time(bound)));
      }
    }
    // Queued waits are for networks that queue at links: ASTRA-sim's congestion-aware analytical
    // network, which runs one dimension only (upstream c459ab6 exits with "only support 1-dim
    // topology"), or ns-3.
    bundle.congestion_aware = options.graph.link_waits == chakra::LinkWaits::Queue;
    if (bundle.congestion_aware && network.dims.size() > 1)
      bundle.notes.push_back(
          fmt::format("--chakra-waits queue: run.sh runs ASTRA-sim's congestion-aware analytical "
                      "network, which takes one dimension "
                      "only, and network.yml has {}: run the files on ns-3, or export with "
                      "--chakra-waits bytes for the "
                      "congestion-unaware network",
                      network.dims.size()));
  }

  // The workload: the collective alone (ASTRA-sim's microbenchmark form), or the one given.
  const Bytes size = a.chunk_bytes * c.pieces();
  const Workload workload = bundle_workload(c, name, size, t, options.workload, bundle);

  const auto rel = [&](const std::string& file) { return (fs::path(subdir) / file).string(); };
  chakra::stage_et_set(
      graph.num_ranks(), [&](int r) { return graph.rank_bytes(r); }, out,
      rel("collective/algorithm"));
  chakra::stage_et_set(workload.files, out, rel("workload/" + workload.stem));
  topo::write_file_atomically(out.stage(rel("system.json")),
                              system_json(c.kind, network.dims.size(), options));
  if (bundle.ns3) {
    // The backend reads a flow file and a trace file besides the topology: none of either.
    topo::write_file_atomically(out.stage(rel("ns3/topology.txt")), ns3->text);
    topo::write_file_atomically(out.stage(rel("ns3/config.txt")), ns3_config(*ns3, "ns3"));
    topo::write_file_atomically(out.stage(rel("ns3/flow.txt")), "0\n");
    topo::write_file_atomically(out.stage(rel("ns3/trace.txt")), "0\n");
    topo::write_file_atomically(
        out.stage(rel("logical_topology.json")),
        fmt::format("{{\n  \"logical-dims\": [\"{}\"]\n}}\n", t.num_npus()));
  } else {
    topo::write_file_atomically(out.stage(rel("network.yml")), network.yml);
  }
  topo::write_file_atomically(out.stage(rel("remote_memory.json")),
                              "{\n  \"memory-type\": \"NO_MEMORY_EXPANSION\"\n}\n");
  const std::string script = out.stage(rel("run.sh"));
  topo::write_file_atomically(script, (bundle.ns3 ? ns3_run_script : run_script)(
                                          a, t, bundle, options.workload, size, workload.stem));
  fs::permissions(script, fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                  fs::perm_options::add);
  return bundle;
}

}  // namespace tenet::astra
