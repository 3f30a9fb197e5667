#include "synth/formats/algorithm_json.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include "synth/baselines/baselines.hpp"
#include "tests/synth/test_support.hpp"
#include "tests/topo/test_util.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"

namespace tenet::synth {
namespace {

void expect_same(const Algorithm& a, const Algorithm& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.collective.kind, b.collective.kind);
  EXPECT_EQ(a.collective.ranks, b.collective.ranks);
  EXPECT_EQ(a.collective.chunks_per_npu, b.collective.chunks_per_npu);
  EXPECT_EQ(a.collective.root, b.collective.root);
  EXPECT_EQ(a.topology_fingerprint, b.topology_fingerprint);
  EXPECT_EQ(a.topology_name, b.topology_name);
  EXPECT_EQ(a.chunk_bytes, b.chunk_bytes);
  EXPECT_EQ(a.link_model, b.link_model);
  EXPECT_EQ(a.claimed_time, b.claimed_time);
  EXPECT_EQ(a.reduce_bandwidth, b.reduce_bandwidth);
  ASSERT_EQ(a.size(), b.size());
  for (TransferId i = 0; i < static_cast<TransferId>(a.size()); ++i) {
    TransferSpec x = a.spec(i), y = b.spec(i);
    EXPECT_EQ(x.chunk, y.chunk);
    EXPECT_EQ(x.src, y.src);
    EXPECT_EQ(x.dst, y.dst);
    EXPECT_EQ(x.op, y.op);
    EXPECT_EQ(x.route, y.route);
    EXPECT_EQ(x.deps, y.deps);
    EXPECT_EQ(x.start, y.start);
    EXPECT_EQ(x.end, y.end);
    EXPECT_EQ(x.rate, y.rate);
    EXPECT_EQ(x.channel, y.channel);
  }
}

// The i-th of a series of random algorithms named `name`: either link model, every third untimed,
// every fourth with version 2's rates and channels and a reduction bandwidth.
Algorithm random_algorithm(std::mt19937_64& rng, int i, std::string name) {
  auto t = testing::random_topology(rng);
  Collective c = testing::random_collective(rng, t);
  Algorithm a = testing::tree_algorithm(t, c, 1 + static_cast<Bytes>(rng() % 1000000),
                                        i % 2 ? LinkModel::Hold : LinkModel::Pipelined);
  a.name = std::move(name);
  if (i % 3 == 0) a.clear_times();
  if (i % 4 == 1) {
    for (TransferId id = 0; id < static_cast<TransferId>(a.size()); id += 3)
      a.set_channel(id, static_cast<uint16_t>(id % 5));
    if (a.size() > 0) a.set_rate(0, 1'000'000);
    a.reduce_bandwidth = 123'456'789;
  }
  return a;
}

TEST(AlgorithmJson, RoundTripsExactly) {
  std::mt19937_64 rng(5);
  for (int i = 0; i < 40; ++i) {
    const Algorithm a = random_algorithm(rng, i, "tree \"quoted\" \\ name");
    const std::string text = to_json(a);
    expect_same(a, parse_algorithm_json(text));
    EXPECT_EQ(to_json(parse_algorithm_json(text)), text);
  }
}

// The fast reader (simdjson, in slices) gives what the reference reader (nlohmann's SAX parser)
// gives, or declines; never anything else. Slices of a byte put a cut at every "}," followed by
// "{" in the text, inside strings and nested fields included, where it must decline.
TEST(AlgorithmJson, TheFastReaderAgreesWithTheReferenceOrDeclines) {
  std::mt19937_64 rng(11);
  for (int i = 0; i < 30; ++i) {
    const Algorithm a = random_algorithm(rng, i, i % 5 == 0 ? "a \"transfers\": [ name" : "tree");
    const std::string text = to_json(a);
    for (const size_t slice : {size_t{1}, size_t{100}, size_t{4096}, size_t{4} << 20}) {
      // It says how far it is done with the text (load_algorithm lets a file's pages go there):
      // further each time, and never past the list it has read.
      std::vector<size_t> done;
      const std::optional<Algorithm> fast =
          parse_algorithm_json_fast(text, slice, [&](size_t b) { done.push_back(b); });
      ASSERT_TRUE(fast.has_value())
          << "Tenet's own file declined, slices of " << slice;  // taken as it is
      expect_same(*fast, parse_algorithm_json_reference(text));
      EXPECT_EQ(to_json(*fast), text);
      EXPECT_TRUE(std::is_sorted(done.begin(), done.end()));
      if (!done.empty()) {
        EXPECT_LE(done.back(), text.rfind(']') + 1);
      }
      if (slice == 1) {
        EXPECT_EQ(done.size(), a.size());  // a cut between every two transfers
      }
    }
  }
  const std::string t0 =
      R"({"id": 0, "chunk": 0, "src": 0, "dst": 1, "op": "copy", "route": [0], "deps": [])";
  const std::string t1 =
      R"({"id": 1, "chunk": 1, "src": 1, "dst": 0, "op": "copy", "route": [1], "deps": [0]})";
  const std::string head =
      R"({"format": "tenet-algorithm", "version": 2, "collective": {"kind": "all-gather",
    "ranks": [0, 1], "chunks_per_npu": 1}, "chunk_bytes": 1024, "transfers": [)";
  struct Case {
    const char* name;
    std::string text;
    bool fast_at_one_byte;  // taken by the fast reader with a cut at every "}," + "{"
  };
  const std::vector<Case> cases = {
      {"plain", head + t0 + "},\n" + t1 + "]}", true},
      {"a cut inside a string", head + t0 + R"(, "note": "}, {\"id\": 1"},)" + t1 + "]}", false},
      {"a cut inside an unknown field",
       head + t0 + R"(, "extra": [{"a": 1}, {"b": [2]}]},)" + t1 + "]}", false},
      {"the head after the transfers", head + t0 + "}, " + t1 + R"(], "name": "late"})", false},
      {"a key ending in transfers after them",
       head + t0 + "}, " + t1 + R"(], "x\"transfers": [1]})", false},
      {"a key ending in transfers, empty", head + R"(], "x\"transfers": []})", false},
      {"no transfers", head + "]}", true},
      {"minified",
       R"({"format":"tenet-algorithm","version":2,"collective":{"kind":"all-gather","ranks":[0,1],)"
       R"("chunks_per_npu":1},"chunk_bytes":1024,"transfers":[)" +
           t0 + "}," + t1 + "]}",
       true},
      {"a transfers key deeper, last", head + t0 + "}, " + t1 + R"(], "x": {"transfers": []}})",
       false},
  };
  for (const Case& k : cases) {
    const Algorithm want = parse_algorithm_json_reference(k.text);  // every case is a valid file
    for (const size_t slice : {size_t{1}, size_t{2}, size_t{7}, size_t{4} << 20}) {
      const std::optional<Algorithm> fast = parse_algorithm_json_fast(k.text, slice);
      if (fast) expect_same(*fast, want);
      if (slice == 1) {
        EXPECT_EQ(fast.has_value(), k.fast_at_one_byte) << k.name;
      }
    }
    expect_same(parse_algorithm_json(k.text), want);  // whichever reader read it
  }
}

