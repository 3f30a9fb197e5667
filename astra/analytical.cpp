#include "astra/analytical.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <boost/heap/d_ary_heap.hpp>
#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <sstream>
#include <tuple>
#include <unordered_map>

#include "topo/analysis.hpp"
#include "topo/error.hpp"
#include "topo/generators.hpp"
#include "topo/quoting.hpp"

namespace tenet::astra {

using Node = ChakraProtoMsg::Node;
using topo::LinkId;
using topo::NodeId;

std::optional<std::vector<AstraDimension>> astra_dimensions(const topo::Topology& t,
                                                            std::string* why) {
  const auto none = [&](std::string reason) {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  const std::vector<int>& levels = t.levels();
  if (levels.empty())
    return none(
        "it has no dimensions (neither a generator of rings, meshes, switches and their products, "
        "nor a file "
        "with `dimensions`)");
  if (levels.size() > 4)
    return none(fmt::format("it has {} dimensions; ASTRA-sim takes up to 4", levels.size()));
  if (t.num_npus() > 4096)
    return none(fmt::format("{} NPUs is more than Tenet maps (4096)", t.num_npus()));
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
      return none(
          fmt::format("NPU 0 has no link to NPU {}, its neighbour in dimension {} (directly or "
                      "through a switch)",
                      next, d + 1));
  }
  // The same network up to the order of links (a torus and rings of rings list theirs
  // differently): node kinds and the sorted links with their bandwidth and latency.
  using Key = std::tuple<NodeId, NodeId, Bandwidth, Time>;
  const auto shape = [](const topo::Topology& x) {
    std::vector<Key> links;
    links.reserve(static_cast<size_t>(x.num_links()));
    for (LinkId l = 0; l < x.num_links(); ++l)
      links.emplace_back(x.link(l).src, x.link(l).dst, x.link(l).bandwidth, x.link(l).latency);
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
      spec += fmt::format("{}{}:{},bw={}B/s,lat={}ps", d ? " x " : "", specs[choice[d]], levels[d],
                          probe[d].bandwidth, probe[d].latency);
    try {
      if (const topo::Topology g = topo::generate(spec);
          g.fingerprint() == t.fingerprint() || shape(g) == wanted) {
        std::vector<AstraDimension> out;
        for (size_t d = 0; d < dims; ++d)
          out.push_back({kinds[choice[d]], levels[d], probe[d].bandwidth, probe[d].latency});
        return out;
      }
    } catch (const Error&) {
    }
    size_t d = 0;
    while (d < dims && ++choice[d] == 3) choice[d++] = 0;
    if (d == dims)
      return none(
          fmt::format("no choice of Ring, FullyConnected or Switch for its dimensions ({}) "
                      "rebuilds it: its links "
                      "differ (a mesh's open ends, mixed bandwidths or latencies within a "
                      "dimension, extra links)",
                      fmt::join(levels, "x")));
  }
}

std::vector<AstraDimension> nearest_astra_dimensions(const topo::Topology& t) {
  Bandwidth least = 0;
  for (NodeId n = 0; n < t.num_npus(); ++n) {
    const Bandwidth b = topo::egress_bandwidth(t, n);
    least = n == 0 ? b : std::min(least, b);
  }
  return {{AstraDimension::Kind::Switch, t.num_npus(), std::max<Bandwidth>(least, 1),
           topo::npu_diameter(t).latency / 2}};
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
      topo::one_line(comment), fmt::join(kind, ", "), fmt::join(count, ", "), fmt::join(bw, ", "),
      fmt::join(lat, ", "));
}

std::optional<std::string> astra_network_yml(const topo::Topology& t) {
  const auto dims = astra_dimensions(t);
  if (!dims) return std::nullopt;
  return astra_network_yml(
      *dims, fmt::format("ASTRA-sim network configuration written by Tenet for '{}'.", t.name()));
}

AstraMessageTime::AstraMessageTime(const topo::Topology& t) : t_(t), dims_(astra_dimensions(t)) {
  if (!dims_) router_.emplace(t);
}
AstraMessageTime::AstraMessageTime(const topo::Topology& t, std::vector<AstraDimension> dims)
    : t_(t), dims_(std::move(dims)) {}

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
        throw Error(fmt::format("{} and {} are not joined by a route", t_.node(src).name,
                                t_.node(dst).name));
      }
      it->second = {route->latency, route->bottleneck};
    }
    delay_ns = latency_ns(it->second.first) +
               static_cast<double>(bytes) / (static_cast<double>(it->second.second) / 1e9);
  }
  return static_cast<Time>(static_cast<uint64_t>(delay_ns)) *
         1000;  // EventTime: whole ns, truncated
}

AstraRun run_as_astra_sim(const std::vector<EtFile>& files, const topo::Topology& t,
                          const std::vector<AstraDimension>* dims) {
  return run_as_astra_sim(chakra::node_graph(files, t), t, dims);
}

