// ForestColl's tree XML (spanning_trees_to_xml in pipeline_allgather.py, github.com/liangyuRain/
// ForestColl) read as an All-Gather. The fixture is written by hand in that format: two boxes of
// two GPUs on an NVSwitch each, one IB switch between them, one tree per GPU, as ForestColl's a100
// builder names its nodes. (ForestColl's own output for its a100 and mi250 topologies read the
// same way and verified CORRECT; the note of this change has the figures.)
#include "synth/formats/forestcoll_trees.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "chakra/algorithm_files.hpp"
#include "synth/verify/verify.hpp"
#include "tests/topo/test_util.hpp"
#include "topo/io.hpp"

namespace tenet::synth {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

constexpr const char* kTopology = R"yaml(name: fc-2x2
defaults: {lat: 0.5us}
npus: ["(0, 'GPU', 0)", "(0, 'GPU', 1)", "(1, 'GPU', 0)", "(1, 'GPU', 1)"]
switches: ["(0, 'NVSwitch', 0)", "(1, 'NVSwitch', 0)", "(-1, 'IB', 0)"]
links:
  - {src: "(0, 'GPU', 0)", dst: "(0, 'NVSwitch', 0)", bw: 300GB/s}
  - {src: "(0, 'GPU', 1)", dst: "(0, 'NVSwitch', 0)", bw: 300GB/s}
  - {src: "(1, 'GPU', 0)", dst: "(1, 'NVSwitch', 0)", bw: 300GB/s}
  - {src: "(1, 'GPU', 1)", dst: "(1, 'NVSwitch', 0)", bw: 300GB/s}
  - {src: "(0, 'GPU', 0)", dst: "(-1, 'IB', 0)", bw: 25GB/s}
  - {src: "(0, 'GPU', 1)", dst: "(-1, 'IB', 0)", bw: 25GB/s}
  - {src: "(1, 'GPU', 0)", dst: "(-1, 'IB', 0)", bw: 25GB/s}
  - {src: "(1, 'GPU', 1)", dst: "(-1, 'IB', 0)", bw: 25GB/s}
)yaml";

// One tree per GPU: to its box mate over the NVSwitch, to the same GPU of the other box over IB,
// and from there to that box's other GPU.
std::string tree(int box, int gpu) {
  const auto g = [](int b, int i) { return fmt::format("({}, 'GPU', {})", b, i); };
  const auto nv = [](int b) { return fmt::format("({}, 'NVSwitch', 0)", b); };
  const std::string ib = "(-1, 'IB', 0)";
  const int other = 1 - box, mate = 1 - gpu;
  const auto send = [](const std::string& src, const std::string& via, const std::string& dst) {
    return fmt::format("    <send src=\"{0}\" dst=\"{2}\" path=\"{0},{1},{2}\"/>\n", src, via, dst);
  };
  return fmt::format("  <tree root=\"{}\" index=\"0\" nchunks=\"1\" height=\"2\">\n", g(box, gpu)) +
         send(g(box, gpu), nv(box), g(box, mate)) + send(g(box, gpu), ib, g(other, gpu)) +
         send(g(other, gpu), nv(other), g(other, mate)) + "  </tree>\n";
}

std::string trees() {
  return "<Algo nchunkspernode=\"1\">\n" + tree(0, 0) + tree(0, 1) + tree(1, 0) + tree(1, 1) +
         "</Algo>\n";
}

TEST(ForestCollTrees, ReadAsAVerifiedAllGather) {
  const topo::Topology t = topo::parse_yaml(kTopology, "fc-2x2.yaml");
  ASSERT_TRUE(is_forestcoll_trees(trees()));
  const ForestTrees f = read_forestcoll_trees(trees(), t, "trees.xml");
  EXPECT_EQ(f.k, 1);
  ASSERT_EQ(f.trees.size(), 4u);
  EXPECT_EQ(f.trees[0].sends.size(), 3u);
  EXPECT_EQ(f.trees[0].sends[1].route.size(), 2u);  // GPU -> IB -> GPU
  for (int slices : {1, 16}) {
    const Algorithm a = pipeline_forest(t, f, 64 << 20, slices);
    const Report r = verify(t, a);
    EXPECT_TRUE(r.correct()) << slices;
    EXPECT_EQ(r.model_time, a.claimed_time);
    EXPECT_EQ(a.size(), 4u * 3 * static_cast<size_t>(slices));
    EXPECT_EQ(a.collective.chunks_per_npu, slices);
  }
  // Pipelined, the IB hop and the NVSwitch hop after it overlap: faster than whole parts.
  EXPECT_LT(pipeline_forest(t, f, 64 << 20, 16).claimed_time,
            pipeline_forest(t, f, 64 << 20, 1).claimed_time);
}

