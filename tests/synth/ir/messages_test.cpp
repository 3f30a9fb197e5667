// Transfers that carry several chunks (Transfer::count): one message, one step cost, every chunk it
// carries read at its source and delivered at its destination; timed, verified, replayed, written
// and read back alike by every layer.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "chakra/collective_graph.hpp"
#include "sim/collective_engine.hpp"
#include "synth/baselines/baselines.hpp"
#include "synth/cost/timing.hpp"
#include "synth/formats/algorithm_json.hpp"
#include "synth/formats/msccl_xml.hpp"
#include "synth/verify/verify.hpp"
#include "tests/synth/formats/msccl_programs.hpp"
#include "tests/synth/formats/msccl_runtime_rules.hpp"
#include "tests/synth/test_support.hpp"
#include "topo/generators.hpp"

namespace tenet::synth {
namespace {

using testing::charging;
using ::testing::HasSubstr;
using testing::link_between;

constexpr Bytes kChunk = 1 << 20;
constexpr Bandwidth kBw = 50'000'000'000;  // 50 GB/s
constexpr Time kLat = 500'000;             // 0.5 us
const Time kSer = transfer_time(kChunk, kBw);

size_t chunk_sends(const Algorithm& a) {
  size_t n = 0;
  for (const Transfer& x : a.transfers()) n += x.count;
  return n;
}

// Both runtimes' loaders accept `a` as written for each.
void expect_loadable(const Algorithm& a, const std::string& what) {
  for (MscclRuntime runtime : {MscclRuntime::Executor, MscclRuntime::Legacy}) {
    MscclOptions o;
    o.runtime = runtime;
    EXPECT_THAT(testing::msccl_runtime_problems(to_msccl_xml(a, o), runtime), ::testing::IsEmpty())
        << what;
  }
}

// Recursive doubling sends, at distance d, the d chunks a rank holds as one message: each of the
// log2 p steps pays one step cost, d chunks' bytes and the latency (through a switch: two links'
// latencies). Sent chunk by chunk, the same steps pay d step costs each.
TEST(Messages, RecursiveDoublingPaysOneStepPerMessage) {
  for (const char* spec : {"hypercube:8,bw=50GB/s,lat=0.5us", "switch:8,bw=50GB/s,lat=0.5us"}) {
    const auto t = charging(topo::generate(spec));
    const Time hop = std::string(spec).starts_with("switch") ? 2 * kLat : kLat;
    const Algorithm a = make_baseline({BaselineKind::Rhd, {}}, t,
                                      Collective::over_all(t, CollectiveKind::AllGather), kChunk);
    EXPECT_EQ(a.size(), 8u * 3u) << spec;  // one message per rank and step
    EXPECT_EQ(chunk_sends(a), 8u * 7u) << spec;
    Time closed = 0, chunk_by_chunk = 0;
    for (int d = 1; d < 8; d *= 2) {
      closed += topo::kDefaultStep + d * kSer + hop;
      chunk_by_chunk += d * (topo::kDefaultStep + kSer) + hop;
    }
    EXPECT_EQ(a.claimed_time, closed) << spec;
    EXPECT_EQ(model_time(t, a), closed) << spec;
    EXPECT_EQ(time_floor(t, a), closed) << spec;  // nothing contends: the floor is exact
    const Report r = verify(t, a);
    EXPECT_TRUE(r.correct()) << spec << ": "
                             << (r.violations.empty() ? "" : r.violations[0].message);
    EXPECT_EQ(sim::replay(t, a, sim::NetworkKind::Analytical), closed) << spec;

    Algorithm split = split_messages(a);
    EXPECT_EQ(split.size(), 8u * 7u) << spec;
    EXPECT_FALSE(split.has_messages());
    EXPECT_EQ(time(t, split).collective_time, chunk_by_chunk) << spec;
    EXPECT_TRUE(verify(t, split).correct()) << spec;
  }
}

// A hand-made All-Gather on a one-way ring of 4 whose transfers carry 1 to 3 chunks, and its
// broken variants: each chunk a message carries is checked at its source.
Algorithm forwarding_all_gather(const topo::Topology& t, ChunkId second_first = 0) {
  Algorithm a = empty_algorithm("hand", t, Collective::over_all(t, CollectiveKind::AllGather),
                                kChunk, LinkModel::Pipelined);
  auto send = [&](ChunkId first, int count, int from, int to, std::vector<TransferId> deps) {
    const LinkId l = link_between(t, from, to);
    return a.add(first, from, to, std::span(&l, 1), Op::Copy, deps, -1, -1, 0, 0, false,
                 static_cast<uint16_t>(count));
  };
  const TransferId x0 = send(0, 1, 0, 1, {});               // 1 holds 0, 1
  const TransferId x1 = send(second_first, 2, 1, 2, {x0});  // 2 holds 0, 1, 2
  const TransferId x2 = send(0, 3, 2, 3, {x1});             // 3 holds all
  const TransferId x3 = send(1, 3, 3, 0, {x2});             // 0 holds all
  const TransferId x4 = send(2, 2, 0, 1, {x3});             // 1 holds all
  send(3, 1, 1, 2, {x4});                                   // 2 holds all
  time(t, a);
  return a;
}

TEST(Messages, TheVerifierChecksEveryChunkCarried) {
  const auto t = charging(topo::generate("ring:4,bidir=false,bw=50GB/s,lat=0.5us"));
  const Algorithm good = forwarding_all_gather(t);
  const Report ok = verify(t, good);
  EXPECT_TRUE(ok.correct()) << (ok.violations.empty() ? "" : ok.violations[0].message);
  // Each hop pays one step for its message: 1, 2, 3, 3, 2 and 1 chunks, each waiting for the last.
  EXPECT_EQ(good.claimed_time, 6 * (topo::kDefaultStep + kLat) + 12 * kSer);

  // NPU 1 sends chunks 1..2 to NPU 2, but holds no chunk 2 yet.
  const Report lacks = verify(t, forwarding_all_gather(t, 1));
  ASSERT_FALSE(lacks.correct());
  EXPECT_EQ(lacks.violations[0].kind, ViolationKind::SourceLacksData);
  EXPECT_EQ(lacks.violations[0].chunk, 2);
  EXPECT_THAT(lacks.violations[0].message, HasSubstr("chunks 1..2"));
  EXPECT_THAT(lacks.violations[0].message, HasSubstr("does not hold chunk 2"));

  // Past the collective's last chunk: a bad reference, before any replay.
  std::vector<TransferSpec> specs;
  for (TransferId id = 0; id < static_cast<TransferId>(good.size()); ++id)
    specs.push_back(good.spec(id));
  specs[2].chunk = 2;  // chunks 2..4 of 0..3
  const Report past = verify(t, with_transfers(good, specs));
  ASSERT_FALSE(past.correct());
  EXPECT_EQ(past.violations[0].kind, ViolationKind::BadReference);
  EXPECT_THAT(past.violations[0].message, HasSubstr("carries 3 chunks, but only 2 follow"));
  specs[2].chunk = 0;
  specs[2].count = 0;
  EXPECT_THAT(verify(t, with_transfers(good, specs)).violations[0].message,
              HasSubstr("carries 0 chunks (at least 1)"));
  EXPECT_THROW(model_time(t, with_transfers(good, specs)), Error);
}

// Tenet JSON records a count (version 4, written only where some transfer carries several chunks),
// refuses one in an older version's file, and checks its range.
TEST(Messages, AlgorithmJsonKeepsThem) {
  const auto t = charging(topo::generate("ring:4,bidir=false,bw=50GB/s,lat=0.5us"));
  const Algorithm a = forwarding_all_gather(t);
  const std::string text = to_json(a);
  EXPECT_THAT(text, HasSubstr("\"version\": 4"));
  EXPECT_THAT(text, HasSubstr("\"count\": 3"));
  for (const auto& read :
       {parse_algorithm_json(text, "m.json"), parse_algorithm_json_reference(text, "m.json")}) {
    ASSERT_EQ(read.size(), a.size());
    for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id)
      EXPECT_EQ(read.spec(id), a.spec(id)) << id;
    EXPECT_TRUE(verify(t, read).correct());
  }
  EXPECT_THAT(to_json(split_messages(a)), HasSubstr("\"version\": 2"));
  auto error = [](const std::string& bad) {
    try {
      parse_algorithm_json(bad, "m.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(error(testing::replaced(text, "\"version\": 4", "\"version\": 3")),
              HasSubstr("transfers[1].count: a transfer that carries several chunks (\"count\") "
                        "needs version 4 of the format"));
  EXPECT_THAT(error(testing::replaced(text, "\"count\": 3", "\"count\": 0")),
              HasSubstr("transfers[2].count"));
  EXPECT_THAT(error(testing::replaced(text, "\"count\": 3", "\"count\": 5")),
              HasSubstr("past the collective's last chunk 3"));
}

// MSCCL-XML writes a message as one step of cnt chunks, and reads a step of cnt consecutive chunks
// back as one transfer: the same schedule, the same time. Chakra writes one send of the message's
// bytes, and reads it back.
TEST(Messages, MscclXmlAndChakraKeepThem) {
  const auto t = charging(topo::generate("hypercube:8,bw=50GB/s,lat=0.5us"));
  for (CollectiveKind kind :
       {CollectiveKind::AllGather, CollectiveKind::ReduceScatter, CollectiveKind::AllReduce}) {
    const Algorithm a =
        make_baseline({BaselineKind::Rhd, {}}, t, Collective::over_all(t, kind, 2), kChunk);
    ASSERT_TRUE(a.has_messages()) << to_string(kind);
    const std::string xml = to_msccl_xml(a);
    EXPECT_THAT(xml, HasSubstr("cnt=\"8\"")) << to_string(kind);
    expect_loadable(a, std::string(to_string(kind)));
    const Algorithm back = parse_msccl_xml(xml, t);
    EXPECT_EQ(back.size(), a.size()) << to_string(kind);
    EXPECT_EQ(chunk_sends(back), chunk_sends(a)) << to_string(kind);
    EXPECT_EQ(verify(t, back).collective_time, a.claimed_time) << to_string(kind);

    const Algorithm graph =
        chakra::from_collective_graph(chakra::to_collective_graph(a, t), t, "g");
    EXPECT_EQ(graph.size(), a.size()) << to_string(kind);
    EXPECT_EQ(chunk_sends(graph), chunk_sends(a)) << to_string(kind);
    const Report r = verify(t, graph);
    EXPECT_TRUE(r.correct()) << to_string(kind);
    EXPECT_EQ(r.collective_time, a.claimed_time) << to_string(kind);
  }
}

// A correct MSCCL program the IR cannot hold: GPU 1 receives GPU 0's two chunks in one step and
// reduces only chunk 0 into its own ('re'); chunk 1 is reduced at GPU 0. Correct in the runtime
// (no problem found on the way), the import refuses it saying why, as it does programs that keep
// two copies of a chunk.
TEST(Messages, MscclPartOfAMessageReducedIsRefused) {
  using testing::step;
  const std::string xml =
      R"(<algo name="part" proto="Simple" nchannels="1" nchunksperloop="2" ngpus="2" coll="allreduce" inplace="1" minBytes="0" maxBytes="1099511627776">)"
      R"(<gpu id="0" i_chunks="2" o_chunks="0" s_chunks="1"><tb id="0" send="1" recv="1" chan="0">)" +
      step(0, "s", 'i', 0, 'i', 0, 2) + step(1, "r", 's', 0, 's', 0, 1) +
      step(2, "re", 's', 0, 'i', 1, 1) + step(3, "s", 'i', 1, 'i', 1, 1) +
      step(4, "r", 'i', 0, 'i', 0, 1) + "</tb></gpu>" +
      R"(<gpu id="1" i_chunks="2" o_chunks="0" s_chunks="2"><tb id="0" send="0" recv="0" chan="0">)" +
      step(0, "r", 's', 0, 's', 0, 2) + step(1, "s", 'i', 1, 'i', 1, 1) +
      step(2, "re", 's', 0, 'i', 0, 1) + step(3, "s", 'i', 0, 'i', 0, 1) +
      step(4, "r", 'i', 1, 'i', 1, 1) + "</tb></gpu></algo>";
  const auto t = topo::generate("ring:2");
  try {
    parse_msccl_xml(xml, t, "part.xml");
    ADD_FAILURE() << "imported";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("part.xml"));
    EXPECT_THAT(e.what(), HasSubstr("receives chunks 0..1 in one step and then reduces only some"));
  }
}

