// Graphviz DOT, read with Boost.Graph (written here, every value quoted: see to_dot). Nodes carry
// kind/router/reduce/multicast, edges bw/lat/name/buffer/step and their link id, so that a written
// file reads back to the same topology.
#include <fmt/format.h>

// Boost's adjacency_list edge iterator trips GCC 12's -Wmaybe-uninitialized when inlined here.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/graphviz.hpp>
#include <boost/property_map/dynamic_property_map.hpp>
#include <filesystem>
#include <numeric>
#include <sstream>

#include "topo/io.hpp"
#include "topo/limits.hpp"

namespace tenet::topo {
namespace {

struct DotNode {
  std::string name, kind, router, reduce, multicast, shape, index;
};
struct DotEdge {
  std::string bw, lat, name, id, label, buffer, step;
};
using DotGraph =
    boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, DotNode, DotEdge>;

boost::dynamic_properties properties(DotGraph& g) {
  boost::dynamic_properties dp(boost::ignore_other_properties);
  dp.property("node_id", get(&DotNode::name, g));
  dp.property("kind", get(&DotNode::kind, g));
  dp.property("router", get(&DotNode::router, g));
  dp.property("reduce", get(&DotNode::reduce, g));
  dp.property("multicast", get(&DotNode::multicast, g));
  dp.property("shape", get(&DotNode::shape, g));
  dp.property("index", get(&DotNode::index, g));
  dp.property("bw", get(&DotEdge::bw, g));
  dp.property("lat", get(&DotEdge::lat, g));
  dp.property("name", get(&DotEdge::name, g));
  dp.property("buffer", get(&DotEdge::buffer, g));
  dp.property("step", get(&DotEdge::step, g));
  dp.property("id", get(&DotEdge::id, g));
  dp.property("label", get(&DotEdge::label, g));
  return dp;
}

}  // namespace

// Written here, read with Boost: Boost 1.74's write_graphviz leaves a value that looks like an
// identifier unquoted (boost/graph/graphviz.hpp, escape_dot_string), so a node or link named
// `edge`, `node`, `graph`, `subgraph` or `strict` made a file its own reader refuses (found by
// tests/fuzz/topology_dot). Every value is quoted here.
std::string dot_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + '"';
}

std::string to_dot(const Topology& t) {
  std::string out = "digraph G {\n";
  for (NodeId i = 0; i < t.num_nodes(); ++i) {
    const Node& n = t.node(i);
    const bool sw = n.kind == NodeKind::Switch;
    out += fmt::format("{} [index={}, kind={}, multicast={}, reduce={}, router={}, shape={}];\n",
                       dot_string(n.name), i, sw ? "switch" : "npu", n.can_multicast, n.can_reduce,
                       n.router, sw ? "box" : "ellipse");
  }
  for (LinkId l = 0; l < t.num_links(); ++l) {
    const Link& k = t.link(l);
    const std::string bw = canonical_bandwidth(k.bandwidth), lat = canonical_time(k.latency);
    out += fmt::format("{}->{} [buffer={}, bw={}, id={}, label={}, lat={}, name={}, step={}];\n",
                       dot_string(t.node(k.src).name), dot_string(t.node(k.dst).name),
                       dot_string(k.buffer > 0 ? canonical_bytes(k.buffer) : ""), dot_string(bw), l,
                       dot_string(bw + " " + lat), dot_string(lat), dot_string(k.name),
                       dot_string(k.step != kDefaultStep ? canonical_time(k.step) : ""));
  }
  return out + "}\n";
}