TEST(ForestCollTrees, AnAlgorithmFileByItsRootElement) {
  topo::testing::TempDir dir;
  const topo::Topology t = topo::parse_yaml(kTopology, "fc-2x2.yaml");
  topo::write_file_atomically(dir.file("trees.xml"), trees());
  const Algorithm a = chakra::load_any_algorithm(dir.file("trees.xml"), t);
  EXPECT_EQ(a.name, "forestcoll");
  EXPECT_EQ(a.chunk_bytes, 1 << 20);  // each part one chunk of 1 MiB, as MSCCL-XML imports
  EXPECT_TRUE(chakra::import_any_algorithm(dir.file("trees.xml"), t).problems.empty());
  EXPECT_FALSE(is_forestcoll_trees("<algo name=\"x\"/>"));  // MSCCL-XML's root
  // The root is found past a declaration and comments, by its whole name.
  EXPECT_TRUE(is_forestcoll_trees("<?xml version=\"1.0\"?>\n<!-- <algo> -->\n" + trees()));
  EXPECT_FALSE(is_forestcoll_trees("<Algorithm/>"));
  EXPECT_FALSE(is_forestcoll_trees("<!-- <Algo> -->"));
}

TEST(ForestCollTrees, BadTreesNameTheLine) {
  const topo::Topology t = topo::parse_yaml(kTopology, "fc-2x2.yaml");
  const std::string good = trees();
  auto expect = [&](const std::string& xml, int line, const std::string& what) {
    try {
      read_forestcoll_trees(xml, t, "trees.xml");
      ADD_FAILURE() << "accepted: " << what;
    } catch (const Error& e) {
      EXPECT_EQ(e.where().file, "trees.xml");
      EXPECT_EQ(e.where().line, line) << e.what();
      EXPECT_THAT(e.what(), HasSubstr(what));
    }
  };
  auto replace = [&](std::string s, const std::string& from, const std::string& to) {
    return s.replace(s.find(from), from.size(), to);
  };
  expect(replace(good, "(0, 'GPU', 1)\" path", "(0, 'GPU', 7)\" path"), 3,
         "no node '(0, 'GPU', 7)'");
  expect(replace(good, "nchunkspernode=\"1\"", "nchunkspernode=\"two\""), 1, "whole number");
  expect(replace(good, "nchunkspernode=\"1\"", "nchunkspernode=\"2\""), 1, "carry 1 parts");
  expect(replace(good, "(0, 'NVSwitch', 0),(0, 'GPU', 1)\"", "(0, 'GPU', 1)\""), 3,
         "no link from '(0, 'GPU', 0)' to '(0, 'GPU', 1)'");
  expect(replace(good, "path=\"(0, 'GPU', 0),", "path=\"(1, 'GPU', 0),"), 3, "does not lead from");
  // The last send of the first tree dropped: it reaches 3 of the 4 NPUs.
  const size_t last = good.find("    <send", good.find("(-1, 'IB', 0),(1, 'GPU', 0)"));
  expect(good.substr(0, last) + good.substr(good.find("  </tree>", last)), 2, "reaches 3 of the 4");
  expect(replace(good, "path=\"(0, 'GPU', 0),", "path=\"(0, 'GPU', 0),(0, 'NVSwitch', 0),"), 3,
         "path visits '(0, 'NVSwitch', 0)' twice");
  expect(replace(good, "nchunks=\"1\"", "nchunks=\"2147483647\""), 2,
         "a tree carries at most nchunkspernode = 1");
  expect("<Algo nchunkspernode=\"1\">\n<tree", 2, "not valid XML");
  expect("<algo/>", 0, "no <Algo> element");
}

}  // namespace
}  // namespace tenet::synth
