// The Tenet topology format (YAML or JSON) and ASTRA-sim's network.yml.
#include <fmt/format.h>
#include <fnmatch.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>

#include "topo/generators.hpp"
#include "topo/io.hpp"
#include "topo/limits.hpp"

namespace tenet::topo {
namespace {

class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  Location at(const YAML::Node& n) const {
    const YAML::Mark m = n.Mark();
    if (m.is_null()) return {file_};
    return {file_, m.line + 1, m.column + 1};
  }
  Error error(const YAML::Node& n, const std::string& message) const {
    return Error(message, at(n));
  }
  std::string scalar(const YAML::Node& n, const std::string& what) const {
    if (!n.IsScalar()) throw error(n, fmt::format("{} must be a single value", what));
    // Every string kept (names, descriptions, sources) is printed again, in JSON too.
    if (size_t at = 0; !valid_utf8(n.Scalar(), &at))
      throw error(n, fmt::format("{} is not valid UTF-8 (byte 0x{:02X} at offset {})", what,
                                 static_cast<unsigned char>(n.Scalar()[at]), at));
    return n.Scalar();
  }
  int64_t whole(const YAML::Node& n, const std::string& what, int64_t lo, int64_t hi) const {
    std::string s = scalar(n, what);
    int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size())
      throw error(n, fmt::format("{} must be a whole number, not '{}'", what, s));
    if (v < lo || v > hi)
      throw error(n, fmt::format("{} must lie in [{}, {}], got {}", what, lo, hi, v));
    return v;
  }
  double number(const YAML::Node& n, const std::string& what) const {
    std::string s = scalar(n, what);
    double v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v))
      throw error(n, fmt::format("{} must be a number, not '{}'", what, s));
    return v;
  }
  bool boolean(const YAML::Node& n, const std::string& what) const {
    std::string s = scalar(n, what);
    if (s == "true") return true;
    if (s == "false") return false;
    throw error(n, fmt::format("{} must be true or false, not '{}'", what, s));
  }
  template <typename F>
  auto with_location(const YAML::Node& n, F&& f) const {
    try {
      return f();
    } catch (const Error& e) {
      throw e.located(at(n));
    }
  }
  Bandwidth bandwidth(const YAML::Node& n, const std::string& what) const {
    return with_location(n, [&] { return parse_bandwidth(scalar(n, what)); });
  }
  Time latency(const YAML::Node& n, const std::string& what) const {
    return with_location(n, [&] { return parse_time(scalar(n, what)); });
  }
  // A fraction in (0, 1]: a link's efficiency (what of its line rate it delivers).
  double fraction(const YAML::Node& n, const std::string& what) const {
    const double v = number(n, what);
    if (!(v > 0 && v <= 1))
      throw error(n, fmt::format("{} must lie in (0, 1], got {}", what, scalar(n, what)));
    return v;
  }
  Bytes buffer(const YAML::Node& n) const {
    const Bytes b = with_location(n, [&] { return parse_bytes(scalar(n, "buffer")); });
    if (b < 1)
      throw error(n, "buffer must be at least 1 B (leave it out for the simulator's default)");
    return b;
  }
  void only_keys(const YAML::Node& map, const std::string& what,
                 std::initializer_list<const char*> keys) const {
    if (!map.IsMap()) throw error(map, fmt::format("{} must be a map (key: value, ...)", what));
    std::vector<std::string> seen;
    for (const auto& kv : map) {
      std::string k = kv.first.Scalar();
      // yaml-cpp keeps every entry and a lookup finds the first: a repeated key would be dropped.
      if (std::find(seen.begin(), seen.end(), k) != seen.end())
        throw error(kv.first, fmt::format("key '{}' given twice in {} (only one is read: merge "
                                          "them into one)",
                                          k, what));
      seen.push_back(k);
      if (std::none_of(keys.begin(), keys.end(), [&](const char* x) { return k == x; })) {
        std::string list;
        for (const char* x : keys) list += (list.empty() ? "" : ", ") + std::string(x);
        throw error(kv.first, fmt::format("unknown key '{}' in {} (expected: {})", k, what, list));
      }
    }
  }
  const std::string& file() const { return file_; }

 private:
  std::string file_;
};