// A graph whose send claims more chunks than a transfer carries is refused, naming the node.
TEST(Messages, ChakraCountsOutOfRangeAreErrors) {
  const auto t = charging(topo::generate("hypercube:8,bw=50GB/s,lat=0.5us"));
  const Algorithm a = make_baseline({BaselineKind::Rhd, {}}, t,
                                    Collective::over_all(t, CollectiveKind::AllGather), kChunk);
  for (int64_t bad : {int64_t{0}, int64_t{kMaxChunksPerTransfer} + 1}) {
    auto files = chakra::to_collective_graph(a, t);
    bool edited = false;
    for (auto& node : files[0].nodes)
      for (auto& attr : *node.mutable_attr())
        if (!edited && attr.name() == "tenet_count") {
          attr.set_int64_val(bad);
          edited = true;
        }
    ASSERT_TRUE(edited);
    try {
      chakra::from_collective_graph(files, t, "g");
      ADD_FAILURE() << "no error for tenet_count " << bad;
    } catch (const Error& e) {
      EXPECT_THAT(e.what(),
                  HasSubstr(fmt::format("carries tenet_count {} (1 to 65535 chunks)", bad)));
    }
  }
}

// Both MSCCL runtimes load steps of fewer than 72 slots: a larger message is written as several
// steps, each read back as a transfer, and the export says the time it then takes.
TEST(Messages, MscclXmlSplitsWhatAStepCannotCarry) {
  const auto t = charging(topo::generate("switch:4,bw=50GB/s,lat=0.5us"));
  const Algorithm a = make_baseline({BaselineKind::Oneshot, {}}, t,
                                    Collective::over_all(t, CollectiveKind::AllReduce, 100), 4096);
  ASSERT_EQ(a.size(), 12u);
  const std::string xml = to_msccl_xml(a);
  EXPECT_THAT(xml, HasSubstr("cnt=\"71\""));
  EXPECT_THAT(xml, HasSubstr("cnt=\"29\""));
  EXPECT_THAT(xml, ::testing::Not(HasSubstr("cnt=\"100\"")));
  expect_loadable(a, "one-shot of 100 chunks");
  const Algorithm back = parse_msccl_xml(xml, t);
  EXPECT_EQ(back.size(), 24u);
  EXPECT_EQ(chunk_sends(back), chunk_sends(a));
  const Report r = verify(t, back);
  EXPECT_TRUE(r.correct()) << (r.violations.empty() ? "" : r.violations[0].message);
  EXPECT_GT(r.collective_time, a.claimed_time);  // a second step per message
}