namespace {

// A message's key as ASTRA-sim matches sends and receives: (tag, source, destination, size).
using MessageKey = std::tuple<int64_t, int, int, int64_t>;

MessageKey key_of(const NodeGraph& g, size_t n) {
  const NodeGraph::Node& x = g.nodes[n];
  const bool send = x.type == ChakraProtoMsg::COMM_SEND_NODE;
  return MessageKey{x.tag, send ? x.rank : x.peer, send ? x.peer : x.rank, x.size};
}

// The sends and receives, grouped by key: by tag first, with a counting sort when the tags are
// few enough to count (Tenet's graphs have one per message), a sort otherwise; then by the whole
// key within each tag. Only the grouping matters: slots are taken in issue order.
std::vector<size_t> grouped_by_key(const NodeGraph& g) {
  const size_t total = g.nodes.size();
  auto key_less = [&](size_t x, size_t y) { return key_of(g, x) < key_of(g, y); };
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
      if (e - b > 2 || (e - b == 2 && key_of(g, keyed[b]) != key_of(g, keyed[b + 1])))
        std::sort(keyed.begin() + static_cast<std::ptrdiff_t>(b),
                  keyed.begin() + static_cast<std::ptrdiff_t>(e), key_less);
    }
  } else {
    std::sort(keyed.begin(), keyed.end(), key_less);
  }
  return keyed;
}

// ASTRA-sim pairs the i-th send of a message key with its i-th receive, in the order they are
// issued. Keys get dense ids (by sorting); per key, flat slots, one per message.
struct MessageSlots {
  std::vector<int32_t> key;                    // per node: its key's id; -1: not a send or receive
  std::vector<size_t> slot_begin{0};           // per key: where its slots start
  std::vector<int32_t> sends_of, receives_of;  // per key
};

MessageSlots message_slots(const NodeGraph& g) {
  const std::vector<size_t> keyed = grouped_by_key(g);
  MessageSlots m;
  m.key.assign(g.nodes.size(), -1);
  // The last key's slots end: one per message, its sends or its receives, whichever are more.
  auto end_key = [&m] {
    const int32_t messages = std::max(m.sends_of.back(), m.receives_of.back());
    m.slot_begin.push_back(m.slot_begin.back() + static_cast<size_t>(messages));
  };
  for (size_t j = 0; j < keyed.size(); ++j) {
    if (j == 0 || key_of(g, keyed[j]) != key_of(g, keyed[j - 1])) {
      if (j > 0) end_key();
      m.sends_of.push_back(0), m.receives_of.push_back(0);
    }
    m.key[keyed[j]] = static_cast<int32_t>(m.sends_of.size() - 1);
    ++(g.nodes[keyed[j]].type == ChakraProtoMsg::COMM_SEND_NODE ? m.sends_of.back()
                                                                : m.receives_of.back());
  }
  if (!m.sends_of.empty()) end_key();
  return m;
}

// Dependents of every node (the graph lists dependencies), and how many each node waits for.
struct Dependents {
  std::vector<int32_t> waiting;
  std::vector<size_t> user_begin, users;
};

Dependents dependents(const NodeGraph& g) {
  const size_t total = g.nodes.size();
  Dependents d;
  d.waiting.assign(total, 0);
  d.user_begin.assign(total + 1, 0);
  d.users.resize(g.deps.size());
  for (size_t on : g.deps) ++d.user_begin[on + 1];
  for (size_t n = 0; n < total; ++n) d.user_begin[n + 1] += d.user_begin[n];
  std::vector<size_t> fill(d.user_begin.begin(), d.user_begin.end() - 1);
  for (size_t n = 0; n < total; ++n) {
    d.waiting[n] = static_cast<int32_t>(g.dep_begin[n + 1] - g.dep_begin[n]);
    for (size_t k = g.dep_begin[n]; k < g.dep_begin[n + 1]; ++k) d.users[fill[g.deps[k]]++] = n;
  }
  return d;
}

// The nodes run as ASTRA-sim runs them: every node issued once its dependencies completed.
// Events in time order, first scheduled first at the same time (ASTRA-sim's event queue). A
// message whose receive was posted before it left completes both nodes in one event. The events
// of one time share a list (a schedule has few distinct times), and the times wait in an 8-ary
// heap: pushing an event is a hash lookup and an append, where a heap of events took most of the
// emulation's time.
class Emulation {
 public:
  Emulation(const NodeGraph& g, const AstraMessageTime& message_time, AstraRun& out)
      : g_(g), message_time_(message_time), out_(out), m_(message_slots(g)), d_(dependents(g)) {
    const size_t slots = m_.slot_begin.back();
    arrival_.assign(slots, -1);
    posted_.assign(slots, -1);
    receiver_.assign(slots, 0);
    sends_issued_.assign(m_.sends_of.size(), 0);
    receives_issued_.assign(m_.sends_of.size(), 0);
  }