struct Defaults {
  Bandwidth bw = 0;
  Time lat = -1;
  bool bidirectional = true;
  Bytes buffer = 0;
  double efficiency = 1.0;
  Time step = kDefaultStep;
};

// Line rate x efficiency, rounded to whole bytes per second.
Bandwidth effective(Bandwidth bw, double efficiency) {
  return efficiency == 1.0
             ? bw
             : std::max<Bandwidth>(1, std::llround(static_cast<double>(bw) * efficiency));
}

// A backslash escapes the next character (fnmatch's rule): "gpu\\*" names the node called gpu*.
bool is_pattern(const std::string& s) { return s.find_first_of("*?[\\") != std::string::npos; }

// How a link names a node so that it reads back as exactly that node: as is, unless the name
// holds pattern characters or is all digits (an NPU index), which are then escaped.
std::string node_reference(const std::string& name) {
  const bool digits = !name.empty() && std::all_of(name.begin(), name.end(), ::isdigit);
  if (!digits && name.find_first_of("*?[\\") == std::string::npos) return name;
  std::string out;
  for (char c : name) {
    if (c == '*' || c == '?' || c == '[' || c == '\\' || (digits && out.empty())) out += '\\';
    out += c;
  }
  return out;
}

// Every node handle whose name matches a reference: an NPU index, a name, or a glob pattern.
std::vector<NodeId> resolve_nodes(const Reader& r, const TopologyBuilder& b, const YAML::Node& n,
                                  const std::string& what) {
  std::string ref = r.scalar(n, what);
  if (!ref.empty() && std::all_of(ref.begin(), ref.end(), ::isdigit)) {
    int64_t id = r.whole(n, what, 0, b.num_npus() - 1 < 0 ? 0 : b.num_npus() - 1);
    if (id >= b.num_npus())
      throw r.error(n, fmt::format("unknown node {}: there are no NPUs", ref));
    return {static_cast<NodeId>(id)};
  }
  if (!is_pattern(ref)) {
    NodeId h = b.find(ref);
    if (h == TopologyBuilder::kNotFound) throw r.error(n, fmt::format("unknown node '{}'", ref));
    return {h};
  }
  std::vector<NodeId> out;
  auto try_one = [&](NodeId h) {
    if (fnmatch(ref.c_str(), b.name_of(h).c_str(), 0) == 0) out.push_back(h);
  };
  for (NodeId i = 0; i < b.num_npus(); ++i) try_one(i);
  for (NodeId j = 0; j < b.num_switches(); ++j) try_one(~j);
  if (out.empty()) throw r.error(n, fmt::format("pattern '{}' matches no node", ref));
  return out;
}