Topology parse_dot(std::string_view text, const std::string& file) {
  text = without_bom(text);
  check_nesting(text, file);  // Boost's Graphviz parser recurses per subgraph level
  DotGraph g;
  boost::dynamic_properties dp = properties(g);
  std::istringstream in{std::string(text)};
  try {
    if (!boost::read_graphviz(in, g, dp, "node_id")) throw Error("not a Graphviz graph", {file});
  } catch (const boost::graph_exception& e) {
    throw Error(fmt::format("not valid DOT: {}", e.what()), {file});
  }
  TopologyBuilder b(std::filesystem::path(file).stem().string());
  const auto n = num_vertices(g);
  if (n == 0) throw Error("the graph has no nodes", {file});
  // DOT keeps "\\" in a quoted string as two characters (only \" is an escape); Graphviz shows it
  // as one backslash, and to_dot writes a name's backslash so (a name may end in one).
  auto unescape = [](std::string& name) {
    for (size_t i = name.find("\\\\"); i != std::string::npos; i = name.find("\\\\", i + 1))
      name.erase(i, 1);
  };
  for (size_t v = 0; v < n; ++v) unescape(g[v].name);
  for (auto [it, end] = edges(g); it != end; ++it) unescape(g[*it].name);
  std::vector<NodeId> handle(n);
  auto flag = [&](const std::string& v, const std::string& what, const std::string& node) {
    if (v.empty() || v == "false") return false;
    if (v == "true") return true;
    throw Error(fmt::format("{} must be true or false, not '{}'", what, v),
                {file, 0, 0, "node '" + node + "'"});
  };
  // Boost hands nodes back in its own order; the index attribute (when every node has one)
  // restores the original numbering.
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::vector<long> index(n, 0);
  bool indexed = true;
  for (size_t v = 0; v < n; ++v) {
    try {
      index[v] = std::stol(g[v].index);
    } catch (const std::exception&) {
      indexed = false;
    }
  }
  if (indexed)
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t c) { return index[a] < index[c]; });
  for (int pass = 0; pass < 2; ++pass)  // NPUs first, then switches
    for (size_t v : order) {
      const DotNode& d = g[v];
      if (d.kind != "npu" && d.kind != "switch" && !d.kind.empty())
        throw Error(fmt::format("kind must be npu or switch, not '{}'", d.kind),
                    {file, 0, 0, "node '" + d.name + "'"});
      bool sw = d.kind == "switch";
      if (sw != (pass == 1)) continue;
      if (sw) {
        handle[v] = b.add_switch(d.name, {file});
        b.node_props(handle[v]).can_reduce = flag(d.reduce, "reduce", d.name);
        b.node_props(handle[v]).can_multicast = flag(d.multicast, "multicast", d.name);
      } else {
        handle[v] = b.add_npu(d.name, flag(d.router, "router", d.name), {file});
      }
    }
  struct Pending {
    long id;
    NodeId src, dst;
    Bandwidth bw;
    Time lat;
    std::string name;
    Bytes buffer;
    Time step;
  };
  std::vector<Pending> links;
  long next_id = 0;
  for (auto [it, end] = edges(g); it != end; ++it) {
    const DotEdge& e = g[*it];
    std::string where =
        fmt::format("edge {} -> {}", g[source(*it, g)].name, g[target(*it, g)].name);
    auto located = [&](auto&& f) {
      try {
        return f();
      } catch (const Error& err) {
        throw Error(err.message(), {file, 0, 0, where});
      }
    };
    if (e.bw.empty() || e.lat.empty())
      throw Error("an edge needs bw and lat attributes", {file, 0, 0, where});
    long id = next_id++;
    if (!e.id.empty()) {
      try {
        id = std::stol(e.id);
      } catch (const std::exception&) {
        throw Error(fmt::format("id must be a whole number, not '{}'", e.id), {file, 0, 0, where});
      }
    }
    links.push_back(
        {id, handle[source(*it, g)], handle[target(*it, g)],
         located([&] { return parse_bandwidth(e.bw); }), located([&] { return parse_time(e.lat); }),
         e.name, e.buffer.empty() ? 0 : located([&] {
           const Bytes b = parse_bytes(e.buffer);
           if (b < 1)
             throw Error("buffer must be at least 1 B (leave it out for the simulator's default)");
           return b;
         }),
         e.step.empty() ? kDefaultStep : located([&] { return parse_time(e.step); })});
  }
  // Edges come out grouped by source; their id attribute restores the original link order.
  std::stable_sort(links.begin(), links.end(),
                   [](const Pending& a, const Pending& c) { return a.id < c.id; });
  for (const Pending& p : links) {
    const LinkId added = b.add_link(p.src, p.dst, p.bw, p.lat, p.name, {file});
    b.set_link_buffer(added, p.buffer);
    b.set_link_step(added, p.step);
  }
  return b.build();
}

}  // namespace tenet::topo
