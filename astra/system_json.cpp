#include "astra/system_json.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>
#include <set>

#include "chakra/et.hpp"
#include "topo/error.hpp"
#include "topo/io.hpp"
#include "topo/limits.hpp"

namespace tenet::astra {
namespace {

using Json = nlohmann::json;
using sim::RemoteMemory;
using sim::SimConfig;

struct Implementation {
  std::string tenet;   // the baseline for one dimension: ring, direct, rhd, dbt
  bool whole = false;  // the one* forms: a single dimension over every NPU
};

// ASTRA-sim's names (astraccl/CollectiveImplLookup.cc upstream); direct and oneDirect may carry a
// window size ("direct4"), which Tenet's direct does not limit.
Implementation implementation(const std::string& path, const std::string& key,
                              const std::string& name) {
  auto directs = [&](const std::string& prefix) {
    if (name.rfind(prefix, 0) != 0) return false;
    const std::string window = name.substr(prefix.size());
    return window.empty() || window.find_first_not_of("0123456789") == std::string::npos;
  };
  if (name == "ring") return {"ring", false};
  if (name == "oneRing") return {"ring", true};
  if (name == "halvingDoubling") return {"rhd", false};
  if (name == "oneHalvingDoubling") return {"rhd", true};
  if (name == "doubleBinaryTree") return {"dbt", false};
  if (directs("oneDirect")) return {"direct", true};
  if (directs("direct")) return {"direct", false};
  throw Error(fmt::format(
      "{}: {}: unknown collective implementation '{}' (ASTRA-sim's: ring, oneRing, direct, "
      "oneDirect, halvingDoubling, oneHalvingDoubling, doubleBinaryTree)",
      path, key, name));
}

const Json& require(const std::string& path, const Json& j, const std::string& key,
                    bool (Json::*is)() const noexcept, const char* what) {
  const Json& v = j.at(key);
  if (!(v.*is)())
    throw Error(fmt::format("{}: {}: expected {}, got {}", path, key, what, v.dump()));
  return v;
}

Json read_object(const std::string& path, const char* what) {
  const std::string text = topo::read_file(path);
  topo::check_nesting(text, path);
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::exception& e) {
    throw Error(fmt::format("{}: not JSON: {}", path, e.what()));
  }
  if (!j.is_object()) throw Error(fmt::format("{}: an ASTRA-sim {} is a JSON object", path, what));
  return j;
}

// The Chakra prefix of the custom implementation key `custom`: one, naming an ET set.
std::string custom_prefix(const std::string& path, const Json& j, const std::string& custom) {
  const Json& v = require(path, j, custom, &Json::is_array, "a list of one Chakra prefix");
  if (v.size() != 1 || !v[0].is_string())
    throw Error(fmt::format(
        "{}: {}: expected one Chakra prefix (one ET set covers every dimension), got {}", path,
        custom, v.dump()));
  const std::string prefix = v[0].get<std::string>();
  if (!chakra::is_prefix(prefix))  // ASTRA-sim reads it relative to where it runs, as here
    throw Error(fmt::format("{}: {}: '{}' names no Chakra ET set ({} is missing)", path, custom,
                            prefix, chakra::et_path(prefix, 0)));
  return prefix;
}

// Tenet's producer for the native implementations `v` (one per dimension) of `kind`, with notes.
std::string native_algorithm(const std::string& path, const std::string& key, const Json& v,
                             synth::CollectiveKind kind, std::vector<std::string>& notes) {
  if (v.empty()) throw Error(fmt::format("{}: {}: the list is empty", path, key));
  std::vector<Implementation> dims;
  for (const Json& item : v) {
    if (!item.is_string())
      throw Error(fmt::format("{}: {}: {} is not an implementation name", path, key, item.dump()));
    dims.push_back(implementation(path, key, item.get<std::string>()));
  }
  if (kind == synth::CollectiveKind::AllToAll) {
    // A ring per dimension: the hierarchical All-to-All, ASTRA-sim's phases.
    const bool rings = std::all_of(dims.begin(), dims.end(),
                                   [](const Implementation& d) { return d.tenet == "ring"; });
    if (dims.size() > 1 && rings)
      return fmt::format("hierarchical:{}",
                         fmt::join(std::vector<std::string>(dims.size(), "ring"), ","));
    const bool supported =
        dims.size() == 1 && (dims[0].tenet == "ring" || dims[0].tenet == "direct");
    if (!supported)
      notes.push_back(
          fmt::format("{} {}: Tenet's All-to-All baselines are ring (one dimension or one per "
                      "dimension) and direct (pairwise); direct runs instead",
                      key, v.dump()));
    return supported && dims[0].tenet == "ring" ? "ring:1" : "direct";
  }
  if (dims.size() == 1 || dims[0].whole) {
    if (dims.size() > 1)
      notes.push_back(
          fmt::format("{} {}: {} over every NPU, the rest unused", key, v.dump(), dims[0].tenet));
    return dims[0].tenet == "ring" ? "ring:1" : dims[0].tenet;
  }
  std::vector<std::string> per;
  for (size_t d = 0; d < dims.size(); ++d) {
    std::string impl = dims[d].tenet;
    if (impl == "dbt") {
      notes.push_back(fmt::format(
          "{}: doubleBinaryTree in dimension {}: Tenet's hierarchical runs ring, direct or "
          "rhd per dimension; ring runs there",
          key, d + 1));
      impl = "ring";
    }
    per.push_back(impl);
  }
  return fmt::format("hierarchical:{}", fmt::join(per, ","));
}

// The <coll>-implementation(-custom) keys into s.algorithms; the custom ones' kinds returned.
std::set<synth::CollectiveKind> read_implementations(const std::string& path, const Json& j,
                                                     AstraSystem& s, std::set<std::string>& read) {
  std::set<synth::CollectiveKind> custom_kinds;
  const std::vector<std::pair<synth::CollectiveKind, std::string>> kinds{
      {synth::CollectiveKind::AllReduce, "all-reduce"},
      {synth::CollectiveKind::AllGather, "all-gather"},
      {synth::CollectiveKind::ReduceScatter, "reduce-scatter"},
      {synth::CollectiveKind::AllToAll, "all-to-all"}};
  for (const auto& [kind, name] : kinds) {
    const std::string key = name + "-implementation", custom = key + "-custom";
    if (j.contains(custom)) {
      read.insert(custom);
      s.algorithms[kind] = custom_prefix(path, j, custom);
      custom_kinds.insert(kind);
      if (j.contains(key)) {
        read.insert(key);
        s.notes.push_back(fmt::format("{} wins over {}", custom, key));
      }
      continue;
    }
    if (!j.contains(key)) continue;
    read.insert(key);
    const Json& v =
        require(path, j, key, &Json::is_array, "a list of implementations, one per dimension");
    s.algorithms[kind] = native_algorithm(path, key, v, kind, s.notes);
  }
  return custom_kinds;
}

// preferred-dataset-splits and active-chunks-per-dimension into s.dataset_splits, with notes.
void read_splits(const std::string& path, const Json& j, AstraSystem& s,
                 std::set<std::string>& read, const std::set<synth::CollectiveKind>& custom_kinds) {
  // Native implementations split each collective (Sys::generate_collective upstream); custom ones
  // run whole, as there.
  // A whole number in 1..kMaxChunksPerNpu, or `fallback` when absent.
  const auto count = [&](const char* key, int fallback) {
    if (!j.contains(key)) return fallback;
    read.insert(key);
    const Json& v = require(path, j, key, &Json::is_number_integer, "a whole number");
    if (v.get<int64_t>() < 1 || v.get<int64_t>() > topo::kMaxChunksPerNpu)
      throw Error(
          fmt::format("{}: {}: {} is outside 1..{}", path, key, v.dump(), topo::kMaxChunksPerNpu));
    return v.get<int>();
  };
  SimConfig::Splits splits;
  splits.splits = count("preferred-dataset-splits", 1);
  splits.active = count("active-chunks-per-dimension", 1);
  // Which waiting piece a dimension's queue runs next (Sys::get_priority, insert_stream).
  if (j.contains("scheduling-policy") && j["scheduling-policy"].is_string() &&
      (j["scheduling-policy"] == "LIFO" || j["scheduling-policy"] == "FIFO")) {
    read.insert("scheduling-policy");
    splits.newest_first = j["scheduling-policy"] == "LIFO";
    s.notes.push_back(fmt::format(
        "scheduling-policy {}: over several dimensions, a dimension runs the {} waiting piece "
        "first",
        j["scheduling-policy"].dump(), splits.newest_first ? "newest" : "oldest"));
  }
  if (!j.contains("preferred-dataset-splits"))
    s.notes.push_back(
        "no preferred-dataset-splits: ASTRA-sim divides by it (it requires the key); Tenet runs "
        "each "
        "collective whole");
  bool several_dimensions = false;
  for (const auto& [kind, algo] : s.algorithms)
    if (!custom_kinds.count(kind)) {
      s.dataset_splits[kind] = splits;
      several_dimensions |= algo.starts_with("hierarchical");
    }
  if (!s.dataset_splits.empty())
    s.notes.push_back(fmt::format(
        "preferred-dataset-splits {}, active-chunks-per-dimension {}: the native collectives run "
        "as {} pieces, {} at a time, each whole (one chunk per NPU){}",
        splits.splits, splits.active, splits.splits, splits.active,
        several_dimensions ? "; over several dimensions each piece runs a phase per "
                             "dimension, each dimension at most that many pieces at once, so "
                             "one piece's phase overlaps another's on the next dimension, as "
                             "in ASTRA-sim"
                           : ""));
}

// roofline-enabled, peak-perf and local-mem-bw into `s`, with notes.
void read_roofline(const std::string& path, const Json& j, AstraSystem& s,
                   std::set<std::string>& read) {
  const bool roofline = j.contains("roofline-enabled") && j["roofline-enabled"].is_number() &&
                        j["roofline-enabled"] != 0;
  if (j.contains("roofline-enabled")) {
    read.insert("roofline-enabled");
    require(path, j, "roofline-enabled", &Json::is_number, "0 or 1");
  }
  s.roofline = roofline;
  if (!roofline)
    s.notes.push_back(
        "no roofline-enabled: COMP nodes take their duration_micros, 1 ns where they have none "
        "(num_ops and tensor_size only), as ASTRA-sim replays them; roofline-enabled 1 and "
        "peak-perf give them a roofline");
  if (j.contains("peak-perf")) {
    read.insert("peak-perf");
    const double tflops = require(path, j, "peak-perf", &Json::is_number, "TFLOP/s").get<double>();
    if (!(tflops > 0 && tflops < 1e9))
      throw Error(fmt::format("{}: peak-perf: {} TFLOP/s is not a peak", path, tflops));
    if (roofline)
      s.peak_flops = tflops * 1e12;
    else
      s.notes.push_back(
          "peak-perf without roofline-enabled: not used (ASTRA-sim replays "
          "durations, and so does Tenet)");
  }
  if (j.contains("local-mem-bw")) {
    read.insert("local-mem-bw");
    const double gbps = require(path, j, "local-mem-bw", &Json::is_number, "GB/s").get<double>();
    // At least a byte per second: the bandwidth is a whole number of bytes per second, and one
    // that rounds to 0 would leave the simulator's default in its place.
    if (!(gbps >= 1e-9 && gbps < 1e9))
      throw Error(fmt::format("{}: local-mem-bw: {} GB/s is not a bandwidth (1 B/s to 1 EB/s)",
                              path, gbps));
    s.memory_bandwidth = std::max<Bandwidth>(1, static_cast<Bandwidth>(gbps * 1e9));
    s.endpoints.reduce_memory_bandwidth = s.memory_bandwidth;
    s.notes.push_back(fmt::format(
        "local-mem-bw {} GB/s: the memory bandwidth of the roofline, of MEM nodes and of "
        "collectives' reductions (three passes over each reduced chunk)",
        gbps));
  } else {
    // PacketBundle::call divides by local_mem_bw, 0 when absent: ASTRA-sim's reductions then take
    // an undefined time (a double infinity cast to an integer).
    s.notes.push_back(
        "no local-mem-bw: ASTRA-sim's reductions divide by zero without it; Tenet's are free");
  }
}

}  // namespace

