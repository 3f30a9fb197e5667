#include "sim/system.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "sim/workload.hpp"
#include "synth/baselines/baselines.hpp"
#include "synth/formats/algorithm_json.hpp"
#include "synth/formats/msccl_xml.hpp"
#include "synth/ir/traffic.hpp"
#include "synth/synthesizer.hpp"
#include "tests/topo/test_util.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"

namespace tenet::sim {
namespace {

using chakra::EtFile;
using chakra::Node;
using ::testing::HasSubstr;

constexpr Time kMicro = 1'000'000;

// A tiny workload builder: nodes appended to a rank, returning their ids.
struct Workload {
  explicit Workload(int ranks) : files(ranks) {}
  std::vector<EtFile> files;
  uint64_t add(int r, ChakraProtoMsg::NodeType type, const std::string& name,
               std::vector<uint64_t> data = {}, std::vector<uint64_t> ctrl = {}) {
    Node& n = files[r].nodes.emplace_back();
    n.set_id(files[r].nodes.size() - 1);
    n.set_type(type);
    n.set_name(name);
    for (uint64_t d : data) n.add_data_deps(d);
    for (uint64_t d : ctrl) n.add_ctrl_deps(d);
    return n.id();
  }
  uint64_t compute(int r, Time micros, std::vector<uint64_t> data = {},
                   std::vector<uint64_t> ctrl = {}) {
    uint64_t id = add(r, ChakraProtoMsg::COMP_NODE, "compute", data, ctrl);
    files[r].nodes.back().set_duration_micros(static_cast<uint64_t>(micros));
    return id;
  }
  uint64_t all_reduce(int r, Bytes size, std::vector<uint64_t> data = {}) {
    uint64_t id = add(r, ChakraProtoMsg::COMM_COLL_NODE, "all-reduce", data);
    chakra::set_int(files[r].nodes.back(), "comm_type", ChakraProtoMsg::ALL_REDUCE);
    chakra::set_int(files[r].nodes.back(), "comm_size", static_cast<int64_t>(size));
    return id;
  }
  uint64_t send(int r, int dst, int tag, Bytes size) {
    uint64_t id = add(r, ChakraProtoMsg::COMM_SEND_NODE, "send");
    chakra::set_int(files[r].nodes.back(), "comm_dst", static_cast<int64_t>(dst));
    chakra::set_int(files[r].nodes.back(), "comm_tag", static_cast<int64_t>(tag));
    chakra::set_int(files[r].nodes.back(), "comm_size", static_cast<int64_t>(size));
    return id;
  }
  uint64_t recv(int r, int src, int tag, Bytes size) {
    uint64_t id = add(r, ChakraProtoMsg::COMM_RECV_NODE, "recv");
    chakra::set_int(files[r].nodes.back(), "comm_src", static_cast<int64_t>(src));
    chakra::set_int(files[r].nodes.back(), "comm_tag", static_cast<int64_t>(tag));
    chakra::set_int(files[r].nodes.back(), "comm_size", static_cast<int64_t>(size));
    return id;
  }
};

SimConfig ring_config(NetworkKind net = NetworkKind::Analytical) {
  SimConfig c;
  c.network = net;
  c.algorithms[synth::CollectiveKind::AllReduce] = "ring";
  c.chunks_per_npu = 1;
  return c;
}

TEST(Simulator, DataParallelWithoutOverlapIsComputePlusCommunication) {
  const auto t = topo::generate("ring:4,bw=50GB/s,lat=0.5us");
  Workload w(4);
  for (int r = 0; r < 4; ++r) w.all_reduce(r, 4 << 20, {w.compute(r, 100)});
  const SimResult res = simulate(t, w.files, ring_config());
  const Time ring =
      2 * 3 * (500'000 + transfer_time(1 << 20, 50'000'000'000));  // 2(p-1)(alpha + n/p beta)
  EXPECT_EQ(res.iteration, 100 * kMicro + ring);
  EXPECT_EQ(res.collectives, 1);
  for (const RankStats& s : res.ranks) {
    EXPECT_EQ(s.compute, 100 * kMicro);
    EXPECT_EQ(s.communication, ring);
    EXPECT_EQ(s.exposed, ring);
  }
}

// Rings replayed from their plans (SimConfig::lazy_rings) give the same run as their algorithms.
TEST(Simulator, RingPlansRunAsTheirAlgorithms) {
  for (const char* spec : {"switch:8", "torus2d:3x3", "leafspine:2x4,spines=2"})
    for (NetworkKind net : {NetworkKind::Analytical, NetworkKind::AnalyticalCongestion}) {
      const auto t = topo::generate(spec);
      Workload w(t.num_npus());
      for (int r = 0; r < t.num_npus(); ++r) {
        const uint64_t before = w.compute(r, 5 + r);
        const uint64_t ar = w.all_reduce(r, 24 << 20, {before});
        w.compute(r, 3, {ar});
        w.all_reduce(r, 1 << 20, {ar});
      }
      SimConfig lazy = ring_config(net);
      SimConfig listed = lazy;
      listed.lazy_rings = false;
      const SimResult a = simulate(t, w.files, lazy), b = simulate(t, w.files, listed);
      EXPECT_EQ(a.ring_plans, 2) << spec;
      EXPECT_EQ(b.ring_plans, 0) << spec;
      EXPECT_EQ(a.iteration, b.iteration) << spec;
      EXPECT_EQ(a.link_busy, b.link_busy) << spec;
      EXPECT_EQ(a.events, b.events) << spec;
      for (int r = 0; r < t.num_npus(); ++r)
        EXPECT_EQ(a.ranks[r].finish, b.ranks[r].finish) << spec << " rank " << r;
    }
}

TEST(Simulator, OverlappedCommunicationIsHidden) {
  const auto t = topo::generate("ring:4,bw=50GB/s,lat=0.5us");
  Workload w(4);
  for (int r = 0; r < 4; ++r) {
    const uint64_t a = w.compute(r, 100);
    w.all_reduce(r, 4 << 20, {a});  // about 130 us of communication ...
    w.compute(r, 500, {}, {a});     // ... under 500 us of compute
  }
  const SimResult res = simulate(t, w.files, ring_config());
  EXPECT_EQ(res.iteration, 600 * kMicro);
  for (const RankStats& s : res.ranks) EXPECT_EQ(s.exposed, 0);
}

// The per-collective breakdown: a ring All-Reduce on ring:4 after 100 us of compute on rank 0
// and 40 us on the others waits 60 us for rank 0, runs its closed-form time, and is wholly exposed
// (no member computes meanwhile); a second one under 500 us of compute on every rank is hidden;
// a third, which ranks 0 and 1 compute beside, is half exposed.
TEST(Simulator, CollectiveRowsSayWhereTheTimeWent) {
  const auto t = topo::generate("ring:4,bw=50GB/s,lat=0.5us");
  Workload w(4);
  for (int r = 0; r < 4; ++r) {
    const uint64_t a = w.compute(r, r == 0 ? 100 : 40);
    const uint64_t first = w.all_reduce(r, 4 << 20, {a});
    w.all_reduce(r, 8 << 20, {first});
    const uint64_t busy = w.compute(r, 500, {}, {first});
    w.all_reduce(r, 4 << 20, {busy});
    if (r < 2) w.compute(r, 1000, {busy});
  }
  const SimResult res = simulate(t, w.files, ring_config());
  const Time ring4 = 2 * 3 * (500'000 + transfer_time(1 << 20, 50'000'000'000));
  const Time ring8 = 2 * 3 * (500'000 + transfer_time(2 << 20, 50'000'000'000));
  ASSERT_EQ(res.collective_rows.size(), 2u);  // 4 MiB twice (one row), 8 MiB once
  const CollectiveRow& four = res.collective_rows[0];
  const CollectiveRow& eight = res.collective_rows[1];
  EXPECT_EQ(four.group, "0-3");  // no tenet_group: the ranks
  EXPECT_EQ(four.groups, 1);
  EXPECT_EQ(four.kind, synth::CollectiveKind::AllReduce);
  EXPECT_EQ(four.bytes, 4 << 20);
  EXPECT_EQ(four.algorithm, "ring");
  EXPECT_EQ(four.chunks_per_npu, 1);
  EXPECT_EQ(four.calls, 2);
  EXPECT_EQ(four.time, 2 * ring4);
  EXPECT_EQ(four.wait, 60 * kMicro);
  EXPECT_EQ(four.exposed, ring4 + ring4 / 2);
  EXPECT_EQ(eight.calls, 1);
  EXPECT_EQ(eight.time, ring8);
  EXPECT_EQ(eight.wait, 0);
  EXPECT_EQ(eight.exposed, 0);
  EXPECT_EQ(res.collectives, 3);
  // Every link of the ring carries 2(p-1) chunks of 1 MiB a call: each is as busy as the
  // busiest, 6 MiB / 50 GB/s a call.
  EXPECT_EQ(four.busiest_busy, 2 * transfer_time(6 << 20, 50'000'000'000));
  EXPECT_FALSE(four.busiest_link.empty());
}

TEST(Simulator, ReplaysASynthesizedAllReduceInItsSynthesizedTime) {
  const auto t = topo::generate("torus2d:4x4");
  Workload w(16);
  for (int r = 0; r < 16; ++r) w.all_reduce(r, 64 << 20);
  SimConfig cfg;
  cfg.chunks_per_npu = 2;
  const synth::Collective c = synth::Collective::over_all(t, synth::CollectiveKind::AllReduce, 2);
  const synth::Algorithm a = synth::synthesize(t, c, c.chunk_bytes_for(64 << 20));
  EXPECT_EQ(simulate(t, w.files, cfg).iteration, a.claimed_time);
}

// An All-Reduce over a cluster too large to synthesize flat (over 5,793 NPUs: 2^26 transfers at one
// chunk per NPU, which the simulator refused up front) is composed per level
// (synth/groups/composed.hpp), -k counting the chunks per NPU inside a server, and replays in its
// synthesized time.
TEST(Simulator, ComposesAllReducesTooLargeToSynthesizeFlat) {
  const auto t = topo::generate("nvcluster:740x8,net=rail");
  Workload w(t.num_npus());
  for (int r = 0; r < t.num_npus(); ++r) w.all_reduce(r, 64 << 20);
  SimConfig cfg;
  cfg.chunks_per_npu = 2;
  const synth::Collective c =
      synth::as_synthesized(t, synth::Collective::over_all(t, synth::CollectiveKind::AllReduce, 2),
                            synth::SynthOptions{});
  ASSERT_EQ(c.all_reduce_chunks, 16);
  const synth::Algorithm a = synth::synthesize(t, c, c.chunk_bytes_for(64 << 20));
  EXPECT_EQ(a.provenance.producer, synth::Producer::Composed) << a.method;
  EXPECT_EQ(simulate(t, w.files, cfg).iteration, a.claimed_time);
}

// A file made for one size runs another with its structure kept, its chunks scaled to the call (as
// the MSCCL runtime runs an XML algorithm): a ring rescaled is the ring built at that size.
TEST(Simulator, RescalesAlgorithmFilesToTheCall) {
  topo::testing::TempDir dir;
  const auto t = topo::generate("ring:4");
  const synth::Collective c = synth::Collective::over_all(t, synth::CollectiveKind::AllReduce, 2);
  const synth::Algorithm a =
      synth::make_baseline({synth::BaselineKind::BidirRing, {}}, t, c, 1 << 20);
  synth::save_algorithm(a, dir.file("ar.json"));
  Workload w(4);
  for (int r = 0; r < 4; ++r) w.all_reduce(r, 123);
  SimConfig cfg;
  cfg.algorithms[synth::CollectiveKind::AllReduce] = dir.file("ar.json");
  const SimResult ran = simulate(t, w.files, cfg);
  const synth::Algorithm at_123 =
      synth::make_baseline({synth::BaselineKind::BidirRing, {}}, t, c, c.chunk_bytes_for(123));
  EXPECT_EQ(ran.iteration, at_123.claimed_time);
  EXPECT_LT(ran.iteration, a.claimed_time);
  ASSERT_EQ(ran.warnings.size(), 1u);  // not silently: the file was made for another size
  EXPECT_THAT(ran.warnings[0], HasSubstr("ran " + dir.file("ar.json") +
                                         " rescaled: made with 8 chunks of 1 MiB, run with chunks "
                                         "of 16 B"));
  const synth::Algorithm ag =
      synth::synthesize(t, synth::Collective::over_all(t, synth::CollectiveKind::AllGather), 1024);
  synth::save_algorithm(ag, dir.file("ag.json"));
  cfg.algorithms[synth::CollectiveKind::AllReduce] = dir.file("ag.json");
  EXPECT_THAT([&] { simulate(t, w.files, cfg); },
              ::testing::ThrowsMessage<Error>(HasSubstr("but the workload runs all-reduce")));
}

// A producer's name is a name where a file or folder of that name lies in the working directory
// (the tenet binary beside its user, a build's tenet/ folder): it was read as a Chakra prefix.
TEST(Simulator, ProducerNamesAreNotFilesOfTheirName) {
  topo::testing::TempDir dir;
  const std::filesystem::path before = std::filesystem::current_path();
  std::filesystem::create_directories(dir.file("tenet"));
  topo::write_file_atomically(dir.file("ring"), "not an algorithm");
  std::filesystem::current_path(dir.file(""));
  EXPECT_FALSE(is_algorithm_file("tenet"));
  EXPECT_FALSE(is_algorithm_file("ring"));
  EXPECT_FALSE(is_algorithm_file("ring:4"));
  EXPECT_TRUE(is_algorithm_file("ar.json"));
  EXPECT_TRUE(is_algorithm_file(dir.file("tenet")));
  const auto t = topo::generate("ring:4");
  Workload w(4);
  for (int r = 0; r < 4; ++r) w.all_reduce(r, 1 << 20);
  SimConfig cfg;
  choose_algorithms("all-gather=ring", cfg);
  EXPECT_GT(simulate(t, w.files, cfg).iteration, 0);  // the synthesizer, not a folder
  std::filesystem::current_path(before);
}

// Several files for one collective, one per size: each call runs the file made for the size
// nearest its own (by ratio), and only a call of another size says so.
TEST(Simulator, PicksTheAlgorithmFileForTheNearestSize) {
  topo::testing::TempDir dir;
  const auto t = topo::generate("ring:4");
  const synth::Collective c = synth::Collective::over_all(t, synth::CollectiveKind::AllReduce, 2);
  const synth::Algorithm small =
      synth::make_baseline({synth::BaselineKind::BidirRing, {}}, t, c, c.chunk_bytes_for(1 << 20));
  const synth::Algorithm big =
      synth::make_baseline({synth::BaselineKind::Ring, {}}, t, c, c.chunk_bytes_for(64 << 20));
  synth::save_algorithm(small, dir.file("ar-1MiB.json"));
  synth::save_algorithm(big, dir.file("ar-64MiB.json"));
  SimConfig cfg;
  cfg.algorithms[synth::CollectiveKind::AllReduce] = dir.file("ar-1MiB.json");
  cfg.sized_files[synth::CollectiveKind::AllReduce] = {dir.file("ar-1MiB.json"),
                                                       dir.file("ar-64MiB.json")};
  const auto run = [&](Bytes size) {
    Workload w(4);
    for (int r = 0; r < 4; ++r) w.all_reduce(r, size);
    return simulate(t, w.files, cfg);
  };
  const SimResult one = run(1 << 20), sixty_four = run(64 << 20), four = run(4 << 20),
                  thirty_two = run(32 << 20);
  EXPECT_EQ(one.iteration, small.claimed_time);
  EXPECT_TRUE(one.warnings.empty());
  EXPECT_EQ(sixty_four.iteration, big.claimed_time);
  EXPECT_TRUE(sixty_four.warnings.empty());
  // 4 MiB is 4x from 1 MiB, 16x from 64 MiB: the 1 MiB file, rescaled (the bidir-ring at 4 MiB).
  EXPECT_EQ(four.iteration, synth::make_baseline({synth::BaselineKind::BidirRing, {}}, t, c,
                                                 c.chunk_bytes_for(4 << 20))
                                .claimed_time);
  ASSERT_EQ(four.warnings.size(), 1u);
  EXPECT_THAT(four.warnings[0], HasSubstr("ran " + dir.file("ar-1MiB.json") + " rescaled"));
  EXPECT_EQ(thirty_two.iteration,
            synth::make_baseline({synth::BaselineKind::Ring, {}}, t, c, c.chunk_bytes_for(32 << 20))
                .claimed_time);
}

// MSCCL-XML is picked per call and scaled to its size, as the MSCCL runtime does: an export made
// at 1 MiB chunks runs a 64 MiB All-Reduce in the time the same schedule takes at 64 MiB.
TEST(Simulator, ScalesMscclXmlToTheCollectiveSize) {
  topo::testing::TempDir dir;
  const auto t = topo::generate("ring:4");
  const synth::Collective c = synth::Collective::over_all(t, synth::CollectiveKind::AllReduce, 2);
  const synth::Algorithm small =
      synth::make_baseline({synth::BaselineKind::BidirRing, {}}, t, c, 1 << 20);
  topo::write_file_atomically(dir.file("ar.xml"), synth::to_msccl_xml(small));
  const synth::Algorithm big =
      synth::make_baseline({synth::BaselineKind::BidirRing, {}}, t, c, c.chunk_bytes_for(64 << 20));
  Workload w(4);
  for (int r = 0; r < 4; ++r) w.all_reduce(r, 64 << 20);
  SimConfig cfg;
  cfg.algorithms[synth::CollectiveKind::AllReduce] = dir.file("ar.xml");
  EXPECT_EQ(simulate(t, w.files, cfg).iteration, big.claimed_time);
}

TEST(Simulator, InFlightLimitSerializesCommunication) {
  const auto t = topo::generate("ring:4,bw=50GB/s,lat=0.5us");
  Workload w(4);
  for (int r = 0; r < 4; ++r) {
    w.all_reduce(r, 4 << 20);
    w.all_reduce(r, 4 << 20);  // independent of the first
  }
  const Time ring = 2 * 3 * (500'000 + transfer_time(1 << 20, 50'000'000'000));
  SimConfig cfg = ring_config();
  EXPECT_EQ(simulate(t, w.files, cfg).iteration, ring);  // analytical: both at once, no contention
  cfg.max_in_flight = 1;
  EXPECT_EQ(simulate(t, w.files, cfg).iteration, 2 * ring);
}

