// Input limits (topo/limits.hpp): counts, nesting and text checked before anything is built.
#include "topo/limits.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "topo/generators.hpp"
#include "topo/io.hpp"
#include "topo/topology.hpp"

namespace tenet::topo {
namespace {

std::string error_of(const auto& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

// The memory check: what the machine has (MemAvailable, or TENET_MEMORY), an estimate over it
// refused with both numbers and the remedy, a bad TENET_MEMORY named.
TEST(Limits, MemoryEstimatesOverWhatIsAvailableAreRefused) {
  const char* before = std::getenv("TENET_MEMORY");
  const std::string saved = before ? before : "";
  ::unsetenv("TENET_MEMORY");
  EXPECT_GT(available_memory(), uint64_t{1} << 20);  // Linux says how much
  ::setenv("TENET_MEMORY", "2GiB", 1);
  EXPECT_EQ(available_memory(), uint64_t{2} << 30);
  EXPECT_NO_THROW(check_memory(uint64_t{2} << 30, "a run", "use less"));
  EXPECT_EQ(error_of([] { check_memory(uint64_t{3} << 30, "a run of 9 transfers", "use less"); }),
            "a run of 9 transfers would need about 3 GiB of memory, and 2 GiB are available "
            "(TENET_MEMORY); use less");
  ::setenv("TENET_MEMORY", "lots", 1);
  EXPECT_NE(error_of([] { (void)available_memory(); }).find("TENET_MEMORY='lots'"),
            std::string::npos);
  if (before)
    ::setenv("TENET_MEMORY", saved.c_str(), 1);
  else
    ::unsetenv("TENET_MEMORY");
}

TEST(Limits, Utf8) {
  EXPECT_TRUE(valid_utf8("npu0"));
  EXPECT_TRUE(valid_utf8("gpu-\xc3\xa9t\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x9a\x80"));  // é, →, 🚀
  size_t at = 99;
  EXPECT_FALSE(valid_utf8("ab\xff", &at));
  EXPECT_EQ(at, 2u);
  EXPECT_FALSE(valid_utf8("\xc0\xaf", &at));          // overlong '/'
  EXPECT_FALSE(valid_utf8("\xed\xa0\x80", &at));      // a UTF-16 surrogate
  EXPECT_FALSE(valid_utf8("\xf4\x90\x80\x80", &at));  // past U+10FFFF
  EXPECT_FALSE(valid_utf8("x\xe2\x86", &at));         // cut short
  EXPECT_EQ(at, 1u);
}

TEST(Limits, NestingIsCheckedOutsideQuotes) {
  const std::string deep = std::string(300, '[') + std::string(300, ']');
  EXPECT_EQ(error_of([&] { check_nesting("a: 1\n" + deep, "f.json"); }),
            "f.json:2: nested deeper than Tenet's limit of 256 levels (topo/limits.hpp)");
  EXPECT_EQ(error_of([&] { check_nesting("\"" + deep + "\"", "f.json"); }),
            "no error");  // a string, not nesting
  EXPECT_EQ(error_of([&] { check_nesting(std::string(256, '{') + std::string(256, '}'), "f"); }),
            "no error");
  // Through the readers: Graphviz and YAML/JSON.
  EXPECT_NE(error_of([&] {
              parse_dot("digraph g { " + std::string(1000, '{') + std::string(1000, '}') + " }",
                        "g.dot");
            }).find("g.dot:1: nested deeper"),
            std::string::npos);
  EXPECT_NE(
      error_of([&] { parse_yaml("name: " + deep, "t.yaml"); }).find("t.yaml:1: nested deeper"),
      std::string::npos);
}

TEST(Limits, CountsAndNamesAreCheckedAsTheTopologyIsBuilt) {
  EXPECT_EQ(
      error_of([] { generate("fc:20000"); }),
      "in spec 'fc:20000': 399980000 links is over Tenet's limit of 4194304 (topo/limits.hpp)");
  TopologyBuilder b("t");
  EXPECT_EQ(error_of([&] { b.add_npu("bad\xff", false, Location("t.yaml", 3)); }),
            "t.yaml:3: a node name is not valid UTF-8 (byte 0xFF at offset 3)");
  TopologyBuilder named("\xfe");
  named.add_npu();
  named.add_npu();
  EXPECT_NE(error_of([&] { named.build(); }).find("the topology's name is not valid UTF-8"),
            std::string::npos);
}

// A glob link of a topology file asks for every pair of its patterns: they are counted, each way
// and `count` times, and refused before one is listed (`"*"` to `"*"` over 100,000 NPUs is 10^10
// pairs: listed first, they took all memory); exactly the limit, self pairs left out, is read.
TEST(Limits, GlobLinksAreCountedBeforeTheyAreListed) {
  EXPECT_EQ(error_of([] {
              parse_yaml(
                  "name: t\nnpus: 100000\nlinks:\n  - {src: \"*\", dst: \"*\", bw: "
                  "1GB/s, lat: 1us}\n",
                  "t.yaml");
            }),
            "t.yaml:4:5: 19999800000 links is over Tenet's limit of 4194304 (topo/limits.hpp)");
  // 2049 x 2048 = 4196352 one way is over; 2048 x 2047 = 4192256 is under, self pairs left out.
  EXPECT_NE(error_of([] {
              parse_yaml(
                  "name: t\nnpus: 2049\nlinks:\n  - {src: \"*\", dst: \"*\", bw: "
                  "1GB/s, lat: 1us, bidirectional: false}\n",
                  "t.yaml");
            }).find("over Tenet's limit"),
            std::string::npos);
  EXPECT_EQ(parse_yaml("name: t\nnpus: 2048\nlinks:\n  - {src: \"*\", dst: \"*\", bw: 1GB/s, "
                       "lat: 1us, bidirectional: false}\n",
                       "t.yaml")
                .num_links(),
            2048 * 2047);
}

// Products of numbers from user input are multiplied with overflow checks.
TEST(Limits, ProductsAreCheckedForOverflow) {
  EXPECT_EQ(checked_mul(int64_t{1} << 31, int64_t{1} << 31), int64_t{1} << 62);
  EXPECT_FALSE(checked_mul(int64_t{1} << 32, int64_t{1} << 31));
  EXPECT_FALSE(checked_mul(INT64_MIN, -1));
  EXPECT_EQ(checked_product(std::vector<int>{}), 1);
  EXPECT_EQ(checked_product(std::vector<int>{8, 4, 2}), 64);
  // 4 x 5 x 5581 x 8681 x 49477 x 384773 = 2^64 + 4: 4 once wrapped around.
  EXPECT_FALSE(checked_product(std::vector<int>{4, 5, 5581, 8681, 49477, 384773}));
}

// A topology file's dimensions multiply to its NPU count, checked: a list whose product wraps
// around 2^64 to the count passed, and the hierarchical baseline crashed on it.
TEST(Limits, DimensionsWhoseProductWrapsAroundAreRefused) {
  EXPECT_EQ(error_of([] {
              parse_yaml("generator: ring:4\ndimensions: [4, 5, 5581, 8681, 49477, 384773]\n",
                         "dims.yaml");
            }),
            "dims.yaml:2:13: dimensions multiply past 2^63 NPUs, but the topology has 4");
  EXPECT_EQ(error_of([] { parse_yaml("generator: ring:4\ndimensions: [2, 3]\n", "d.yaml"); }),
            "d.yaml:2:13: dimensions multiply to 6 NPUs, but the topology has 4");
  EXPECT_EQ(parse_yaml("generator: ring:4\ndimensions: [2, 2]\n").levels(),
            (std::vector<int>{2, 2}));
}

// ASTRA-sim's network.yml gives bandwidths in GB/s and latencies in ns: one past what an integer
// of bytes per second or picoseconds holds is refused at its line, not converted to -2^63.
TEST(Limits, AstraNetworkNumbersPastTheIntegersAreRefused) {
  auto network = [](const std::string& bw, const std::string& lat) {
    return "topology: [Ring]\nnpus_count: [4]\nbandwidth: [" + bw + "]\nlatency: [" + lat + "]\n";
  };
  EXPECT_EQ(error_of([&] { parse_yaml(network("1e30", "500"), "net.yml"); }),
            "net.yml:3:13: bandwidth '1e+30GiB/s' is absurdly large (over 1 PB/s)");
  EXPECT_EQ(error_of([&] { parse_yaml(network("50", "1e30"), "net.yml"); }),
            "net.yml:4:11: time '1e+30ns' is absurdly large (over 1 hour)");
  const Topology t = parse_yaml(network("50", "500"), "net.yml");
  EXPECT_EQ(t.link(0).bandwidth, Bandwidth{50} << 30);
  EXPECT_EQ(t.link(0).latency, 500'000);
}

TEST(Limits, SpecsWithLongRunsOfSpacesParse) {
  // std::regex recursed per character here and overflowed the stack.
  EXPECT_EQ(generate("ring:2" + std::string(40000, ' ') + "x switch:2").num_npus(), 4);
}

}  // namespace
}  // namespace tenet::topo
