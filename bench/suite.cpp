#include "bench/suite.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <set>

#include "synth/baselines.hpp"
#include "topo/error.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"
#include "topo/presets.hpp"

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

const std::set<std::string> kKeys{"name", "topologies", "collectives", "sizes", "algorithms",
                                  "chunks", "restarts", "networks", "quick"};

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
  if (!n.IsScalar()) throw Error(fmt::format("an entry of '{}' must be a single value", key), where(file, n));
  return n.Scalar();
}

int whole_number(const YAML::Node& n, const std::string& file, std::string_view key, int lo, int hi) {
  const std::string s = scalar(n, file, key);
  int v = 0;
  try {
    size_t used = 0;
    v = std::stoi(s, &used);
    if (used != s.size()) throw std::invalid_argument(s);
  } catch (const std::exception&) {
    throw Error(fmt::format("'{}' must be a whole number, not '{}'", key, s), where(file, n));
  }
  if (v < lo || v > hi) throw Error(fmt::format("'{}' must lie in [{}, {}], not {}", key, lo, hi, v), where(file, n));
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

SuiteTopology parse_topology(const YAML::Node& n, const std::string& file) {
  if (n.IsMap()) {
    YAML::Emitter out;
    out << n;
    const int line = n.Mark().line;
    // Pad with blank lines so errors inside the inline topology carry the suite's line numbers.
    topo::Topology t = topo::parse_yaml(std::string(static_cast<size_t>(std::max(line, 0)), '\n') + out.c_str(), file);
    return {t.name(), std::move(t)};
  }
  const std::string s = scalar(n, file, "topologies");
  std::string target = s;
  const bool is_file = std::filesystem::exists(s) || (!topo::looks_like_spec(s) && !topo::preset_text(s));  // as topo::load decides
  if (is_file && std::filesystem::path(s).is_relative() && !file.empty() && file.front() != '<')
    target = (std::filesystem::path(file).parent_path() / s).string();
  if (is_file && !std::filesystem::exists(target)) {
    const std::string why = topo::not_a_topology(s);
    throw Error(why.empty() ? fmt::format("topology '{}': no such file (a generator spec looks like torus2d:4x4; quote "
                                          "specs with commas inside a [...] list)",
                                          s)
                            : why,
                where(file, n));
  }
  try {
    return {s, topo::load(target)};
  } catch (const Error& e) {
    if (!e.where().file.empty()) throw;  // an error inside that file says where itself
    throw Error(fmt::format("topology '{}': {}", s, e.message()), where(file, n));
  }
}

}  // namespace

std::string_view default_suite_yaml() { return kDefault; }

Suite parse_suite(std::string_view text, const std::string& file, bool quick) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    throw Error(fmt::format("not valid YAML: {}", e.msg), {file, e.mark.line + 1, e.mark.column + 1});
  }
  if (!root.IsMap()) throw Error("a suite is a YAML map with topologies, collectives, sizes, ...", where(file, root));
  for (const auto& kv : root) {
    const std::string key = kv.first.Scalar();
    if (!kKeys.count(key))
      throw Error(fmt::format("unknown key '{}' (known: name, topologies, collectives, sizes, algorithms, chunks, "
                              "restarts, networks, quick)",
                              key),
                  where(file, kv.first));
  }
  YAML::Node q = root["quick"];
  if (q && !q.IsMap()) throw Error("'quick' must be a map of the keys it replaces", where(file, q));
  if (q)
    for (const auto& kv : q)
      if (!kKeys.count(kv.first.Scalar()) || kv.first.Scalar() == "quick" || kv.first.Scalar() == "name")
        throw Error(fmt::format("'{}' cannot be replaced by quick", kv.first.Scalar()), where(file, kv.first));
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
  for (const YAML::Node& n : items(required("topologies"), file, "topologies"))
    s.topologies.push_back(parse_topology(n, file));
  for (const YAML::Node& n : items(required("collectives"), file, "collectives"))
    s.collectives.push_back(at(n, file, [&] { return synth::parse_collective(scalar(n, file, "collectives")); }));
  for (const YAML::Node& n : items(required("sizes"), file, "sizes")) {
    const Bytes b = at(n, file, [&] { return parse_bytes(scalar(n, file, "sizes")); });
    if (b < 1) throw Error("a size must be at least 1 byte", where(file, n));
    s.sizes.push_back(b);
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
      s.chunks.push_back(c.IsScalar() && c.Scalar() == "auto" ? 0 : whole_number(c, file, "chunks", 1, 4096));
  else
    s.chunks = {0};  // auto, as tenet synth and tenet sim default to
  if (YAML::Node n = get("restarts")) s.restarts = whole_number(n, file, "restarts", 1, 1024);
  if (YAML::Node n = get("networks"); n && !(n.IsSequence() && n.size() == 0))
    for (const YAML::Node& x : items(n, file, "networks"))
      s.networks.push_back(at(x, file, [&] { return sim::parse_network(scalar(x, file, "networks")); }));
  return s;
}

Suite load_suite(const std::string& path, bool quick) { return parse_suite(topo::read_file(path), path, quick); }

}  // namespace tenet::bench
