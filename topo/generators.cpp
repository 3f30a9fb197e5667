#include "topo/generators.hpp"

#include "topo/limits.hpp"
#include "topo/suggest.hpp"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <functional>
#include <random>

namespace tenet::topo {
namespace {

struct Params {
  const GeneratorSpec& spec;
  std::vector<Bandwidth> bw;  // one per level
  std::vector<Time> lat;      // one per level
  Bandwidth b(size_t level) const { return bw[std::min(level, bw.size() - 1)]; }
  Time l(size_t level) const { return lat[std::min(level, lat.size() - 1)]; }
  int dim(size_t i) const { return spec.shape[i]; }
  std::string opt(const std::string& key, const std::string& fallback) const {
    auto it = spec.options.find(key);
    return it == spec.options.end() ? fallback : it->second;
  }
  int int_opt(const std::string& key, int fallback) const;
};

// Receives what a generator makes: NPUs are given, switches and links are added.
struct Emitter {
  TopologyBuilder& b;
  std::span<const NodeId> npus;
  std::string prefix;
  NodeId npu(int i) const { return npus[i]; }
  NodeId sw(const std::string& local) { return b.add_switch(prefix + local); }
  // `step`: the links' per-step cost (topo::Link::step): kNetworkStep for a scale-out network's.
  void bi(NodeId x, NodeId y, Bandwidth bw, Time lat, Time step = kDefaultStep) {
    const LinkId first = b.add_bidirectional(x, y, bw, lat);
    b.set_link_step(first, step);
    b.set_link_step(first + 1, step);
  }
  void uni(NodeId x, NodeId y, Bandwidth bw, Time lat) { b.add_link(x, y, bw, lat); }
};

struct Generator {
  GeneratorInfo info;
  std::vector<size_t> shape_dims;  // accepted numbers of shape values
  size_t levels;                   // how many per-level bw/lat values it takes
  std::string default_bw, default_lat;
  std::vector<std::string> keys;  // extra keys
  std::function<int(const GeneratorSpec&)> npus;
  std::function<void(const Params&, Emitter&)> build;
  bool draws_links = false;  // draws every link's bandwidth and latency (no bw=, lat=)
};

Error spec_error(const GeneratorSpec& s, const std::string& what) {
  return Error(fmt::format("generator '{}': {}", s.generator, what));
}

int Params::int_opt(const std::string& key, int fallback) const {
  auto it = spec.options.find(key);
  if (it == spec.options.end()) return fallback;
  int v = 0;
  auto [p, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  if (ec != std::errc() || p != it->second.data() + it->second.size() || v < 1 || v > 1'000'000)
    throw spec_error(spec, fmt::format("{}={} is not a positive whole number", key, it->second));
  return v;
}

int product(const GeneratorSpec& s) {
  int64_t p = 1;
  for (int d : s.shape) p *= d;
  return static_cast<int>(p);
}

// Grid helpers: NPU id of coordinates, first dimension fastest.
void grid(const Params& p, Emitter& e, bool wrap) {
  const auto& shape = p.spec.shape;
  std::vector<int> stride(shape.size(), 1);
  for (size_t d = 1; d < shape.size(); ++d) stride[d] = stride[d - 1] * shape[d - 1];
  const int total = product(p.spec);
  for (size_t d = 0; d < shape.size(); ++d) {
    for (int id = 0; id < total; ++id) {
      int coord = (id / stride[d]) % shape[d];
      if (coord + 1 < shape[d])
        e.bi(e.npu(id), e.npu(id + stride[d]), p.b(d), p.l(d));
      else if (wrap && shape[d] > 2)
        e.bi(e.npu(id), e.npu(id - coord * stride[d]), p.b(d), p.l(d));
    }
  }
}

// Two switch levels: `leaves` leaf switches with `per` NPUs each (NPU l*per + k on leaf l), and
// `spines` spine switches each linked once to every leaf. A scale-out network: its links cost a
// network step.
void leaf_spine(Emitter& e, int leaves, int per, int spines, Bandwidth down_bw, Time down_lat,
                Bandwidth up_bw, Time up_lat) {
  std::vector<NodeId> spine;
  for (int s = 0; s < spines; ++s) spine.push_back(e.sw(fmt::format("spine{}", s)));
  for (int l = 0; l < leaves; ++l) {
    NodeId leaf = e.sw(fmt::format("leaf{}", l));
    for (int k = 0; k < per; ++k) e.bi(e.npu(l * per + k), leaf, down_bw, down_lat, kNetworkStep);
    for (NodeId s : spine) e.bi(leaf, s, up_bw, up_lat, kNetworkStep);
  }
}

// random-fabric:SEED. The draws, in order, are those the RandomFabrics benchmark
// (bench/micro/fabric_bench.cpp) made with its own copy before it used this generator: the same
// seed gives the fabric its figures since then quote, link for link.
struct RandomFabric {
  explicit RandomFabric(int seed)
      : rng(static_cast<uint64_t>(seed)), npus(pick(6, 16)), switches(pick(1, 4)) {}
  std::mt19937_64 rng;
  int npus, switches;
  int pick(int lo, int hi) {
    return lo + static_cast<int>(rng() % static_cast<uint64_t>(hi - lo + 1));
  }
  Bandwidth gbps(int lo, int hi) { return Bandwidth{1'000'000'000} * pick(lo, hi); }
  void build(Emitter& e) {
    std::vector<NodeId> sw;
    for (int j = 0; j < switches; ++j) sw.push_back(e.sw(fmt::format("sw{}", j)));
    // Both ways, one latency, each way its own bandwidth one time in four.
    auto both = [&](NodeId x, NodeId y, int lo, int hi) {
      const Bandwidth forward = gbps(lo, hi);
      const Time latency = Time{100'000} * pick(1, 20);
      e.uni(x, y, forward, latency);
      e.uni(y, x, rng() % 4 == 0 ? gbps(lo, hi) : forward, latency);
    };
    for (int j = 1; j < switches; ++j) both(sw[j], sw[rng() % j], 50, 800);
    if (switches > 2 && rng() % 2) both(sw[0], sw[switches - 1], 50, 800);
    for (int i = 0; i < npus; ++i) {
      const int first = pick(0, switches - 1);
      both(e.npu(i), sw[first], 25, 400);
      if (switches > 1 && rng() % 3 == 0)
        both(e.npu(i), sw[(first + pick(1, switches - 1)) % switches], 25, 400);
    }
    const int direct = pick(0, npus);
    for (int k = 0; k < direct; ++k) {
      const int x = static_cast<int>(rng() % npus), y = static_cast<int>(rng() % npus);
      if (x != y) both(e.npu(x), e.npu(y), 25, 400);
    }
  }
};

// The generators of direct networks: rings, lines, full meshes, a star, tori and meshes, the
// hypercube.
void add_direct_generators(std::vector<Generator>& g) {
  auto first = [](const GeneratorSpec& s) { return s.shape.at(0); };
  g.push_back({{"ring", "N", "N NPUs in a ring; bidir=false for one direction only",
                "ring:8,bw=50GB/s,lat=0.5us", "bidir=true|false"},
               {1},
               1,
               "50GB/s",
               "0.5us",
               {"bidir"},
               first,
               [](const Params& p, Emitter& e) {
                 int n = p.dim(0);
                 std::string bidir = p.opt("bidir", "true");
                 if (bidir != "true" && bidir != "false")
                   throw spec_error(p.spec, "bidir must be true or false");
                 if (n < 2) return;
                 for (int i = 0; i < n; ++i) {
                   if (n == 2 && i == 1) {  // a ring of two is one pair of links
                     if (bidir == "false") e.uni(e.npu(1), e.npu(0), p.b(0), p.l(0));
                     break;
                   }
                   if (bidir == "true")
                     e.bi(e.npu(i), e.npu((i + 1) % n), p.b(0), p.l(0));
                   else
                     e.uni(e.npu(i), e.npu((i + 1) % n), p.b(0), p.l(0));
                 }
               }});
  g.push_back({{"line", "N", "N NPUs in a bidirectional chain", "line:4", ""},
               {1},
               1,
               "50GB/s",
               "0.5us",
               {},
               first,
               [](const Params& p, Emitter& e) {
                 for (int i = 0; i + 1 < p.dim(0); ++i)
                   e.bi(e.npu(i), e.npu(i + 1), p.b(0), p.l(0));
               }});
  g.push_back({{"fc", "N", "fully connected: one link each way between every pair of NPUs",
                "fc:8,bw=25GB/s", ""},
               {1},
               1,
               "50GB/s",
               "0.5us",
               {},
               first,
               [](const Params& p, Emitter& e) {
                 const int64_t n = p.dim(0);
                 check_limit(n * (n - 1), kMaxLinks,
                             "links");  // quadratic: refused before building any
                 for (int i = 0; i < p.dim(0); ++i)
                   for (int j = i + 1; j < p.dim(0); ++j) e.bi(e.npu(i), e.npu(j), p.b(0), p.l(0));
               }});
  g.push_back({{"switch", "N", "N NPUs on one switch (a star)", "switch:16,bw=100GB/s", ""},
               {1},
               1,
               "50GB/s",
               "0.5us",
               {},
               first,
               [](const Params& p, Emitter& e) {
                 NodeId s = e.sw("sw0");
                 for (int i = 0; i < p.dim(0); ++i) e.bi(e.npu(i), s, p.b(0), p.l(0));
               }});
  auto grid_gen = [&](const char* name, size_t dims, bool wrap, const char* desc,
                      const char* example, const char* bw) {
    g.push_back({{name, dims == 2 ? "AxB" : "AxBxC", desc, example, ""},
                 {dims},
                 dims,
                 bw,
                 "0.5us",
                 {},
                 product,
                 [wrap](const Params& p, Emitter& e) { grid(p, e, wrap); }});
  };
  grid_gen("mesh2d", 2, false, "2-D mesh; per-dimension bw/lat with '/'",
           "mesh2d:8x5,bw=80GiB/s/35GiB/s", "50GB/s");
  grid_gen("mesh3d", 3, false, "3-D mesh", "mesh3d:4x4x4", "50GB/s");
  grid_gen("torus2d", 2, true, "2-D torus (wrap-around links)", "torus2d:8x8,bw=50GB/s,lat=0.5us",
           "50GB/s");
  grid_gen("torus3d", 3, true, "3-D torus", "torus3d:4x4x4", "50GB/s");
  grid_gen("hetmesh2d", 2, false,
           "heterogeneous 2-D mesh: x links faster than y links (defaults 100GB/s/25GB/s)",
           "hetmesh2d:4x4,bw=100GB/s/25GB/s", "100GB/s/25GB/s");
  g.push_back({{"hypercube", "N", "hypercube of N = 2^k NPUs", "hypercube:64", ""},
               {1},
               1,
               "50GB/s",
               "0.5us",
               {},
               first,
               [](const Params& p, Emitter& e) {
                 int n = p.dim(0);
                 if (n & (n - 1))
                   throw spec_error(p.spec, fmt::format("{} is not a power of two", n));
                 for (int i = 0; i < n; ++i)
                   for (int bit = 1; bit < n; bit <<= 1)
                     if (!(i & bit)) e.bi(e.npu(i), e.npu(i | bit), p.b(0), p.l(0));
               }});
}

// The generators of switched fabrics and systems: leaf-spine, dragonfly, DGX-1, NVSwitch nodes and
// clusters, random fabrics.
void add_fabric_generators(std::vector<Generator>& g) {
  auto first = [](const GeneratorSpec& s) { return s.shape.at(0); };
  g.push_back(
      {{"leafspine", "LxP",
        "two-level leaf-spine: L leaf switches with P NPUs each, every leaf linked to "
        "every spine; spines=S (default P, non-blocking); bw/lat per level NPU-leaf/leaf-spine",
        "leafspine:4x8,spines=4,bw=100GB/s/50GB/s", "spines=S"},
       {2},
       2,
       "50GB/s",
       "0.5us",
       {"spines"},
       product,
       [](const Params& p, Emitter& e) {
         leaf_spine(e, p.dim(0), p.dim(1), p.int_opt("spines", p.dim(1)), p.b(0), p.l(0), p.b(1),
                    p.l(1));
       }});
  g.push_back({{"dragonfly", "GxAxP",
                "dragonfly: G groups of A router switches with P NPUs each; routers of a group "
                "fully connected, one global link per pair of groups; bw/lat per level "
                "terminal/local/global",
                "dragonfly:4x4x2,bw=100GB/s/50GB/s/25GB/s", ""},
               {3},
               3,
               "50GB/s",
               "0.5us",
               {},
               product,
               [](const Params& p, Emitter& e) {
                 int groups = p.dim(0), routers = p.dim(1), per = p.dim(2);
                 std::vector<std::vector<NodeId>> r(groups);
                 for (int gi = 0; gi < groups; ++gi)
                   for (int a = 0; a < routers; ++a) {
                     r[gi].push_back(e.sw(fmt::format("g{}r{}", gi, a)));
                     for (int k = 0; k < per; ++k)
                       e.bi(e.npu((gi * routers + a) * per + k), r[gi][a], p.b(0), p.l(0),
                            kNetworkStep);
                   }
                 for (int gi = 0; gi < groups; ++gi)
                   for (int a = 0; a < routers; ++a)
                     for (int c = a + 1; c < routers; ++c)
                       e.bi(r[gi][a], r[gi][c], p.b(1), p.l(1), kNetworkStep);
                 // Group gi's k-th global link (k counting the other groups in order) leaves from
                 // router k mod A.
                 auto port = [&](int from, int to) { return (to < from ? to : to - 1) % routers; };
                 for (int gi = 0; gi < groups; ++gi)
                   for (int gj = gi + 1; gj < groups; ++gj)
                     e.bi(r[gi][port(gi, gj)], r[gj][port(gj, gi)], p.b(2), p.l(2), kNetworkStep);
               }});
  g.push_back(
      {{"dgx1", "8", "DGX-1 (V100) hybrid cube-mesh: 8 NPUs, 6 NVLinks each, some pairs doubled",
        "dgx1:8,bw=25GB/s", ""},
       {0, 1},
       1,
       "25GB/s",
       "0.7us",
       {},
       [](const GeneratorSpec&) { return 8; },
       [](const Params& p, Emitter& e) {
         if (!p.spec.shape.empty() && p.dim(0) != 8)
           throw spec_error(p.spec, "a DGX-1 has exactly 8 NPUs");
         // NVLink counts between GPU pairs, as nvidia-smi topo -m shows on a DGX-1V.
         const int links[][3] = {{0, 1, 1}, {0, 2, 1}, {0, 3, 2}, {0, 4, 2}, {1, 2, 2}, {1, 3, 1},
                                 {1, 5, 2}, {2, 3, 2}, {2, 6, 1}, {3, 7, 1}, {4, 5, 1}, {4, 6, 1},
                                 {4, 7, 2}, {5, 6, 2}, {5, 7, 1}, {6, 7, 2}};
         for (const auto& [a, b, count] : links)
           for (int k = 0; k < count; ++k) e.bi(e.npu(a), e.npu(b), p.b(0), p.l(0));
       }});
  g.push_back({{"nvswitch", "G", "one NVSwitch node: G NPUs on one switch (default 450GB/s)",
                "nvswitch:8", ""},
               {1},
               1,
               "450GB/s",
               "0.25us",
               {},
               first,
               [](const Params& p, Emitter& e) {
                 NodeId s = e.sw("nvswitch");
                 for (int i = 0; i < p.dim(0); ++i) e.bi(e.npu(i), s, p.b(0), p.l(0));
               }});
  g.push_back({{"nvcluster", "NxG",
                "N NVSwitch nodes of G NPUs joined by a scale-out network: net=rail (G rail "
                "switches, NPU k of every node on rail k) or net=fattree (a leaf per node, G "
                "spines); bw/lat per level nvlink/network",
                "nvcluster:4x8,net=rail,bw=450GB/s/50GB/s", "net=rail|fattree"},
               {2},
               2,
               "450GB/s/50GB/s",
               "0.25us/1us",
               {"net"},
               product,
               [](const Params& p, Emitter& e) {
                 int nodes = p.dim(0), per = p.dim(1);
                 std::string net = p.opt("net", "rail");
                 if (net != "rail" && net != "fattree")
                   throw spec_error(p.spec, fmt::format("net={} is not rail or fattree", net));
                 for (int n = 0; n < nodes; ++n) {
                   NodeId s = e.sw(fmt::format("node{}.nvswitch", n));
                   for (int k = 0; k < per; ++k) e.bi(e.npu(n * per + k), s, p.b(0), p.l(0));
                 }
                 if (nodes < 2) return;
                 if (net == "rail") {
                   for (int k = 0; k < per; ++k) {
                     NodeId rail = e.sw(fmt::format("rail{}", k));
                     for (int n = 0; n < nodes; ++n)
                       e.bi(e.npu(n * per + k), rail, p.b(1), p.l(1), kNetworkStep);
                   }
                 } else {
                   leaf_spine(e, nodes, per, per, p.b(1), p.l(1), p.b(1), p.l(1));
                 }
               }});
  g.push_back(
      {{"random-fabric", "SEED",
        "a random heterogeneous switched fabric, the same for the same seed (the RandomFabrics "
        "benchmark's): 6-16 NPUs, 1-4 switches joined by a random tree (plus a spare link now "
        "and "
        "then), every NPU on one or two switches, some NPU pairs joined directly; 25-400 GB/s on "
        "NPU ports, 50-800 GB/s between switches, 0.1-2 us; every link both ways, now and then "
        "each way its own bandwidth",
        "random-fabric:184", ""},
       {1},
       1,
       "50GB/s",
       "0.5us",
       {},
       [](const GeneratorSpec& s) { return RandomFabric(s.shape.at(0)).npus; },
       [](const Params& p, Emitter& e) {
         if (p.spec.options.count("bw") || p.spec.options.count("lat"))
           throw spec_error(
               p.spec, "a random fabric draws its own bandwidths and latencies (no bw= or lat=)");
         RandomFabric(p.dim(0)).build(e);
       },
       true});
}

const std::vector<Generator>& table() {
  static const std::vector<Generator> gens = [] {
    std::vector<Generator> g;
    add_direct_generators(g);
    add_fabric_generators(g);

    return g;
  }();
  return gens;
}

const Generator& find_generator(const GeneratorSpec& s) {
  for (const Generator& g : table())
    if (g.info.name == s.generator) return g;
  std::string names;
  std::vector<std::string> known;
  for (const Generator& g : table()) {
    names += (names.empty() ? "" : ", ") + g.info.name;
    known.push_back(g.info.name);
  }
  throw Error(
      fmt::format("unknown generator '{}'{} (known: {}; `tenet topo generators` lists them)",
                  s.generator, did_you_mean(s.generator, known), names));
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Splits per-level values on '/', keeping the '/s' of bandwidth units: "80GiB/s/35GiB/s".
std::vector<std::string> split_levels(const std::string& v) {
  std::vector<std::string> parts, out;
  size_t start = 0;
  for (size_t i = 0; i <= v.size(); ++i)
    if (i == v.size() || v[i] == '/') {
      parts.push_back(v.substr(start, i - start));
      start = i + 1;
    }
  for (const std::string& p : parts) {
    if (p == "s" && !out.empty())
      out.back() += "/s";
    else
      out.push_back(p);
  }
  return out;
}

// Splits at " x " (an 'x' with whitespace on both sides). A scan, not std::regex: libstdc++'s
// regex recurses per character and overflowed the stack on a spec with 40,000 spaces.
std::vector<std::string> split_hierarchy(std::string_view text) {
  auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  std::vector<std::string> parts;
  size_t begin = 0;
  for (size_t i = 1; i + 1 < text.size(); ++i)
    if (text[i] == 'x' && space(text[i - 1]) && space(text[i + 1])) {
      parts.emplace_back(trim(text.substr(begin, i - begin)));
      begin = i + 1;
    }
  parts.emplace_back(trim(text.substr(begin)));
  return parts;
}

struct ParsedDim {
  GeneratorSpec spec;
  const Generator* gen;
  std::vector<Bandwidth> bw;
  std::vector<Time> lat;
  int npus;
};

ParsedDim parse_dim(const std::string& text) {
  try {
    GeneratorSpec spec = parse_generator_spec(text);
    const Generator& gen = find_generator(spec);
    if (std::find(gen.shape_dims.begin(), gen.shape_dims.end(), spec.shape.size()) ==
        gen.shape_dims.end())
      throw spec_error(
          spec, fmt::format("shape must be {} (example: {})", gen.info.shape, gen.info.example));
    for (const auto& [key, value] : spec.options)
      if (key != "bw" && key != "lat" && key != "router" &&
          std::find(gen.keys.begin(), gen.keys.end(), key) == gen.keys.end())
        throw spec_error(spec, fmt::format("unknown key '{}' (accepted: bw, lat, router{}{})", key,
                                           gen.keys.empty() ? "" : ", ", gen.info.keys));
    ParsedDim dim{spec, &gen, {}, {}, 0};
    auto levels = [&](const std::string& key, const std::string& fallback) {
      auto it = spec.options.find(key);
      std::vector<std::string> v = split_levels(it == spec.options.end() ? fallback : it->second);
      if (v.size() != 1 && v.size() != gen.levels)
        throw spec_error(spec, fmt::format("{} takes one value or {} joined by '/', got {}", key,
                                           gen.levels, v.size()));
      return v;
    };
    for (const std::string& v : levels("bw", gen.default_bw)) dim.bw.push_back(parse_bandwidth(v));
    for (const std::string& v : levels("lat", gen.default_lat)) dim.lat.push_back(parse_time(v));
    std::string router = spec.options.count("router") ? spec.options.at("router") : "false";
    if (router != "true" && router != "false")
      throw spec_error(spec, "router must be true or false");
    int64_t n = 1;
    for (int d : spec.shape) n = std::min<int64_t>(n * d, 1'000'000'000);
    if (n > 1'000'000) throw spec_error(spec, "more than a million NPUs");
    dim.npus = gen.npus(spec);
    return dim;
  } catch (const Error& e) {
    throw Error(fmt::format("in spec '{}': {}", text, e.message()));
  }
}

}  // namespace

const std::vector<GeneratorInfo>& generators() {
  static const std::vector<GeneratorInfo> infos = [] {
    std::vector<GeneratorInfo> v;
    for (const Generator& g : table()) {
      v.push_back(g.info);
      v.back().defaults = g.draws_links ? "none: drawn per link"
                                        : fmt::format("bw={},lat={}", g.default_bw, g.default_lat);
    }
    return v;
  }();
  return infos;
}

GeneratorSpec parse_generator_spec(std::string_view text) {
  GeneratorSpec s;
  std::string_view t = trim(text);
  size_t comma = t.find(',');
  std::string_view head = t.substr(0, comma);
  size_t colon = head.find(':');
  s.generator = std::string(trim(head.substr(0, colon)));
  if (s.generator.empty()) throw Error(fmt::format("spec '{}' names no generator", text));
  if (colon != std::string_view::npos) {
    std::string_view shape = trim(head.substr(colon + 1));
    size_t start = 0;
    for (size_t i = 0; i <= shape.size(); ++i) {
      if (i < shape.size() && shape[i] != 'x') continue;
      std::string_view part = shape.substr(start, i - start);
      int64_t v = 0;
      auto [p, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
      const bool digits = !part.empty() && p == part.data() + part.size() &&
                          (ec == std::errc() || ec == std::errc::result_out_of_range);
      // A number past the limit is named as such, not as a malformed shape.
      if (digits && part.front() != '-' && (ec != std::errc() || v > 1'000'000))
        throw Error(fmt::format(
            "spec '{}': {} is over 1,000,000, the most a shape's number may be (a topology holds "
            "at most a million NPUs; a random fabric's seed is at most 1,000,000 too)",
            text, part));
      if (!digits || ec != std::errc() || v < 1)
        throw Error(fmt::format(
            "spec '{}': shape '{}' must be positive whole numbers joined by 'x'", text, shape));
      s.shape.push_back(static_cast<int>(v));
      start = i + 1;
    }
  }
  while (comma != std::string_view::npos) {
    size_t next = t.find(',', comma + 1);
    std::string_view kv =
        trim(t.substr(comma + 1, next == std::string_view::npos ? next : next - comma - 1));
    size_t eq = kv.find('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == kv.size())
      throw Error(fmt::format("spec '{}': '{}' is not key=value", text, kv));
    std::string key(trim(kv.substr(0, eq)));
    if (!s.options.emplace(key, std::string(trim(kv.substr(eq + 1)))).second)
      throw Error(fmt::format("spec '{}': key '{}' given twice", text, key));
    comma = next;
  }
  // Aliases keep common names working.
  if (s.generator == "fully-connected") s.generator = "fc";
  if (s.generator == "fattree") {
    s.generator = "leafspine";
  }
  return s;
}

bool looks_like_spec(std::string_view text) {
  size_t colon = text.find(':');
  std::string name(trim(text.substr(0, std::min(colon, text.find(',')))));
  if (name == "fully-connected" || name == "fattree") return true;
  for (const Generator& g : table())
    if (g.info.name == name) return colon != std::string_view::npos || name == "dgx1";
  return false;
}

std::vector<NodeId> generate_into(TopologyBuilder& builder, std::string_view spec,
                                  const std::string& prefix, GeneratedShape* shape) {
  std::vector<ParsedDim> dims;
  for (const std::string& part : split_hierarchy(spec)) dims.push_back(parse_dim(part));
  if (shape) {
    shape->levels.clear();
    shape->grid.clear();
    for (const ParsedDim& d : dims) {
      const std::string& g = d.spec.generator;
      const bool gridded = g == "mesh2d" || g == "mesh3d" || g == "torus2d" || g == "torus3d" ||
                           g == "hetmesh2d" || g == "line" || g == "ring";
      if (gridded) {
        shape->grid.insert(shape->grid.end(), d.spec.shape.begin(), d.spec.shape.end());
      } else if (g == "hypercube") {
        for (int n = d.npus; n > 1; n /= 2) shape->grid.push_back(2);
      } else {
        shape->grid.push_back(d.npus);  // no grid inside: the caller checks adjacency anyway
      }
    }
    // A grid's dimensions are dimensions of the hierarchy too (a 2-D torus is two Ring
    // dimensions to ASTRA-sim).
    shape->levels = shape->grid;
  }
  int64_t total = 1;
  bool router = false;
  for (const ParsedDim& d : dims) {
    total = std::min<int64_t>(total * d.npus, 1'000'000'000);
    router = router || (d.spec.options.count("router") && d.spec.options.at("router") == "true");
  }
  if (total > 1'000'000) throw Error(fmt::format("spec '{}' has more than a million NPUs", spec));
  std::vector<NodeId> npus;
  for (int64_t i = 0; i < total; ++i)
    npus.push_back(builder.add_npu(fmt::format("{}npu{}", prefix, i), router));
  int64_t stride = 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    ParsedDim& dim = dims[d];
    Params params{dim.spec, dim.bw, dim.lat};
    std::vector<NodeId> line(dim.npus);
    int64_t line_index = 0;
    for (int64_t base = 0; base < total; ++base) {
      if ((base / stride) % dim.npus != 0) continue;  // not the start of a line along d
      for (int k = 0; k < dim.npus; ++k) line[k] = npus[base + k * stride];
      std::string p = dims.size() == 1 ? prefix : fmt::format("{}d{}.{}.", prefix, d, line_index);
      Emitter e{builder, line, p};
      try {
        dim.gen->build(params, e);
      } catch (const Error& err) {
        throw Error(fmt::format("in spec '{}': {}", spec, err.message()));
      }
      ++line_index;
    }
    stride *= dim.npus;
  }
  return npus;
}

Topology generate(std::string_view spec) {
  TopologyBuilder b{std::string(trim(spec))};
  GeneratedShape shape;
  generate_into(b, spec, "", &shape);
  b.set_levels(shape.levels);
  b.set_grid(shape.grid);
  return b.build();
}

}  // namespace tenet::topo