TEST(Simulator, SendAndReceiveFollowTheRoute) {
  const auto t = topo::generate("switch:4,bw=50GB/s,lat=0.5us");
  Workload w(4);
  w.send(0, 3, 7, 1 << 20);
  w.recv(3, 0, 7, 1 << 20);
  const SimResult res = simulate(t, w.files, ring_config());
  EXPECT_EQ(res.iteration, transfer_time(1 << 20, 50'000'000'000) + 2 * 500'000);
}

// Three senders into one receiver through a switch: the receiver's downlink is shared.
TEST(Simulator, IncastSlowsDownOnlyWithCongestion) {
  const auto t = topo::generate("switch:4,bw=50GB/s,lat=0.5us");
  Workload w(4);
  for (int s = 1; s < 4; ++s) {
    w.send(s, 0, s, 1 << 20);
    w.recv(0, s, s, 1 << 20);
  }
  const Time one = transfer_time(1 << 20, 50'000'000'000);
  const SimResult free = simulate(t, w.files, ring_config(NetworkKind::Analytical));
  EXPECT_EQ(free.iteration, one + 2 * 500'000);
  // The analytical network says where it let the messages overrun a link: the receiver's downlink.
  ASSERT_EQ(free.warnings.size(), 1u);
  EXPECT_THAT(free.warnings[0],
              HasSubstr("analytical network: 1 link was asked for more than its bandwidth at once "
                        "(most: link 1 (sw0 -> npu0) at 300 %, first over at 0 ps)"));
  EXPECT_THAT(free.warnings[0], HasSubstr("--network analytical-congestion shares them"));
  int over = 0;
  for (const LinkReport& k : free.network.links) over += k.peak_demand > 1.0;
  EXPECT_EQ(over, 1);
  const SimResult shared = simulate(t, w.files, ring_config(NetworkKind::AnalyticalCongestion));
  EXPECT_NEAR(static_cast<double>(shared.iteration), static_cast<double>(3 * one + 2 * 500'000),
              10.0);  // each gets 1/3
  EXPECT_TRUE(shared.warnings.empty());
  // One message after the other never overruns anything.
  Workload serial(2);
  const uint64_t prev = serial.send(0, 1, 1, 1 << 20);
  serial.recv(1, 0, 1, 1 << 20);
  serial.add(0, ChakraProtoMsg::COMM_SEND_NODE, "send", {prev});
  chakra::set_int(serial.files[0].nodes.back(), "comm_dst", 1);
  chakra::set_int(serial.files[0].nodes.back(), "comm_tag", 2);
  chakra::set_int(serial.files[0].nodes.back(), "comm_size", 1 << 20);
  serial.recv(1, 0, 2, 1 << 20);
  EXPECT_TRUE(simulate(t, serial.files, ring_config(NetworkKind::Analytical)).warnings.empty());
}

// analytical-congestion with --routing ecmp spreads messages over both spines of a leaf-spine;
// source routing sends every message between two leaves through the same spine.
TEST(Simulator, CongestionSpreadsFlowsOverEqualCostRoutes) {
  const auto t = topo::generate("leafspine:2x4,spines=2");
  Workload w(8);
  for (int s = 0; s < 4; ++s)
    for (int k = 0; k < 4; ++k) {
      w.send(s, 4 + k, s * 4 + k, 1 << 20);
      w.recv(4 + k, s, s * 4 + k, 1 << 20);
    }
  auto spines_used = [&](PacketConfig::Routing routing) {
    SimConfig c = ring_config(NetworkKind::AnalyticalCongestion);
    c.packet.routing = routing;
    const SimResult r = simulate(t, w.files, c);
    std::set<std::string> spines;
    for (const LinkReport& k : r.network.links)
      if (k.busy > 0 && k.name.find("spine") != std::string::npos)
        spines.insert(k.name.substr(k.name.find("spine"), 6));
    return std::make_pair(spines.size(), r.iteration);
  };
  const auto [source_spines, source_time] = spines_used(PacketConfig::Routing::Source);
  const auto [ecmp_spines, ecmp_time] = spines_used(PacketConfig::Routing::Ecmp);
  EXPECT_EQ(source_spines, 1u);
  EXPECT_EQ(ecmp_spines, 2u);
  EXPECT_LT(ecmp_time, source_time);
}

// A packet run past --max-packets is refused before it starts, with the estimate and an MTU that
// fits.
TEST(Simulator, PacketRunsOverTheLimitAreRefusedUpFront) {
  const auto workload =
      collective_microbenchmark(synth::CollectiveKind::AllReduce, Bytes{1} << 30, 8);
  // 8 ranks x 2 x 1 GiB x 7/8 over 4 KiB packets.
  EXPECT_EQ(estimate_packets(workload, 4096), 3'670'016u);
  SimConfig c = ring_config(NetworkKind::Packet);
  c.packet.max_packets = uint64_t{1} << 20;
  try {
    simulate(topo::generate("switch:8"), workload, c, "ar");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(
        e.what(),
        HasSubstr("ar: packet network: about 3670016 packets to simulate at a 4 KiB MTU, over the "
                  "limit of 1048576 (about 524.3 ms at 7 million packets a second): raise --mtu to "
                  "16 KiB (about 917504 packets), or --max-packets"));
  }
}

// Overlapping communication of one rank goes to separate Perfetto tracks; CPU operators to their
// own.
TEST(Simulator, TraceGivesOverlappingCommunicationTracksOfTheirOwn) {
  const auto t = topo::generate("switch:4,bw=50GB/s,lat=0.5us");
  Workload w(4);
  for (int d = 1; d < 4; ++d) {
    w.send(0, d, d, (1 << 20) * d);
    w.recv(d, 0, d, (1 << 20) * d);
  }
  SimConfig c = ring_config();
  c.trace = true;
  const nlohmann::json j = nlohmann::json::parse(trace_json(simulate(t, w.files, c)));
  std::set<int> tracks;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "X" && e["pid"] == 0) tracks.insert(e["tid"].get<int>());
  EXPECT_EQ(tracks, (std::set<int>{3, 4, 5}));  // three sends in flight at once: three lanes
  std::set<std::string> names;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["pid"] == 0)
      names.insert(e["args"]["name"].get<std::string>());
  EXPECT_EQ(names, (std::set<std::string>{"communication", "communication 2", "communication 3"}));
}

// The same on the packet network: a send crosses the switch in the pipelined time (one packet's
// serialisation more than analytical, for the second hop), and the incast shares the downlink.
TEST(Simulator, PacketNetworkRunsWorkloadsAndReportsPackets) {
  const auto t = topo::generate("switch:4,bw=50GB/s,lat=0.5us");
  Workload one(4);
  one.send(0, 3, 7, 1 << 20);
  one.recv(3, 0, 7, 1 << 20);
  const SimResult alone = simulate(t, one.files, ring_config(NetworkKind::Packet));
  const Time packet = transfer_time(4096, 50'000'000'000);
  EXPECT_EQ(alone.iteration, 256 * packet + packet + 2 * 500'000);
  EXPECT_TRUE(alone.network.packet_level);
  EXPECT_EQ(alone.network.packets, 256u);
  EXPECT_EQ(alone.network.packet_hops, 512u);
  Workload incast(4);
  for (int s = 1; s < 4; ++s) {
    incast.send(s, 0, s, 1 << 20);
    incast.recv(0, s, s, 1 << 20);
  }
  const SimResult shared = simulate(t, incast.files, ring_config(NetworkKind::Packet));
  EXPECT_NEAR(static_cast<double>(shared.iteration),
              static_cast<double>(3 * 256 * packet + packet + 2 * 500'000), 3.0 * packet);
  EXPECT_GT(shared.network.credit_stalls, 0u);
  // Ring All-Reduce inside a workload: the closed form, as on the analytical network.
  Workload ar(4);
  for (int r = 0; r < 4; ++r) ar.all_reduce(r, Bytes{4} << 20);
  EXPECT_EQ(simulate(t, ar.files, ring_config(NetworkKind::Packet)).iteration,
            simulate(t, ar.files, ring_config(NetworkKind::Analytical)).iteration + 6 * packet)
      << "each of the 2(p-1) steps crosses the switch: one packet more each";
}

TEST(Simulator, PacketDeadlocksAreErrorsNamingTheCycle) {
  const auto t = topo::generate("ring:6,router=true");
  Workload w(6);
  for (int r = 0; r < 6; ++r) {  // two hops clockwise, everyone at once
    w.send(r, (r + 2) % 6, 1, 1 << 20);
    w.recv((r + 2) % 6, r, 1, 1 << 20);
  }
  SimConfig c = ring_config(NetworkKind::Packet);
  EXPECT_NO_THROW(simulate(t, w.files, c));
  c.packet.buffer = 4096;
  EXPECT_THAT([&] { simulate(t, w.files, c); },
              ::testing::ThrowsMessage<Error>(::testing::AllOf(HasSubstr("packet network deadlock"),
                                                               HasSubstr("back to link"))));
}

TEST(Simulator, GeneratedDataParallelIterationRuns) {
  const auto t = topo::generate("nvcluster:2x4");
  const auto w = data_parallel(model_preset("resnet50"), 8);
  SimConfig cfg;
  cfg.trace = true;
  const SimResult res = simulate(t, w, cfg);
  EXPECT_EQ(res.collectives, 5);
  EXPECT_GT(res.iteration, res.ranks[0].compute);
  EXPECT_THAT(trace_json(res), HasSubstr("\"ph\":\"X\""));
  EXPECT_THROW(model_preset("alexnet"), Error);
}

// COMP nodes run at --compute-efficiency of the peak, and the MFU is the nodes' operations over
// what the ranks could compute at the peak in the iteration. Two ranks, one node each of 312e9 and
// 156e9 operations (1 ms and 0.5 ms at 312 TFLOP/s): the iteration is the longer; the MFU 0.75 at
// peak (1.5 ms of work over 2 x 1 ms) and 0.375 at half of it.
TEST(Simulator, ComputeRunsAtItsEfficiencyAndTheMfuSaysHowMuchOfThePeakWasUsed) {
  const auto t = topo::generate("switch:2");
  std::vector<EtFile> w(2);
  for (int r = 0; r < 2; ++r) {
    Node& n = w[r].nodes.emplace_back();
    n.set_id(0);
    n.set_type(ChakraProtoMsg::COMP_NODE);
    n.set_name("matmul");
    chakra::set_int(n, "num_ops", r == 0 ? 312'000'000'000 : 156'000'000'000);
  }
  SimConfig cfg;
  const SimResult peak = simulate(t, w, cfg);
  EXPECT_EQ(peak.iteration, Time{1'000'000'000});
  EXPECT_DOUBLE_EQ(peak.flops, 468e9);
  EXPECT_DOUBLE_EQ(model_flops_utilization(peak, cfg.peak_flops), 0.75);
  cfg.compute_efficiency = 0.5;
  const SimResult half = simulate(t, w, cfg);
  EXPECT_EQ(half.iteration, Time{2'000'000'000});
  EXPECT_DOUBLE_EQ(model_flops_utilization(half, cfg.peak_flops), 0.375);
  for (double bad : {0.0, -0.5, 1.5, std::nan("")}) {
    cfg.compute_efficiency = bad;
    try {
      simulate(t, w, cfg, "wl");
      ADD_FAILURE() << bad << " accepted";
    } catch (const Error& e) {
      EXPECT_THAT(e.message(), HasSubstr("is not a share of the peak in (0, 1]")) << bad;
    }
  }
}

// A micro-batch holds whole samples: a transformer's own batch is one sequence per micro-batch, a
// batch that does not split is refused with batches that do.
TEST(Workload, MicroBatchesHoldWholeSamples) {
  EXPECT_EQ(batch_shape("gpt3-175b", {}, 4).batch, 4);
  EXPECT_EQ(batch_shape("gpt3-175b", {}).batch, 1);
  EXPECT_EQ(batch_shape("resnet50", {}, 4).batch, 64);
  EXPECT_EQ(batch_shape("gpt3-175b", {8, 0}, 4).batch, 8);
  EXPECT_THAT(describe_batch("gpt3-175b", {}, 2, 4), HasSubstr("batch 4 per replica x 2 replicas"));
  EXPECT_THAT(describe_batch("gpt3-175b", {}, 2, 4), HasSubstr("micro-batch 1"));
  auto error = [](auto f) {
    try {
      f();
    } catch (const Error& e) {
      return e.message();
    }
    return std::string("no error");
  };
  EXPECT_THAT(error([] {
                batch_shape("gpt3-175b", {6, 0}, 4);
              }),
              HasSubstr("a batch of 6 sequences per replica does not split into 4 micro-batches "
                        "of whole sequences: give a batch that is a multiple of 4 (such as 4 or "
                        "8)"));
  EXPECT_THAT(error([] { batch_shape("resnet50", {}, 3); }),
              HasSubstr("resnet50's own batch of 64 images per replica does not split into 3 "
                        "micro-batches of whole images: give a batch that is a multiple of 3 "
                        "(such as 63 or 66)"));
  EXPECT_THAT(error([] { batch_shape("dlrm", {2, 0}, 4); }), HasSubstr("(such as 4)"));
  EXPECT_THAT(error([] {
                describe_batch("resnet50", {10, 0}, 1, 4);
              }),
              HasSubstr("does not split into 4 micro-batches"));
}

TEST(Simulator, InconsistentWorkloadsFailClearlyAndNeverHang) {
  const auto t = topo::generate("ring:4");
  auto error = [&](const Workload& w) {
    try {
      simulate(t, w.files, ring_config(), "wl");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  Workload lonely(2);
  lonely.recv(1, 0, 9, 64);
  EXPECT_THAT(
      error(lonely),
      HasSubstr("rank 1 node 0 ('recv'): a receive of 64 B from rank 0 with tag 9 that no send "
                "matches"));
  // As ASTRA-sim pairs them: by tag, peers and size (a receive of another size waits forever).
  Workload sizes(2);
  sizes.send(0, 1, 9, 64);
  sizes.recv(1, 0, 9, 32);
  EXPECT_THAT(error(sizes), HasSubstr("a receive of 32 B from rank 0 with tag 9 that no send"));
  // The members of one collective must agree on what it is.
  Workload unequal(2);
  unequal.all_reduce(0, 1024);
  unequal.all_reduce(1, 2048);
  EXPECT_THAT(error(unequal),
              HasSubstr("wl: rank 1 node 0 ('all-reduce'): an all-reduce of 2 KiB, but rank 0 node "
                        "0 ('all-reduce') joined this collective (its group's collective #1) as an "
                        "all-reduce of 1 KiB"));
  Workload kinds(2);
  kinds.all_reduce(0, 1024);
  kinds.add(1, ChakraProtoMsg::COMM_COLL_NODE, "all-gather");
  chakra::set_int(kinds.files[1].nodes.back(), "comm_type", ChakraProtoMsg::ALL_GATHER);
  chakra::set_int(kinds.files[1].nodes.back(), "comm_size", 1024);
  EXPECT_THAT(error(kinds), HasSubstr("an all-gather of 1 KiB, but rank 0 node 0"));
  Workload barriers(2);  // a barrier's comm_size means nothing: no disagreement
  for (int r = 0; r < 2; ++r) {
    barriers.add(r, ChakraProtoMsg::COMM_COLL_NODE, "barrier");
    chakra::set_int(barriers.files[r].nodes.back(), "comm_type", ChakraProtoMsg::BARRIER);
    chakra::set_int(barriers.files[r].nodes.back(), "comm_size", 8 * r);
  }
  EXPECT_EQ(error(barriers), "no error");
  Workload cycle(2);
  cycle.compute(0, 1, {1});
  cycle.compute(0, 1, {0});
  EXPECT_THAT(error(cycle), HasSubstr("is on a dependency cycle"));
  Workload missing(2);
  missing.send(0, 5, 1, 64);
  EXPECT_THAT(error(missing), HasSubstr("comm_dst 5 is not a rank of the workload (0..1)"));
  Workload half(2);
  half.all_reduce(0, 64);
  EXPECT_THAT(error(half), HasSubstr("a collective that not every member of its group reaches"));
  Workload dangling(1);
  dangling.compute(0, 1, {7});
  EXPECT_THAT(error(dangling), HasSubstr("depends on node 7, which is not in this rank's graph"));
  Workload negative(1);
  negative.add(0, ChakraProtoMsg::COMP_NODE, "gemm");
  chakra::set_int(negative.files[0].nodes.back(), "num_ops", -5);
  EXPECT_THAT(error(negative), HasSubstr("rank 0 node 0 ('gemm'): num_ops -5 is not a count"));
  Workload too_many(5);
  EXPECT_THAT(error(too_many), HasSubstr("5 ranks, but the topology has 4 NPUs"));
  // Sizes and durations that would wrap (issue 23): refused before any time is computed.
  Workload huge(2);
  huge.send(0, 1, 1, -1);  // what a uint64 comm_size of 2^64 - 1 reads as
  huge.recv(1, 0, 1, 64);
  EXPECT_THAT(error(huge), HasSubstr("comm_size 18446744073709551615 is outside [0, 2^50] bytes"));
  Workload forever(1);
  forever.compute(0, (Time{1} << 62) / kMicro);
  EXPECT_THAT(error(forever), HasSubstr("is over the limit of 86400000000 (a day)"));
  // A day per node is allowed, but 200 days in sequence pass 2^63 ps: an error, not a wrap.
  Workload long_run(1);
  for (int i = 0; i < 200; ++i)
    long_run.compute(0, 86'400'000'000,
                     i ? std::vector<uint64_t>{uint64_t(i - 1)} : std::vector<uint64_t>{});
  EXPECT_THAT(error(long_run), HasSubstr("simulated time would pass 2^63 ps"));
}

}  // namespace
}  // namespace tenet::sim

namespace tenet::sim {
namespace {

// An All-to-All whose node carries tenet_traffic (a mixture-of-experts layer's skew) runs as the
// All-to-Allv that traffic spec makes, in exactly that algorithm's synthesized time, and slower
// than the even All-to-All of the same bytes (the hot experts' links carry more).
TEST(Simulator, UnevenAllToAllRunsTheTrafficItsNodeNames) {
  const auto t = topo::generate("switch:8");
  const Bytes size = Bytes{8} << 20;  // what each rank sends
  auto run = [&](const std::string& traffic) {
    auto files = collective_microbenchmark(synth::CollectiveKind::AllToAll, size, 8);
    if (!traffic.empty())
      for (auto& f : files)
        for (auto& n : f.nodes)
          if (n.type() == ChakraProtoMsg::COMM_COLL_NODE)
            chakra::set_string(n.add_attr(), "tenet_traffic", traffic);
    SimConfig cfg;
    cfg.chunks_per_npu = 1;
    return simulate(t, files, cfg).iteration;
  };
  const synth::TrafficUnits u =
      synth::to_units(synth::generate_traffic("zipf:1.2", 8, size, 1), synth::default_max_units(8));
  synth::Collective c = synth::Collective::over_all(t, synth::CollectiveKind::AllToAll);
  c.set_pair_units(u.units);
  const synth::Algorithm a = synth::synthesize(t, c, c.chunk_bytes_for(u.unit_bytes));
  const Time uneven = run("zipf:1.2");
  EXPECT_EQ(uneven, a.claimed_time);
  EXPECT_GT(uneven, run(""));
  EXPECT_THAT([&] { run("zipf:x"); },
              ::testing::ThrowsMessage<Error>(HasSubstr("with traffic 'zipf:x'")));
}

TEST(Workload, MixtureOfExpertsAllToAllsAreSkewed) {
  const Model m = model_preset("moe-gpt", batch_shape("moe-gpt", {}));
  ASSERT_EQ(m.layers.size(), 24u);
  for (const Layer& l : m.layers) {
    EXPECT_EQ(l.traffic, "zipf:1.2");
    EXPECT_GT(l.all_to_all, 0);
  }
  const auto files = training_iteration(m, layout(4, 1, 1, 1, PipelineSchedule::OneFOneB));
  int skewed = 0;
  for (const auto& n : files[0].nodes)
    if (chakra::string_attr(n, "tenet_traffic") == std::optional<std::string>("zipf:1.2")) ++skewed;
  EXPECT_EQ(skewed, 48);  // one All-to-All per layer after its forward, one before its backward
}

}  // namespace
}  // namespace tenet::sim