TEST(AlgorithmJson, SaveIsAtomicAndLoads) {
  topo::testing::TempDir dir;
  std::mt19937_64 rng(9);
  auto t = testing::random_topology(rng);
  Algorithm a =
      testing::tree_algorithm(t, Collective::over_all(t, CollectiveKind::AllGather), 4096);
  save_algorithm(a, dir.file("a.json"));
  expect_same(a, load_algorithm(dir.file("a.json")));
  EXPECT_THROW(save_algorithm(a, dir.file("no/such/dir/a.json")), Error);
}

// A file over the fast reader's slices (4 MB) loads as it was saved, its pages let go as it is
// read; one whose last transfer is broken is read again from the start by the reference reader
// (the pages the fast one let go come back from the file) and named in its error.
TEST(AlgorithmJson, LargeFilesLoadInSlices) {
  topo::testing::TempDir dir;
  const topo::Topology t = topo::generate("ring:64");
  const Algorithm a = make_baseline(BaselineSpec{BaselineKind::Ring, {}}, t,
                                    Collective::over_all(t, CollectiveKind::AllGather, 32), 4096);
  save_algorithm(a, dir.file("a.json"));
  std::string text = topo::read_file(dir.file("a.json"));
  ASSERT_GT(text.size(), size_t{9} << 20);
  expect_same(a, load_algorithm(dir.file("a.json")));
  const std::string copy = "\"op\": \"copy\"";
  const size_t last = text.rfind(copy);
  ASSERT_NE(last, std::string::npos);
  text.replace(last, copy.size(), "\"op\": \"copx\"");
  std::ofstream(dir.file("b.json"), std::ios::binary) << text;
  try {
    load_algorithm(dir.file("b.json"));
    ADD_FAILURE() << "a broken last transfer loaded";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr(fmt::format("transfers[{}]", a.size() - 1)));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("b.json"));
  }
}

