#include "topo/generators.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "topo/analysis.hpp"

namespace tenet::topo {
namespace {

using ::testing::HasSubstr;

struct Counts {
  int npus, switches, links, min_out, max_out;
};

Counts counts(const Topology& t) {
  int lo = 1 << 30, hi = 0;
  for (NodeId v = 0; v < t.num_npus(); ++v) {
    lo = std::min(lo, static_cast<int>(t.out_links(v).size()));
    hi = std::max(hi, static_cast<int>(t.out_links(v).size()));
  }
  return {t.num_npus(), t.num_switches(), t.num_links(), lo, hi};
}

// Number of links of each bandwidth.
std::map<Bandwidth, int> by_bandwidth(const Topology& t) {
  std::map<Bandwidth, int> m;
  for (const Link& l : t.links()) ++m[l.bandwidth];
  return m;
}

struct Case {
  const char* spec;
  Counts want;
};

class GeneratorCounts : public ::testing::TestWithParam<Case> {};

TEST_P(GeneratorCounts, NodesLinksAndDegrees) {
  const Case& c = GetParam();
  Counts got = counts(generate(c.spec));
  EXPECT_EQ(got.npus, c.want.npus) << c.spec;
  EXPECT_EQ(got.switches, c.want.switches) << c.spec;
  EXPECT_EQ(got.links, c.want.links) << c.spec;
  EXPECT_EQ(got.min_out, c.want.min_out) << c.spec;
  EXPECT_EQ(got.max_out, c.want.max_out) << c.spec;
}

INSTANTIATE_TEST_SUITE_P(
    All, GeneratorCounts,
    ::testing::Values(
        Case{"ring:8", {8, 0, 16, 2, 2}}, Case{"ring:8,bidir=false", {8, 0, 8, 1, 1}},
        Case{"ring:2", {2, 0, 2, 1, 1}}, Case{"line:4", {4, 0, 6, 1, 2}},
        Case{"fc:8", {8, 0, 56, 7, 7}}, Case{"fully-connected:3", {3, 0, 6, 2, 2}},
        Case{"switch:16", {16, 1, 32, 1, 1}}, Case{"mesh2d:8x5", {40, 0, 134, 2, 4}},
        Case{"mesh3d:4x4x4", {64, 0, 288, 3, 6}}, Case{"torus2d:8x8", {64, 0, 256, 4, 4}},
        Case{"torus2d:2x4", {8, 0, 24, 3, 3}}, Case{"torus3d:4x4x4", {64, 0, 384, 6, 6}},
        Case{"hetmesh2d:4x4", {16, 0, 48, 2, 4}}, Case{"hypercube:64", {64, 0, 384, 6, 6}},
        Case{"leafspine:4x8", {32, 12, 128, 1, 1}},
        Case{"leafspine:4x8,spines=2", {32, 6, 80, 1, 1}}, Case{"fattree:2x4", {8, 6, 32, 1, 1}},
        Case{"dragonfly:4x4x2", {32, 16, 124, 1, 1}}, Case{"dgx1", {8, 0, 48, 6, 6}},
        Case{"dgx1:8", {8, 0, 48, 6, 6}}, Case{"nvswitch:8", {8, 1, 16, 1, 1}},
        Case{"nvcluster:4x8,net=rail", {32, 12, 128, 2, 2}},
        Case{"nvcluster:4x8,net=fattree", {32, 16, 192, 2, 2}},
        Case{"ring:8 x switch:4", {32, 8, 128, 3, 3}},
        Case{"ring:4 x ring:4 x ring:4", {64, 0, 384, 6, 6}},
        Case{"fc:4 x ring:1", {4, 0, 12, 3, 3}}));

TEST(Generators, EveryListedGeneratorBuildsItsExample) {
  for (const GeneratorInfo& g : generators()) {
    EXPECT_NO_THROW(generate(g.example)) << g.example;
    EXPECT_TRUE(looks_like_spec(g.example)) << g.example;
  }
  EXPECT_FALSE(looks_like_spec("examples/topologies/two-islands.yaml"));
  EXPECT_FALSE(looks_like_spec("ring.yaml"));
}

TEST(Generators, PerDimensionBandwidth) {
  Topology t = generate("mesh2d:8x5,bw=80GiB/s/35GiB/s,lat=0.5us/1us");
  auto m = by_bandwidth(t);
  EXPECT_EQ(m[80LL << 30], 2 * 7 * 5);  // x links
  EXPECT_EQ(m[35LL << 30], 2 * 8 * 4);  // y links
  for (const Link& l : t.links())
    EXPECT_EQ(l.latency, l.bandwidth == (80LL << 30) ? 500'000 : 1'000'000);
  auto het = by_bandwidth(generate("hetmesh2d:4x4"));
  EXPECT_EQ(het[100'000'000'000], 2 * 3 * 4);
  EXPECT_EQ(het[25'000'000'000], 2 * 3 * 4);
}

TEST(Generators, PerLevelBandwidthInSwitchedNetworks) {
  auto m = by_bandwidth(generate("leafspine:4x8,spines=4,bw=100GB/s/50GB/s"));
  EXPECT_EQ(m[100'000'000'000], 64);
  EXPECT_EQ(m[50'000'000'000], 2 * 4 * 4);
  auto c = by_bandwidth(generate("nvcluster:2x8"));
  EXPECT_EQ(c[450'000'000'000], 32);
  EXPECT_EQ(c[50'000'000'000], 32);
}

TEST(Generators, HierarchyNumbersTheFirstDimensionFastest) {
  Topology t = generate("ring:8,bw=300GB/s x switch:4,bw=50GB/s");
  // Ring neighbours of npu9 are npu8 and npu10 (the second ring); its switch joins 1, 9, 17, 25.
  std::vector<std::string> ring_peers, switch_peers;
  for (LinkId l : t.out_links(9)) {
    NodeId d = t.link(l).dst;
    if (t.is_npu(d))
      ring_peers.push_back(t.node(d).name);
    else
      for (LinkId m : t.out_links(d)) switch_peers.push_back(t.node(t.link(m).dst).name);
  }
  EXPECT_THAT(ring_peers, ::testing::UnorderedElementsAre("npu8", "npu10"));
  EXPECT_THAT(switch_peers, ::testing::UnorderedElementsAre("npu1", "npu9", "npu17", "npu25"));
  for (const Link& l : t.links())
    EXPECT_EQ(l.bandwidth, t.is_npu(l.src) && t.is_npu(l.dst) ? 300'000'000'000 : 50'000'000'000);
}

TEST(Generators, DgxOneHasDoubledNvlinks) {
  Topology t = generate("dgx1");
  std::map<std::pair<NodeId, NodeId>, int> pairs;
  for (const Link& l : t.links()) ++pairs[{l.src, l.dst}];
  EXPECT_EQ(pairs[std::pair(0, 3)], 2);
  EXPECT_EQ(pairs[std::pair(0, 1)], 1);
  EXPECT_EQ(pairs.count(std::pair(0, 5)), 0u);
  EXPECT_EQ(ingress_bandwidth(t, 0), 6 * 25'000'000'000LL);
}

TEST(Generators, RouterFlag) {
  Topology t = generate("torus2d:4x4,router=true");
  for (NodeId v = 0; v < t.num_npus(); ++v) EXPECT_TRUE(t.node(v).router);
  EXPECT_FALSE(generate("torus2d:4x4").node(0).router);
}

std::string spec_error(const std::string& spec) {
  try {
    generate(spec);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Generators, SpecErrorsSayWhatIsWrong) {
  EXPECT_THAT(spec_error("donut:8"), HasSubstr("unknown generator 'donut'"));
  EXPECT_THAT(spec_error("mesh2d:8"), HasSubstr("shape must be AxB"));
  EXPECT_THAT(spec_error("ring:0"), HasSubstr("positive whole numbers"));
  EXPECT_THAT(spec_error("ring:x"), HasSubstr("positive whole numbers"));
  EXPECT_THAT(spec_error("ring:-3"), HasSubstr("positive whole numbers"));
  // A number past the limit says so (it used to read as a malformed shape).
  for (const char* big : {"ring:4194304", "hypercube:4194304", "line:3000000",
                          "random-fabric:18446744073709551615", "torus2d:4x99999999999999999999"})
    EXPECT_THAT(spec_error(big), HasSubstr("is over 1,000,000")) << big;
  EXPECT_THAT(spec_error("ring:8,color=red"), HasSubstr("unknown key 'color'"));
  EXPECT_THAT(spec_error("ring:8,bw=50"), HasSubstr("has no unit"));
  EXPECT_THAT(spec_error("ring:8,bw"), HasSubstr("not key=value"));
  EXPECT_THAT(spec_error("ring:8,bw=1GB/s,bw=2GB/s"), HasSubstr("given twice"));
  EXPECT_THAT(spec_error("mesh2d:4x4,bw=1GB/s/2GB/s/3GB/s"), HasSubstr("one value or 2"));
  EXPECT_THAT(spec_error("hypercube:12"), HasSubstr("not a power of two"));
  EXPECT_THAT(spec_error("ring:8,bidir=maybe"), HasSubstr("bidir must be true or false"));
  EXPECT_THAT(spec_error("nvcluster:2x8,net=torus"), HasSubstr("not rail or fattree"));
  EXPECT_THAT(spec_error("dgx1:4"), HasSubstr("exactly 8"));
  EXPECT_THAT(spec_error("torus2d:2000x2000"), HasSubstr("more than a million"));
  EXPECT_THAT(spec_error("ring:1000 x ring:1000 x ring:1000"), HasSubstr("more than a million"));
  EXPECT_THAT(spec_error("random-fabric:3,bw=50GB/s"),
              HasSubstr("draws its own bandwidths and latencies"));
  EXPECT_THAT(spec_error("random-fabric:3x4"), HasSubstr("shape must be SEED"));
}

// random-fabric:SEED is the RandomFabrics benchmark's fabric of that seed, link for link: seed 184
// as the benchmark drew it (8 NPUs, 4 switches; the figures quoted for it stay true).
TEST(Generators, RandomFabricIsTheBenchmarks) {
  const Topology t = generate("random-fabric:184");
  EXPECT_EQ(t.num_npus(), 8);
  EXPECT_EQ(t.num_switches(), 4);
  ASSERT_EQ(t.num_links(), 40);
  auto expect = [&](LinkId l, const char* src, const char* dst, Bandwidth bw, Time lat) {
    EXPECT_EQ(t.node(t.link(l).src).name, src) << l;
    EXPECT_EQ(t.node(t.link(l).dst).name, dst) << l;
    EXPECT_EQ(t.link(l).bandwidth, bw) << l;
    EXPECT_EQ(t.link(l).latency, lat) << l;
  };
  expect(0, "sw1", "sw0", 482'000'000'000, 1'500'000);
  expect(2, "sw2", "sw0", 447'000'000'000, 2'000'000);  // each way its own bandwidth
  expect(3, "sw0", "sw2", 793'000'000'000, 2'000'000);
  expect(6, "npu0", "sw3", 395'000'000'000, 2'000'000);
  expect(36, "npu4", "npu2", 288'000'000'000,
         1'700'000);  // a second pair of links between NPUs 2 and 4
  expect(39, "npu0", "npu5", 182'000'000'000, 600'000);
}

// Every seed gives a fabric within the ranges the generator states, the same one each time, and
// every link has one back.
TEST(Generators, RandomFabricsStayInTheirRanges) {
  for (int seed = 1; seed <= 200; ++seed) {
    const std::string spec = "random-fabric:" + std::to_string(seed);
    const Topology t = generate(spec);
    EXPECT_GE(t.num_npus(), 6) << spec;
    EXPECT_LE(t.num_npus(), 16) << spec;
    EXPECT_GE(t.num_switches(), 1) << spec;
    EXPECT_LE(t.num_switches(), 4) << spec;
    EXPECT_EQ(strong_component_count(t), 1) << spec;
    for (const Link& l : t.links()) {
      const bool core = !t.is_npu(l.src) && !t.is_npu(l.dst);
      EXPECT_GE(l.bandwidth, (core ? 50 : 25) * 1'000'000'000LL) << spec;
      EXPECT_LE(l.bandwidth, (core ? 800 : 400) * 1'000'000'000LL) << spec;
      EXPECT_GE(l.latency, 100'000) << spec;
      EXPECT_LE(l.latency, 2'000'000) << spec;
      const auto back = t.out_links(l.dst);
      EXPECT_TRUE(std::any_of(back.begin(), back.end(), [&](LinkId b) {
        return t.link(b).dst == l.src;
      })) << spec;
    }
    const Topology again = generate(spec);
    ASSERT_EQ(again.num_links(), t.num_links());
    for (LinkId l = 0; l < t.num_links(); ++l)
      EXPECT_EQ(again.link(l).bandwidth, t.link(l).bandwidth);
  }
}

}  // namespace
}  // namespace tenet::topo
