#include "bench/suite.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "chakra/et.hpp"
#include "sim/workload.hpp"
#include "synth/baselines/baselines.hpp"
#include "topo/error.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"
#include "topo/limits.hpp"
#include "topo/presets.hpp"
#include "topo/suggest.hpp"

namespace tenet::bench {
namespace {

constexpr std::string_view kDefault = R"(# Tenet's built-in benchmark suite.
name: default
topologies:
  - ring:16
  - mesh2d:4x4
  - torus2d:8x8
  - mesh3d:4x4x4
  - torus3d:4x4x4
  - hypercube:64
  - switch:16
  - leafspine:4x8,spines=2            # 2:1 oversubscribed fat-tree
  - nvcluster:4x8,net=rail            # NVSwitch nodes on a 50 GB/s rail network
  - hetmesh2d:8x8                     # x links 4x faster than y links
  - name: two-islands                 # two fully connected islands, one slow bridge
    defaults: {bw: 100GB/s, lat: 0.5us}
    npus: [a0, a1, a2, a3, b0, b1, b2, b3]
    links:
      - {src: "a?", dst: "a?", bidirectional: false}
      - {src: "b?", dst: "b?", bidirectional: false}
      - {src: a0, dst: b0, bw: 25GB/s, lat: 2us, name: bridge}
collectives: [all-reduce, all-gather, reduce-scatter, all-to-all]
sizes: [1MiB, 16MiB, 256MiB, 1GiB]
algorithms: all
chunks: [auto]
restarts: 1
networks: []
quick:
  topologies: [ring:8, torus2d:4x4, switch:8, "nvcluster:2x8,net=rail"]
  collectives: [all-reduce, all-gather]
  sizes: [1MiB, 256MiB]
  restarts: 1
)";

const std::set<std::string> kKeys{"name",       "topologies",     "collectives", "sizes",
                                  "algorithms", "chunks",         "restarts",    "networks",
                                  "workloads",  "sim-algorithms", "quick"};

Location where(const std::string& file, const YAML::Node& n) {
  const YAML::Mark m = n.Mark();
  return m.is_null() ? Location(file) : Location(file, m.line + 1, m.column + 1);
}

// A list, or a single scalar taken as a one-element list.
std::vector<YAML::Node> items(const YAML::Node& n, const std::string& file, std::string_view key) {
  if (n.IsScalar()) return {n};
  if (!n.IsSequence() || n.size() == 0)
    throw Error(fmt::format("'{}' must be a non-empty list", key), where(file, n));
  return {n.begin(), n.end()};
}

std::string scalar(const YAML::Node& n, const std::string& file, std::string_view key) {
  if (!n.IsScalar())
    throw Error(fmt::format("an entry of '{}' must be a single value", key), where(file, n));
  return n.Scalar();
}

int whole_number(const YAML::Node& n, const std::string& file, std::string_view key, int lo,
                 int hi) {
  const std::string s = scalar(n, file, key);
  int v = 0;
  try {
    size_t used = 0;
    v = std::stoi(s, &used);
    if (used != s.size()) throw std::invalid_argument(s);
  } catch (const std::exception&) {
    throw Error(fmt::format("'{}' must be a whole number, not '{}'", key, s), where(file, n));
  }
  if (v < lo || v > hi)
    throw Error(fmt::format("'{}' must lie in [{}, {}], not {}", key, lo, hi, v), where(file, n));
  return v;
}

// Runs `parse` and puts the node's file and line on an error that has none of its own.
template <class F>
auto at(const YAML::Node& n, const std::string& file, F&& parse) {
  try {
    return parse();
  } catch (const Error& e) {
    if (!e.where().file.empty()) throw;
    throw Error(e.message(), where(file, n));
  }
}

// A path written in the suite, relative to the suite file's folder.
std::string anchored(const std::string& path, const std::string& file) {
  if (std::filesystem::path(path).is_absolute() || file.empty() || file.front() == '<') return path;
  return (std::filesystem::path(file).parent_path() / path).string();
}

SuiteTopology parse_topology(const YAML::Node& n, const std::string& file) {
  if (n.IsMap() && n["ranks"]) {  // a process group: {topology: ..., ranks: LIST}
    for (const auto& kv : n)
      if (const std::string key = kv.first.Scalar(); key != "topology" && key != "ranks")
        throw Error(fmt::format("unknown key '{}' in a process group entry (topology, ranks)", key),
                    where(file, kv.first));
    if (!n["topology"])
      throw Error("a process group entry needs 'topology' beside 'ranks'", where(file, n));
    SuiteTopology g = parse_topology(n["topology"], file);
    const std::string list = scalar(n["ranks"], file, "ranks");
    try {
      g.ranks = synth::parse_ranks(list, g.topology.num_npus());
    } catch (const Error& e) {
      throw Error(fmt::format("ranks of {}: {}", g.label, e.message()), where(file, n["ranks"]));
    }
    g.label += " ranks " + list;
    return g;
  }
  if (n.IsMap()) {
    YAML::Emitter out;
    out << n;
    const int line = n.Mark().line;
    // Pad with blank lines so errors inside the inline topology carry the suite's line numbers.
    topo::Topology t = topo::parse_yaml(
        std::string(static_cast<size_t>(std::max(line, 0)), '\n') + out.c_str(), file);
    return {t.name(), std::move(t), {}};
  }
  const std::string s = scalar(n, file, "topologies");
  std::error_code ec;  // a name too long for a path is not a file either
  const bool is_file =
      std::filesystem::exists(s, ec) ||
      (!topo::looks_like_spec(s) && !topo::preset_text(s));  // as topo::load decides
  const std::string target = is_file ? anchored(s, file) : s;
  if (is_file && !std::filesystem::exists(target, ec)) {
    const std::string why = topo::not_a_topology(s);
    throw Error(
        why.empty()
            ? fmt::format(
                  "topology '{}': no such file (a generator spec looks like torus2d:4x4; quote "
                  "specs with commas inside a [...] list)",
                  s)
            : why,
        where(file, n));
  }
  try {
    // (A file the suite names is its author's: read as a regular file, never through a link.)
    return {s, is_file ? topo::load_named_file(target) : topo::load(target), {}};
  } catch (const Error& e) {
    if (!e.where().file.empty()) throw;  // an error inside that file says where itself
    throw Error(fmt::format("topology '{}': {}", s, e.message()), where(file, n));
  }
}

SuiteWorkload chakra_workload(const YAML::Node& n, const std::string& prefix,
                              const std::string& file) {
  SuiteWorkload w;
  w.label = prefix;
  w.prefix = anchored(prefix, file);
  if (!chakra::is_prefix(w.prefix)) {
    const auto& presets = sim::model_presets();
    throw Error(
        fmt::format("workload '{}': not a model preset{} (presets: {}) and no Chakra ET file {}",
                    prefix, did_you_mean(prefix, presets), fmt::join(presets, ", "),
                    chakra::et_path(w.prefix, 0)),
        where(file, n));
  }
  return w;
}

SuiteWorkload parse_workload(const YAML::Node& n, const std::string& file) {
  if (n.IsScalar()) {
    if (!at(n, file, [&] { return sim::is_model_preset(n.Scalar()); }))
      return chakra_workload(n, n.Scalar(), file);
    SuiteWorkload w;
    w.label = w.preset = n.Scalar();
    return w;
  }
  if (!n.IsMap())
    throw Error(
        "a workload is a model preset, a Chakra ET prefix, or a map such as {model: gpt3-175b, tp: "
        "8} or "
        "{chakra: traces/rank}",
        where(file, n));
  static const std::set<std::string> keys{"model",        "chakra",   "name",  "tp",     "pp",
                                          "microbatches", "schedule", "batch", "seq-len"};
  for (const auto& kv : n)
    if (!keys.count(kv.first.Scalar()))
      throw Error(fmt::format("unknown workload key '{}'{} (known: model, chakra, name, tp, pp, "
                              "microbatches, schedule, "
                              "batch, seq-len)",
                              kv.first.Scalar(),
                              did_you_mean(kv.first.Scalar(),
                                           std::vector<std::string>(keys.begin(), keys.end()))),
                  where(file, kv.first));
  if (static_cast<bool>(n["model"]) == static_cast<bool>(n["chakra"]))
    throw Error(
        "a workload map names exactly one of 'model' (a preset) and 'chakra' (an ET prefix)",
        where(file, n));
  SuiteWorkload w;
  if (n["chakra"]) {
    for (const char* k : {"tp", "pp", "microbatches", "schedule", "batch", "seq-len"})
      if (n[k])
        throw Error(
            fmt::format(
                "'{}' shapes a model preset; a Chakra ET workload carries its own layout and sizes",
                k),
            where(file, n[k]));
    w = chakra_workload(n["chakra"], scalar(n["chakra"], file, "chakra"), file);
  } else {
    w.preset = scalar(n["model"], file, "model");
    at(n["model"], file, [&] { return sim::model_preset(w.preset); });  // a known preset
    if (n["tp"]) w.tp = whole_number(n["tp"], file, "tp", 1, 1 << 20);
    if (n["pp"]) w.pp = whole_number(n["pp"], file, "pp", 1, 1 << 20);
    if (n["microbatches"])
      w.microbatches = whole_number(n["microbatches"], file, "microbatches", 1, 1 << 20);
    if (n["schedule"])
      w.schedule = at(n["schedule"], file,
                      [&] { return sim::parse_schedule(scalar(n["schedule"], file, "schedule")); });
    if (n["batch"]) w.shape.batch = whole_number(n["batch"], file, "batch", 1, 1 << 24);
    if (n["seq-len"]) w.shape.sequence = whole_number(n["seq-len"], file, "seq-len", 1, 1 << 24);
    at(n, file, [&] {
      return sim::batch_shape(w.preset, w.shape, w.microbatches);
    });  // a sequence length only for transformers
    w.label = w.preset;
    if (w.tp > 1) w.label += fmt::format(" tp{}", w.tp);
    if (w.pp > 1) w.label += fmt::format(" pp{}", w.pp);
    if (w.microbatches > 1) w.label += fmt::format(" mb{}", w.microbatches);
    if (w.schedule == sim::PipelineSchedule::GPipe) w.label += " gpipe";
    if (w.shape.batch > 0) w.label += fmt::format(" batch{}", w.shape.batch);
    if (w.shape.sequence > 0) w.label += fmt::format(" seq{}", w.shape.sequence);
  }
  if (n["name"]) w.label = scalar(n["name"], file, "name");
  return w;
}

}  // namespace

