// A cut in the user's own names (topo/cut_words.hpp).
#include "topo/cut_words.hpp"

#include <gtest/gtest.h>

#include "topo/generators.hpp"

namespace tenet::topo {
namespace {

constexpr Bandwidth kGBps = 1'000'000'000;

// Three NPUs on a switch (300 GB/s each way), and a 50 GB/s link each way between npu2 and npu0.
Topology star_with_a_side_link() {
  TopologyBuilder b("star");
  const NodeId npu0 = b.add_npu("npu0"), npu1 = b.add_npu("npu1"), npu2 = b.add_npu("npu2");
  const NodeId sw = b.add_switch("sw");
  for (NodeId v : {npu0, npu1, npu2}) b.add_bidirectional(v, sw, 300 * kGBps, 0);
  b.add_bidirectional(npu2, npu0, 50 * kGBps, 0);
  return b.build();
}

TEST(CutWords, OneNodeOnEitherSideIsNamedWithItsLinks) {
  const Topology t = star_with_a_side_link();
  const NodeId npu0 = t.find_node("npu0");
  std::vector<NodeId> rest;
  for (NodeId v = 0; v < t.num_nodes(); ++v)
    if (v != npu0) rest.push_back(v);
  EXPECT_EQ(describe_cut(t, rest),
            "the links into npu0 from the rest: 350 GB/s = 300 GB/s from sw + 50 GB/s from npu2");
  EXPECT_EQ(describe_cut(t, {npu0}),
            "the links out of npu0 to the rest: 350 GB/s = 300 GB/s to sw + 50 GB/s to npu2");
}

// Two halves of a 4x4 torus: neither side is small, so the set is counted, and its eight 50 GB/s
// links out (row 1 to row 2, row 0 round to row 3) are counted by bandwidth.
TEST(CutWords, LargeSidesAndManyLinksAreCounted) {
  const Topology t = generate("torus2d:4x4");
  const std::vector<NodeId> half{0, 1, 2, 3, 4, 5, 6, 7};
  EXPECT_EQ(describe_cut(t, half),
            "the links out of 8 nodes holding 8 NPUs (npu0, npu1, npu2, npu3, ...) to the other "
            "8: 400 GB/s = 8 x 50 GB/s");
}

// Several nodes on the named side (of equal sides, the other one): each link reads source ->
// destination.
TEST(CutWords, SeveralNamedNodesNameEachLinksEnds) {
  const Topology t = star_with_a_side_link();
  const NodeId npu0 = t.find_node("npu0"), npu2 = t.find_node("npu2");
  EXPECT_EQ(describe_cut(t, {npu0, npu2}),
            "the links into npu1, sw from the rest: 600 GB/s = 300 GB/s npu0 -> sw + 300 GB/s "
            "npu2 -> sw");
}

}  // namespace
}  // namespace tenet::topo
