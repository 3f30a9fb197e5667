// The one-shot All-Reduce (oneshot) and what it rests on: transfers that send their source's input
// (Transfer::from_input), reducing one chunk independently at every rank.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chakra/collective_graph.hpp"
#include "synth/baselines/baselines.hpp"
#include "synth/cost/timing.hpp"
#include "synth/formats/algorithm_json.hpp"
#include "synth/formats/msccl_xml.hpp"
#include "synth/verify/verify.hpp"
#include "tests/synth/test_support.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"
#include "topo/routing.hpp"

namespace tenet::synth {
namespace {

using ::testing::HasSubstr;

Algorithm oneshot(const topo::Topology& t, Bytes total, int k = 1) {
  const Collective c = Collective::over_all(t, CollectiveKind::AllReduce, k);
  return make_baseline({BaselineKind::Oneshot, {}}, t, c, c.chunk_bytes_for(total));
}

bool has_kind(const Report& r, ViolationKind kind) {
  for (const Violation& v : r.violations)
    if (v.kind == kind) return true;
  return false;
}

// Each rank's port sends its input to the P - 1 others back to back, one message each (its k
// chunks: Transfer::count), one round's destinations all different, so the last byte leaves after
// (P - 1) k chunks (k per NPU asked: k in all, each the P-th part of the buffer times P) and
// arrives a route's latency later.
TEST(Oneshot, EqualsTheClosedFormOnASwitch) {
  for (int p : {2, 4, 8})
    for (int k : {1, 3}) {
      const auto t = topo::generate(fmt::format("switch:{},bw=100GB/s,lat=0.5us", p));
      const Algorithm a = oneshot(t, Bytes{3} << 20, k);
      EXPECT_EQ(a.collective.all_reduce_chunks, k);  // the whole buffer to each peer at once
      EXPECT_EQ(a.size(), static_cast<size_t>(p * (p - 1)));
      for (const Transfer& x : a.transfers()) {
        EXPECT_TRUE(x.from_input);
        EXPECT_EQ(x.count, k);
      }
      const Report r = verify(t, a, {.max_reported = 3, .lower_bound = false});
      EXPECT_TRUE(r.correct()) << p << " " << k << testing::violation_text(r);
      const Time each = transfer_time(a.chunk_bytes, 100'000'000'000);
      EXPECT_EQ(a.claimed_time, (p - 1) * k * each + 2 * 500'000) << p << " " << k;
    }
}

// Where it is meant to run (NVSwitch systems, small buffers, each step paying its cost as the CLI
// charges it), it is verified and beats the ring. Per port it carries (P - 1) S against the ring's
// 2 (P - 1) / P S, and saves 2 (P - 1) - 1 latencies and steps: on switch:8 (50 GB/s, 1 us a route,
// 0.3 us a step) the two meet near S = 2 (1.3 us) (50 GB/s) / (1 - 2/8), 173 KB, so there the ring
// wins at 1 MiB; on dgx-h100 (369 GB/s, 3.4 us a route) near 3.6 MB.
TEST(Oneshot, BeatsTheRingForSmallBuffersOnNvswitch) {
  struct Case {
    const char* spec;
    Bytes size;
    bool wins;
  };
  for (const Case& k :
       {Case{"switch:8", Bytes{64} << 10, true}, Case{"switch:8", Bytes{1} << 20, false},
        Case{"dgx-h100", Bytes{64} << 10, true}, Case{"dgx-h100", Bytes{1} << 20, true},
        Case{"dgx-h100", Bytes{256} << 20, false}}) {
    topo::Topology t = topo::load(k.spec);
    t.set_charges_steps(true);
    const Algorithm a = oneshot(t, k.size);
    const Report r = verify(t, a, {.max_reported = 3, .lower_bound = false});
    EXPECT_TRUE(r.correct()) << k.spec << " " << k.size << testing::violation_text(r);
    const Collective c = Collective::over_all(t, CollectiveKind::AllReduce);
    const Algorithm ring = make_baseline({BaselineKind::Ring, {}}, t, c, c.chunk_bytes_for(k.size));
    EXPECT_EQ(a.claimed_time < ring.claimed_time, k.wins)
        << k.spec << " " << k.size << ": " << format_time(a.claimed_time) << " vs ring "
        << format_time(ring.claimed_time);
  }
}

TEST(Oneshot, NeedsEveryPairLinkedOrSwitched) {
  const auto ring = topo::generate("ring:6");
  const Collective c = Collective::over_all(ring, CollectiveKind::AllReduce);
  const Made<Algorithm> a = try_baseline({BaselineKind::Oneshot, {}}, ring, c, 1 << 20);
  ASSERT_TRUE(std::holds_alternative<NotMade>(a));
  EXPECT_THAT(std::get<NotMade>(a).why, HasSubstr("would have to be relayed"));
  const auto fc = topo::generate("fc:5");
  EXPECT_TRUE(verify(fc, oneshot(fc, 1 << 20), {.lower_bound = false}).correct());
}

// What the verifier makes of a transfer that sends its input: the precondition's contents (its own
// contribution), so a rank that sends its input after its copy was reduced does not count the
// others twice; an input the source never had is missing data.
TEST(Oneshot, VerifierReadsTheInputNotTheCopy) {
  const auto t = topo::generate("switch:4");
  Algorithm a = oneshot(t, 1 << 20);
  // Sent as the copy instead (the arrivals listed before a send are in it): counted twice.
  std::vector<TransferSpec> specs;
  for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id) {
    specs.push_back(a.spec(id));
    specs.back().from_input = false;
    specs.back().start = specs.back().end = -1;
  }
  Algorithm copies = with_transfers(a, specs);
  time(t, copies);
  EXPECT_TRUE(has_kind(verify(t, copies, {.lower_bound = false}), ViolationKind::DoubleCount));
  // An All-Gather rank sending the input of a chunk it does not start with.
  Algorithm ag = empty_algorithm("x", t, Collective::over_all(t, CollectiveKind::AllGather), 1024,
                                 LinkModel::Pipelined);
  const std::vector<LinkId> route = topo::Router(t).route(1, 2)->links;
  ag.add(0, 1, 2, route, Op::Copy, {}, -1, -1, 0, 0, true);
  time(t, ag);
  const Report r = verify(t, ag, {.lower_bound = false});
  ASSERT_TRUE(has_kind(r, ViolationKind::SourceLacksData));
  EXPECT_THAT(testing::violation_text(r), HasSubstr("sends its input of chunk 0"));
}

// Every format keeps which transfers send their input, and the time with it.
TEST(Oneshot, SurvivesEveryFormat) {
  const auto t = topo::generate("switch:4");
  const Algorithm a = oneshot(t, Bytes{256} << 10, 2);
  // JSON: version 3 only where a transfer sends its input (4 where one carries several chunks).
  const std::string json = to_json(a);
  EXPECT_THAT(json, HasSubstr("\"version\": 4"));
  EXPECT_THAT(to_json(split_messages(a)), HasSubstr("\"version\": 3"));
  EXPECT_THAT(json, HasSubstr("\"from\": \"input\""));
  const Algorithm back = parse_algorithm_json(json);
  for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id)
    ASSERT_EQ(back.spec(id), a.spec(id)) << id;
  const Algorithm ring = make_baseline({BaselineKind::Ring, {}}, t,
                                       Collective::over_all(t, CollectiveKind::AllReduce), 1024);
  EXPECT_THAT(to_json(ring), HasSubstr("\"version\": 2"));
  // Chakra: tenet_from_input on the sends; the import verifies at the same time.
  const chakra::ChakraImport in =
      chakra::import_collective_graph(chakra::to_collective_graph(a, t), t, "oneshot");
  EXPECT_TRUE(in.problems.empty());
  for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id)
    EXPECT_TRUE(in.algorithm[id].from_input) << id;
  Algorithm imported = in.algorithm;
  time(t, imported);
  EXPECT_EQ(imported.claimed_time, a.claimed_time);
  // MSCCL-XML: in place, so each rank keeps its input in scratch before anything is reduced into
  // it; read back, the program is correct and sends inputs.
  const std::string xml = to_msccl_xml(a);
  EXPECT_THAT(xml, HasSubstr("type=\"cpy\" srcbuf=\"i\""));
  const MscclImport mi = import_msccl_xml(xml, t, "oneshot.xml");
  ASSERT_TRUE(mi.problems.empty()) << mi.problems.front().message;
  Algorithm run = mi.algorithm;
  EXPECT_TRUE(run.sends_input());
  time(t, run);
  const Report r = verify(t, run, {.max_reported = 3, .lower_bound = false});
  EXPECT_TRUE(r.correct()) << testing::violation_text(r);
}

TEST(Oneshot, FilesThatMisstateInputsAreRefused) {
  const auto t = topo::generate("switch:4");
  std::string json = to_json(oneshot(t, 1 << 20));
  const std::string v3 = "\"version\": 3";
  std::string old = json;
  old.replace(old.find(v3), v3.size(), "\"version\": 2");
  EXPECT_THAT([&] { parse_algorithm_json(old, "old.json"); },
              ::testing::ThrowsMessage<Error>(HasSubstr("needs version 3")));
  std::string other = json;
  const std::string from = "\"from\": \"input\"";
  other.replace(other.find(from), from.size(), "\"from\": \"copy\"");
  EXPECT_THAT([&] { parse_algorithm_json(other, "other.json"); },
              ::testing::ThrowsMessage<Error>(HasSubstr("unknown source 'copy'")));
  std::string number = json;
  number.replace(number.find(from), from.size(), "\"from\": 1");
  EXPECT_THAT([&] { parse_algorithm_json(number, "number.json"); },
              ::testing::ThrowsMessage<Error>(HasSubstr("expected a string")));
}

}  // namespace
}  // namespace tenet::synth
