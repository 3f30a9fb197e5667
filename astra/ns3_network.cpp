#include "astra/ns3_network.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "synth/cost/timing.hpp"
#include "topo/error.hpp"
#include "topo/units.hpp"

namespace tenet::astra {

namespace {

constexpr Bytes kNs3Payload = 4096;  // PACKET_PAYLOAD_SIZE in config.txt

// One full-duplex link of the file: the pair (a < b) and what Tenet has each way.
struct Way {
  Bandwidth bandwidth = 0;  // summed over parallel links
  Time latency = 0;         // the largest of them
  int links = 0;
};
struct Pair {
  Way ab, ba;
};

std::string bits_per_second(Bandwidth bw) { return fmt::format("{}bps", bw * 8); }
std::string picoseconds(Time t) { return fmt::format("{}ps", t); }

// A few examples of `what`, then how many more.
std::string some(const std::vector<std::string>& what) {
  std::string s;
  const size_t shown = std::min<size_t>(what.size(), 3);
  for (size_t i = 0; i < shown; ++i) s += (i ? "; " : "") + what[i];
  if (what.size() > shown) s += fmt::format("; and {} more", what.size() - shown);
  return s;
}

}  // namespace

Ns3Topology ns3_topology(const topo::Topology& t) {
  for (topo::NodeId n = 0; n < t.num_npus(); ++n)
    if (t.node(n).router)
      throw Error(fmt::format(
          "ASTRA-sim's ns-3 network cannot hold '{}': {} passes traffic through (a router NPU), "
          "and the backend's hosts forward nothing, so messages Tenet routes through it have no "
          "path there",
          t.name(), t.describe_node(n)));

  std::map<std::pair<topo::NodeId, topo::NodeId>, Pair> pairs;
  for (const topo::Link& l : t.links()) {
    const bool forward = l.src < l.dst;
    Pair& p = pairs[{std::min(l.src, l.dst), std::max(l.src, l.dst)}];
    Way& w = forward ? p.ab : p.ba;
    w.bandwidth += l.bandwidth;
    w.latency = std::max(w.latency, l.latency);
    ++w.links;
  }

  Ns3Topology out;
  std::vector<std::string> merged, asymmetric, one_way;
  std::set<int64_t> rates;
  std::string links;
  for (const auto& [ends, p] : pairs) {
    const auto [a, b] = ends;
    const std::string pair_name = fmt::format("{} <-> {}", t.describe_node(a), t.describe_node(b));
    if (p.ab.links > 1 || p.ba.links > 1)
      merged.push_back(fmt::format("{} ({} links)", pair_name, std::max(p.ab.links, p.ba.links)));
    Bandwidth bw;
    Time latency;
    if (p.ab.links == 0 || p.ba.links == 0) {
      const Way& w = p.ab.links ? p.ab : p.ba;
      bw = w.bandwidth;
      latency = w.latency;
      one_way.push_back(pair_name);
    } else {
      bw = std::min(p.ab.bandwidth, p.ba.bandwidth);
      latency = std::max(p.ab.latency, p.ba.latency);
      if (p.ab.bandwidth != p.ba.bandwidth || p.ab.latency != p.ba.latency)
        asymmetric.push_back(
            fmt::format("{} ({} and {} one way, {} and {} the other)", pair_name,
                        format_bandwidth(p.ab.bandwidth), format_time(p.ab.latency),
                        format_bandwidth(p.ba.bandwidth), format_time(p.ba.latency)));
    }
    rates.insert(bw * 8);
    links += fmt::format("{} {} {} {} 0\n", a, b, bits_per_second(bw), picoseconds(latency));
  }

  std::string switches;
  for (topo::NodeId s = t.num_npus(); s < t.num_nodes(); ++s)
    switches += fmt::format("{}{}", s == t.num_npus() ? "" : " ", s);
  out.text = fmt::format("{} {} {}\n{}\n{}", t.num_nodes(), t.num_switches(), pairs.size(),
                         switches, links);
  out.rates.assign(rates.begin(), rates.end());

  if (!merged.empty())
    out.notes.push_back(fmt::format(
        "ns-3 holds one link per pair of nodes: {} pairs of parallel links are written as one of "
        "their summed bandwidth ({})",
        merged.size(), some(merged)));
  if (!asymmetric.empty())
    out.notes.push_back(fmt::format(
        "ns-3 links are full duplex with one rate and delay: {} links that differ by direction "
        "are written at the slower rate and larger delay both ways ({})",
        asymmetric.size(), some(asymmetric)));
  if (!one_way.empty())
    out.notes.push_back(
        fmt::format("ns-3 links are full duplex: {} one-way links are written two-way ({})",
                    one_way.size(), some(one_way)));
  return out;
}

std::vector<std::string> ns3_route_notes(const synth::Algorithm& a, const topo::Topology& t) {
  // The backend's routing (CalculateRoute): a breadth-first search from every host that expands
  // switches only; a node's next hops towards the host are its neighbours one hop nearer. So its
  // paths are the fewest-hop paths through switches, and ECMP hashing picks one per flow.
  const int nodes = t.num_nodes();
  const auto transfers = static_cast<synth::TransferId>(a.size());
  std::vector<topo::NodeId> sources;
  std::vector<char> is_source(t.num_npus(), 0);
  for (synth::TransferId id = 0; id < transfers; ++id)
    if (!is_source[a[id].src]) is_source[a[id].src] = 1, sources.push_back(a[id].src);

  // Per source NPU: hops to every node and the number of fewest-hop paths (saturating at 2).
  std::vector<std::vector<int>> hops(t.num_npus()), paths(t.num_npus());
  for (topo::NodeId s : sources) {
    std::vector<int>& d = hops[s];
    std::vector<int>& np = paths[s];
    d.assign(nodes, std::numeric_limits<int>::max());
    np.assign(nodes, 0);
    d[s] = 0;
    np[s] = 1;
    std::vector<topo::NodeId> queue{s};
    for (size_t i = 0; i < queue.size(); ++i) {
      const topo::NodeId u = queue[i];
      if (u != s && !t.is_switch(u)) continue;  // hosts forward nothing
      std::set<topo::NodeId> next;              // parallel links are one neighbour there
      for (topo::LinkId l : t.out_links(u)) next.insert(t.link(l).dst);
      for (topo::LinkId l : t.in_links(u)) next.insert(t.link(l).src);  // links are full duplex
      for (topo::NodeId v : next) {
        if (d[v] == std::numeric_limits<int>::max()) {
          d[v] = d[u] + 1;
          queue.push_back(v);
        }
        if (d[v] == d[u] + 1) np[v] = std::min(2, np[v] + np[u]);
      }
    }
  }

  int64_t spread = 0, longer = 0;
  std::vector<std::string> longer_examples;
  for (synth::TransferId id = 0; id < transfers; ++id) {
    const synth::Transfer& x = a[id];
    const int fewest = hops[x.src][x.dst];
    const int tenet = static_cast<int>(a.route(id).size());
    if (paths[x.src][x.dst] > 1) ++spread;
    if (tenet > fewest) {
      if (++longer <= 3)
        longer_examples.push_back(fmt::format("{} -> {}: {} hops, fewest {}",
                                              t.describe_node(x.src), t.describe_node(x.dst), tenet,
                                              fewest));
    }
  }
  std::vector<std::string> notes;
  if (spread > 0)
    notes.push_back(fmt::format(
        "ns-3 routes each message itself: {} of the algorithm's {} transfers join NPUs with "
        "several fewest-hop paths, and its ECMP hashing picks one per message where Tenet timed "
        "its own choice",
        spread, a.size()));
  if (longer > 0)
    notes.push_back(fmt::format(
        "ns-3 routes by fewest hops: {} of the algorithm's {} transfers take more hops in Tenet's "
        "schedule (a faster path), which ns-3 does not follow ({}{})",
        longer, a.size(), some(longer_examples), longer > 3 ? ", ..." : ""));
  return notes;
}

Time ns3_estimate(const synth::Algorithm& a, const topo::Topology& t) {
  topo::TopologyBuilder b(t.name());
  std::vector<topo::NodeId> handle(t.num_nodes());
  for (topo::NodeId v = 0; v < t.num_nodes(); ++v) {
    handle[v] =
        t.is_npu(v) ? b.add_npu(t.node(v).name, t.node(v).router) : b.add_switch(t.node(v).name);
    b.node_props(handle[v]) = t.node(v);
  }
  // Each hop stores a whole packet before it forwards it (ns-3's devices are store-and-forward):
  // the first byte reaches the next hop a packet's time after it left this one.
  for (const topo::Link& l : t.links())
    b.add_link(handle[l.src], handle[l.dst], l.bandwidth,
               2 * l.latency + transfer_time(kNs3Payload, l.bandwidth));
  const topo::Topology doubled = b.build();
  synth::Algorithm copy = a;
  copy.step_costs = false;
  copy.claimed_time = -1;
  return synth::model_time(doubled, copy);
}

std::string ns3_config(const Ns3Topology& topology, const std::string& dir) {
  // ECN marking thresholds per link rate: the switches look every port's rate up (SetupNetwork:
  // "must set kmin for each link speed"; without the assertion a missing rate marks at 0 bytes).
  // kmin is 4 KB per Gbit/s up to 800 KB and kmax four times it, as the backend's sample has them
  // at 25 and 100 Gbit/s and at its cap. No congestion control reads them (CC_MODE below).
  std::string kmin, kmax, pmax;
  for (int64_t rate : topology.rates) {
    const int64_t min_kb = std::clamp<int64_t>(rate / 250'000'000, 1, 800);
    kmin += fmt::format(" {} {}", rate, min_kb);
    kmax += fmt::format(" {} {}", rate, 4 * min_kb);
    pmax += fmt::format(" {} 0.2", rate);
  }
  const size_t n = topology.rates.size();
  const auto path = [&](const char* file) { return fmt::format("{}/{}", dir, file); };
  // Every key ReadConf reads, with the backend's sample values (scratch/config/config.txt) except
  // where said. CC_MODE 12 is the sample's: a mode RdmaHw has no rule for, so no congestion control
  // acts; flows send at line rate within their window (HAS_WIN) and PFC pauses a full buffer.
  // PACKET_PAYLOAD_SIZE 4096 (the sample: 1000), RoCE's largest MTU and Tenet's packet network's
  // default: each packet's headers then cost about 1 % of a link instead of 5 %.
  return fmt::format(
      "ENABLE_QCN 1\n"
      "USE_DYNAMIC_PFC_THRESHOLD 1\n"
      "\n"
      "PACKET_PAYLOAD_SIZE {}\n"
      "\n"
      "TOPOLOGY_FILE {}\n"
      "FLOW_FILE {}\n"
      "TRACE_FILE {}\n"
      "TRACE_OUTPUT_FILE {}\n"
      "FCT_OUTPUT_FILE {}\n"
      "PFC_OUTPUT_FILE {}\n"
      "\n"
      "SIMULATOR_STOP_TIME 40000000000000.00\n"
      "\n"
      "CC_MODE 12\n"
      "ALPHA_RESUME_INTERVAL 1\n"
      "RATE_DECREASE_INTERVAL 4\n"
      "CLAMP_TARGET_RATE 0\n"
      "RP_TIMER 900\n"
      "EWMA_GAIN 0.00390625\n"
      "FAST_RECOVERY_TIMES 1\n"
      "RATE_AI 50Mb/s\n"
      "RATE_HAI 100Mb/s\n"
      "MIN_RATE 100Mb/s\n"
      "DCTCP_RATE_AI 1000Mb/s\n"
      "\n"
      "ERROR_RATE_PER_LINK 0.0000\n"
      "L2_CHUNK_SIZE 4000\n"
      "L2_ACK_INTERVAL 1\n"
      "L2_BACK_TO_ZERO 0\n"
      "\n"
      "HAS_WIN 1\n"
      "GLOBAL_T 0\n"
      "VAR_WIN 1\n"
      "FAST_REACT 1\n"
      "U_TARGET 0.95\n"
      "MI_THRESH 0\n"
      "INT_MULTI 1\n"
      "MULTI_RATE 0\n"
      "SAMPLE_FEEDBACK 0\n"
      "PINT_LOG_BASE 1.05\n"
      "PINT_PROB 1.0\n"
      "NIC_TOTAL_PAUSE_TIME 0\n"
      "\n"
      "RATE_BOUND 1\n"
      "\n"
      "ACK_HIGH_PRIO 0\n"
      "\n"
      "LINK_DOWN 0 0 0\n"
      "\n"
      "ENABLE_TRACE 0\n"
      "\n"
      "KMAX_MAP {}{}\n"
      "KMIN_MAP {}{}\n"
      "PMAX_MAP {}{}\n"
      "\n"
      "BUFFER_SIZE 32\n"
      "QLEN_MON_FILE {}\n"
      "QLEN_MON_START 0\n"
      "QLEN_MON_END 20000\n",
      kNs3Payload, path("topology.txt"), path("flow.txt"), path("trace.txt"), path("mix.tr"),
      path("fct.txt"), path("pfc.txt"), n, kmax, n, kmin, n, pmax, path("qlen.txt"));
}

}  // namespace tenet::astra
