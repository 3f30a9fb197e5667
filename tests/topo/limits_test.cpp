// Input limits (topo/limits.hpp): counts, nesting and text checked before anything is built.
#include "topo/limits.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>

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

TEST(Limits, SpecsWithLongRunsOfSpacesParse) {
  // std::regex recursed per character here and overflowed the stack.
  EXPECT_EQ(generate("ring:2" + std::string(40000, ' ') + "x switch:2").num_npus(), 4);
}

}  // namespace
}  // namespace tenet::topo
