#include "chakra/astra_analytical.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <boost/heap/d_ary_heap.hpp>
#include <limits>
#include <sstream>
#include <tuple>
#include <unordered_map>

#include "topo/analysis.hpp"
#include "topo/error.hpp"
#include "topo/generators.hpp"

namespace tenet::chakra {

using Node = ChakraProtoMsg::Node;
using topo::LinkId;
using topo::NodeId;

std::optional<std::vector<AstraDimension>> astra_dimensions(const topo::Topology& t, std::string* why) {
  const auto none = [&](std::string reason) {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  const std::vector<int>& levels = t.levels();
  if (levels.empty())
    return none("it has no dimensions (neither a generator of rings, meshes, switches and their products, nor a file "
                "with `dimensions`)");
  if (levels.size() > 4) return none(fmt::format("it has {} dimensions; ASTRA-sim takes up to 4", levels.size()));
  if (t.num_npus() > 4096) return none(fmt::format("{} NPUs is more than Tenet maps (4096)", t.num_npus()));
  const size_t dims = levels.size();
  std::vector<int64_t> stride(dims, 1);
  for (size_t d = 1; d < dims; ++d) stride[d] = stride[d - 1] * levels[d - 1];
  // Bandwidth and latency per dimension, from NPU 0's link towards the next NPU of its line
  // (directly, or through a switch).
  std::vector<topo::Link> probe(dims);
  for (size_t d = 0; d < dims; ++d) {
    if (levels[d] < 2) return none(fmt::format("dimension {} has {} NPU", d + 1, levels[d]));
    const NodeId next = static_cast<NodeId>(stride[d]);
    bool found = false;
    for (LinkId l : t.out_links(0)) {
      const NodeId w = t.link(l).dst;
      bool reaches = w == next;
      if (t.is_switch(w))
        for (LinkId m : t.out_links(w)) reaches = reaches || t.link(m).dst == next;
      if (reaches) {
        probe[d] = t.link(l);
        found = true;
        break;
      }
    }
    if (!found)
      return none(fmt::format("NPU 0 has no link to NPU {}, its neighbour in dimension {} (directly or through a switch)",
                              next, d + 1));
  }
  // The same network up to the order of links (a torus and rings of rings list theirs
  // differently): node kinds and the sorted links with their bandwidth and latency.
  using Key = std::tuple<NodeId, NodeId, Bandwidth, Time>;
  const auto shape = [](const topo::Topology& x) {
    std::vector<Key> links;
    links.reserve(static_cast<size_t>(x.num_links()));
    for (LinkId l = 0; l < x.num_links(); ++l) links.emplace_back(x.link(l).src, x.link(l).dst, x.link(l).bandwidth, x.link(l).latency);
    std::sort(links.begin(), links.end());
    std::vector<bool> passes;
    for (NodeId n = 0; n < x.num_nodes(); ++n) passes.push_back(x.passes_through(n));
    return std::tuple(x.num_npus(), x.num_switches(), passes, links);
  };
  const auto wanted = shape(t);
  using Kind = AstraDimension::Kind;
  const Kind kinds[] = {Kind::Ring, Kind::FullyConnected, Kind::Switch};
  const char* specs[] = {"ring", "fc", "switch"};
  std::vector<int> choice(dims, 0);
  for (;;) {
    std::string spec;
    for (size_t d = 0; d < dims; ++d)
      spec += fmt::format("{}{}:{},bw={}B/s,lat={}ps", d ? " x " : "", specs[choice[d]], levels[d], probe[d].bandwidth,
                          probe[d].latency);
    try {
      if (const topo::Topology g = topo::generate(spec); g.fingerprint() == t.fingerprint() || shape(g) == wanted) {
        std::vector<AstraDimension> out;
        for (size_t d = 0; d < dims; ++d) out.push_back({kinds[choice[d]], levels[d], probe[d].bandwidth, probe[d].latency});
        return out;
      }
    } catch (const Error&) {
    }
    size_t d = 0;
    while (d < dims && ++choice[d] == 3) choice[d++] = 0;
    if (d == dims)
      return none(fmt::format("no choice of Ring, FullyConnected or Switch for its dimensions ({}) rebuilds it: its links "
                              "differ (a mesh's open ends, mixed bandwidths or latencies within a dimension, extra links)",
                              fmt::join(levels, "x")));
  }
}

std::vector<AstraDimension> nearest_astra_dimensions(const topo::Topology& t) {
  Bandwidth least = 0;
  for (NodeId n = 0; n < t.num_npus(); ++n) {
    const Bandwidth b = topo::egress_bandwidth(t, n);
    least = n == 0 ? b : std::min(least, b);
  }
  return {{AstraDimension::Kind::Switch, t.num_npus(), std::max<Bandwidth>(least, 1), topo::npu_diameter(t).latency / 2}};
}

namespace {

// As ASTRA-sim reads network.yml: bandwidth in GB/s of 2^30 B/s, latency in ns, both doubles.
double gbps(Bandwidth b) { return static_cast<double>(b) / 1073741824.0; }
double latency_ns(Time ps) { return static_cast<double>(ps) / 1000.0; }

}  // namespace

std::string astra_network_yml(const std::vector<AstraDimension>& dims, const std::string& comment) {
  std::vector<std::string> kind, count, bw, lat;
  for (const AstraDimension& d : dims) {
    kind.push_back(d.kind == AstraDimension::Kind::Ring             ? "Ring"
                   : d.kind == AstraDimension::Kind::FullyConnected ? "FullyConnected"
                                                                    : "Switch");
    count.push_back(std::to_string(d.npus));
    bw.push_back(fmt::format("{:.17g}", gbps(d.bandwidth)));
    lat.push_back(fmt::format("{:.17g}", latency_ns(d.latency)));
  }
  return fmt::format(
      "# {}\n"
      "# Bandwidth in GB/s as ASTRA-sim reads it (2^30 bytes per second), latency in ns.\n"
      "topology: [ {} ]\nnpus_count: [ {} ]\nbandwidth: [ {} ]\nlatency: [ {} ]\n",
      comment, fmt::join(kind, ", "), fmt::join(count, ", "), fmt::join(bw, ", "), fmt::join(lat, ", "));
}

std::optional<std::string> astra_network_yml(const topo::Topology& t) {
  const auto dims = astra_dimensions(t);
  if (!dims) return std::nullopt;
  return astra_network_yml(*dims, fmt::format("ASTRA-sim network configuration written by Tenet for '{}'.", t.name()));
}

AstraMessageTime::AstraMessageTime(const topo::Topology& t) : t_(t), dims_(astra_dimensions(t)) {
  if (!dims_) router_.emplace(t);
}
AstraMessageTime::AstraMessageTime(const topo::Topology& t, std::vector<AstraDimension> dims) : t_(t), dims_(std::move(dims)) {}

Time AstraMessageTime::operator()(NodeId src, NodeId dst, Bytes bytes) const {
  double delay_ns = 0;
  if (dims_) {
    // MultiDimTopology::send: the first dimension whose address differs; BasicTopology's
    // compute_communication_delay: hops x latency + bytes / (GB/s x 2^30 / 10^9 B/ns).
    int64_t a = src, b = dst;
    for (const AstraDimension& d : *dims_) {
      const int64_t x = a % d.npus, y = b % d.npus;
      a /= d.npus, b /= d.npus;
      if (x == y) continue;
      int hops = 1;
      if (d.kind == AstraDimension::Kind::Switch) hops = 2;
      if (d.kind == AstraDimension::Kind::Ring) {
        const int64_t clockwise = (y - x + d.npus) % d.npus;
        hops = static_cast<int>(std::min(clockwise, d.npus - clockwise));
      }
      const double bandwidth_bpns = gbps(d.bandwidth) * (1 << 30) / (1'000'000'000);
      delay_ns = hops * latency_ns(d.latency) + static_cast<double>(bytes) / bandwidth_bpns;
      break;
    }
  } else {
    auto [it, fresh] = routes_.try_emplace(static_cast<int64_t>(src) * t_.num_nodes() + dst);
    if (fresh) {
      const auto route = router_->route(src, dst);
      if (!route) {
        routes_.erase(it);
        throw Error(fmt::format("{} and {} are not joined by a route", t_.node(src).name, t_.node(dst).name));
      }
      it->second = {route->latency, route->bottleneck};
    }
    delay_ns = latency_ns(it->second.first) + static_cast<double>(bytes) / (static_cast<double>(it->second.second) / 1e9);
  }
  return static_cast<Time>(static_cast<uint64_t>(delay_ns)) * 1000;  // EventTime: whole ns, truncated
}

AstraGraph astra_graph(const std::vector<EtFile>& files, const topo::Topology& t) {
  const int p = static_cast<int>(files.size());
  AstraGraph g;
  // Ranks to NPUs.
  g.npu.resize(static_cast<size_t>(p));
  for (int r = 0; r < p; ++r) g.npu[r] = r;
  if (p > 0)
    for (const auto& a : files[0].metadata.attr())
      if (a.name() == "tenet_ranks" && a.has_string_val()) {
        std::stringstream in(a.string_val());
        std::string item;
        for (int r = 0; std::getline(in, item, ',') && r < p; ++r) {
          NodeId v = -1;
          const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
          if (ec != std::errc() || end != item.data() + item.size() || v < 0 || v >= t.num_npus())
            throw Error(fmt::format("tenet_ranks names '{}', not an NPU of the topology", item));
          g.npu[r] = v;
        }
      }
  for (int r = 0; r < p; ++r)
    if (g.npu[r] >= t.num_npus()) throw Error(fmt::format("rank {} has no NPU in a topology of {}", r, t.num_npus()));
  // Nodes of every rank in one numbering (rank r's node i is first[r] + i), each decoded once.
  std::vector<size_t> first(static_cast<size_t>(p) + 1, 0);
  for (int r = 0; r < p; ++r) first[r + 1] = first[r] + files[r].nodes.size();
  g.nodes.resize(first[p]);
  for (int r = 0; r < p; ++r)
    for (size_t i = 0; i < files[r].nodes.size(); ++i) {
      const Node& n = files[r].nodes[i];
      AstraGraph::Node& x = g.nodes[first[r] + i];
      x.rank = r;
      x.type = n.type();
      x.id = n.id();
      x.micros = n.duration_micros();
      const bool send = n.type() == ChakraProtoMsg::COMM_SEND_NODE, recv = n.type() == ChakraProtoMsg::COMM_RECV_NODE;
      if (!send && !recv) continue;
      bool has_peer = false, has_size = false, has_tag = false;
      for (const auto& a : n.attr()) {  // one pass (int_attr scans per name); the first of a name counts
        const std::string& name = a.name();
        const bool peer = name == (send ? "comm_dst" : "comm_src"), size = name == "comm_size", tag = name == "comm_tag";
        if (!(peer && !has_peer) && !(size && !has_size) && !(tag && !has_tag)) continue;
        const auto v = int_value(a);
        if (!v) continue;
        if (peer) x.peer = static_cast<int>(std::clamp<int64_t>(*v, -1, p)), has_peer = true;
        if (size) x.size = *v, has_size = true;
        if (tag) x.tag = *v, has_tag = true;
      }
      if (!has_peer || !has_size || !has_tag)
        throw Error(fmt::format("rank {} node {}: a {} needs comm_{}, comm_size and comm_tag", r, n.id(),
                                send ? "send" : "receive", send ? "dst" : "src"));
      if (x.peer < 0 || x.peer >= p || x.peer == r)
        throw Error(fmt::format("rank {} node {}: comm_{} is not another rank", r, n.id(), send ? "dst" : "src"));
    }
  // Dependencies, data and control alike (ASTRA-sim's feeder waits for both), CSR.
  g.dep_begin.assign(first[p] + 1, 0);
  for (int r = 0; r < p; ++r) {
    const auto& nodes = files[r].nodes;
    // Node ids are usually their positions (Tenet writes them so); otherwise a map.
    bool dense = true;
    for (size_t i = 0; i < nodes.size() && dense; ++i) dense = nodes[i].id() == i;
    std::unordered_map<uint64_t, size_t> index;
    if (!dense)
      for (size_t i = 0; i < nodes.size(); ++i) index[nodes[i].id()] = i;
    for (size_t i = 0; i < nodes.size(); ++i) {
      auto depend = [&](uint64_t on) {
        size_t at = on;
        if (!dense) {
          auto it = index.find(on);
          at = it == index.end() ? nodes.size() : it->second;
        }
        if (at >= nodes.size())
          throw Error(fmt::format("rank {} node {}: depends on node {}, which is not in the file", r, nodes[i].id(), on));
        g.deps.push_back(first[r] + at);
      };
      for (uint64_t d : nodes[i].data_deps()) depend(d);
      for (uint64_t d : nodes[i].ctrl_deps()) depend(d);
      g.dep_begin[first[r] + i + 1] = g.deps.size();
    }
  }
  return g;
}

AstraRun run_as_astra_sim(const std::vector<EtFile>& files, const topo::Topology& t, const std::vector<AstraDimension>* dims) {
  return run_as_astra_sim(astra_graph(files, t), t, dims);
}

AstraRun run_as_astra_sim(const AstraGraph& g, const topo::Topology& t, const std::vector<AstraDimension>* dims) {
  const int p = static_cast<int>(g.npu.size());
  const size_t total = g.nodes.size();
  AstraRun out;
  out.finish.assign(static_cast<size_t>(p), 0);
  const AstraMessageTime message_time = dims ? AstraMessageTime(t, *dims) : AstraMessageTime(t);
  out.on_dimensions = message_time.dimensions();

  // Message keys (tag, source, destination, size): ASTRA-sim pairs the i-th send of a key with its
  // i-th receive, in the order they are issued. Dense ids by sorting; per key, flat slots.
  using Key = std::tuple<int64_t, int, int, int64_t>;
  auto key_of = [&](size_t n) {
    const AstraGraph::Node& x = g.nodes[n];
    const bool send = x.type == ChakraProtoMsg::COMM_SEND_NODE;
    return Key{x.tag, send ? x.rank : x.peer, send ? x.peer : x.rank, x.size};
  };
  // Grouped by tag first: a counting sort when the tags are few enough to count (Tenet's graphs
  // have one per message, two million nodes at 1024 NPUs), a sort otherwise; then by the whole
  // key within each tag. Only the grouping matters: slots are taken in issue order.
  std::vector<size_t> keyed;
  int64_t low = std::numeric_limits<int64_t>::max(), high = std::numeric_limits<int64_t>::min();
  for (size_t n = 0; n < total; ++n)
    if (g.nodes[n].peer >= 0) {
      keyed.push_back(n);
      low = std::min(low, g.nodes[n].tag), high = std::max(high, g.nodes[n].tag);
    }
  if (!keyed.empty() && low >= 0 && high < static_cast<int64_t>(4 * keyed.size() + 1024)) {
    std::vector<size_t> at(static_cast<size_t>(high) + 2, 0);
    for (size_t n : keyed) ++at[static_cast<size_t>(g.nodes[n].tag) + 1];
    for (size_t i = 1; i < at.size(); ++i) at[i] += at[i - 1];
    std::vector<size_t> by_tag(keyed.size());
    for (size_t n : keyed) by_tag[at[static_cast<size_t>(g.nodes[n].tag)]++] = n;
    keyed = std::move(by_tag);
    for (size_t b = 0, e = 0; b < keyed.size(); b = e) {
      for (e = b + 1; e < keyed.size() && g.nodes[keyed[e]].tag == g.nodes[keyed[b]].tag;) ++e;
      if (e - b > 2 || (e - b == 2 && key_of(keyed[b]) != key_of(keyed[b + 1])))
        std::sort(keyed.begin() + static_cast<std::ptrdiff_t>(b), keyed.begin() + static_cast<std::ptrdiff_t>(e),
                  [&](size_t x, size_t y) { return key_of(x) < key_of(y); });
    }
  } else {
    std::sort(keyed.begin(), keyed.end(), [&](size_t x, size_t y) { return key_of(x) < key_of(y); });
  }
  std::vector<int32_t> key(total, -1);
  std::vector<size_t> slot_begin{0};  // per key: where its slots start
  std::vector<int32_t> sends_of, receives_of;
  for (size_t j = 0; j < keyed.size(); ++j) {
    if (j == 0 || key_of(keyed[j]) != key_of(keyed[j - 1])) {
      if (j > 0) slot_begin.push_back(slot_begin.back() + static_cast<size_t>(std::max(sends_of.back(), receives_of.back())));
      sends_of.push_back(0), receives_of.push_back(0);
    }
    key[keyed[j]] = static_cast<int32_t>(sends_of.size() - 1);
    ++(g.nodes[keyed[j]].type == ChakraProtoMsg::COMM_SEND_NODE ? sends_of.back() : receives_of.back());
  }
  if (!sends_of.empty()) slot_begin.push_back(slot_begin.back() + static_cast<size_t>(std::max(sends_of.back(), receives_of.back())));
  keyed = std::vector<size_t>();  // freed (`= {}` keeps the capacity)
  const size_t slots = slot_begin.back();
  std::vector<Time> arrival(slots, -1), posted(slots, -1);  // per slot: the message's arrival; when its receive was issued
  std::vector<size_t> receiver(slots, 0);
  std::vector<int32_t> sends_issued(sends_of.size(), 0), receives_issued(sends_of.size(), 0);

  // Dependents of every node (the graph lists dependencies), and how many each node waits for.
  std::vector<int32_t> waiting(total, 0);
  std::vector<size_t> user_begin(total + 1, 0), users(g.deps.size());
  for (size_t on : g.deps) ++user_begin[on + 1];
  for (size_t n = 0; n < total; ++n) user_begin[n + 1] += user_begin[n];
  {
    std::vector<size_t> fill(user_begin.begin(), user_begin.end() - 1);
    for (size_t n = 0; n < total; ++n) {
      waiting[n] = static_cast<int32_t>(g.dep_begin[n + 1] - g.dep_begin[n]);
      for (size_t d = g.dep_begin[n]; d < g.dep_begin[n + 1]; ++d) users[fill[g.deps[d]]++] = n;
    }
  }

  // Events in time order, first scheduled first at the same time (ASTRA-sim's event queue). A
  // message whose receive was posted before it left completes both nodes in one event. The events
  // of one time share a list (a schedule has few distinct times: 509 for the two million nodes of
  // a 1024-NPU All-Gather), and the times wait in an 8-ary heap: pushing an event is a hash lookup
  // and an append, where a heap of events took most of the emulation's time.
  struct Event {
    size_t node, also;  // also: the receive the message completes with it, or kNone
  };
  constexpr size_t kNone = std::numeric_limits<size_t>::max();
  boost::heap::d_ary_heap<Time, boost::heap::arity<8>, boost::heap::compare<std::greater<Time>>> times;
  std::unordered_map<Time, std::vector<Event>> at_time;
  std::vector<std::vector<Event>> spare;  // emptied lists, their memory kept
  auto complete_at = [&](Time at, size_t n, size_t also) {
    auto [it, fresh] = at_time.try_emplace(at);
    if (fresh) {
      times.push(at);
      if (!spare.empty()) it->second = std::move(spare.back()), spare.pop_back();
    }
    it->second.push_back({n, also});
  };
  auto issue = [&](size_t n, Time now) {
    const AstraGraph::Node& x = g.nodes[n];
    switch (x.type) {
      case ChakraProtoMsg::COMM_SEND_NODE: {
        const Time at = now + message_time(g.npu[x.rank], g.npu[x.peer], std::max<int64_t>(x.size, 1));
        ++out.messages;
        const size_t slot = slot_begin[key[n]] + static_cast<size_t>(sends_issued[key[n]]++);
        arrival[slot] = at;
        complete_at(at, n, posted[slot] >= 0 ? receiver[slot] : kNone);  // posted by now: done at arrival
        break;
      }
      case ChakraProtoMsg::COMM_RECV_NODE: {
        const size_t slot = slot_begin[key[n]] + static_cast<size_t>(receives_issued[key[n]]++);
        posted[slot] = now;
        receiver[slot] = n;
        if (arrival[slot] >= 0) complete_at(std::max(now, arrival[slot]), n, kNone);
        break;
      }
      case ChakraProtoMsg::COMP_NODE:
        // CustomAlgorithm::issue: duration_micros in ns, or 1 ns.
        complete_at(now + (x.micros != 0 ? static_cast<Time>(x.micros) * 1'000'000 : 1'000), n, kNone);
        break;
      default:
        throw Error(fmt::format("rank {} node {}: a {} node; ASTRA-sim's custom collectives run sends, receives and COMP "
                                "nodes only, and would never finish this one",
                                x.rank, x.id, ChakraProtoMsg::NodeType_Name(x.type)));
    }
  };
  for (size_t n = 0; n < total; ++n)
    if (waiting[n] == 0) issue(n, 0);
  size_t done = 0;
  auto complete = [&](size_t n, Time at) {
    ++done;
    const int r = g.nodes[n].rank;
    out.finish[r] = std::max(out.finish[r], at);
    out.time = std::max(out.time, at);
    for (size_t j = user_begin[n]; j < user_begin[n + 1]; ++j)
      if (--waiting[users[j]] == 0) issue(users[j], at);
  };
  while (!times.empty()) {
    const Time now = times.top();
    times.pop();
    std::vector<Event>& list = at_time.at(now);
    for (size_t k = 0; k < list.size(); ++k) {  // grows meanwhile: receives completing now
      const Event e = list[k];
      complete(e.node, now);
      if (e.also != kNone) complete(e.also, now);
    }
    list.clear();
    spare.push_back(std::move(list));
    at_time.erase(now);
  }
  if (done != total) {
    for (size_t n = 0; n < total; ++n) {
      const bool unmatched = g.nodes[n].type == ChakraProtoMsg::COMM_RECV_NODE && waiting[n] == 0 &&
                             sends_of[key[n]] < receives_of[key[n]];
      if (waiting[n] > 0 || unmatched)
        throw Error(fmt::format("{} of {} nodes never complete, e.g. rank {} node {}: {}; ASTRA-sim would wait forever",
                                total - done, total, g.nodes[n].rank, g.nodes[n].id,
                                waiting[n] > 0 ? "a dependency never completes" : "no send matches this receive"));
    }
    throw Error(fmt::format("{} of {} nodes never complete; ASTRA-sim would wait forever", total - done, total));
  }
  return out;
}

}  // namespace tenet::chakra