void read_links(const Reader& r, TopologyBuilder& b, const YAML::Node& links, const Defaults& d) {
  if (!links.IsSequence()) throw r.error(links, "links must be a list");
  for (const YAML::Node& l : links) {
    r.only_keys(l, "a link",
                {"src", "dst", "bw", "lat", "bidirectional", "name", "count", "pairing", "buffer",
                 "efficiency", "step"});
    if (!l["src"]) throw r.error(l, "a link needs src");
    if (!l["dst"]) throw r.error(l, "a link needs dst");
    std::vector<NodeId> srcs = resolve_nodes(r, b, l["src"], "src");
    std::vector<NodeId> dsts = resolve_nodes(r, b, l["dst"], "dst");
    Bandwidth bw = l["bw"] ? r.bandwidth(l["bw"], "bw") : d.bw;
    Time lat = l["lat"] ? r.latency(l["lat"], "lat") : d.lat;
    if (bw <= 0) throw r.error(l, "link has no bw and defaults give none");
    bw = effective(bw, l["efficiency"] ? r.fraction(l["efficiency"], "efficiency") : d.efficiency);
    if (lat < 0) throw r.error(l, "link has no lat and defaults give none");
    bool bidir =
        l["bidirectional"] ? r.boolean(l["bidirectional"], "bidirectional") : d.bidirectional;
    const Bytes buffer = l["buffer"] ? r.buffer(l["buffer"]) : d.buffer;
    const Time step = l["step"] ? r.latency(l["step"], "step") : d.step;
    std::string name = l["name"] ? r.scalar(l["name"], "name") : "";
    int count = l["count"] ? static_cast<int>(r.whole(l["count"], "count", 1, 64)) : 1;
    std::string pairing = l["pairing"] ? r.scalar(l["pairing"], "pairing") : "all";
    std::vector<std::pair<NodeId, NodeId>> pairs;
    const bool patterns = srcs.size() > 1 || dsts.size() > 1;
    // Every pair a pattern asks for, refused before any is listed (`"*"` to `"*"` over a million
    // NPUs is 10^12 pairs): the links they make, each way and `count` times, and those so far.
    int64_t asked =
        static_cast<int64_t>(pairing == "zip" ? srcs.size() : srcs.size() * dsts.size());
    const int64_t per_pair = int64_t{count} * (bidir ? 2 : 1);
    if (pairing != "zip" && patterns && b.num_links() + asked * per_pair > kMaxLinks) {
      std::vector<NodeId> from = srcs, to = dsts;  // (self pairs skipped: nodes on both sides)
      std::sort(from.begin(), from.end());
      std::sort(to.begin(), to.end());
      std::vector<NodeId> both;
      std::set_intersection(from.begin(), from.end(), to.begin(), to.end(),
                            std::back_inserter(both));
      asked -= static_cast<int64_t>(both.size());
    }
    check_limit(b.num_links() + asked * per_pair, kMaxLinks, "links", r.at(l));
    if (pairing == "zip") {
      if (srcs.size() != dsts.size())
        throw r.error(l, fmt::format("pairing zip needs as many src as dst nodes ({} vs {})",
                                     srcs.size(), dsts.size()));
      for (size_t i = 0; i < srcs.size(); ++i) pairs.emplace_back(srcs[i], dsts[i]);
    } else if (pairing == "all") {
      for (NodeId s : srcs)
        for (NodeId t : dsts)
          if (!(patterns && s == t)) pairs.emplace_back(s, t);  // patterns skip self pairs
    } else {
      throw r.error(l["pairing"], fmt::format("pairing must be all or zip, not '{}'", pairing));
    }
    Location where = r.at(l);
    for (auto [s, t] : pairs)
      for (int k = 0; k < count; ++k) {
        const LinkId first = bidir ? b.add_bidirectional(s, t, bw, lat, name, where)
                                   : b.add_link(s, t, bw, lat, name, where);
        for (LinkId k = first; k <= first + (bidir ? 1 : 0); ++k) {
          b.set_link_buffer(k, buffer);
          b.set_link_step(k, step);
        }
      }
  }
}

Topology read_astra(const Reader& r, const YAML::Node& root, const std::string& name) {
  r.only_keys(root, "network.yml", {"topology", "npus_count", "bandwidth", "latency"});
  for (const char* k : {"topology", "npus_count", "bandwidth", "latency"}) {
    if (!root[k]) throw r.error(root, fmt::format("network.yml needs '{}'", k));
    if (!root[k].IsSequence()) throw r.error(root[k], fmt::format("'{}' must be a list", k));
  }
  size_t dims = root["topology"].size();
  if (dims == 0) throw r.error(root["topology"], "topology lists no dimension");
  for (const char* k : {"npus_count", "bandwidth", "latency"})
    if (root[k].size() != dims)
      throw r.error(
          root[k], fmt::format("'{}' has {} entries but topology has {}", k, root[k].size(), dims));
  std::string spec;
  for (size_t d = 0; d < dims; ++d) {
    std::string kind = r.scalar(root["topology"][d], "topology");
    std::string gen = kind == "Ring"             ? "ring"
                      : kind == "FullyConnected" ? "fc"
                      : kind == "Switch"         ? "switch"
                                                 : "";
    if (gen.empty())
      throw r.error(root["topology"][d],
                    fmt::format("unknown dimension '{}' (Ring, FullyConnected or Switch)", kind));
    int64_t n = r.whole(root["npus_count"][d], "npus_count", 1, 1'000'000);
    double gbs = r.number(root["bandwidth"][d], "bandwidth");
    double ns = r.number(root["latency"][d], "latency");
    if (gbs <= 0) throw r.error(root["bandwidth"][d], "bandwidth must be positive (GB/s)");
    if (ns < 0) throw r.error(root["latency"][d], "latency must not be negative (ns)");
    // ASTRA-sim reads "GB/s" as 2^30 bytes per second (its analytical network's Bandwidth unit).
    // Through the unit parsers, which refuse what does not fit in an integer (a double past 2^63
    // has no integer value) with the field named.
    const Bandwidth bw = r.with_location(
        root["bandwidth"][d], [&] { return parse_bandwidth(fmt::format("{}GiB/s", gbs)); });
    const Time lat =
        r.with_location(root["latency"][d], [&] { return parse_time(fmt::format("{}ns", ns)); });
    spec += fmt::format("{}{}:{},bw={}B/s,lat={}ps", d ? " x " : "", gen, n, bw, lat);
  }
  TopologyBuilder b(name);
  GeneratedShape shape;
  r.with_location(root, [&] { return generate_into(b, spec, "", &shape); });
  // ASTRA-sim's analytical network charges a message its hops' latency and its bytes, nothing per
  // step: its network.yml's links have no per-step cost (Link::step 0), so that Tenet times what
  // ASTRA-sim times whether step costs are on or off.
  for (LinkId l = 0; l < b.num_links(); ++l) b.set_link_step(l, 0);
  b.set_levels(shape.levels);
  b.set_grid(shape.grid);
  return r.with_location(root, [&] { return b.build(); });
}