// The one-shot All-Reduce sends each rank's whole input to each other rank as one message.
TEST(Messages, OneShotSendsOneMessagePerPair) {
  const auto t = charging(topo::generate("switch:8,bw=50GB/s,lat=0.5us"));
  const Algorithm a = make_baseline({BaselineKind::Oneshot, {}}, t,
                                    Collective::over_all(t, CollectiveKind::AllReduce, 4), kChunk);
  EXPECT_EQ(a.size(), 8u * 7u);
  for (const Transfer& x : a.transfers()) EXPECT_EQ(x.count, a.collective.num_chunks());
  EXPECT_TRUE(verify(t, a).correct());
  EXPECT_EQ(sim::replay(t, a, sim::NetworkKind::Analytical), a.claimed_time);
}

// Between two leaves of a 2-spine leaf-spine a rank's input goes as two messages, one per spine
// (as a runtime's channels are flows that ECMP spreads), within a leaf as one.
TEST(Messages, OneMessagePerWay) {
  const auto t = charging(topo::generate("leafspine:2x2,spines=2"));
  const Algorithm a = make_baseline({BaselineKind::Oneshot, {}}, t,
                                    Collective::over_all(t, CollectiveKind::AllReduce, 8), kChunk);
  std::map<std::pair<NodeId, NodeId>, std::vector<TransferId>> pairs;
  for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id)
    pairs[{a[id].src, a[id].dst}].push_back(id);
  int across = 0;
  for (const auto& [ends, ids] : pairs) {
    const bool same_leaf = a.route(ids[0]).size() == 2;  // up to the leaf and down
    ASSERT_EQ(ids.size(), same_leaf ? 1u : 2u);
    if (same_leaf) continue;
    ++across;
    EXPECT_EQ(a[ids[0]].count + a[ids[1]].count, a.collective.num_chunks());
    EXPECT_FALSE(std::ranges::equal(a.route(ids[0]), a.route(ids[1])));  // one per spine
  }
  EXPECT_EQ(across, 8);
  EXPECT_TRUE(verify(t, a).correct());
}

}  // namespace
}  // namespace tenet::synth
