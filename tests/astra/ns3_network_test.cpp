// ASTRA-sim's ns-3 network files (astra/ns3_network.hpp), read back as the backend reads them.
//
// The readers below follow astra-network-ns3 (snapshot 8fd3604), scratch/common.h:
//  - SetupNetwork: `topof >> node_num >> switch_num >> link_num`, then switch_num switch ids (node
//    type 1; the rest are hosts), then per link `topof >> src >> dst >> data_rate >> link_delay >>
//    error_rate`; each link is installed as one full-duplex QbbChannel between n.Get(src) and
//    n.Get(dst), and recorded in nbr2if[src][dst] and nbr2if[dst][src], so a second link between
//    the same pair replaces the first in the routing graph;
//  - the rate goes through ns-3's DataRate string ("<number><unit>",
//  src/network/utils/data-rate.cc)
//    and the delay through Time's ("<number><unit>", src/core/model/nstime.h);
//  - the switches look up every port's rate in the ECN maps (SetConfig: "must set kmin for each
//    link speed");
//  - ReadConf: `conf >> key` in a loop, each known key then reads its values; an unknown key is
//    skipped alone, so its value would be read as the next key;
//  - CalculateRoute: breadth-first from each host, expanding switches only.
#include "astra/ns3_network.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "astra/bundle.hpp"
#include "chakra/et.hpp"
#include "synth/cost/timing.hpp"
#include "synth/producers.hpp"
#include "tests/topo/test_util.hpp"
#include "topo/error.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"
#include "topo/output_folder.hpp"
#include "topo/units.hpp"