std::string_view default_suite_yaml() { return kDefault; }

Suite parse_suite(std::string_view text, const std::string& file, bool quick) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    throw Error(fmt::format("not valid YAML: {}", e.msg),
                {file, e.mark.line + 1, e.mark.column + 1});
  }
  if (!root.IsMap())
    throw Error("a suite is a YAML map with topologies, collectives, sizes, ...",
                where(file, root));
  for (const auto& kv : root) {
    const std::string key = kv.first.Scalar();
    if (!kKeys.count(key))
      throw Error(
          fmt::format("unknown key '{}'{} (known: name, topologies, collectives, sizes, "
                      "algorithms, chunks, "
                      "restarts, networks, workloads, sim-algorithms, quick)",
                      key, did_you_mean(key, std::vector<std::string>(kKeys.begin(), kKeys.end()))),
          where(file, kv.first));
  }
  YAML::Node q = root["quick"];
  if (q && !q.IsMap()) throw Error("'quick' must be a map of the keys it replaces", where(file, q));
  if (q)
    for (const auto& kv : q)
      if (!kKeys.count(kv.first.Scalar()) || kv.first.Scalar() == "quick" ||
          kv.first.Scalar() == "name")
        throw Error(fmt::format("'{}' cannot be replaced by quick", kv.first.Scalar()),
                    where(file, kv.first));
  auto get = [&](const char* key) -> YAML::Node {
    if (quick && q && q[key]) return q[key];
    return root[key];
  };
  auto required = [&](const char* key) {
    YAML::Node n = get(key);
    if (!n) throw Error(fmt::format("the suite has no '{}'", key), Location(file));
    return n;
  };

  Suite s;
  s.name = root["name"] ? scalar(root["name"], file, "name")
                        : std::filesystem::path(file).stem().string();
  if (quick) s.name += " (quick)";
  for (const YAML::Node& n : items(required("topologies"), file, "topologies")) {
    s.topologies.push_back(parse_topology(n, file));
    // A collective needs two ranks: a smaller topology is bad input, not a failed algorithm.
    if (s.topologies.back().num_ranks() < 2)
      throw Error(fmt::format("topology '{}' has {} NPU{}: a collective needs at least two",
                              s.topologies.back().label, s.topologies.back().num_ranks(),
                              s.topologies.back().num_ranks() == 1 ? "" : "s"),
                  where(file, n));
    // Results, tables and plots are keyed by the label: two alike would show one's times as both.
    for (size_t i = 0; i + 1 < s.topologies.size(); ++i)
      if (s.topologies[i].label == s.topologies.back().label)
        throw Error(fmt::format("topology '{}' is listed twice (entries {} and {}): give each a "
                                "different name",
                                s.topologies.back().label, i + 1, s.topologies.size()),
                    where(file, n));
  }
  if (YAML::Node n = get("workloads"); n && !(n.IsSequence() && n.size() == 0)) {
    for (const YAML::Node& w : items(n, file, "workloads")) {
      s.workloads.push_back(parse_workload(w, file));
      for (size_t i = 0; i + 1 < s.workloads.size(); ++i)
        if (s.workloads[i].label == s.workloads.back().label)
          throw Error(fmt::format("two workloads are called '{}' (give one a 'name')",
                                  s.workloads.back().label),
                      where(file, w));
    }
  }
  if (YAML::Node n = get("sim-algorithms")) {
    s.sim_algorithms.clear();
    for (const YAML::Node& x : items(n, file, "sim-algorithms")) {
      const std::string a = scalar(x, file, "sim-algorithms");
      if (a != "tenet") at(x, file, [&] { return synth::parse_baseline(a); });
      if (std::find(s.sim_algorithms.begin(), s.sim_algorithms.end(), a) == s.sim_algorithms.end())
        s.sim_algorithms.push_back(a);
    }
  }
  // Collectives and sizes: required unless the suite only simulates workloads.
  if (s.workloads.empty() || get("collectives") || get("sizes")) {
    for (const YAML::Node& n : items(required("collectives"), file, "collectives"))
      s.collectives.push_back(
          at(n, file, [&] { return synth::parse_collective(scalar(n, file, "collectives")); }));
    for (const YAML::Node& n : items(required("sizes"), file, "sizes")) {
      const Bytes b = at(n, file, [&] { return parse_bytes(scalar(n, file, "sizes")); });
      if (b < 1) throw Error("a size must be at least 1 byte", where(file, n));
      s.sizes.push_back(b);
    }
  }
  YAML::Node algos = get("algorithms");
  if (!algos) {
    s.algorithms = {"all"};
  } else {
    for (const YAML::Node& n : items(algos, file, "algorithms")) {
      const std::string a = scalar(n, file, "algorithms");
      if (a != "all" && a != "tenet") at(n, file, [&] { return synth::parse_baseline(a); });
      s.algorithms.push_back(a);
    }
  }
  if (YAML::Node n = get("chunks"))
    for (const YAML::Node& c : items(n, file, "chunks"))
      s.chunks.push_back(c.IsScalar() && c.Scalar() == "auto"
                             ? 0
                             : whole_number(c, file, "chunks", 1, topo::kMaxChunksPerNpu));
  else
    s.chunks = {0};  // auto, as tenet synth and tenet sim default to
  if (YAML::Node n = get("restarts")) s.restarts = whole_number(n, file, "restarts", 1, 1024);
  if (YAML::Node n = get("networks"); n && !(n.IsSequence() && n.size() == 0))
    for (const YAML::Node& x : items(n, file, "networks"))
      s.networks.push_back(
          at(x, file, [&] { return sim::parse_network(scalar(x, file, "networks")); }));
  return s;
}

Suite load_suite(const std::string& path, bool quick) {
  return parse_suite(topo::read_file(path), path, quick);
}

}  // namespace tenet::bench
