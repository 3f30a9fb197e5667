// ASTRA-sim system configurations read as simulator settings (sim/astra_system.hpp). The files are
// written here in ASTRA-sim's format (keys as astra-sim/system/Sys.cc and
// astraccl/CollectiveImplLookup.cc read them upstream).
#include "sim/astra_system.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "chakra/et.hpp"
#include "sim/system.hpp"
#include "sim/workload.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"

namespace tenet::sim {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using synth::CollectiveKind;

class AstraSystemTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / fmt::format("tenet-astra-system-{}", ::getpid());
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
  EXPECT_EQ(s.algorithms.at(CollectiveKind::AllToAll), "direct");
  EXPECT_EQ(s.chunks_per_npu, 4);
  EXPECT_EQ(s.peak_flops, 900e12);
  EXPECT_EQ(s.memory_bandwidth, 1'600'000'000'000);
  // Nothing is dropped silently: what Tenet does not model, and what it does not know, is named.
  EXPECT_THAT(s.notes, Contains("endpoint-delay 10: not modelled by Tenet"));
  EXPECT_THAT(s.notes, Contains("scheduling-policy \"LIFO\": not modelled by Tenet"));
  EXPECT_THAT(s.notes, Contains("active-chunks-per-dimension 1: not modelled by Tenet"));
  EXPECT_THAT(s.notes, Contains("unknown key 'frobnicate': ignored"));
  EXPECT_THAT(s.notes, Contains(HasSubstr("all-to-all-implementation [\"ring\"]: Tenet's All-to-All baseline is direct")));
}

TEST_F(AstraSystemTest, DimensionsBecomeHierarchicalAndCustomBecomesAFile) {
  const std::string prefix = (dir_ / "custom").string();
  topo::write_file_atomically(chakra::et_path(prefix, 0), chakra::serialize_et({}));
  const AstraSystem s = read_astra_system(write(fmt::format(R"({{
    "all-reduce-implementation": ["ring", "direct", "halvingDoubling"],
    "all-gather-implementation": ["oneRing", "oneRing"],
    "reduce-scatter-implementation": ["ring", "doubleBinaryTree"],
    "all-reduce-implementation-custom": ["{}"]}})", prefix)));
  EXPECT_EQ(s.algorithms.at(CollectiveKind::AllReduce), prefix);  // custom wins, said so
  EXPECT_THAT(s.notes, Contains("all-reduce-implementation-custom wins over all-reduce-implementation"));
  EXPECT_EQ(s.algorithms.at(CollectiveKind::AllGather), "ring:1");
  EXPECT_EQ(s.algorithms.at(CollectiveKind::ReduceScatter), "hierarchical:ring,ring");
  EXPECT_THAT(s.notes, Contains(HasSubstr("doubleBinaryTree in dimension 2")));
  EXPECT_EQ(read_astra_system(write(R"({"all-reduce-implementation": ["ring", "direct", "halvingDoubling"]})"))
                .algorithms.at(CollectiveKind::AllReduce),
            "hierarchical:ring,direct,rhd");
}

TEST_F(AstraSystemTest, BadFilesAreNamed) {
  EXPECT_THAT(error("{\"all-reduce-implementation\": [\"ringg\"]}"),
              HasSubstr("system.json: all-reduce-implementation: unknown collective implementation 'ringg'"));
  EXPECT_THAT(error("{\"all-reduce-implementation\": \"ring\"}"),
              HasSubstr("all-reduce-implementation: expected a list of implementations, one per dimension, got \"ring\""));
  EXPECT_THAT(error("{\"all-reduce-implementation\": []}"), HasSubstr("all-reduce-implementation: the list is empty"));
  EXPECT_THAT(error("{\"preferred-dataset-splits\": 0}"), HasSubstr("preferred-dataset-splits: 0 is outside 1..4096"));
  EXPECT_THAT(error("{\"preferred-dataset-splits\": \"4\"}"), HasSubstr("expected a whole number"));
  EXPECT_THAT(error("{\"all-gather-implementation-custom\": [\"a\", \"b\"]}"), HasSubstr("expected one Chakra prefix"));
  EXPECT_THAT(error("{\"peak-perf\": -1}"), HasSubstr("peak-perf: -1 TFLOP/s is not a peak"));
  EXPECT_THAT(error("{\"all-reduce-implementation-custom\": [\"/nonexistent/prefix\"]}"),
              HasSubstr("all-reduce-implementation-custom: '/nonexistent/prefix' names no Chakra ET set "
                        "(/nonexistent/prefix.0.et is missing)"));
  EXPECT_THAT(error("[1]"), HasSubstr("an ASTRA-sim system configuration is a JSON object"));
  EXPECT_THAT(error("{\"a\": "), HasSubstr("system.json: not JSON"));
  EXPECT_THAT(error(std::string(100000, '[')), HasSubstr("system.json"));
}

