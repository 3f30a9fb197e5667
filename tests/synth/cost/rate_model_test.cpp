// The rate-shared link model: a link carries concurrent transfers whose rates sum to at most its
// bandwidth; a transfer moves at the narrowest bandwidth on its route unless its producer sets a
// lower rate; links admit transfers in list order.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "synth/baselines/baselines.hpp"
#include "synth/cost/link_ledger.hpp"
#include "synth/cost/timing.hpp"
#include "synth/formats/algorithm_json.hpp"
#include "synth/producers.hpp"
#include "synth/synthesizer.hpp"
#include "synth/verify/verify.hpp"
#include "tests/synth/test_support.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"
#include "topo/routing.hpp"

namespace tenet::synth {
namespace {

using ::testing::HasSubstr;
using testing::link_between;

constexpr Bytes kChunk = 1 << 20;
constexpr Time kLat = 500'000;  // 0.5 us, every link of the generators below
const Time kSer25 = transfer_time(kChunk, 25'000'000'000);

Algorithm empty(const topo::Topology& t, CollectiveKind kind, int chunks_per_npu = 1) {
  Algorithm a;
  a.collective = Collective::over_all(t, kind, chunks_per_npu);
  a.chunk_bytes = kChunk;
  return a;
}

std::vector<LinkId> route(const topo::Topology& t, NodeId u, NodeId v) {
  auto r = topo::Router(t).route(u, v);
  EXPECT_TRUE(r.has_value());
  return r->links;
}

// Five NPUs under each of two leaves, 25 GB/s NICs, one 100 GB/s spine: the spine carries four
// NIC streams at once; a fifth waits for the first to finish, then streams beside the rest.
TEST(RateShared, AFatLinkCarriesSeveralThinStreamsAtOnce) {
  const auto t = topo::generate("leafspine:2x5,spines=1,bw=25GB/s/100GB/s,lat=0.5us");
  Algorithm a = empty(t, CollectiveKind::AllToAll);
  for (NodeId i = 0; i < 5; ++i) a.add(0, i, i + 5, route(t, i, i + 5));
  const TimingResult r = time(t, a);
  for (TransferId i = 0; i < 4; ++i) {
    EXPECT_EQ(a[i].start, 0) << i;
    EXPECT_EQ(a[i].end, kSer25 + 4 * kLat) << i;
  }
  EXPECT_EQ(a[4].start, kSer25);
  EXPECT_EQ(a[4].end, 2 * kSer25 + 4 * kLat);
  // The uplink leaf0 -> spine carried five streams at a quarter of its bandwidth each.
  const LinkId up = link_between(t, 11, 10);  // leaf0 -> spine0
  EXPECT_EQ(r.link_busy[up], 5 * (kSer25 / 4));
  const Report rep = verify(t, a, {.lower_bound = false});
  EXPECT_EQ(rep.count(ViolationKind::LinkOverbooked), 0u);
  EXPECT_EQ(rep.count(ViolationKind::TooShort), 0u);
}

// A producer may set a lower rate: two transfers share a link at half its bandwidth each.
TEST(RateShared, ProducerRatesLetTransfersShareALink) {
  const auto t = topo::generate("line:2,bw=50GB/s,lat=0.5us");
  const LinkId l = link_between(t, 0, 1);
  Algorithm a = empty(t, CollectiveKind::AllGather, 3);
  a.add(0, 0, 1, std::span(&l, 1), Op::Copy, {}, -1, -1, 25'000'000'000);
  a.add(1, 0, 1, std::span(&l, 1), Op::Copy, {}, -1, -1, 25'000'000'000);
  a.add(2, 0, 1, std::span(&l, 1));  // the whole link: after both
  time(t, a);
  EXPECT_EQ(a[0].start, 0);
  EXPECT_EQ(a[1].start, 0);
  EXPECT_EQ(a[0].end, kSer25 + kLat);
  EXPECT_EQ(a[2].start, kSer25);
  EXPECT_EQ(a[2].end, kSer25 + transfer_time(kChunk, 50'000'000'000) + kLat);
  const Report rep = verify(t, a, {.lower_bound = false});
  EXPECT_EQ(rep.count(ViolationKind::LinkOverbooked), 0u);
  // Under hold a link serves one transfer at a time, whatever the rates.
  a.link_model = LinkModel::Hold;
  time(t, a);
  EXPECT_EQ(a[1].start, kSer25 + kLat);
}

// Links admit transfers in list order: a later transfer does not overtake an earlier one on a
// shared link even when it is ready first and would fit.
TEST(RateShared, LinksAdmitTransfersInListOrder) {
  const auto t = topo::generate("line:3,bw=50GB/s,lat=0.5us");
  const LinkId a01 = link_between(t, 0, 1), a12 = link_between(t, 1, 2);
  Algorithm a = empty(t, CollectiveKind::AllGather);
  const Time ser50 = transfer_time(kChunk, 50'000'000'000);
  a.add(0, 0, 1, std::span(&a01, 1));                                        // chunk 0 reaches npu1
  a.add(0, 1, 2, std::span(&a12, 1), Op::Copy, {}, -1, -1, 25'000'000'000);  // waits for it
  a.add(1, 1, 2, std::span(&a12, 1), Op::Copy, {}, -1, -1,
        25'000'000'000);  // ready at 0, listed after
  time(t, a);
  EXPECT_EQ(a[1].start, ser50 + kLat);
  EXPECT_EQ(a[2].start, ser50 + kLat);  // admitted with the one before it, beside it
}

TEST(RateShared, TheLedgerRetiresTheEarliestHoldersFirst) {
  const auto t = topo::generate("line:2,bw=100GB/s");
  LinkLedger ledger(t);
  constexpr Bandwidth G = 1'000'000'000;
  ledger.admit(0, 0, 50, 40 * G);
  ledger.admit(0, 10, 30, 40 * G);
  ledger.admit(0, 20, 40, 10 * G);
  EXPECT_EQ(ledger.earliest(0, 25, 10 * G), 25);   // 90 GB/s in use: 10 spare
  EXPECT_EQ(ledger.earliest(0, 25, 30 * G), 30);   // the one ending at 30 frees 40
  EXPECT_EQ(ledger.earliest(0, 30, 60 * G), 40);   // then the one ending at 40
  EXPECT_EQ(ledger.earliest(0, 40, 100 * G), 50);  // the whole link: after the last
  ledger.admit(0, 50, 60, 100 * G);
  EXPECT_EQ(ledger.earliest(0, 5, 10 * G), 60);  // never before the latest admission's end here
}

TEST(RateShared, ARateAboveTheRouteIsAnErrorAndAViolation) {
  const auto t = topo::generate("line:2,bw=50GB/s");
  const LinkId l = link_between(t, 0, 1);
  Algorithm a = empty(t, CollectiveKind::AllGather);
  a.add(0, 0, 1, std::span(&l, 1), Op::Copy, {}, -1, -1, 60'000'000'000);
  a.add(1, 1, 0, std::span(&l, 1));
  EXPECT_THAT([&] { time(t, a); },
              ::testing::ThrowsMessage<Error>(HasSubstr("transfer 0: rate 60 GB/s is above")));
  const Report r = verify(t, a, {.lower_bound = false});
  ASSERT_EQ(r.count(ViolationKind::BadRate), 1u);
  EXPECT_THAT(r.violations[0].message, HasSubstr("moves at 60 GB/s, faster than"));
}

TEST(RateShared, AnOverbookedLinkNamesTheLinkTheInstantAndTheTransfers) {
  const auto t = topo::generate("leafspine:2x5,spines=1,bw=25GB/s/100GB/s,lat=0.5us");
  Algorithm a = empty(t, CollectiveKind::AllToAll);
  for (NodeId i = 0; i < 5; ++i) {
    const auto r = route(t, i, i + 5);
    a.add(0, i, i + 5, r, Op::Copy, {}, 0, kSer25 + 4 * kLat);  // all five at once: 125 of 100 GB/s
  }
  a.claimed_time = kSer25 + 4 * kLat;
  const Report r = verify(t, a, {.lower_bound = false});
  ASSERT_GE(r.count(ViolationKind::LinkOverbooked), 1u);
  const Violation& v = r.violations[0];
  EXPECT_EQ(v.transfer, 4);
  EXPECT_EQ(v.time, 0);
  EXPECT_THAT(v.message, HasSubstr("needing 25 GB/s while transfers 0, 1, 2, 3 already hold 100 "
                                   "GB/s: 125 GB/s of its 100 GB/s"));
  EXPECT_THAT(v.message, HasSubstr("leaf0 -> spine0"));
}

// Serial channels (Algorithm::serial_channels): a channel sends one transfer at a time, the next
// once the last has left the link (an MSCCL threadblock; a stream that never goes over its rate).
// Other channels, and channel 0, still share the link by rate.
Algorithm quarter_rate_streams(const topo::Topology& t) {
  const LinkId l = link_between(t, 0, 1);
  Algorithm a = empty(t, CollectiveKind::AllGather, 6);
  const Bandwidth quarter = 12'500'000'000;
  for (ChunkId c = 0; c < 3; ++c)
    a.add(c, 0, 1, std::span(&l, 1), Op::Copy, {}, -1, -1, quarter, 1);
  a.add(3, 0, 1, std::span(&l, 1), Op::Copy, {}, -1, -1, quarter, 2);
  a.add(4, 0, 1, std::span(&l, 1), Op::Copy, {}, -1, -1, quarter, 0);
  a.add(5, 0, 1, std::span(&l, 1), Op::Copy, {}, -1, -1, quarter, 0);
  return a;
}
TEST(RateShared, SerialChannelsSendOneTransferAtATime) {
  const auto t = topo::generate("line:2,bw=50GB/s,lat=0.5us");
  const Time ser = transfer_time(kChunk, 12'500'000'000);
  Algorithm a = quarter_rate_streams(t);
  time(t, a);
  // Shared: the first four fill the link at once; the last two wait for their room.
  for (TransferId i = 0; i < 6; ++i) EXPECT_EQ(a[i].start, i < 4 ? 0 : ser) << i;
  a.serial_channels = true;
  const TimingResult r = time(t, a);
  // Serial: channel 1's three go one after another; channel 2 and channel 0 go at once beside them.
  const std::array<Time, 6> starts{0, ser, 2 * ser, 0, 0, 0};
  for (TransferId i = 0; i < 6; ++i) {
    EXPECT_EQ(a[i].start, starts[i]) << i;
    EXPECT_EQ(a[i].end, starts[i] + ser + kLat) << i;
  }
  EXPECT_EQ(a.claimed_time, 3 * ser + kLat);
  EXPECT_EQ(r.link_busy[link_between(t, 0, 1)], 6 * (ser / 4));
  // (The six chunks are not an All-Gather: only the timing's checks apply.)
  auto timing_violations = [&](const Algorithm& x) {
    const Report rep = verify(t, x, {.lower_bound = false});
    return rep.count(ViolationKind::TimeMismatch) + rep.count(ViolationKind::LinkOverbooked) +
           rep.count(ViolationKind::TooShort) + rep.count(ViolationKind::BadRate) +
           rep.count(ViolationKind::ChannelOverlap);
  };
  EXPECT_EQ(timing_violations(a), 0u);
  EXPECT_EQ(verify(t, a, {.lower_bound = false}).collective_time, a.claimed_time);
  // The floor stays a lower bound.
  EXPECT_LE(time_floor(t, a), a.claimed_time);
  // The shared channels' times claimed for serial ones: channel 1's second and third overlap the
  // one before them.
  Algorithm shared = quarter_rate_streams(t);
  time(t, shared);
  shared.serial_channels = true;
  const Report rep = verify(t, shared, {.lower_bound = false});
  EXPECT_EQ(rep.count(ViolationKind::ChannelOverlap), 2u);
  EXPECT_EQ(timing_violations(shared), 2u);
  EXPECT_THAT(testing::violation_text(rep),
              HasSubstr("transfer 1 (chunk 1, npu0 -> npu1): starts at 0 ps in serial channel 1, "
                        "before transfer 0"));
}

// JSON says which (only when serial), and reads back exactly; anything but the two is an error.
TEST(RateShared, JsonCarriesSerialChannels) {
  const auto t = topo::generate("line:2,bw=50GB/s,lat=0.5us");
  Algorithm a = quarter_rate_streams(t);
  time(t, a);
  EXPECT_THAT(to_json(a), ::testing::Not(HasSubstr("\"channels\"")));
  a.serial_channels = true;
  time(t, a);
  const std::string text = to_json(a);
  EXPECT_THAT(text, HasSubstr("\"channels\": \"serial\""));
  const Algorithm b = parse_algorithm_json(text);
  EXPECT_TRUE(b.serial_channels);
  EXPECT_EQ(to_json(b), text);
  EXPECT_FALSE(
      parse_algorithm_json(testing::replaced(text, "\"serial\"", "\"shared\"")).serial_channels);
  EXPECT_THAT(
      [&] {
        parse_algorithm_json(testing::replaced(text, "\"serial\"", "\"one-by-one\""), "s.json");
      },
      ::testing::ThrowsMessage<Error>(
          HasSubstr("channels: 'one-by-one' is neither 'shared' nor 'serial'")));
  EXPECT_THAT([&] { parse_algorithm_json(testing::replaced(text, "\"serial\"", "1"), "s.json"); },
              ::testing::ThrowsMessage<Error>(HasSubstr("channels")));
}

TEST(RateShared, JsonCarriesRatesAndStillReadsVersionOne) {
  const auto t = topo::generate("line:2,bw=50GB/s");
  const LinkId l = link_between(t, 0, 1);
  Algorithm a = empty(t, CollectiveKind::AllGather);
  a.add(0, 0, 1, std::span(&l, 1), Op::Copy, {}, -1, -1, 12'500'000'000);
  a.add(1, 1, 0, std::span(&l, 1));
  time(t, a);
  const std::string text = to_json(a);
  EXPECT_THAT(text, HasSubstr("\"version\": 2"));
  EXPECT_THAT(text, HasSubstr("\"rate_Bps\": 12500000000"));
  const Algorithm b = parse_algorithm_json(text);
  EXPECT_EQ(b.rate(0), 12'500'000'000);
  EXPECT_EQ(b.rate(1), 0);
  EXPECT_EQ(to_json(b), text);
  // Version 1 (no rates) reads as before; a rate needs version 2; a rate must be positive.
  const std::string v1 = testing::replaced(text, "\"version\": 2", "\"version\": 1");
  EXPECT_THAT([&] { parse_algorithm_json(v1, "old.json"); },
              ::testing::ThrowsMessage<Error>(HasSubstr("rates need version 2")));
  const std::string plain = testing::replaced(to_json(with_transfers(a, {a.spec(1)})),
                                              "\"version\": 2", "\"version\": 1");
  EXPECT_EQ(parse_algorithm_json(plain).size(), 1u);
  const std::string zero = testing::replaced(text, "12500000000", "0");
  EXPECT_THAT([&] { parse_algorithm_json(zero, "zero.json"); },
              ::testing::ThrowsMessage<Error>(HasSubstr("out of range")));
}

// The case: one 100 GB/s spine is never slower than four 25 GB/s spines (the same
// capacity), for any collective, producer and size on an 8-NPU leaf-spine (the trees within 3 %).
TEST(RateShared, OneFatSpineIsNeverSlowerThanFourThinOnes) {
  const auto fat = topo::generate("leafspine:2x4,spines=1,bw=25GB/s/100GB/s");
  const auto thin = topo::generate("leafspine:2x4,spines=4,bw=25GB/s/25GB/s");
  int compared = 0;
  for (CollectiveKind kind : kAllCollectives)
    for (Bytes size : {Bytes{1} << 20, Bytes{64} << 20})
      for (int k : {1, 4})
        for (const std::string& name : algorithm_names(kind)) {
          Collective c = Collective::over_all(fat, kind, k);
          const Bytes chunk = c.chunk_bytes_for(size);
          Algorithm on_fat, on_thin;
          try {
            on_fat = make_algorithm(name, fat, c, chunk);
            on_thin = make_algorithm(name, thin, c, chunk);
          } catch (const NotApplicable&) {
            continue;
          }
          // The trees' sends leave a node on two channels that share its NIC, and which goes first
          // is the greedy admission's choice: on the fat spine a tree-B reduction is admitted ahead
          // of a tree-A one that the thin spine's busier link held back, and that order costs
          // 2.6 % at 64 MiB (a list-scheduling anomaly, not capacity: both take 27 % less than with
          // the shifted second tree before). Every other producer is held to no slower at all.
          // Blink packs its trees for each topology's own links (different trees on each), so
          // it is not held to the comparison.
          if (name == "blink") continue;
          const bool trees = name == "dbt" || name.starts_with("tree");
          const double slack = trees ? 1.03 : 1.0;
          EXPECT_LE(static_cast<double>(on_fat.claimed_time),
                    slack * static_cast<double>(on_thin.claimed_time))
              << name << " " << to_string(kind) << " " << format_bytes(size) << " k=" << k;
          ASSERT_TRUE(verify(fat, on_fat, {.max_reported = 3, .lower_bound = false}).correct())
              << name;
          ++compared;
        }
  EXPECT_GT(compared, 100);
  // And the synthesizer is no slower than ring on the fat spine (that both reach the cut bound:
  // RateSharedQuality.SynthesizerReachesTheCutBoundOnOneFatSpine).
  Collective ag = Collective::over_all(fat, CollectiveKind::AllGather, 4);
  const Algorithm a = synthesize(fat, ag, ag.chunk_bytes_for(Bytes{64} << 20));
  const Algorithm ring =
      make_baseline({BaselineKind::Ring, {}}, fat, ag, ag.chunk_bytes_for(Bytes{64} << 20));
  EXPECT_LE(a.claimed_time, ring.claimed_time);
}

// The 16-GPU pod of examples/ with its two 50 GB/s spines merged into one 100 GB/s spine: what the
// synthesizer makes there (chunks per NPU picked as `tenet synth` does) verifies under the rate
// model. That it is no slower than on two spines, and near the bound:
// RateSharedQuality.ThePodWithOneFatSpineIsNoSlowerThanWithTwoThinOnes.
TEST(RateShared, ThePodWithOneFatSpineVerifies) {
  const std::string dir = std::string(TENET_SOURCE_DIR) + "/examples/topologies/";
  const auto two = topo::load(dir + "pod-2spine.yaml");
  const auto one = topo::load(dir + "pod-1spine.yaml");
  for (CollectiveKind kind :
       {CollectiveKind::AllGather, CollectiveKind::ReduceScatter, CollectiveKind::AllReduce}) {
    const Collective c = Collective::over_all(two, kind);  // the same NPUs as on one spine
    const ChunkingResult a1 = synthesize_auto_chunks(one, c, Bytes{64} << 20);
    const Report r = verify(one, a1.algorithm, {.max_reported = 3});
    EXPECT_TRUE(r.correct()) << to_string(kind) << " " << a1.algorithm.method
                             << testing::violation_text(r);
  }
}

}  // namespace
}  // namespace tenet::synth