struct Bad {
  const char* name;
  std::string text;
  const char* expected;
};

std::string valid_prefix(const std::string& transfers, const std::string& extra = "") {
  return R"({"format": "tenet-algorithm", "version": 1,
 "collective": {"kind": "all-gather", "ranks": [0, 1], "chunks_per_npu": 1},
 "chunk_bytes": 1024, )" +
         extra + R"("transfers": )" + transfers + "}";
}

// The reader streams the transfers: keys may come in any order (the transfers before the
// collective they need), and fields it does not know, however nested, are skipped.
TEST(AlgorithmJson, KeysInAnyOrderAndUnknownFieldsSkipped) {
  const Algorithm a = parse_algorithm_json(R"({"transfers": [
      {"note": {"deep": [[1, 2], {"x": null}]}, "chunk": 1, "src": 1, "dst": 0, "route": [3], "deps": [],
       "start_ps": null, "end_ps": null, "op": "copy", "extra": [1, [2, [3]]]},
      {"chunk": 0, "src": 0, "dst": 1, "route": [2], "deps": [0], "start_ps": 5, "end_ps": 9, "rate_Bps": 7, "channel": 2}],
    "chunk_bytes": 64, "transfers_note": [1], "collective": {"ranks": [0, 1], "kind": "all-gather", "chunks_per_npu": 1},
    "version": 2, "format": "tenet-algorithm"})");
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].chunk, 1);
  EXPECT_EQ(a.route(0)[0], 3);
  EXPECT_EQ(a[0].start, -1);
  EXPECT_EQ(a.deps(1)[0], 0);
  EXPECT_EQ(a.rate(1), 7);
  EXPECT_EQ(a[1].channel, 2);
  EXPECT_EQ(a[1].end, 9);
  EXPECT_EQ(a.chunk_bytes, 64);
  // A second "transfers" replaces the first (a JSON document keeps a duplicate key's last value).
  const Algorithm twice = parse_algorithm_json(valid_prefix(
      R"([{"chunk": "bad"}], "transfers": [{"chunk": 1, "src": 1, "dst": 0, "route": [0]}])"));
  ASSERT_EQ(twice.size(), 1u);
  EXPECT_EQ(twice[0].chunk, 1);
  // Deep nesting anywhere is read without recursion.
  const std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
  EXPECT_THAT([&] { parse_algorithm_json(valid_prefix("[]", "\"x\": " + deep + ", ")); },
              ::testing::Not(::testing::Throws<std::exception>()));
  EXPECT_THAT(
      [&] {
        parse_algorithm_json(valid_prefix(
            "[{\"chunk\": 0, \"src\": 0, \"dst\": 1, \"route\": [0], \"x\": " + deep + "}]"));
      },
      ::testing::Not(::testing::Throws<std::exception>()));
}

