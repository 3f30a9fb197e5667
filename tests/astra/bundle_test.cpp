// The folder ASTRA-sim runs as it is (`tenet export --format astra-sim`). Checked by hand against
// ASTRA-sim itself (analytical congestion-unaware, upstream 518bd51): switch:8 All-Reduce of 1 MiB
// with 2 chunks per NPU ran in 37,694 ns (Tenet: 37.7 us), and with a ResNet-50 data-parallel
// workload (tenet workload gen --model resnet50 --dp 8) in 2,560,766 ns, the iteration `tenet sim`
// gives with the same algorithm file (2.561 ms).
#include "astra/bundle.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "chakra/et.hpp"
#include "sim/system.hpp"
#include "sim/workload.hpp"
#include "synth/bounds/lower_bound.hpp"
#include "synth/cost/timing.hpp"
#include "synth/producers.hpp"
#include "tests/topo/test_util.hpp"
#include "topo/error.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"
#include "topo/quoting.hpp"
#include "topo/units.hpp"

namespace tenet::astra {
namespace {

using namespace sim;  // the simulator these ASTRA-sim inputs drive

namespace fs = std::filesystem;
using synth::CollectiveKind;
using ::testing::HasSubstr;
using topo::testing::TempDir;

synth::Algorithm algorithm(const topo::Topology& t, CollectiveKind kind, Bytes size, int k) {
  synth::Collective c = synth::Collective::over_all(t, kind);
  c.chunks_per_npu = k;
  synth::Algorithm a = synth::make_algorithm("tenet", t, c, c.chunk_bytes_for(size));
  synth::time(t, a);
  return a;
}

// The folder for `a`, committed to <tmp>/out/astra-sim.
AstraBundle write_bundle(const TempDir& tmp, const synth::Algorithm& a, const topo::Topology& t,
                         const AstraBundleOptions& o = {}) {
  topo::OutputFolder out(tmp.file("out"));
  const AstraBundle b = stage_astra_bundle(a, t, out, "astra-sim", o);
  out.commit();
  return b;
}

TEST(AstraBundle, HoldsEverythingASTRASimNeeds) {
  TempDir tmp;
  const auto t = topo::generate("ring:4 x switch:2");
  const synth::Algorithm a = algorithm(t, CollectiveKind::AllGather, 8 << 20, 2);
  const AstraBundle b = write_bundle(tmp, a, t);
  const fs::path dir = tmp.file("out/astra-sim");
  // The collective, run as ASTRA-sim runs it on network.yml, takes Tenet's time.
  EXPECT_TRUE(b.exact_network);
  EXPECT_TRUE(b.notes.empty());
  EXPECT_EQ(b.claimed_time, a.claimed_time);
  EXPECT_LE(b.collective.time, b.claimed_time);
  EXPECT_GE(b.collective.time, b.claimed_time - b.claimed_time / 100);
  // The workload: one all-gather per rank, comm_size each rank's input.
  const auto workload = chakra::read_prefix((dir / "workload/all_gather").string());
  ASSERT_EQ(workload.size(), 8u);
  EXPECT_EQ(chakra::int_attr(workload[3].nodes.at(0), "comm_size"), (8 << 20) / 8);
  EXPECT_EQ(chakra::read_prefix((dir / "collective/algorithm").string()).size(), 8u);
  // system.json: the custom implementation for this collective, rings per dimension for the others,
  // one dataset split (more hang a custom collective), the roofline at Tenet's defaults.
  const auto sys = nlohmann::json::parse(topo::read_file((dir / "system.json").string()));
  EXPECT_EQ(sys["all-gather-implementation-custom"],
            nlohmann::json::array({"collective/algorithm"}));
  EXPECT_FALSE(sys.contains("all-gather-implementation"));
  EXPECT_EQ(sys["all-reduce-implementation"], nlohmann::json::array({"ring", "ring"}));
  EXPECT_EQ(sys["preferred-dataset-splits"], 1);
  EXPECT_EQ(sys["roofline-enabled"], 1);
  EXPECT_EQ(sys["peak-perf"], sim::SimConfig{}.peak_flops / 1e12);
  EXPECT_EQ(sys["local-mem-bw"], static_cast<double>(sim::SimConfig{}.memory_bandwidth) / 1e9);
  EXPECT_THAT(topo::read_file((dir / "network.yml").string()),
              HasSubstr("topology: [ Ring, Switch ]"));
  EXPECT_THAT(topo::read_file((dir / "remote_memory.json").string()),
              HasSubstr("NO_MEMORY_EXPANSION"));
  const std::string run = topo::read_file((dir / "run.sh").string());
  EXPECT_THAT(run, HasSubstr("--workload-configuration='workload/all_gather'"));
  EXPECT_THAT(run, HasSubstr("${ASTRA_SIM:-AstraSim_Analytical_Congestion_Unaware}"));
  EXPECT_NE(fs::status(dir / "run.sh").permissions() & fs::perms::owner_exec, fs::perms::none);
}

// With queued waits (every message its chunk) run.sh runs the congestion-aware analytical network,
// which Tenet does not emulate, and says so; that network takes one dimension only (ASTRA-sim
// c459ab6: "only support 1-dim topology"), so a network.yml of more is said. Checked against it on
// switch:8 at 64 MiB, 16 chunks per NPU: a symmetric All-Gather 588.2 us -> 593,346 ns and a ring
// All-Reduce 1.175 ms -> 1,180,450 ns, but the flow plan's pipelines, whose transfers share links
// at fractional rates, 1.10x (All-Gather) and 1.13x (All-Reduce) Tenet's times.
TEST(AstraBundle, QueuedWaitsRunTheCongestionAwareNetwork) {
  AstraBundleOptions o;
  o.graph.link_waits = chakra::LinkWaits::Queue;
  for (const char* spec : {"switch:8", "ring:4 x switch:2"}) {
    TempDir tmp;
    const auto t = topo::generate(spec);
    const AstraBundle b =
        write_bundle(tmp, algorithm(t, CollectiveKind::AllGather, 8 << 20, 2), t, o);
    EXPECT_TRUE(b.congestion_aware) << spec;
    const std::string run = topo::read_file(tmp.file("out/astra-sim/run.sh"));
    EXPECT_THAT(run, HasSubstr("${ASTRA_SIM:-AstraSim_Analytical_Congestion_Aware}")) << spec;
    EXPECT_THAT(run, HasSubstr("congestion-aware (messages queue at links)")) << spec;
    EXPECT_THAT(run, HasSubstr("Tenet does not run it as the congestion-aware network does"))
        << spec;
    const bool one_dimension = std::string(spec) == "switch:8";
    ASSERT_EQ(b.notes.size(), one_dimension ? 0u : 1u) << spec;
    if (!one_dimension) {
      EXPECT_THAT(b.notes[0], HasSubstr("takes one dimension only, and network.yml has 2"));
    }
  }
}

// Asked for the analytical network, a topology that is not ASTRA-sim dimensions gets the nearest
// one, said and timed on it (by default it gets ns-3: ns3_network_test.cpp).
TEST(AstraBundle, TheNearestNetworkIsSaid) {
  TempDir tmp;
  const auto t = topo::generate("leafspine:2x4,spines=2");
  AstraBundleOptions o;
  o.network = AstraNetwork::Analytical;
  const AstraBundle b =
      write_bundle(tmp, algorithm(t, CollectiveKind::AllReduce, 1 << 20, 1), t, o);
  EXPECT_FALSE(b.exact_network);
  ASSERT_EQ(b.notes.size(), 1u);
  EXPECT_THAT(
      b.notes[0],
      HasSubstr("is not ASTRA-sim dimensions: no choice of Ring, FullyConnected or Switch for its "
                "dimensions (8) rebuilds it"));
  EXPECT_THAT(b.notes[0], HasSubstr("the nearest, one Switch of 8 NPUs"));
  EXPECT_THAT(topo::read_file(tmp.file("out/astra-sim/network.yml")),
              HasSubstr("# The nearest ASTRA-sim network"));
  EXPECT_GT(b.collective.time, 0);
  EXPECT_EQ(b.below_bound, -1);  // a switch of the least egress: here not faster than the fabric

  // Two islands joined by a thin link: one switch at the least NPU egress has no such link, so
  // ASTRA-sim's time there is below anything the topology allows, and that is said.
  TempDir other;
  const auto islands = topo::load(topo::testing::examples_dir() + "/two-islands.yaml");
  synth::Collective c = synth::Collective::over_all(islands, CollectiveKind::AllGather);
  synth::Algorithm ring =
      synth::make_algorithm("ring", islands, c, c.chunk_bytes_for(Bytes{64} << 20));
  synth::time(islands, ring);
  const AstraBundle fast = write_bundle(other, ring, islands, o);
  EXPECT_GT(fast.below_bound, fast.collective.time);
  EXPECT_EQ(fast.below_bound, synth::lower_bound(islands, c, ring.chunk_bytes, false).total);
  EXPECT_THAT(fast.notes, ::testing::Contains(HasSubstr(
                              "(the nearest network is faster than the topology): no figure for "
                              "it; --astra-network ns3 runs every NPU, switch and link")));
  EXPECT_THAT(topo::read_file(other.file("out/astra-sim/run.sh")),
              HasSubstr("(on the nearest network, below the topology's lower bound of "));
}

// A given workload is copied, and its collectives of other sizes are said.
TEST(AstraBundle, AGivenWorkloadRunsWithTheAlgorithm) {
  TempDir tmp;
  const auto t = topo::generate("switch:4");
  const synth::Algorithm a = algorithm(t, CollectiveKind::AllReduce, 1 << 20, 1);
  const auto wl = data_parallel(model_preset("resnet50"), 4);
  const std::string name = "it's a run";  // run.sh quotes it for sh
  for (size_t r = 0; r < wl.size(); ++r)
    chakra::write_et(chakra::et_path(tmp.file(name), static_cast<int>(r)), wl[r]);
  AstraBundleOptions o;
  o.workload = tmp.file(name);
  const AstraBundle b = write_bundle(tmp, a, t, o);
  EXPECT_EQ(chakra::read_prefix(tmp.file("out/astra-sim/workload/" + name)).size(), 4u);
  EXPECT_THAT(b.notes, ::testing::Contains(HasSubstr(
                           "all-reduces (rank 0) are not of 1 MiB: ASTRA-sim runs the custom "
                           "collective as it is")));
  EXPECT_THAT(topo::read_file(tmp.file("out/astra-sim/run.sh")),
              HasSubstr("--workload-configuration='workload/it'\\''s a run' "));
}

// A topology of four NPUs on a switch, under `name`.
topo::Topology switch_named(const std::string& name) {
  topo::TopologyBuilder b(name);
  const topo::NodeId sw = b.add_switch();
  for (int i = 0; i < 4; ++i)
    b.add_bidirectional(b.add_npu(), sw, parse_bandwidth("100GB/s"), parse_time("1us"));
  return b.build();
}

std::vector<std::string> files_named(const fs::path& dir, const std::string& name) {
  std::vector<std::string> found;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().filename() == name) found.push_back(e.path().string());
  return found;
}

// Names reach run.sh as comment text on one line or as one single-quoted word, and network.yml as
// comment text on one line (ns-3's files hold node ids only): with line breaks, quotes,
// backquotes, $( ) and bytes that are not UTF-8 in the topology's, the algorithm's and the
// workload's names, the script is the generator's commands only, and sh runs those and nothing
// else, on either network.
TEST(AstraBundle, NamesInRunShAreOnlyTextOrOneQuotedWord) {
  struct Backend {
    AstraNetwork network;
    std::string binary, variable, network_args;
  };
  for (const Backend& backend :
       {Backend{AstraNetwork::Analytical, "AstraSim_Analytical_Congestion_Unaware", "ASTRA_SIM",
                "--network-configuration=network.yml\n--remote-memory-configuration=remote_memory."
                "json"},
        Backend{AstraNetwork::Ns3, "ns3.42-AstraSimNetwork-default", "ASTRA_SIM_NS3",
                "--network-configuration=ns3/config.txt\n--remote-memory-configuration=remote_"
                "memory.json\n--logical-topology-configuration=logical_topology.json"}}) {
    TempDir tmp;
    const auto t = switch_named("topo\ntouch PWNED\n`touch PWNED` $(touch PWNED) \"'; touch PWNED");
    synth::Algorithm a = algorithm(t, CollectiveKind::AllReduce, 1 << 20, 1);
    a.name = "alg\ntouch PWNED\r\n\xff\xfe `touch PWNED` $(touch PWNED) '\"; touch PWNED";
    const std::string stem = "wl\ntouch PWNED\n`touch PWNED`$(touch PWNED)'\"; touch PWNED";
    const auto wl = sim::collective_microbenchmark(CollectiveKind::AllReduce, 1 << 20, 4);
    for (size_t r = 0; r < wl.size(); ++r)
      chakra::write_et(chakra::et_path(tmp.file(stem), static_cast<int>(r)), wl[r]);
    AstraBundleOptions o;
    o.workload = tmp.file(stem);
    o.network = backend.network;
    write_bundle(tmp, a, t, o);
    const std::string script = tmp.file("out/astra-sim/run.sh");
    const std::string run = topo::read_file(script);

    // Comment lines, holding the names on their lines; then the generator's commands exactly.
    const size_t body = run.find("\nset -e\n");
    ASSERT_NE(body, std::string::npos) << run;
    std::istringstream head(run.substr(0, body + 1));
    for (std::string line; std::getline(head, line);) EXPECT_EQ(line.substr(0, 1), "#") << line;
    for (const std::string& name : {a.name, t.name(), stem})
      EXPECT_THAT(run.substr(0, body), HasSubstr(topo::one_line(name)));
    std::string args = backend.network_args;
    for (size_t at = 0; (at = args.find('\n', at)) != std::string::npos; at += 6)
      args.replace(at, 1, " \\\n  ");
    EXPECT_EQ(run.substr(body + 1),
              "set -e\n"
              "cd \"$(dirname \"$0\")\"\n"
              "exec \"${" +
                  backend.variable + ":-" + backend.binary +
                  "}\" \\\n"
                  "  --workload-configuration=" +
                  topo::shell_quoted("workload/" + stem, "the workload") +
                  " \\\n"
                  "  --system-configuration=system.json \\\n  " +
                  args + " \"$@\"\n");
    if (backend.network == AstraNetwork::Analytical) {
      std::istringstream yml(topo::read_file(tmp.file("out/astra-sim/network.yml")));
      for (std::string line; std::getline(yml, line);)
        EXPECT_THAT(line,
                    ::testing::ContainsRegex("^(#|topology: |npus_count: |bandwidth: |latency: )"))
            << line;
    }

    // sh reads it (sh -n) and runs it with a stand-in ASTRA-sim on the PATH that writes its
    // arguments: the workload is one argument, and nothing else ran.
    const fs::path bin = tmp.file("bin");
    fs::create_directories(bin);
    topo::write_file_atomically((bin / backend.binary).string(),
                                "#!/bin/sh\nprintf '%s\\0' \"$@\" > arguments\n");
    fs::permissions(bin / backend.binary, fs::perms::owner_all, fs::perm_options::add);
    const auto q = [](const std::string& s) { return topo::shell_quoted(s, "a test path"); };
    ASSERT_EQ(std::system(("sh -n " + q(script)).c_str()), 0);
    const std::string command = "cd " + q(tmp.file("")) + " && unset " + backend.variable +
                                " && PATH=" + q(bin.string()) + ":\"$PATH\" sh " + q(script) +
                                " --extra";
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    std::string expected = "--workload-configuration=workload/" + stem +
                           "\n--system-configuration=system.json\n" + backend.network_args +
                           "\n--extra\n";
    std::replace(expected.begin(), expected.end(), '\n', '\0');
    // The stem's own line breaks are not separators: put them back.
    const std::string got = topo::read_file(tmp.file("out/astra-sim/arguments"));
    std::string stem_nul = stem;
    std::replace(stem_nul.begin(), stem_nul.end(), '\n', '\0');
    expected.replace(expected.find(stem_nul), stem_nul.size(), stem);
    EXPECT_EQ(got, expected);
    EXPECT_EQ(files_named(tmp.file(""), "PWNED"), std::vector<std::string>{});
  }
}

// The workload's files are staged under its file name, so that name must be UTF-8 (an output
// folder's names are): one that is not is refused by name, and nothing is written.
TEST(AstraBundle, AWorkloadNameThatIsNotUtf8IsRefused) {
  TempDir tmp;
  const auto t = topo::generate("switch:4");
  const std::string stem = "wl\n\xff\xfe";
  const auto wl = sim::collective_microbenchmark(CollectiveKind::AllReduce, 1 << 20, 4);
  for (size_t r = 0; r < wl.size(); ++r)
    chakra::write_et(chakra::et_path(tmp.file(stem), static_cast<int>(r)), wl[r]);
  AstraBundleOptions o;
  o.workload = tmp.file(stem);
  try {
    write_bundle(tmp, algorithm(t, CollectiveKind::AllReduce, 1 << 20, 1), t, o);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.where().file, tmp.file(stem));
    EXPECT_EQ(e.message(),
              "the workload's file name 'wl\\n\\xff\\xfe' is not valid UTF-8 (byte 0xFF at offset "
              "3); the bundle names its workload files after it");
  }
  EXPECT_FALSE(fs::exists(tmp.file("out/astra-sim/run.sh")));
}