// The settings run: ASTRA-sim's ring All-Reduce microbenchmark is Tenet's single ring, -k splits.
TEST_F(AstraSystemTest, SettingsRunTheNamedBaselines) {
  const AstraSystem s = read_astra_system(write(R"({"all-reduce-implementation": ["ring"], "preferred-dataset-splits": 2})"));
  const auto t = topo::generate("ring:8,bw=50GB/s,lat=0.5us");
  SimConfig c;
  c.algorithms = s.algorithms;
  c.chunks_per_npu = s.chunks_per_npu;
  c.max_in_flight = 1;
  const Time with_system = simulate(t, collective_microbenchmark(CollectiveKind::AllReduce, 1 << 20, 8), c).iteration;
  SimConfig ring;
  ring.algorithms[CollectiveKind::AllReduce] = "ring:1";
  ring.chunks_per_npu = 2;
  EXPECT_EQ(with_system, simulate(t, collective_microbenchmark(CollectiveKind::AllReduce, 1 << 20, 8), ring).iteration);
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
    SimConfig c;
    c.remote_memory = read_astra_remote_memory(write(json)).memory;
    return simulate(topo::generate("ring:2"), w, c).iteration;
  };
  const std::string timing = R"("remote-mem-latency": 100, "remote-mem-bw": 1)";
  EXPECT_EQ(run(R"({"memory-type": "PER_NPU_MEMORY_EXPANSION", )" + timing + "}"), one);
  EXPECT_EQ(run(R"({"memory-type": "MEMORY_POOL", )" + timing + "}"), 2 * one);
  EXPECT_EQ(run(R"({"memory-type": "PER_NODE_MEMORY_EXPANSION", "num-npus-per-node": 2, )" + timing + "}"), 2 * one);
  EXPECT_EQ(run(R"({"memory-type": "PER_NODE_MEMORY_EXPANSION", "num-npus-per-node": 1, )" + timing + "}"), one);
  // No expansion: local memory (the compute stream at the memory bandwidth), as without the file.
  EXPECT_FALSE(read_astra_remote_memory(write(R"({"memory-type": "NO_MEMORY_EXPANSION"})")).memory);
  EXPECT_EQ(run(R"({"memory-type": "NO_MEMORY_EXPANSION"})"), simulate(topo::generate("ring:2"), w, SimConfig{}).iteration);

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
  EXPECT_THAT(bad(R"({"memory-type": "MEMORY_POOL", "remote-mem-latency": -1, "remote-mem-bw": 1})"),
              HasSubstr("remote-mem-latency: -1 is outside"));
  EXPECT_THAT(bad(R"({"memory-type": "PER_NODE_MEMORY_EXPANSION", )" + timing + "}"),
              HasSubstr("num-npus-per-node is missing"));
  EXPECT_THAT(bad(R"({"remote-mem-bw": 1})"), HasSubstr("memory-type is missing"));
  EXPECT_THAT(read_astra_remote_memory(write(R"({"memory-type": "MEMORY_POOL", "x": 1, )" + timing + "}")).notes,
              Contains("unknown key 'x': ignored"));
}

}  // namespace
}  // namespace tenet::sim