AstraRemoteMemory read_astra_remote_memory(const std::string& path) {
  const Json j = read_object(path, "remote-memory configuration");
  AstraRemoteMemory out;
  std::set<std::string> read{"memory-type"};
  if (!j.contains("memory-type")) throw Error(fmt::format("{}: memory-type is missing", path));
  const std::string type =
      require(path, j, "memory-type", &Json::is_string, "a memory type").get<std::string>();
  RemoteMemory m;
  if (type == "NO_MEMORY_EXPANSION") {
    out.notes.push_back("NO_MEMORY_EXPANSION: MEM nodes use local memory");
  } else if (type == "PER_NPU_MEMORY_EXPANSION") {
    m.kind = RemoteMemory::Kind::PerNpu;
  } else if (type == "PER_NODE_MEMORY_EXPANSION") {
    m.kind = RemoteMemory::Kind::PerNode;
  } else if (type == "MEMORY_POOL") {
    m.kind = RemoteMemory::Kind::Pool;
  } else {
    throw Error(
        fmt::format("{}: memory-type: unknown '{}' (NO_MEMORY_EXPANSION, PER_NPU_MEMORY_EXPANSION, "
                    "PER_NODE_MEMORY_EXPANSION, MEMORY_POOL)",
                    path, type));
  }
  auto number = [&](const char* key, double lo, double hi) {
    read.insert(key);
    if (!j.contains(key))
      throw Error(fmt::format("{}: {} is missing (memory-type {})", path, key, type));
    const double v = require(path, j, key, &Json::is_number, "a number").get<double>();
    if (!(v >= lo && v <= hi))
      throw Error(
          fmt::format("{}: {}: {} is outside [{}, {}]", path, key, j.at(key).dump(), lo, hi));
    return v;
  };
  if (type != "NO_MEMORY_EXPANSION") {
    m.latency = static_cast<Time>(number("remote-mem-latency", 0, 1e12) * 1000);  // ns
    m.bandwidth = static_cast<Bandwidth>(number("remote-mem-bw", 1e-9, 1e9) *
                                         1e9);  // GB/s, as ASTRA-sim: 10^9 B/s
    if (m.bandwidth < 1) throw Error(fmt::format("{}: remote-mem-bw: below 1 B/s", path));
    if (m.kind == RemoteMemory::Kind::PerNode) {
      m.npus_per_node =
          static_cast<int>(number("num-npus-per-node", 1, static_cast<double>(topo::kMaxNodes)));
      if (j.contains("num-nodes")) {
        read.insert("num-nodes");
        out.notes.push_back(
            fmt::format("num-nodes {}: nodes are the workload's ranks in groups of {}",
                        j["num-nodes"].dump(), m.npus_per_node));
      }
    }
    out.memory = m;
  }
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!read.count(it.key()))
      out.notes.push_back(fmt::format("unknown key '{}': ignored", it.key()));
  return out;
}