Calibration read_calibration(const Reader& r, const YAML::Node& n) {
  r.only_keys(n, "calibration", {"source", "algorithms", "published"});
  Calibration c;
  if (n["source"]) c.source = r.scalar(n["source"], "source");
  if (const YAML::Node& algos = n["algorithms"]) {
    if (!algos.IsMap())
      throw r.error(algos, "calibration.algorithms must map algorithm names to efficiencies");
    for (const auto& kv : algos)
      c.algorithm_efficiency.emplace_back(r.scalar(kv.first, "an algorithm name"),
                                          r.fraction(kv.second, "an algorithm's efficiency"));
  }
  if (const YAML::Node& pub = n["published"]) {
    if (!pub.IsSequence()) throw r.error(pub, "calibration.published must be a list");
    for (const YAML::Node& f : pub) {
      r.only_keys(f, "a published figure", {"collective", "algorithm", "sizes", "busbw", "source"});
      for (const char* k : {"collective", "algorithm", "sizes", "busbw"})
        if (!f[k]) throw r.error(f, fmt::format("a published figure needs {}", k));
      PublishedFigure p;
      p.collective = r.scalar(f["collective"], "collective");
      p.algorithm = r.scalar(f["algorithm"], "algorithm");
      const YAML::Node& sizes = f["sizes"];
      if (!sizes.IsSequence() || sizes.size() != 2)
        throw r.error(sizes, "sizes must be [smallest, largest]");
      p.min_bytes =
          r.with_location(sizes[0], [&] { return parse_bytes(r.scalar(sizes[0], "size")); });
      p.max_bytes =
          r.with_location(sizes[1], [&] { return parse_bytes(r.scalar(sizes[1], "size")); });
      if (p.min_bytes < 1 || p.max_bytes < p.min_bytes)
        throw r.error(sizes, "sizes must be [smallest, largest], at least 1 B");
      p.busbw = r.bandwidth(f["busbw"], "busbw");
      if (f["source"]) p.source = r.scalar(f["source"], "source");
      c.published.push_back(std::move(p));
    }
  }
  return c;
}