TEST(AstraBundle, WhatASTRASimCannotRunIsRefused) {
  TempDir tmp;
  const auto t = topo::generate("ring:4");
  topo::OutputFolder out(tmp.file("out"));
  const auto error = [&](const synth::Algorithm& a, AstraBundleOptions o = {}) {
    try {
      stage_astra_bundle(a, t, out, "astra-sim", o);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(error(algorithm(t, CollectiveKind::Broadcast, 1 << 20, 1)),
              HasSubstr("ASTRA-sim runs custom all-reduce, all-gather, reduce-scatter and "
                        "all-to-all only, not broadcast"));
  synth::Collective pair = synth::Collective::over_all(t, CollectiveKind::AllReduce);
  pair.ranks = {1, 2};
  EXPECT_THAT(error(synth::make_algorithm("ring", t, pair, 1024)),
              HasSubstr("spans NPUs 1,2 of the 4"));
  const auto wl = sim::collective_microbenchmark(CollectiveKind::AllReduce, 1 << 20, 2);
  for (size_t r = 0; r < wl.size(); ++r)
    chakra::write_et(chakra::et_path(tmp.file("two"), static_cast<int>(r)), wl[r]);
  AstraBundleOptions o;
  o.workload = tmp.file("two");
  EXPECT_THAT(error(algorithm(t, CollectiveKind::AllReduce, 1 << 20, 1), o),
              HasSubstr("the workload has 2 ranks and the topology 4 NPUs"));
}

}  // namespace
}  // namespace tenet::astra
