// ASTRA-sim system configurations read as simulator settings (sim/astra_system.hpp). The files are
// written here in ASTRA-sim's format (keys as astra-sim/system/Sys.cc and
// astraccl/CollectiveImplLookup.cc read them upstream).
#include "astra/system_json.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "chakra/et.hpp"
#include "sim/collective_engine.hpp"
#include "sim/system.hpp"
#include "sim/workload.hpp"
#include "synth/producers.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"

namespace tenet::astra {
namespace {

using namespace sim;  // the simulator these ASTRA-sim inputs drive

using synth::CollectiveKind;
using ::testing::Contains;
using ::testing::HasSubstr;

class AstraSystemTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() / fmt::format("tenet-astra-system-{}", ::getpid());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& text) {
    const std::string path = (dir_ / "system.json").string();
    topo::write_file_atomically(path, text);
    return path;
  }
  std::string error(const std::string& text) {
    try {
      read_astra_system(write(text));
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  }
  std::filesystem::path dir_;
};

TEST_F(AstraSystemTest, NativeImplementationsBecomeBaselines) {
  const AstraSystem s = read_astra_system(write(R"({
    "scheduling-policy": "LIFO", "endpoint-delay": 10, "active-chunks-per-dimension": 1,
    "preferred-dataset-splits": 4,
    "all-reduce-implementation": ["ring"], "all-gather-implementation": ["halvingDoubling"],
    "reduce-scatter-implementation": ["direct4"], "all-to-all-implementation": ["ring"],
    "collective-optimization": "localBWAware", "local-mem-bw": 1600, "boost-mode": 0,
    "roofline-enabled": 1, "peak-perf": 900, "frobnicate": true})"));
  EXPECT_EQ(s.algorithms.at(CollectiveKind::AllReduce), "ring:1");
  EXPECT_EQ(s.algorithms.at(CollectiveKind::AllGather), "rhd");
  EXPECT_EQ(s.algorithms.at(CollectiveKind::ReduceScatter), "direct");
  EXPECT_EQ(s.algorithms.at(CollectiveKind::AllToAll), "ring:1");
  ASSERT_EQ(s.dataset_splits.size(), 4u);
  EXPECT_EQ(s.dataset_splits.at(CollectiveKind::AllReduce).splits, 4);
  EXPECT_EQ(s.dataset_splits.at(CollectiveKind::AllReduce).active, 1);
  EXPECT_EQ(s.endpoints.delay, 10'000);
  EXPECT_EQ(s.endpoints.reduce_memory_bandwidth, 1'600'000'000'000);
  EXPECT_EQ(s.peak_flops, 900e12);
  EXPECT_EQ(s.memory_bandwidth, 1'600'000'000'000);
  // Nothing is dropped silently: what Tenet does not model, and what it does not know, is named.
  EXPECT_THAT(s.notes,
              Contains("endpoint-delay 10 ns: at each end of every message of a collective"));
  EXPECT_TRUE(s.dataset_splits.at(CollectiveKind::AllReduce).newest_first);
  EXPECT_THAT(s.notes, Contains("scheduling-policy \"LIFO\": over several dimensions, a "
                                "dimension runs the newest waiting piece first"));
  EXPECT_THAT(s.notes, Contains("boost-mode 0: not modelled by Tenet"));
  EXPECT_THAT(s.notes, Contains(HasSubstr(
                           "preferred-dataset-splits 4, active-chunks-per-dimension 1: the native "
                           "collectives run as 4 pieces, 1 at a time")));
  EXPECT_THAT(s.notes, Contains("unknown key 'frobnicate': ignored"));
  const AstraSystem other =
      read_astra_system(write(R"({"all-to-all-implementation": ["halvingDoubling"]})"));
  EXPECT_EQ(other.algorithms.at(CollectiveKind::AllToAll), "direct");
  EXPECT_THAT(
      other.notes,
      Contains(HasSubstr("all-to-all-implementation [\"halvingDoubling\"]: Tenet's All-to-All "
                         "baselines are ring (one dimension or one per dimension) and direct")));
  // A ring per dimension: ASTRA-sim's phases, dimension by dimension.
  EXPECT_EQ(read_astra_system(write(R"({"all-to-all-implementation": ["ring", "ring"]})"))
                .algorithms.at(CollectiveKind::AllToAll),
            "hierarchical:ring,ring");
  // ASTRA-sim's defaults: endpoint-delay 10 ns; without local-mem-bw or preferred-dataset-splits
  // it divides by zero, which is said.
  EXPECT_EQ(other.endpoints.delay, kAstraDefaultEndpointDelay);
  EXPECT_THAT(other.notes, Contains(HasSubstr("no local-mem-bw")));
  EXPECT_THAT(other.notes, Contains(HasSubstr("no preferred-dataset-splits")));
}

// Without roofline-enabled ASTRA-sim replays every COMP node: its runtime, 1 ns where it has none
// (astra-sim 518bd51, astra-sim/workload/Workload.cc: issue_replay where !roofline_enabled). A
// workload of num_ops and tensor_size alone (Tenet's generated ones, Chakra's converter's without
// durations) then computes in 1 ns a node there, and so it does here, said in a note; with
// roofline-enabled the roofline runs at peak-perf.
TEST_F(AstraSystemTest, WithoutTheRooflineComputeReplaysAsAstraSimDoes) {
  const AstraSystem plain = read_astra_system(write(R"({"local-mem-bw": 3350})"));
  EXPECT_FALSE(plain.roofline);
  EXPECT_THAT(plain.notes, Contains(HasSubstr("no roofline-enabled: COMP nodes take their "
                                              "duration_micros, 1 ns where they have none")));
  sim::SimConfig cfg;
  apply_astra_system(plain, cfg, false);
  EXPECT_FALSE(cfg.roofline);
  const AstraSystem roof = read_astra_system(
      write(R"({"roofline-enabled": 1, "peak-perf": 900, "local-mem-bw": 3350})"));
  EXPECT_TRUE(roof.roofline);
  sim::SimConfig with_roof;
  apply_astra_system(roof, with_roof, false);
  EXPECT_TRUE(with_roof.roofline);
  EXPECT_EQ(with_roof.peak_flops, 900e12);
  // One rank, one COMP node of 9e12 operations on 1 MiB: 1 ns replayed, 10 ms at 900 TFLOP/s.
  chakra::EtFile f;
  chakra::Node& n = f.nodes.emplace_back();
  n.set_id(0);
  n.set_type(ChakraProtoMsg::COMP_NODE);
  n.set_name("matmul");
  chakra::set_int(n, "num_ops", 9'000'000'000'000);
  chakra::set_int(n, "tensor_size", 1 << 20);
  const topo::Topology t = topo::generate("switch:2");
  EXPECT_EQ(sim::simulate(t, {f}, cfg).iteration, 1000);
  EXPECT_EQ(sim::simulate(t, {f}, with_roof).iteration, 10 * Time{1'000'000'000});
}

TEST_F(AstraSystemTest, DimensionsBecomeHierarchicalAndCustomBecomesAFile) {
  const std::string prefix = (dir_ / "custom").string();
  topo::write_file_atomically(chakra::et_path(prefix, 0), chakra::serialize_et({}));
  const AstraSystem s = read_astra_system(write(fmt::format(R"({{
    "all-reduce-implementation": ["ring", "direct", "halvingDoubling"],
    "all-gather-implementation": ["oneRing", "oneRing"],
    "reduce-scatter-implementation": ["ring", "doubleBinaryTree"],
    "all-reduce-implementation-custom": ["{}"]}})",
                                                            prefix)));
  EXPECT_EQ(s.algorithms.at(CollectiveKind::AllReduce), prefix);  // custom wins, said so
  EXPECT_THAT(s.notes,
              Contains("all-reduce-implementation-custom wins over all-reduce-implementation"));
  EXPECT_EQ(s.algorithms.at(CollectiveKind::AllGather), "ring:1");
  EXPECT_EQ(s.algorithms.at(CollectiveKind::ReduceScatter), "hierarchical:ring,ring");
  EXPECT_THAT(s.notes, Contains(HasSubstr("doubleBinaryTree in dimension 2")));
  EXPECT_EQ(read_astra_system(
                write(R"({"all-reduce-implementation": ["ring", "direct", "halvingDoubling"]})"))
                .algorithms.at(CollectiveKind::AllReduce),
            "hierarchical:ring,direct,rhd");
}

TEST_F(AstraSystemTest, BadFilesAreNamed) {
  EXPECT_THAT(
      error("{\"all-reduce-implementation\": [\"ringg\"]}"),
      HasSubstr(
          "system.json: all-reduce-implementation: unknown collective implementation 'ringg'"));
  EXPECT_THAT(error("{\"all-reduce-implementation\": \"ring\"}"),
              HasSubstr("all-reduce-implementation: expected a list of implementations, one per "
                        "dimension, got \"ring\""));
  EXPECT_THAT(error("{\"all-reduce-implementation\": []}"),
              HasSubstr("all-reduce-implementation: the list is empty"));
  EXPECT_THAT(error("{\"preferred-dataset-splits\": 0}"),
              HasSubstr("preferred-dataset-splits: 0 is outside 1..4096"));
  EXPECT_THAT(error("{\"preferred-dataset-splits\": \"4\"}"), HasSubstr("expected a whole number"));
  EXPECT_THAT(error("{\"all-gather-implementation-custom\": [\"a\", \"b\"]}"),
              HasSubstr("expected one Chakra prefix"));
  EXPECT_THAT(error("{\"peak-perf\": -1}"), HasSubstr("peak-perf: -1 TFLOP/s is not a peak"));
  EXPECT_THAT(
      error("{\"all-reduce-implementation-custom\": [\"/nonexistent/prefix\"]}"),
      HasSubstr("all-reduce-implementation-custom: '/nonexistent/prefix' names no Chakra ET set "
                "(/nonexistent/prefix.0.et is missing)"));
  EXPECT_THAT(error("[1]"), HasSubstr("an ASTRA-sim system configuration is a JSON object"));
  EXPECT_THAT(error("{\"a\": "), HasSubstr("system.json: not JSON"));
  EXPECT_THAT(error(std::string(100000, '[')), HasSubstr("system.json"));
}

// ASTRA-sim's native collectives, timed as ASTRA-sim times them, on its own example inputs: the
// microbenchmarks (1 MiB, one COMM_COLL per rank, comm_size each rank's input) on Ring_<n>npus.yml
// (50 GB/s read as 50 * 2^30 B/s, 500 ns) with Ring_4chunks.json (ring everywhere, 4 dataset
// splits, one active, endpoint-delay 10 ns, local-mem-bw 1600 GB/s). Derived from the source
// (astra-sim/system/astraccl/native_collectives/collective_algorithm/Ring.cc, MemBus.cc,
// PacketBundle.cc, Sys::generate_collective): a ring is a chain of messages; each leaves after
// the previous one arrived, plus the endpoint delay D at each hand-over (and once at the start),
// plus 3 m / local-mem-bw where the message is reduced; the pieces run one after another. With a
// message of m bytes taking L = 500 ns + m / bw, a piece of size S on n NPUs takes
//   All-Reduce       (2n - 1) D + 2(n - 1) L(S/n) + (n - 1) P(S/n)
//   Reduce-Scatter   n D + (n - 1) (L(S/n) + P(S/n))
//   All-Gather       n D + (n - 1) L(S)          (S: comm_size, each rank's input)
//   All-to-All       D + n(n - 1)/2 (L(S/n) + D) (store and forward, one message at a time)
// ASTRA-sim itself (analytical congestion-unaware, upstream 518bd51, built here) printed for
// n = 4 / 8 / 16: All-Reduce 43,000 / 64,440 / 99,640 ns, All-Gather 64,744 / 151,016 / 323,560,
// Reduce-Scatter 22,240 / 33,080 / 50,740, All-to-All 41,560 / 125,480 / 391,240; these closed
// forms give the same to within 0.2 % (ASTRA-sim truncates every message and reduction to whole
// nanoseconds, Tenet keeps picoseconds).
TEST_F(AstraSystemTest, NativeCollectivesTakeASTRASimsClosedForm) {
  const AstraSystem sys = read_astra_system(write(R"({
    "scheduling-policy": "LIFO", "endpoint-delay": 10, "active-chunks-per-dimension": 1,
    "preferred-dataset-splits": 4, "all-reduce-implementation": ["ring"], "all-gather-implementation": ["ring"],
    "reduce-scatter-implementation": ["ring"], "all-to-all-implementation": ["ring"],
    "collective-optimization": "localBWAware", "local-mem-bw": 1600, "boost-mode": 0})"));
  const Bandwidth bw = 50LL << 30;
  const Time D = 10'000;
  const auto L = [&](Bytes m) { return 500'000 + transfer_time(m, bw); };
  const auto P = [&](Bytes m) { return 3 * transfer_time(m, 1'600'000'000'000); };
  for (int n : {4, 8, 16}) {
    topo::write_file_atomically(
        (dir_ / "ring.yml").string(),
        fmt::format(
            "topology: [ Ring ]\nnpus_count: [ {} ]\nbandwidth: [ 50.0 ]\nlatency: [ 500.0 ]\n",
            n));
    const auto t = topo::load((dir_ / "ring.yml").string());
    for (int splits : {1, 4}) {
      sim::SimConfig c;
      c.algorithms = sys.algorithms;
      c.endpoints = sys.endpoints;
      c.max_in_flight = 1;
      c.dataset_splits = sys.dataset_splits;
      for (auto& [kind, sp] : c.dataset_splits) sp.splits = splits;
      const Bytes S = (1 << 20) / splits;  // a piece
      const auto run = [&](CollectiveKind kind) {
        return sim::simulate(
                   t,
                   sim::collective_microbenchmark(
                       kind, kind == CollectiveKind::AllGather ? (1 << 20) * n : 1 << 20, n),
                   c)
            .iteration;
      };
      const std::string at = fmt::format("n = {}, {} splits", n, splits);
      EXPECT_EQ(run(CollectiveKind::AllReduce),
                splits * ((2 * n - 1) * D + 2 * (n - 1) * L(S / n) + (n - 1) * P(S / n)))
          << at;
      EXPECT_EQ(run(CollectiveKind::ReduceScatter),
                splits * (n * D + (n - 1) * (L(S / n) + P(S / n))))
          << at;
      EXPECT_EQ(run(CollectiveKind::AllGather), splits * (n * D + (n - 1) * L(S))) << at;
      EXPECT_EQ(run(CollectiveKind::AllToAll), splits * (D + n * (n - 1) / 2 * (L(S / n) + D)))
          << at;
    }
  }
  // Two pieces at a time (active-chunks-per-dimension 2, as the HGX-H100 configuration has): on
  // the analytical network they do not meet, so four pieces take two pieces' time.
  const auto t8 = topo::generate("ring:8,bw=50GB/s,lat=0.5us");
  sim::SimConfig c;
  c.algorithms = sys.algorithms;
  c.endpoints = sys.endpoints;
  c.max_in_flight = 1;
  c.dataset_splits = sys.dataset_splits;
  const Time one_at_a_time =
      sim::simulate(t8, sim::collective_microbenchmark(CollectiveKind::AllReduce, 1 << 20, 8), c)
          .iteration;
  for (auto& [kind, sp] : c.dataset_splits) sp.active = 2;
  EXPECT_EQ(2 * sim::simulate(
                    t8, sim::collective_microbenchmark(CollectiveKind::AllReduce, 1 << 20, 8), c)
                    .iteration,
            one_at_a_time);
  // A collective swapped in by --coll (or custom) runs as ASTRA-sim runs a custom collective:
  // whole, straight from the NPU, without endpoint costs: exactly its algorithm's time.
  c.dataset_splits.erase(CollectiveKind::AllReduce);
  c.algorithms[CollectiveKind::AllReduce] = "tenet";
  c.chunks_per_npu = 2;
  synth::Collective ar = synth::Collective::over_all(t8, CollectiveKind::AllReduce);
  ar.chunks_per_npu = 2;
  const synth::Algorithm tenet =
      synth::make_algorithm("tenet", t8, ar, ar.chunk_bytes_for(1 << 20));
  EXPECT_EQ(
      sim::simulate(t8, sim::collective_microbenchmark(CollectiveKind::AllReduce, 1 << 20, 8), c)
          .iteration,
      replay(t8, tenet, NetworkKind::Analytical));
}

// Remote memory: latency + bytes / bandwidth per access, one access at a time per memory.
TEST_F(AstraSystemTest, RemoteMemoryServesOneAccessAtATimePerMemory) {
  // Two ranks load 1 MiB each from remote memory at 1 GB/s (ASTRA-sim: 10^9 B/s) after 100 ns.
  std::vector<chakra::EtFile> w(2);
  for (auto& f : w) {
    chakra::Node& n = f.nodes.emplace_back();
    n.set_id(1);
    n.set_type(ChakraProtoMsg::MEM_LOAD_NODE);
    chakra::set_int(n, "tensor_size", 1 << 20);
  }
  const Time one = 100'000 + 1'048'576'000;  // ps
  auto run = [&](const std::string& json) {
    sim::SimConfig c;
    c.remote_memory = read_astra_remote_memory(write(json)).memory;
    return sim::simulate(topo::generate("ring:2"), w, c).iteration;
  };
  const std::string timing = R"("remote-mem-latency": 100, "remote-mem-bw": 1)";
  EXPECT_EQ(run(R"({"memory-type": "PER_NPU_MEMORY_EXPANSION", )" + timing + "}"), one);
  EXPECT_EQ(run(R"({"memory-type": "MEMORY_POOL", )" + timing + "}"), 2 * one);
  EXPECT_EQ(run(R"({"memory-type": "PER_NODE_MEMORY_EXPANSION", "num-npus-per-node": 2, )" +
                timing + "}"),
            2 * one);
  EXPECT_EQ(run(R"({"memory-type": "PER_NODE_MEMORY_EXPANSION", "num-npus-per-node": 1, )" +
                timing + "}"),
            one);
  // No expansion: local memory (the compute stream at the memory bandwidth), as without the file.
  EXPECT_FALSE(read_astra_remote_memory(write(R"({"memory-type": "NO_MEMORY_EXPANSION"})")).memory);
  EXPECT_EQ(run(R"({"memory-type": "NO_MEMORY_EXPANSION"})"),
            sim::simulate(topo::generate("ring:2"), w, sim::SimConfig{}).iteration);

  auto bad = [&](const std::string& json) {
    try {
      read_astra_remote_memory(write(json));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(bad(R"({"memory-type": "HBM"})"), HasSubstr("memory-type: unknown 'HBM'"));
  EXPECT_THAT(bad(R"({"memory-type": "MEMORY_POOL", "remote-mem-latency": 100})"),
              HasSubstr("remote-mem-bw is missing (memory-type MEMORY_POOL)"));
  EXPECT_THAT(
      bad(R"({"memory-type": "MEMORY_POOL", "remote-mem-latency": -1, "remote-mem-bw": 1})"),
      HasSubstr("remote-mem-latency: -1 is outside"));
  EXPECT_THAT(bad(R"({"memory-type": "PER_NODE_MEMORY_EXPANSION", )" + timing + "}"),
              HasSubstr("num-npus-per-node is missing"));
  EXPECT_THAT(bad(R"({"remote-mem-bw": 1})"), HasSubstr("memory-type is missing"));
  EXPECT_THAT(
      read_astra_remote_memory(write(R"({"memory-type": "MEMORY_POOL", "x": 1, )" + timing + "}"))
          .notes,
      Contains("unknown key 'x': ignored"));
}

// The roofline turns FLOPs over peak-perf into whole picoseconds: a time past what one holds (2^63
// ps) is an error naming the node and the term, never a wrapped integer; a memory bandwidth that
// rounds to 0 B/s is refused where it is read.
TEST_F(AstraSystemTest, RooflineTimesPastTheClockAreErrorsNamingTheNode) {
  std::vector<chakra::EtFile> w(2);
  for (auto& f : w) {
    chakra::Node& n = f.nodes.emplace_back();
    n.set_id(0);
    n.set_type(ChakraProtoMsg::COMP_NODE);
    n.set_name("gemm");
    chakra::set_int(n, "num_ops", 1'000'000'000'000);  // 10^12 FLOPs
  }
  auto run = [&](const std::string& peak) {
    sim::SimConfig c;
    apply_astra_system(
        read_astra_system(
            write(R"({"roofline-enabled": 1, "local-mem-bw": 1000, "peak-perf": )" + peak + "}")),
        c, false);
    return sim::simulate(topo::generate("ring:2"), w, c).iteration;
  };
  // 10^6 FLOP/s: 10^6 s, 10^18 ps, which a Time holds.
  EXPECT_EQ(run("1e-6"), Time{1'000'000} * kPicosPerSecond);
  // 100 FLOP/s: 10^10 s, past 2^63 ps.
  try {
    run("1e-10");
    ADD_FAILURE() << "a compute time past 2^63 ps ran";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("rank 0 node 0 ('gemm'): num_ops 1000000000000 at 1e-10 "
                                    "TFLOP/s (peak-perf x compute efficiency) takes 1e+10 s, "
                                    "past the 2^63 ps"));
  }
  EXPECT_THAT(error(R"({"local-mem-bw": 1e-12})"),
              HasSubstr("local-mem-bw: 1e-12 GB/s is not a bandwidth"));
}

}  // namespace
}  // namespace tenet::astra
