#include "topo/io.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/topo/test_util.hpp"
#include "topo/analysis.hpp"
#include "topo/generators.hpp"

namespace tenet::topo {
namespace {

using testing::expect_same_topology;
using testing::TempDir;

std::vector<std::string> sample_inputs() {
  std::vector<std::string> v;
  for (const GeneratorInfo& g : generators()) v.push_back(g.example);
  v.push_back("ring:8,bidir=false");
  v.push_back("ring:8,bw=300GB/s x switch:4,bw=50GB/s");
  v.push_back("torus2d:4x4,router=true");
  for (const auto& e : std::filesystem::directory_iterator(testing::examples_dir()))
    v.push_back(e.path().string());
  return v;
}

TEST(RoundTrip, YamlJsonAndDotReproduceEveryTopology) {
  TempDir dir;
  for (const std::string& input : sample_inputs()) {
    SCOPED_TRACE(input);
    const Topology t = load(input);
    expect_same_topology(t, parse_yaml(to_yaml(t)), "yaml " + input);
    expect_same_topology(t, parse_yaml(to_json(t)), "json " + input);
    expect_same_topology(t, parse_dot(to_dot(t)), "dot " + input);
    // Through files, as `tenet topo convert` does.
    for (const char* ext : {".yaml", ".json", ".dot"}) {
      std::string path = dir.file(std::string("t") + ext);
      save(t, path);
      expect_same_topology(t, load_file(path), path);
    }
  }
}

// Names that look like syntax survive every format: DOT keywords (Boost's writer left them bare,
// which its own reader refuses: found by tests/fuzz/topology_dot), quotes and backslashes, glob
// characters and all-digit names (a link names them escaped, or they would read as a pattern or
// an NPU index: found by tests/fuzz/topology_yaml).
// A UTF-8 byte-order mark before a DOT file (some editors write one) is read through, as the YAML
// and JSON parsers do.
TEST(RoundTrip, DotReadsThroughAByteOrderMark) {
  const Topology t = generate("ring:4");
  expect_same_topology(parse_dot("\xEF\xBB\xBF" + to_dot(t), "bom.dot"), t, "bom.dot");
}

TEST(RoundTrip, NamesThatLookLikeSyntaxSurviveEveryFormat) {
  const Topology t = parse_yaml(R"(
name: t
defaults: {bw: 2GB/s, lat: 1us}
npus: [node, "a\\", "q\"uote", strict, "back\\slash", "gpu*", "7", "x?[y]"]
switches: [graph]
links:
  - {src: node, dst: "a\\\\", bw: 1GB/s, name: edge}
  - {src: "q\"uote", dst: strict, bw: 1GB/s, name: "x\\"}
  - {src: "back\\\\slash", dst: graph, name: digraph}
  - {src: graph, dst: node, name: subgraph}
  - {src: graph, dst: "q\"uote"}
  - {src: graph, dst: "a\\\\"}
  - {src: "gpu\\*", dst: graph}
  - {src: "\\7", dst: graph}
  - {src: "x\\?\\[y]", dst: graph}
)");
  EXPECT_EQ(t.num_links(), 2 * 9);
  EXPECT_EQ(t.link(12).src, t.find_node("gpu*"));
  EXPECT_EQ(t.link(14).src, t.find_node("7"));
  expect_same_topology(t, parse_dot(to_dot(t)), "dot");
  expect_same_topology(t, parse_yaml(to_yaml(t)), "yaml");
  expect_same_topology(t, parse_yaml(to_json(t)), "json");
}

TEST(TenetFormat, DefaultsGroupsPatternsAndFlags) {
  const Topology t = parse_yaml(R"(
name: demo
defaults: {bw: 10GB/s, lat: 2us}
npus: [{name: a, router: true}, b]
switches: [{name: core, reduce: true, multicast: true}]
groups:
  - {name: pod, count: 2, spec: "switch:2,bw=40GB/s"}
links:
  - {src: a, dst: b, count: 2}
  - {src: "pod*/sw0", dst: core, bw: 80GB/s}
  - {src: a, dst: core, bidirectional: false, lat: 3us, name: up}
  - {src: core, dst: 1}
  - {src: core, dst: a, bidirectional: false}
)");
  EXPECT_EQ(t.name(), "demo");
  EXPECT_EQ(t.num_npus(), 6);  // a, b, pod0/npu0..1, pod1/npu0..1
  EXPECT_EQ(t.num_switches(), 3);
  EXPECT_EQ(t.node(t.find_node("pod1/npu1")).kind, NodeKind::Npu);
  EXPECT_TRUE(t.node(0).router);
  NodeId core = t.find_node("core");
  EXPECT_TRUE(t.node(core).can_reduce && t.node(core).can_multicast);
  // Ids: NPUs in order of declaration, switches after them.
  EXPECT_EQ(t.find_node("pod0/npu0"), 2);
  EXPECT_EQ(core, 6);
  // a<->b doubled: 4 links of 10 GB/s and 2 us between them.
  int ab = 0;
  for (const Link& l : t.links())
    if ((l.src == 0 && l.dst == 1) || (l.src == 1 && l.dst == 0)) {
      ++ab;
      EXPECT_EQ(l.bandwidth, 10'000'000'000);
      EXPECT_EQ(l.latency, 2'000'000);
    }
  EXPECT_EQ(ab, 4);
  const Link& up = t.link(8 + 4 + 4);  // after 2 groups x 4 links, a<->b x 4, pods<->core x 4
  EXPECT_EQ(up.name, "up");
  EXPECT_EQ(up.latency, 3'000'000);
  EXPECT_EQ(ingress_bandwidth(t, core), 2 * 80'000'000'000LL + 10'000'000'000LL * 2);
}

TEST(TenetFormat, ZipPairsAndJson) {
  const Topology t = parse_yaml(R"({
    "npus": 4,
    "defaults": {"bw": "1GB/s", "lat": "1us"},
    "links": [{"src": "npu[01]", "dst": "npu[23]", "pairing": "zip"},
              {"src": "npu0", "dst": "npu1"}, {"src": "npu2", "dst": "npu3"}]
  })");
  EXPECT_EQ(t.num_links(), 8);
  EXPECT_EQ(t.link(0).src, 0);
  EXPECT_EQ(t.link(0).dst, 2);
  EXPECT_EQ(t.link(2).src, 1);
  EXPECT_EQ(t.link(2).dst, 3);
}

TEST(TenetFormat, GeneratorBlockPlusExtras) {
  const Topology t = load(testing::examples_dir() + "/tpu-torus.yaml");
  EXPECT_EQ(t.num_npus(), 16);
  EXPECT_EQ(t.num_switches(), 1);
  EXPECT_EQ(t.num_links(), 64 + 4);
  EXPECT_TRUE(t.node(5).router);
}

TEST(AstraNetwork, ReadsDimensionsAsPhysicalTopology) {
  const Topology t = load(testing::examples_dir() + "/astra-network.yml");
  // Ring of 4 (8 links) in each of 2 nodes; 4 switches (one per ring position) with 2 NPUs each.
  EXPECT_EQ(t.num_npus(), 8);
  EXPECT_EQ(t.num_switches(), 4);
  EXPECT_EQ(t.num_links(), 2 * 8 + 4 * 2 * 2);
  for (const Link& l : t.links()) {
    bool ring = t.is_npu(l.src) && t.is_npu(l.dst);
    EXPECT_EQ(l.bandwidth, ring ? 50LL << 30 : 25LL << 30);  // GB/s read as GiB/s
    EXPECT_EQ(l.latency, 500'000);
    EXPECT_EQ(l.step, 0);  // ASTRA-sim charges nothing per step
  }
  // Through a switch costs two hops, as ASTRA-sim counts it.
  EXPECT_EQ(hop_distances(t, 0)[4], 2);
}

TEST(AstraNetwork, FullyConnectedDimension) {
  const Topology t =
      parse_yaml("topology: [FullyConnected]\nnpus_count: [4]\nbandwidth: [100]\nlatency: [250]\n");
  EXPECT_EQ(t.num_links(), 12);
  EXPECT_EQ(t.link(0).bandwidth, 100LL << 30);
  EXPECT_EQ(t.link(0).latency, 250'000);
}

TEST(Save, RefusesUnknownExtensionAndLeavesNothing) {
  TempDir dir;
  const Topology t = generate("ring:4");
  EXPECT_THROW(save(t, dir.file("out.txt")), Error);
  EXPECT_FALSE(std::filesystem::exists(dir.file("out.txt")));
  EXPECT_THROW(save(t, dir.file("missing/dir/out.yaml")), Error);
  save(t, dir.file("out.yaml"));
  size_t files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.file(""))) ++files;
  EXPECT_EQ(files, 1u);  // no temporary left behind
}

TEST(Load, SpecOrFile) {
  EXPECT_EQ(load("torus2d:4x4").num_npus(), 16);
  EXPECT_THAT([] { load("/nonexistent/topo.yaml"); },
              ::testing::ThrowsMessage<Error>(::testing::HasSubstr("cannot open file")));
}

}  // namespace
}  // namespace tenet::topo
