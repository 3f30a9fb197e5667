// Malformed topology files: every one gives a tenet::Error naming the file and the line (or the
// node/link), never a crash.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "tests/topo/test_util.hpp"
#include "topo/io.hpp"

namespace tenet::topo {
namespace {

struct Bad {
  const char* name;
  const char* ext;
  const char* text;
  int line;              // expected line in the message; 0 when the error is about the whole file
  const char* expected;  // a piece of the message
};

const Bad kBad[] = {
    {"missing unit", ".yaml", "npus: 2\nlinks:\n  - {src: 0, dst: 1, bw: 50, lat: 1us}\n", 3,
     "has no unit"},
    {"unknown unit", ".yaml", "npus: 2\nlinks:\n  - {src: 0, dst: 1, bw: 50GB/h, lat: 1us}\n", 3,
     "unknown bandwidth unit 'GB/h'"},
    {"unknown time unit", ".yaml",
     "npus: 2\nlinks:\n  - {src: 0, dst: 1, bw: 1GB/s, lat: 1 fortnight}\n", 3,
     "unknown time unit"},
    {"unknown node", ".yaml", "npus: 2\nlinks:\n  - {src: 0, dst: gpu9, bw: 1GB/s, lat: 1us}\n", 3,
     "unknown node 'gpu9'"},
    {"npu index out of range", ".yaml",
     "npus: 2\nlinks:\n  - {src: 0, dst: 5, bw: 1GB/s, lat: 1us}\n", 3, "dst must lie in [0, 1]"},
    {"negative bandwidth", ".yaml", "npus: 2\nlinks:\n  - {src: 0, dst: 1, bw: -5GB/s, lat: 1us}\n",
     3, "must be positive"},
    {"negative latency", ".yaml", "npus: 2\nlinks:\n  - {src: 0, dst: 1, bw: 5GB/s, lat: -1us}\n",
     3, "negative"},
    {"duplicate id", ".yaml", "npus: [a, b]\nswitches:\n  - a\nlinks: []\n", 3,
     "duplicate node name 'a'"},
    {"unreachable npu", ".yaml", "npus: 3\nlinks:\n  - {src: 0, dst: 1, bw: 1GB/s, lat: 1us}\n",
     1,  // where npu0 is declared
     "NPU 'npu0' cannot reach NPU 'npu2'"},
    {"bad yaml", ".yaml", "npus: 2\nlinks: [\n  - {src: 0\n", 3, "not valid YAML/JSON"},
    {"bad json", ".json", "{\"npus\": 2,\n \"links\": [}\n", 2, "not valid YAML/JSON"},
    {"empty file", ".yaml", "", 0, "the file is empty"},
    {"absurd size", ".yaml", "npus: 2\nlinks:\n  - {src: 0, dst: 1, bw: 1e30GB/s, lat: 1us}\n", 3,
     "absurdly large"},
    {"absurd npu count", ".yaml", "npus: 99999999999\n", 1, "npus must lie in"},
    {"wrong type for npus", ".yaml", "npus: {a: 1}\n", 1, "npus must be a count or a list"},
    {"wrong type for links", ".yaml", "npus: 2\nlinks: {src: 0}\n", 2, "links must be a list"},
    {"wrong type for bw", ".yaml", "npus: 2\nlinks:\n  - {src: 0, dst: 1, bw: [1GB/s], lat: 1us}\n",
     3, "bw must be a single value"},
    {"unknown key (typo)", ".yaml", "npus: 2\nlinsk: []\n", 2, "unknown key 'linsk'"},
    {"link without dst", ".yaml", "npus: 2\nlinks:\n  - {src: 0, bw: 1GB/s, lat: 1us}\n", 3,
     "a link needs dst"},
    {"no bandwidth anywhere", ".yaml", "npus: 2\nlinks:\n  - {src: 0, dst: 1, lat: 1us}\n", 3,
     "link has no bw"},
    {"self loop", ".yaml", "npus: 2\nlinks:\n  - {src: 1, dst: 1, bw: 1GB/s, lat: 1us}\n", 3,
     "self-loop"},
    {"switch without links", ".yaml",
     "npus: 2\nswitches: [s0]\nlinks:\n  - {src: 0, dst: 1, bw: 1GB/s, lat: 1us}\n", 2,
     "switch 's0' has no links"},
    {"pattern matches nothing", ".yaml",
     "npus: 2\nlinks:\n  - {src: \"gpu*\", dst: 1, bw: 1GB/s, lat: 1us}\n", 3, "matches no node"},
    {"bad generator spec", ".yaml", "generator: \"torus2d:4\"\n", 1, "shape must be AxB"},
    {"bad group", ".yaml", "groups:\n  - {name: g, spec: \"ring:4,bw=1\"}\n", 2, "has no unit"},
    {"dimensions do not multiply", ".yaml", "generator: \"ring:8\"\ndimensions: [3, 3]\n", 2,
     "dimensions multiply to 9 NPUs, but the topology has 8"},
    {"not a map", ".yaml", "- just\n- a list\n", 1, "expected a map at the top"},
    {"bad boolean", ".yaml",
     "npus: 2\nlinks:\n  - {src: 0, dst: 1, bw: 1GB/s, lat: 1us, bidirectional: yes}\n", 3,
     "bidirectional must be true or false"},
    {"astra: unknown dimension", ".yml",
     "topology: [Ring, Torus]\nnpus_count: [2, 2]\nbandwidth: [1, 1]\nlatency: [1, 1]\n", 1,
     "unknown dimension 'Torus'"},
    {"astra: lengths differ", ".yml",
     "topology: [Ring]\nnpus_count: [2, 2]\nbandwidth: [1]\nlatency: [1]\n", 2,
     "'npus_count' has 2 entries but topology has 1"},
    {"astra: bandwidth not a number", ".yml",
     "topology: [Ring]\nnpus_count: [4]\nbandwidth: [fast]\nlatency: [1]\n", 3,
     "bandwidth must be a number"},
    {"astra: negative latency", ".yml",
     "topology: [Switch]\nnpus_count: [4]\nbandwidth: [10]\nlatency: [-3]\n", 4,
     "latency must not be negative"},
    {"dot: not a graph", ".dot", "this is not dot\n", 0, "not valid DOT"},
    {"dot: edge without bw", ".dot",
     "digraph G {\n a [kind=npu];\n b [kind=npu];\n a -> b [lat=\"1us\"];\n b -> a "
     "[lat=\"1us\"];\n}\n",
     0, "edge a -> b: an edge needs bw and lat"},
    {"efficiency above 1", ".yaml",
     "npus: 2\nlinks:\n  - {src: 0, dst: 1, bw: 1GB/s, lat: 1us, efficiency: 1.5}\n", 3,
     "efficiency must lie in (0, 1]"},
    {"efficiency not a number", ".yaml",
     "npus: 2\ndefaults: {efficiency: high}\nlinks:\n  - {src: 0, dst: 1, bw: 1GB/s, lat: 1us}\n",
     2, "efficiency must be a number"},
    {"unknown calibration key", ".yaml",
     "npus: 2\nlinks:\n  - {src: 0, dst: 1, bw: 1GB/s, lat: 1us}\ncalibration:\n  fudge: 2\n", 5,
     "unknown key 'fudge' in calibration"},
    {"published figure without busbw", ".yaml",
     "npus: 2\nlinks:\n  - {src: 0, dst: 1, bw: 1GB/s, lat: 1us}\ncalibration:\n  published:\n"
     "    - {collective: all-reduce, algorithm: ring, sizes: [1GiB, 8GiB]}\n",
     6, "a published figure needs busbw"},
    {"published sizes reversed", ".yaml",
     "npus: 2\nlinks:\n  - {src: 0, dst: 1, bw: 1GB/s, lat: 1us}\ncalibration:\n  published:\n"
     "    - {collective: all-reduce, algorithm: ring, sizes: [8GiB, 1GiB], busbw: 1GB/s}\n",
     6, "sizes must be [smallest, largest]"},
    {"algorithm efficiency zero", ".yaml",
     "npus: 2\nlinks:\n  - {src: 0, dst: 1, bw: 1GB/s, lat: 1us}\ncalibration:\n  algorithms: "
     "{nvls: 0}\n",
     5, "must lie in (0, 1]"},
    {"buffer without unit", ".yaml",
     "npus: 2\nlinks:\n  - {src: 0, dst: 1, bw: 1GB/s, lat: 1us, buffer: 4096}\n", 3,
     "has no unit"},
    {"zero buffer", ".yaml",
     "npus: 2\nlinks:\n  - {src: 0, dst: 1, bw: 1GB/s, lat: 1us}\ndefaults: {buffer: 0B}\n", 4,
     "buffer must be at least 1 B"},
    {"step without unit", ".yaml",
     "npus: 2\nlinks:\n  - {src: 0, dst: 1, bw: 1GB/s, lat: 1us, step: 3}\n", 3, "has no unit"},
    {"duplicate key", ".yaml",
     "npus:\n  - {name: a}\n  - {name: b}\nnpus:\n  - {name: c}\nlinks:\n  - {src: a, dst: c, bw: "
     "1GB/s, lat: 1us}\n",
     4, "key 'npus' given twice in the topology"},
    {"duplicate key in a link", ".yaml",
     "npus: 2\nlinks:\n  - {src: 0, dst: 1, bw: 1GB/s, lat: 1us, bw: 2GB/s}\n", 3,
     "key 'bw' given twice in a link"},
    {"json: duplicate key", ".json",
     "{\"npus\": 2, \"links\": [{\"src\": 0, \"dst\": 1, \"bw\": \"1GB/s\", \"lat\": \"1us\", "
     "\"lat\": \"2us\"}]}\n",
     1, "given twice"},
    {"protocol share above 1", ".yaml",
     "npus: 2\nlinks:\n  - {src: 0, dst: 1, bw: 1GB/s, lat: 1us}\nprotocols:\n  - {name: LL, "
     "bandwidth: 1.5, step: 1us}\n",
     5, "a protocol's bandwidth must lie in (0, 1], got 1.5"},
    {"protocol listed twice", ".yaml",
     "npus: 2\nlinks:\n  - {src: 0, dst: 1, bw: 1GB/s, lat: 1us}\nprotocols:\n  - {name: LL, "
     "bandwidth: 0.5, step: 1us}\n  - {name: LL, bandwidth: 1, step: 2us}\n",
     6, "protocol 'LL' is listed twice"},
    {"protocol without a step", ".yaml",
     "npus: 2\nlinks:\n  - {src: 0, dst: 1, bw: 1GB/s, lat: 1us}\nprotocols:\n  - {name: LL, "
     "bandwidth: 0.5}\n",
     5, "a protocol needs one of step (every link's) and step_scale"},
    {"protocol with an unknown key", ".yaml",
     "npus: 2\nlinks:\n  - {src: 0, dst: 1, bw: 1GB/s, lat: 1us}\nprotocols:\n  - {name: LL, "
     "bandwidth: 0.5, step: 1us, latency: 2us}\n",
     5, "latency"},
    {"protocol with step and step_scale", ".yaml",
     "npus: 2\nlinks:\n  - {src: 0, dst: 1, bw: 1GB/s, lat: 1us}\nprotocols:\n  - {name: LL, "
     "bandwidth: 0.5, step: 1us, step_scale: 0.2}\n",
     5, "a protocol needs one of step (every link's) and step_scale"},
    {"protocol with a negative step_scale", ".yaml",
     "npus: 2\nlinks:\n  - {src: 0, dst: 1, bw: 1GB/s, lat: 1us}\nprotocols:\n  - {name: LL, "
     "bandwidth: 0.5, step_scale: -1}\n",
     5, "step_scale must be positive, got -1"},
    {"protocols not a list", ".yaml",
     "npus: 2\nlinks:\n  - {src: 0, dst: 1, bw: 1GB/s, lat: 1us}\nprotocols: {LL: 0.5}\n", 4,
     "protocols must be a list"},
    {"negative step", ".yaml",
     "npus: 2\ndefaults: {bw: 1GB/s, lat: 1us, step: -2us}\nlinks:\n  - {src: 0, dst: 1}\n", 2,
     "time '-2us' is negative"},
    {"dot: bad step", ".dot",
     "digraph G {\n a [kind=npu];\n b [kind=npu];\n a -> b [bw=\"1GB/s\", lat=\"1us\", "
     "step=\"soon\"];\n b -> a [bw=\"1GB/s\", lat=\"1us\"];\n}\n",
     0, "edge a -> b"},
    {"dot: bad buffer", ".dot",
     "digraph G {\n a [kind=npu];\n b [kind=npu];\n a -> b [bw=\"1GB/s\", lat=\"1us\", "
     "buffer=\"lots\"];\n b -> a [bw=\"1GB/s\", lat=\"1us\"];\n}\n",
     0, "edge a -> b"},
    {"dot: bad kind", ".dot", "digraph G {\n a [kind=router];\n}\n", 0,
     "node 'a': kind must be npu or switch"},
};

void PrintTo(const Bad& bad, std::ostream* os) { *os << bad.name; }

class Malformed : public ::testing::TestWithParam<Bad> {};

TEST_P(Malformed, ClearErrorWithFileAndLine) {
  const Bad& bad = GetParam();
  testing::TempDir dir;
  const std::string path = dir.file(std::string("bad") + bad.ext);
  std::ofstream(path) << bad.text;
  try {
    load_file(path);
    FAIL() << bad.name << ": no error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_THAT(msg, ::testing::HasSubstr(bad.expected)) << bad.name;
    EXPECT_EQ(e.where().file, path) << bad.name << ": " << msg;
    if (bad.line > 0) {
      EXPECT_EQ(e.where().line, bad.line) << bad.name << ": " << msg;
      EXPECT_THAT(msg, ::testing::StartsWith(path + ":" + std::to_string(bad.line) + ":"))
          << bad.name;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, Malformed, ::testing::ValuesIn(kBad),
                         [](const ::testing::TestParamInfo<Bad>& info) {
                           std::string n;
                           for (const char* c = info.param.name; *c; ++c)
                             n += std::isalnum(static_cast<unsigned char>(*c)) ? *c : '_';
                           return n;
                         });

TEST(Malformed, CorpusIsLargeAndDistinct) {
  std::set<std::string> expected;
  for (const Bad& b : kBad) expected.insert(b.expected);
  EXPECT_GE(expected.size(), 15u);
}

}  // namespace
}  // namespace tenet::topo