TEST(AlgorithmJson, MalformedFilesGiveClearErrors) {
  const std::vector<Bad> bad = {
      {"bad json", "{\"format\": \"tenet-algorithm\",\n \"version\": 1,,\n}", "not valid JSON"},
      {"empty", "", "not valid JSON"},
      {"not an object", "[1, 2]", "expected a JSON object"},
      {"wrong format", R"({"format": "msccl", "version": 1})", "not a Tenet algorithm"},
      {"future version", R"({"format": "tenet-algorithm", "version": 7})", "unsupported version 7"},
      {"missing transfers",
       R"({"format": "tenet-algorithm", "version": 1, "chunk_bytes": 8,
           "collective": {"kind": "all-gather", "ranks": [0, 1], "chunks_per_npu": 1}})",
       "missing \"transfers\""},
      {"unknown collective",
       valid_prefix("[]").replace(valid_prefix("[]").find("all-gather"), 10, "all-sum"),
       "unknown collective 'all-sum'"},
      {"chunk out of range", valid_prefix(R"([{"chunk": 5, "src": 0, "dst": 1, "route": [0]}])"),
       "chunk 5 is out of range"},
      {"negative time",
       valid_prefix(
           R"([{"chunk": 0, "src": 0, "dst": 1, "route": [0], "start_ps": -5, "end_ps": 10}])"),
       "negative time -5 ps"},
      {"ends before start",
       valid_prefix(
           R"([{"chunk": 0, "src": 0, "dst": 1, "route": [0], "start_ps": 50, "end_ps": 10}])"),
       "ends before it starts"},
      {"half timed",
       valid_prefix(R"([{"chunk": 0, "src": 0, "dst": 1, "route": [0], "start_ps": 5}])"),
       "both be given"},
      {"wrong type", valid_prefix(R"([{"chunk": "zero", "src": 0, "dst": 1, "route": [0]}])"),
       "transfers[0].chunk: expected a whole number"},
      {"route not a list", valid_prefix(R"([{"chunk": 0, "src": 0, "dst": 1, "route": 3}])"),
       "transfers[0].route: expected a list"},
      {"unknown op",
       valid_prefix(R"([{"chunk": 0, "src": 0, "dst": 1, "route": [0], "op": "xor"}])"),
       "unknown op 'xor'"},
      {"dangling dependency",
       valid_prefix(R"([{"chunk": 0, "src": 0, "dst": 1, "route": [0], "deps": [9]}])"),
       "transfer 9 does not exist"},
      {"ids out of order",
       valid_prefix(R"([{"id": 3, "chunk": 0, "src": 0, "dst": 1, "route": [0]}])"),
       "ids must count up"},
      {"bad link model", valid_prefix("[]", R"("link_model": "teleport", )"), "unknown link model"},
      {"transfer not an object", valid_prefix("[5]"), "transfers[0]: expected an object, got 5"},
      {"nested route", valid_prefix(R"([{"chunk": 0, "src": 0, "dst": 1, "route": [[0]]}])"),
       "transfers[0].route[0]: expected a whole number, got a list"},
      {"route element", valid_prefix(R"([{"chunk": 0, "src": 0, "dst": 1, "route": [0, "x"]}])"),
       "transfers[0].route[1]: expected a whole number, got \"x\""},
      {"object as chunk",
       valid_prefix(R"([{"chunk": {"a": [1]}, "src": 0, "dst": 1, "route": [0]}])"),
       "transfers[0].chunk: expected a whole number, got an object"},
      {"negative dependency",
       valid_prefix(R"([{"chunk": 0, "src": 0, "dst": 1, "route": [0], "deps": [-1]}])"),
       "transfers[0].deps[0]: -1 is out of range"},
      {"missing route", valid_prefix(R"([{"chunk": 0, "src": 0, "dst": 1}])"),
       "transfers[0]: missing \"route\""},
      {"huge number", valid_prefix(R"([{"chunk": 1e999, "src": 0, "dst": 1, "route": [0]}])"),
       "a number is out of range"},
      {"the head's problem first",
       R"({"format": "tenet-algorithm", "version": 9, "transfers": [{"chunk": "x"}]})",
       "unsupported version 9"},
      {"negative reduction bandwidth", valid_prefix("[]", R"("reduce_Bps": -2, )"),
       "reduce_Bps: -2 is out of range"},
      {"zero chunk bytes", valid_prefix("[]").replace(valid_prefix("[]").find("1024"), 4, "0"),
       "chunk_bytes: 0 is out of range"},
  };
  for (const Bad& b : bad) {
    try {
      parse_algorithm_json(b.text, "algo.json");
      ADD_FAILURE() << b.name << ": no error";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr(b.expected)) << b.name;
      EXPECT_THAT(e.what(), ::testing::StartsWith("algo.json")) << b.name;
    }
  }
  // Syntax errors carry the line.
  try {
    parse_algorithm_json("{\"format\": \"tenet-algorithm\",\n \"version\": 1,,\n}", "algo.json");
  } catch (const Error& e) {
    EXPECT_EQ(e.where().line, 2);
  }
}

}  // namespace
}  // namespace tenet::synth