AstraSystem read_astra_system(const std::string& path) {
  const Json j = read_object(path, "system configuration");
  AstraSystem s;
  std::set<std::string> read;
  const std::set<synth::CollectiveKind> custom_kinds = read_implementations(path, j, s, read);
  read_splits(path, j, s, read, custom_kinds);
  read_roofline(path, j, s, read);
  if (j.contains("endpoint-delay")) {
    read.insert("endpoint-delay");
    const double ns = require(path, j, "endpoint-delay", &Json::is_number, "ns").get<double>();
    if (!(ns >= 0 && ns <= 3.6e12))
      throw Error(fmt::format("{}: endpoint-delay: {} ns is not a delay", path, ns));
    s.endpoints.delay = static_cast<Time>(std::llround(ns * 1000));
  }
  s.notes.push_back(fmt::format("endpoint-delay {}: at each end of every message of a collective{}",
                                format_time(s.endpoints.delay),
                                j.contains("endpoint-delay") ? "" : " (ASTRA-sim's default)"));
  if (j.contains("collective-optimization") && j["collective-optimization"] == "localBWAware") {
    read.insert("collective-optimization");
    s.notes.push_back(
        "collective-optimization \"localBWAware\": an All-Reduce over several dimensions "
        "reduce-scatters up them, all-reduces the last and all-gathers back, as Tenet's "
        "hierarchical one");
  }
  // Known to ASTRA-sim, not modelled by Tenet: named with their values.
  for (const char* key :
       {"scheduling-policy", "collective-optimization", "intra-dimension-scheduling",
        "inter-dimension-scheduling", "local-reduction-delay", "model-shared-bus", "boost-mode",
        "replay-only", "track-local-mem", "local-mem-trace-filename", "trace-enabled", "L", "o",
        "g", "G"})
    if (j.contains(key) && !read.count(key)) {
      read.insert(key);
      s.notes.push_back(fmt::format("{} {}: not modelled by Tenet", key, j[key].dump()));
    }
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!read.count(it.key()))
      s.notes.push_back(fmt::format("unknown key '{}': ignored", it.key()));
  return s;
}