// `protocols`: a list of {name, bandwidth (a share of every link's), step or step_scale, in_network
// (switches reduce and multicast under it), excludes (producers)}.
std::vector<Protocol> read_protocols(const Reader& r, const YAML::Node& n) {
  if (!n.IsSequence()) throw r.error(n, "protocols must be a list of {name, bandwidth, step}");
  std::vector<Protocol> out;
  for (const YAML::Node& e : n) {
    r.only_keys(e, "a protocol",
                {"name", "bandwidth", "step", "step_scale", "in_network", "excludes"});
    for (const char* k : {"name", "bandwidth"})
      if (!e[k]) throw r.error(e, fmt::format("a protocol needs {}", k));
    if (!e["step"] == !e["step_scale"])
      throw r.error(e,
                    "a protocol needs one of step (every link's) and step_scale (a factor of "
                    "each link's own step)");
    Protocol p;
    p.name = r.scalar(e["name"], "name");
    for (const Protocol& q : out)
      if (q.name == p.name)
        throw r.error(e["name"], fmt::format("protocol '{}' is listed twice", p.name));
    p.bandwidth = r.fraction(e["bandwidth"], "a protocol's bandwidth");
    if (e["step"]) p.step = r.latency(e["step"], "step");
    if (e["step_scale"]) {
      p.step_scale = r.number(e["step_scale"], "step_scale");
      if (!(p.step_scale > 0))
        throw r.error(e["step_scale"], fmt::format("step_scale must be positive, got {}",
                                                   r.scalar(e["step_scale"], "step_scale")));
    }
    if (e["in_network"]) p.in_network = r.boolean(e["in_network"], "in_network");
    if (const YAML::Node& x = e["excludes"]) {
      if (!x.IsSequence()) throw r.error(x, "excludes must be a list of algorithm names");
      for (const YAML::Node& name : x) p.excludes.push_back(r.scalar(name, "an algorithm name"));
    }
    out.push_back(std::move(p));
  }
  return out;
}

Topology read_tenet(const Reader& r, const YAML::Node& root, std::string name) {
  r.only_keys(root, "the topology",
              {"name", "description", "defaults", "generator", "npus", "switches", "groups",
               "links", "dimensions", "calibration", "protocols"});
  if (root["name"]) name = r.scalar(root["name"], "name");
  Defaults d;
  if (const YAML::Node& dn = root["defaults"]) {
    r.only_keys(dn, "defaults", {"bw", "lat", "bidirectional", "buffer", "efficiency", "step"});
    if (dn["step"]) d.step = r.latency(dn["step"], "step");
    if (dn["buffer"]) d.buffer = r.buffer(dn["buffer"]);
    if (dn["efficiency"]) d.efficiency = r.fraction(dn["efficiency"], "efficiency");
    if (dn["bw"]) d.bw = r.bandwidth(dn["bw"], "bw");
    if (dn["lat"]) d.lat = r.latency(dn["lat"], "lat");
    if (dn["bidirectional"]) d.bidirectional = r.boolean(dn["bidirectional"], "bidirectional");
  }
  TopologyBuilder b(name);
  if (const YAML::Node& g = root["generator"]) {
    std::string spec = r.scalar(g, "generator");
    GeneratedShape shape;
    r.with_location(g, [&] { return generate_into(b, spec, "", &shape); });
    b.set_levels(shape.levels);  // kept only if nothing else adds NPUs (checked by build)
    b.set_grid(shape.grid);
  }
  if (const YAML::Node& npus = root["npus"]) {
    if (npus.IsScalar()) {
      int64_t n = r.whole(npus, "npus", 0, 1'000'000);
      for (int64_t i = 0; i < n; ++i) b.add_npu("", false, r.at(npus));
    } else if (npus.IsSequence()) {
      for (const YAML::Node& n : npus) {
        if (n.IsScalar()) {
          r.with_location(n, [&] { return b.add_npu(n.Scalar(), false, r.at(n)); });
        } else {
          r.only_keys(n, "an NPU", {"name", "router"});
          std::string nm = n["name"] ? r.scalar(n["name"], "name") : "";
          bool router = n["router"] ? r.boolean(n["router"], "router") : false;
          r.with_location(n, [&] { return b.add_npu(nm, router, r.at(n)); });
        }
      }
    } else {
      throw r.error(npus, "npus must be a count or a list");
    }
  }
  if (const YAML::Node& sws = root["switches"]) {
    if (sws.IsScalar()) {
      int64_t n = r.whole(sws, "switches", 0, 1'000'000);
      for (int64_t i = 0; i < n; ++i) b.add_switch("", r.at(sws));
    } else if (sws.IsSequence()) {
      for (const YAML::Node& s : sws) {
        if (s.IsScalar()) {
          r.with_location(s, [&] { return b.add_switch(s.Scalar(), r.at(s)); });
        } else {
          r.only_keys(s, "a switch", {"name", "reduce", "multicast"});
          std::string nm = s["name"] ? r.scalar(s["name"], "name") : "";
          NodeId h = r.with_location(s, [&] { return b.add_switch(nm, r.at(s)); });
          if (s["reduce"]) b.node_props(h).can_reduce = r.boolean(s["reduce"], "reduce");
          if (s["multicast"])
            b.node_props(h).can_multicast = r.boolean(s["multicast"], "multicast");
        }
      }
    } else {
      throw r.error(sws, "switches must be a count or a list");
    }
  }
  if (const YAML::Node& groups = root["groups"]) {
    if (!groups.IsSequence()) throw r.error(groups, "groups must be a list");
    for (const YAML::Node& g : groups) {
      r.only_keys(g, "a group", {"name", "spec", "count"});
      if (!g["name"] || !g["spec"]) throw r.error(g, "a group needs name and spec");
      std::string nm = r.scalar(g["name"], "name");
      std::string spec = r.scalar(g["spec"], "spec");
      int64_t count = g["count"] ? r.whole(g["count"], "count", 1, 100'000) : 1;
      for (int64_t i = 0; i < count; ++i)
        r.with_location(g["spec"],
                        [&] { return generate_into(b, spec, fmt::format("{}{}/", nm, i)); });
    }
  }
  if (const YAML::Node& links = root["links"]) read_links(r, b, links, d);
  if (const YAML::Node& cal = root["calibration"]) b.set_calibration(read_calibration(r, cal));
  if (const YAML::Node& p = root["protocols"]) b.set_protocols(read_protocols(r, p));
  if (const YAML::Node& dims = root["dimensions"]) {
    if (!dims.IsSequence()) throw r.error(dims, "dimensions must be a list of NPU counts");
    std::vector<int> levels;
    for (const YAML::Node& x : dims)
      levels.push_back(static_cast<int>(r.whole(x, "dimensions", 1, 1'000'000)));
    b.set_levels(levels);
    return r.with_location(dims, [&] { return b.build(); });
  }
  if (b.num_npus() != 0 && root["generator"] && (root["npus"] || root["groups"])) b.set_levels({});
  return r.with_location(root, [&] { return b.build(); });
}

}  // namespace