namespace tenet::astra {
namespace {

using synth::CollectiveKind;
using ::testing::HasSubstr;
using topo::testing::TempDir;

bool fs_exists(const std::string& path) { return std::filesystem::exists(path); }

// "<number><unit>" as ns-3 parses it, in the unit's base (bit/s or picoseconds); -1 otherwise.
double ns3_quantity(const std::string& text, const std::map<std::string, double>& units) {
  const size_t digits = text.find_first_not_of("0123456789.");
  if (digits == 0 || digits == std::string::npos) return -1;
  const auto unit = units.find(text.substr(digits));
  if (unit == units.end()) return -1;
  return std::stod(text.substr(0, digits)) * unit->second;
}
double ns3_rate(const std::string& text) {
  return ns3_quantity(text, {{"bps", 1}, {"Kbps", 1e3}, {"Mbps", 1e6}, {"Gbps", 1e9}});
}
double ns3_time(const std::string& text) {
  return ns3_quantity(text, {{"ps", 1}, {"ns", 1e3}, {"us", 1e6}, {"ms", 1e9}, {"s", 1e12}});
}

struct Ns3Link {
  int a = 0, b = 0;
  double bps = 0, ps = 0;
};
struct Ns3File {
  int nodes = 0, switches = 0;
  std::set<int> switch_ids;
  std::vector<Ns3Link> links;
};

// The topology file read as SetupNetwork reads it, every value checked as the backend needs it.
Ns3File read_topology_file(const std::string& text) {
  std::istringstream in(text);
  Ns3File f;
  int links = 0;
  EXPECT_TRUE(in >> f.nodes >> f.switches >> links);
  for (int i = 0; i < f.switches; ++i) {
    int id = -1;
    EXPECT_TRUE(in >> id);
    EXPECT_TRUE(id >= 0 && id < f.nodes) << id;
    f.switch_ids.insert(id);
  }
  std::set<std::pair<int, int>> pairs;
  for (int i = 0; i < links; ++i) {
    std::string rate, delay;
    double error = -1;
    Ns3Link l;
    EXPECT_TRUE(in >> l.a >> l.b >> rate >> delay >> error) << "link " << i;
    EXPECT_TRUE(l.a >= 0 && l.a < f.nodes && l.b >= 0 && l.b < f.nodes && l.a != l.b);
    EXPECT_TRUE(pairs.insert({std::min(l.a, l.b), std::max(l.a, l.b)}).second)
        << "a second link between " << l.a << " and " << l.b << " replaces the first";
    l.bps = ns3_rate(rate);
    l.ps = ns3_time(delay);
    EXPECT_GT(l.bps, 0) << rate;
    EXPECT_GE(l.ps, 0) << delay;
    EXPECT_EQ(error, 0);
    f.links.push_back(l);
  }
  std::string rest;
  EXPECT_FALSE(in >> rest) << "left over: " << rest;
  return f;
}

// config.txt read as ReadConf reads it: every key known, with its values; returns key -> values.
std::map<std::string, std::vector<std::string>> read_config(const std::string& text) {
  const std::set<std::string> one = {"ENABLE_QCN",
                                     "USE_DYNAMIC_PFC_THRESHOLD",
                                     "CLAMP_TARGET_RATE",
                                     "PAUSE_TIME",
                                     "DATA_RATE",
                                     "LINK_DELAY",
                                     "PACKET_PAYLOAD_SIZE",
                                     "L2_CHUNK_SIZE",
                                     "L2_ACK_INTERVAL",
                                     "L2_BACK_TO_ZERO",
                                     "TOPOLOGY_FILE",
                                     "FLOW_FILE",
                                     "TRACE_FILE",
                                     "TRACE_OUTPUT_FILE",
                                     "SIMULATOR_STOP_TIME",
                                     "ALPHA_RESUME_INTERVAL",
                                     "RP_TIMER",
                                     "EWMA_GAIN",
                                     "FAST_RECOVERY_TIMES",
                                     "RATE_AI",
                                     "RATE_HAI",
                                     "ERROR_RATE_PER_LINK",
                                     "CC_MODE",
                                     "RATE_DECREASE_INTERVAL",
                                     "MIN_RATE",
                                     "FCT_OUTPUT_FILE",
                                     "HAS_WIN",
                                     "GLOBAL_T",
                                     "MI_THRESH",
                                     "VAR_WIN",
                                     "FAST_REACT",
                                     "U_TARGET",
                                     "INT_MULTI",
                                     "RATE_BOUND",
                                     "ACK_HIGH_PRIO",
                                     "DCTCP_RATE_AI",
                                     "NIC_TOTAL_PAUSE_TIME",
                                     "PFC_OUTPUT_FILE",
                                     "ENABLE_TRACE",
                                     "BUFFER_SIZE",
                                     "QLEN_MON_FILE",
                                     "QLEN_MON_START",
                                     "QLEN_MON_END",
                                     "MULTI_RATE",
                                     "SAMPLE_FEEDBACK",
                                     "PINT_LOG_BASE",
                                     "PINT_PROB"};
  std::istringstream in(text);
  std::map<std::string, std::vector<std::string>> keys;
  for (std::string key; in >> key;) {
    std::vector<std::string>& values = keys[key];
    EXPECT_TRUE(values.empty()) << key << " twice";
    int count = 0;
    if (one.count(key)) {
      count = 1;
    } else if (key == "LINK_DOWN") {
      count = 3;
    } else if (key == "KMAX_MAP" || key == "KMIN_MAP" || key == "PMAX_MAP") {
      int n = 0;
      EXPECT_TRUE(in >> n);
      count = 2 * n;
    } else {
      ADD_FAILURE() << "ReadConf does not know " << key;
    }
    for (int i = 0; i < count; ++i) {
      std::string v;
      EXPECT_TRUE(in >> v) << key;
      values.push_back(v);
    }
  }
  return keys;
}

// The rates a map (rate value ...) holds.
std::set<double> map_rates(const std::vector<std::string>& values) {
  std::set<double> rates;
  for (size_t i = 0; i + 1 < values.size(); i += 2) rates.insert(std::stod(values[i]));
  return rates;
}

TEST(Ns3Network, TheTopologyFileIsTheTopology) {
  for (const char* spec : {"leafspine:2x4,spines=2", "nvcluster:2x4,net=rail", "switch:8",
                           "nvcluster:2x4,net=fattree", "dgx1"}) {
    const auto t = topo::generate(spec);
    const Ns3Topology n = ns3_topology(t);
    const Ns3File f = read_topology_file(n.text);
    EXPECT_EQ(f.nodes, t.num_nodes()) << spec;
    EXPECT_EQ(f.switches, t.num_switches()) << spec;
    // Hosts first, as the frontend sends from node i for NPU i; the switches after.
    for (int s = t.num_npus(); s < t.num_nodes(); ++s) EXPECT_TRUE(f.switch_ids.count(s)) << spec;
    // Every pair of nodes Tenet joins is joined, at the pair's summed bandwidth and its latency.
    std::map<std::pair<int, int>, std::pair<Bandwidth, Time>> want;
    for (const topo::Link& l : t.links())
      if (l.src < l.dst) {
        auto& w = want[{l.src, l.dst}];
        w.first += l.bandwidth;
        w.second = std::max(w.second, l.latency);
      }
    ASSERT_EQ(f.links.size(), want.size()) << spec;
    for (const Ns3Link& l : f.links) {
      const auto& [bw, latency] = want.at({std::min(l.a, l.b), std::max(l.a, l.b)});
      EXPECT_DOUBLE_EQ(l.bps, static_cast<double>(bw) * 8) << spec;
      EXPECT_DOUBLE_EQ(l.ps, static_cast<double>(latency)) << spec;
    }
    // The ECN maps hold every rate of the file.
    std::set<double> rates;
    for (const Ns3Link& l : f.links) rates.insert(l.bps);
    const auto config = read_config(ns3_config(n, "ns3"));
    for (const char* map : {"KMAX_MAP", "KMIN_MAP", "PMAX_MAP"})
      EXPECT_EQ(map_rates(config.at(map)), rates) << spec << " " << map;
    EXPECT_EQ(config.at("TOPOLOGY_FILE"), std::vector<std::string>{"ns3/topology.txt"});
  }
}

// DGX-1's doubled NVLinks become one link of twice the bandwidth, said.
TEST(Ns3Network, ParallelLinksAreSummedAndSaid) {
  const auto t = topo::generate("dgx1");
  const Ns3Topology n = ns3_topology(t);
  ASSERT_EQ(n.notes.size(), 1u);
  EXPECT_THAT(n.notes[0], HasSubstr("pairs of parallel links are written as one of their summed "
                                    "bandwidth"));
  EXPECT_THAT(n.notes[0], HasSubstr("(2 links)"));
}

// Directions that differ get the slower rate and larger delay; a one-way link becomes two-way.
TEST(Ns3Network, WhatFullDuplexCannotSayIsSaid) {
  topo::TopologyBuilder b("lopsided");
  const topo::NodeId sw = b.add_switch("sw");
  const topo::NodeId a = b.add_npu("a"), c = b.add_npu("c"), d = b.add_npu("d");
  b.add_link(a, sw, parse_bandwidth("100GB/s"), parse_time("1us"));
  b.add_link(sw, a, parse_bandwidth("50GB/s"), parse_time("2us"));
  b.add_bidirectional(c, sw, parse_bandwidth("100GB/s"), parse_time("1us"));
  b.add_bidirectional(d, sw, parse_bandwidth("100GB/s"), parse_time("1us"));
  b.add_link(c, d, parse_bandwidth("10GB/s"), parse_time("1us"));
  const auto t = b.build();
  const Ns3Topology n = ns3_topology(t);
  ASSERT_EQ(n.notes.size(), 2u);
  EXPECT_THAT(n.notes[0],
              HasSubstr("1 links that differ by direction are written at the slower "
                        "rate and larger delay both ways (NPU 'a' <-> switch 'sw' (100 GB/s"));
  EXPECT_THAT(n.notes[1], HasSubstr("1 one-way links are written two-way (NPU 'c' <-> NPU 'd')"));
  const Ns3File f = read_topology_file(n.text);
  for (const Ns3Link& l : f.links)
    if (std::min(l.a, l.b) == a) {
      EXPECT_DOUBLE_EQ(l.bps, 50e9 * 8);
      EXPECT_DOUBLE_EQ(l.ps, 2e6);
    }
}

// The backend's hosts forward nothing: router NPUs cannot be written.
TEST(Ns3Network, RouterNpusAreRefused) {
  topo::TopologyBuilder b("routers");
  const topo::NodeId a = b.add_npu("a", true), c = b.add_npu("c", true);
  b.add_bidirectional(a, c, parse_bandwidth("100GB/s"), parse_time("1us"));
  try {
    ns3_topology(b.build());
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("cannot hold 'routers': NPU 'a' passes traffic through"));
  }
}

synth::Algorithm algorithm(const topo::Topology& t, CollectiveKind kind, Bytes size, int k,
                           const char* producer = "tenet") {
  synth::Collective c = synth::Collective::over_all(t, kind);
  c.chunks_per_npu = k;
  synth::Algorithm a = synth::make_algorithm(producer, t, c, c.chunk_bytes_for(size));
  synth::time(t, a);
  return a;
}

// Several fewest-hop paths (two spines) are ECMP's choice in ns-3; a path Tenet takes over more
// hops than the fewest (a slow direct link beside a fast detour) is not followed.
TEST(Ns3Network, RoutesThatDifferAreSaid) {
  const auto spines = topo::generate("leafspine:2x4,spines=2");
  const auto spread =
      ns3_route_notes(algorithm(spines, CollectiveKind::AllGather, 1 << 20, 1, "ring"), spines);
  ASSERT_EQ(spread.size(), 1u);
  EXPECT_THAT(spread[0], HasSubstr("join NPUs with several fewest-hop paths"));

  topo::TopologyBuilder b("detour");
  const topo::NodeId a = b.add_npu("a"), c = b.add_npu("c");
  const topo::NodeId s1 = b.add_switch("s1"), s2 = b.add_switch("s2");
  b.add_bidirectional(a, c, parse_bandwidth("100GB/s"), parse_time("50us"));
  b.add_bidirectional(a, s1, parse_bandwidth("100GB/s"), parse_time("100ns"));
  b.add_bidirectional(s1, s2, parse_bandwidth("100GB/s"), parse_time("100ns"));
  b.add_bidirectional(s2, c, parse_bandwidth("100GB/s"), parse_time("100ns"));
  const auto t = b.build();
  const auto longer = ns3_route_notes(algorithm(t, CollectiveKind::AllGather, 1 << 20, 1), t);
  ASSERT_EQ(longer.size(), 1u);
  EXPECT_THAT(longer[0], HasSubstr("2 of the algorithm's 2 transfers take more hops in Tenet's "
                                   "schedule"));
  EXPECT_THAT(longer[0], HasSubstr("(NPU 'a' -> NPU 'c': 3 hops, fewest 1;"));

  const auto single = topo::generate("switch:8");
  EXPECT_TRUE(
      ns3_route_notes(algorithm(single, CollectiveKind::AllReduce, 1 << 20, 2), single).empty());
}

// The estimate of what ns-3 reports, in closed form: on two NPUs under a switch each sends its
// 512 KiB once; ns-3 ends the message a return trip after it arrives, and each of the two hops
// holds a 4096-byte packet before forwarding it. No per-step cost, whatever the algorithm pays.
TEST(Ns3Network, TheEstimateIsTheReturnTripAndThePackets) {
  auto t = topo::generate("switch:2,bw=50GB/s,lat=500ns");
  t.set_charges_steps(true);
  synth::Collective c = synth::Collective::over_all(t, CollectiveKind::AllGather);
  c.chunks_per_npu = 1;
  synth::Algorithm a = synth::make_algorithm("ring", t, c, 512 << 10);
  synth::time(t, a);
  const Bandwidth bw = parse_bandwidth("50GB/s");
  const Time hop = parse_time("500ns");
  ASSERT_TRUE(a.step_costs);
  EXPECT_EQ(synth::collective_time(t, a),
            topo::kDefaultStep + transfer_time(512 << 10, bw) + 2 * hop);
  EXPECT_EQ(ns3_estimate(a, t),
            transfer_time(512 << 10, bw) + 2 * (2 * hop + transfer_time(4096, bw)));
}

AstraBundle write_bundle(const TempDir& tmp, const synth::Algorithm& a, const topo::Topology& t,
                         AstraNetwork network) {
  topo::OutputFolder out(tmp.file("out"));
  AstraBundleOptions o;
  o.network = network;
  const AstraBundle b = stage_astra_bundle(a, t, out, "astra-sim", o);
  out.commit();
  return b;
}

// Auto: the analytical network where the topology is ASTRA-sim dimensions, ns-3 otherwise, with
// every file the backend opens, and messages that carry their chunks only (ns-3 queues them).
TEST(Ns3Network, TheBundleRunsWhereTheTopologyIsExact) {
  {
    TempDir tmp;
    const auto t = topo::generate("ring:4 x switch:2");
    const AstraBundle b = write_bundle(tmp, algorithm(t, CollectiveKind::AllGather, 1 << 20, 1), t,
                                       AstraNetwork::Auto);
    EXPECT_FALSE(b.ns3);
    EXPECT_TRUE(fs_exists(tmp.file("out/astra-sim/network.yml")));
    EXPECT_FALSE(fs_exists(tmp.file("out/astra-sim/ns3/config.txt")));
  }
  TempDir tmp;
  const auto t = topo::generate("leafspine:2x4,spines=2");
  const synth::Algorithm a = algorithm(t, CollectiveKind::AllReduce, 4 << 20, 2);
  const AstraBundle b = write_bundle(tmp, a, t, AstraNetwork::Auto);
  EXPECT_TRUE(b.ns3);
  EXPECT_TRUE(b.exact_network);
  EXPECT_EQ(b.collective.time, -1);
  EXPECT_EQ(b.claimed_time, synth::collective_time(t, a));
  const std::string dir = tmp.file("out/astra-sim");
  EXPECT_FALSE(fs_exists(dir + "/network.yml"));
  const auto config = read_config(topo::read_file(dir + "/ns3/config.txt"));
  // Every file ReadConf names for reading is there, relative to the folder run.sh runs in.
  for (const char* key : {"TOPOLOGY_FILE", "FLOW_FILE", "TRACE_FILE"})
    EXPECT_TRUE(fs_exists(dir + "/" + config.at(key).at(0))) << key;
  EXPECT_EQ(topo::read_file(dir + "/ns3/flow.txt"), "0\n");
  const Ns3File f = read_topology_file(topo::read_file(dir + "/ns3/topology.txt"));
  EXPECT_EQ(f.nodes, 12);
  EXPECT_THAT(topo::read_file(dir + "/logical_topology.json"),
              HasSubstr("\"logical-dims\": [\"8\"]"));
  const std::string run = topo::read_file(dir + "/run.sh");
  EXPECT_THAT(run, HasSubstr("${ASTRA_SIM_NS3:-ns3.42-AstraSimNetwork-default}"));
  EXPECT_THAT(run, HasSubstr("--network-configuration=ns3/config.txt"));
  EXPECT_THAT(run, HasSubstr("--logical-topology-configuration=logical_topology.json"));
  // Queued waits: every send carries its chunk, whatever it waited for in Tenet's schedule.
  for (const chakra::EtFile& rank : chakra::read_prefix(dir + "/collective/algorithm"))
    for (const chakra::Node& n : rank.nodes)
      if (n.type() == ChakraProtoMsg::COMM_SEND_NODE) {
        EXPECT_EQ(chakra::int_attr(n, "comm_size"), a.chunk_bytes);
      }
}

// Asked for, ns-3 takes any topology it can hold; a router NPU falls back to the analytical
// network under Auto (said) and is refused under Ns3.
TEST(Ns3Network, AskedForOrRefused) {
  {
    TempDir tmp;
    const auto t = topo::generate("switch:4");
    EXPECT_TRUE(
        write_bundle(tmp, algorithm(t, CollectiveKind::AllGather, 1 << 20, 1), t, AstraNetwork::Ns3)
            .ns3);
  }
  topo::TopologyBuilder builder("routers");
  std::vector<topo::NodeId> npus;
  for (int i = 0; i < 3; ++i) npus.push_back(builder.add_npu(fmt::format("r{}", i), true));
  builder.add_bidirectional(npus[0], npus[1], parse_bandwidth("100GB/s"), parse_time("1us"));
  builder.add_bidirectional(npus[1], npus[2], parse_bandwidth("100GB/s"), parse_time("1us"));
  const auto t = builder.build();
  const synth::Algorithm a = algorithm(t, CollectiveKind::AllGather, 1 << 20, 1, "ring");
  {
    TempDir tmp;
    const AstraBundle b = write_bundle(tmp, a, t, AstraNetwork::Auto);
    EXPECT_FALSE(b.ns3);
    EXPECT_THAT(b.notes, ::testing::Contains(HasSubstr(
                             "written for the analytical network, not ns-3: ASTRA-sim's ns-3 "
                             "network cannot hold 'routers'")));
  }
  TempDir tmp;
  EXPECT_THROW(write_bundle(tmp, a, t, AstraNetwork::Ns3), Error);
  EXPECT_EQ(parse_astra_network("ns3"), AstraNetwork::Ns3);
  EXPECT_THROW(parse_astra_network("ns-3"), Error);
}

}  // namespace
}  // namespace tenet::astra