  // Runs every node that can run. Throws tenet::Error when some never complete.
  void run() {
    const size_t total = g_.nodes.size();
    for (size_t n = 0; n < total; ++n)
      if (d_.waiting[n] == 0) issue(n, 0);
    while (!times_.empty()) {
      const Time now = times_.top();
      times_.pop();
      std::vector<Event>& list = at_time_.at(now);
      for (size_t k = 0; k < list.size(); ++k) {  // grows meanwhile: receives completing now
        const Event e = list[k];
        complete(e.node, now);
        if (e.also != kNone) complete(e.also, now);
      }
      list.clear();
      spare_.push_back(std::move(list));
      at_time_.erase(now);
    }
    if (done_ != total) throw_stuck();
  }

 private:
  struct Event {
    size_t node, also;  // also: the receive the message completes with it, or kNone
  };
  static constexpr size_t kNone = std::numeric_limits<size_t>::max();

  void complete_at(Time at, size_t n, size_t also) {
    auto [it, fresh] = at_time_.try_emplace(at);
    if (fresh) {
      times_.push(at);
      if (!spare_.empty()) it->second = std::move(spare_.back()), spare_.pop_back();
    }
    it->second.push_back({n, also});
  }

  void issue(size_t n, Time now) {
    const NodeGraph::Node& x = g_.nodes[n];
    switch (x.type) {
      case ChakraProtoMsg::COMM_SEND_NODE: {
        const Time at =
            now + message_time_(g_.npu[x.rank], g_.npu[x.peer], std::max<int64_t>(x.size, 1));
        ++out_.messages;
        const size_t slot =
            m_.slot_begin[m_.key[n]] + static_cast<size_t>(sends_issued_[m_.key[n]]++);
        arrival_[slot] = at;
        // A receive posted by now completes at the message's arrival.
        complete_at(at, n, posted_[slot] >= 0 ? receiver_[slot] : kNone);
        break;
      }
      case ChakraProtoMsg::COMM_RECV_NODE: {
        const size_t slot =
            m_.slot_begin[m_.key[n]] + static_cast<size_t>(receives_issued_[m_.key[n]]++);
        posted_[slot] = now;
        receiver_[slot] = n;
        if (arrival_[slot] >= 0) complete_at(std::max(now, arrival_[slot]), n, kNone);
        break;
      }
      case ChakraProtoMsg::COMP_NODE:
        // CustomAlgorithm::issue: duration_micros in ns, or 1 ns.
        complete_at(now + (x.micros != 0 ? static_cast<Time>(x.micros) * 1'000'000 : 1'000), n,
                    kNone);
        break;
      default:
        throw Error(
            fmt::format("rank {} node {}: a {} node; ASTRA-sim's custom collectives run sends, "
                        "receives and COMP nodes only, and would never finish this one",
                        x.rank, x.id, ChakraProtoMsg::NodeType_Name(x.type)));
    }
  }

  void complete(size_t n, Time at) {
    ++done_;
    const int r = g_.nodes[n].rank;
    out_.finish[r] = std::max(out_.finish[r], at);
    out_.time = std::max(out_.time, at);
    for (size_t j = d_.user_begin[n]; j < d_.user_begin[n + 1]; ++j)
      if (--d_.waiting[d_.users[j]] == 0) issue(d_.users[j], at);
  }

  [[noreturn]] void throw_stuck() const {
    const size_t total = g_.nodes.size();
    for (size_t n = 0; n < total; ++n) {
      const bool unmatched = g_.nodes[n].type == ChakraProtoMsg::COMM_RECV_NODE &&
                             d_.waiting[n] == 0 &&
                             m_.sends_of[m_.key[n]] < m_.receives_of[m_.key[n]];
      if (d_.waiting[n] > 0 || unmatched)
        throw Error(fmt::format(
            "{} of {} nodes never complete, e.g. rank {} node {}: {}; ASTRA-sim would wait forever",
            total - done_, total, g_.nodes[n].rank, g_.nodes[n].id,
            d_.waiting[n] > 0 ? "a dependency never completes" : "no send matches this receive"));
    }
    throw Error(fmt::format("{} of {} nodes never complete; ASTRA-sim would wait forever",
                            total - done_, total));
  }

  const NodeGraph& g_;
  const AstraMessageTime& message_time_;
  AstraRun& out_;
  MessageSlots m_;
  Dependents d_;
  // Per slot: the message's arrival; when its receive was issued; that receive.
  std::vector<Time> arrival_, posted_;
  std::vector<size_t> receiver_;
  std::vector<int32_t> sends_issued_, receives_issued_;  // per key
  boost::heap::d_ary_heap<Time, boost::heap::arity<8>, boost::heap::compare<std::greater<Time>>>
      times_;
  std::unordered_map<Time, std::vector<Event>> at_time_;
  std::vector<std::vector<Event>> spare_;  // emptied lists, their memory kept
  size_t done_ = 0;
};

}  // namespace

AstraRun run_as_astra_sim(const NodeGraph& g, const topo::Topology& t,
                          const std::vector<AstraDimension>* dims) {
  AstraRun out;
  out.finish.assign(g.npu.size(), 0);
  const AstraMessageTime message_time = dims ? AstraMessageTime(t, *dims) : AstraMessageTime(t);
  out.on_dimensions = message_time.dimensions();
  Emulation(g, message_time, out).run();
  return out;
}

}  // namespace tenet::astra