Topology parse_yaml(std::string_view text, const std::string& file) {
  Reader r(file);
  check_nesting(text, file);  // yaml-cpp recurses per level
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    throw Error(fmt::format("not valid YAML/JSON: {}", e.msg),
                {file, e.mark.line + 1, e.mark.column + 1});
  }
  if (!root || root.IsNull()) throw Error("the file is empty: expected a topology", {file});
  if (!root.IsMap()) throw r.error(root, "expected a map at the top (npus, switches, links, ...)");
  std::string stem = std::filesystem::path(file).stem().string();
  try {
    if (root["topology"] && root["npus_count"]) return read_astra(r, root, stem);
    return read_tenet(r, root, stem);
  } catch (const YAML::Exception& e) {
    throw Error(e.msg, {file, e.mark.line + 1, e.mark.column + 1});
  }
}

namespace {

// The Tenet document of a topology, explicit and in id order; YAML and JSON share it.
nlohmann::ordered_json document(const Topology& t) {
  nlohmann::ordered_json doc;
  if (!t.name().empty()) doc["name"] = t.name();
  bool default_npus = true;
  for (NodeId i = 0; i < t.num_npus(); ++i)
    default_npus = default_npus && !t.node(i).router && t.node(i).name == fmt::format("npu{}", i);
  if (default_npus) {
    doc["npus"] = t.num_npus();
  } else {
    auto& list = doc["npus"] = nlohmann::ordered_json::array();
    for (NodeId i = 0; i < t.num_npus(); ++i) {
      nlohmann::ordered_json n;
      n["name"] = t.node(i).name;
      if (t.node(i).router) n["router"] = true;
      list.push_back(n);
    }
  }
  if (t.num_switches() > 0) {
    auto& list = doc["switches"] = nlohmann::ordered_json::array();
    for (NodeId s = t.num_npus(); s < t.num_nodes(); ++s) {
      nlohmann::ordered_json n;
      n["name"] = t.node(s).name;
      if (t.node(s).can_reduce) n["reduce"] = true;
      if (t.node(s).can_multicast) n["multicast"] = true;
      list.push_back(n);
    }
  }
  if (!t.levels().empty()) doc["dimensions"] = t.levels();
  auto& links = doc["links"] = nlohmann::ordered_json::array();
  for (LinkId l = 0; l < t.num_links(); ++l) {
    const Link& k = t.link(l);
    nlohmann::ordered_json j;
    j["src"] = node_reference(t.node(k.src).name);
    j["dst"] = node_reference(t.node(k.dst).name);
    j["bw"] = canonical_bandwidth(k.bandwidth);
    j["lat"] = canonical_time(k.latency);
    if (!k.name.empty()) j["name"] = k.name;
    if (k.buffer > 0) j["buffer"] = canonical_bytes(k.buffer);
    if (k.step != kDefaultStep) j["step"] = canonical_time(k.step);
    // The next link the other way with the same properties folds into one bidirectional entry;
    // only when adjacent, so that link ids survive the round trip.
    bool pair = l + 1 < t.num_links() && t.link(l + 1).src == k.dst && t.link(l + 1).dst == k.src &&
                t.link(l + 1).bandwidth == k.bandwidth && t.link(l + 1).latency == k.latency &&
                t.link(l + 1).name == k.name && t.link(l + 1).buffer == k.buffer &&
                t.link(l + 1).step == k.step;
    if (pair)
      ++l;
    else
      j["bidirectional"] = false;
    links.push_back(j);
  }
  if (!t.protocols().empty()) {
    auto& protocols = doc["protocols"] = nlohmann::ordered_json::array();
    for (const Protocol& p : t.protocols()) {
      nlohmann::ordered_json j{{"name", p.name}, {"bandwidth", p.bandwidth}};
      if (p.step_scale > 0)
        j["step_scale"] = p.step_scale;
      else
        j["step"] = canonical_time(p.step);
      if (!p.in_network) j["in_network"] = false;
      if (!p.excludes.empty()) j["excludes"] = p.excludes;
      protocols.push_back(j);
    }
  }
  const Calibration& c = t.calibration();
  if (!c.empty()) {
    auto& cal = doc["calibration"] = nlohmann::ordered_json::object();
    if (!c.source.empty()) cal["source"] = c.source;
    if (!c.algorithm_efficiency.empty()) {
      auto& algos = cal["algorithms"] = nlohmann::ordered_json::object();
      for (const auto& [name, e] : c.algorithm_efficiency) algos[name] = e;
    }
    if (!c.published.empty()) {
      auto& pub = cal["published"] = nlohmann::ordered_json::array();
      for (const PublishedFigure& f : c.published) {
        nlohmann::ordered_json j{
            {"collective", f.collective},
            {"algorithm", f.algorithm},
            {"sizes", {canonical_bytes(f.min_bytes), canonical_bytes(f.max_bytes)}},
            {"busbw", canonical_bandwidth(f.busbw)}};
        if (!f.source.empty()) j["source"] = f.source;
        pub.push_back(j);
      }
    }
  }
  return doc;
}

void emit(YAML::Emitter& out, const nlohmann::ordered_json& j, bool flow) {
  if (j.is_object()) {
    out << (flow ? YAML::Flow : YAML::Block) << YAML::BeginMap;
    for (const auto& [k, v] : j.items()) {
      out << YAML::Key << k << YAML::Value;
      emit(out, v, flow);
    }
    out << YAML::EndMap;
  } else if (j.is_array()) {
    out << (flow ? YAML::Flow : YAML::Block) << YAML::BeginSeq;
    for (const auto& v : j) emit(out, v, /*flow=*/flow || v.is_object());
    out << YAML::EndSeq;
  } else if (j.is_string()) {
    out << j.get<std::string>();
  } else if (j.is_boolean()) {
    out << (j.get<bool>() ? "true" : "false");
  } else {
    out << j.dump();
  }
}

}  // namespace

std::string to_yaml(const Topology& t) {
  YAML::Emitter out;
  out << YAML::Comment("Tenet topology (see README.md, \"Topology files\")") << YAML::Newline;
  emit(out, document(t), false);
  return std::string(out.c_str()) + "\n";
}

std::string to_json(const Topology& t) { return document(t).dump(2) + "\n"; }

}  // namespace tenet::topo