std::vector<std::string> apply_astra_system(const AstraSystem& sys, SimConfig& cfg,
                                            bool keep_in_flight) {
  for (const auto& [kind, algo] : sys.algorithms) cfg.algorithms.try_emplace(kind, algo);
  // Dataset splits for the collectives that still run ASTRA-sim's native algorithm (not one that
  // `cfg` named).
  for (const auto& [kind, splits] : sys.dataset_splits)
    if (cfg.algorithms[kind] == sys.algorithms.at(kind)) cfg.dataset_splits[kind] = splits;
  if (sys.peak_flops > 0) cfg.peak_flops = sys.peak_flops;
  cfg.roofline = sys.roofline;
  if (sys.memory_bandwidth > 0) cfg.memory_bandwidth = sys.memory_bandwidth;
  cfg.endpoints = sys.endpoints;
  std::vector<std::string> notes = sys.notes;
  if (!keep_in_flight) {
    cfg.max_in_flight = 1;
    notes.push_back(
        "one send or collective in flight per rank, as ASTRA-sim runs them (--in-flight N to "
        "change)");
  }
  return notes;
}

std::vector<std::string> apply_astra_remote_memory(const AstraRemoteMemory& mem, SimConfig& cfg) {
  cfg.remote_memory = mem.memory;
  return mem.notes;
}

}  // namespace tenet::astra
