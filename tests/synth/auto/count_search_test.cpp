// The chunk-count search (synth/auto/count_search.cpp: search_chunks, best_chunking): which counts
// it makes, and where it ends, over makers that claim the times of a curve.
#include <gtest/gtest.h>

#include <bit>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <string>

#include "synth/auto/deadline.hpp"
#include "synth/cost/timing.hpp"
#include "synth/synthesizer.hpp"
#include "synth/tuning.hpp"
#include "synth/verify/verify.hpp"
#include "tests/synth/test_support.hpp"
#include "topo/generators.hpp"

namespace tenet::synth {
namespace {

// The chunk-search tests' times: T(k) = A + B/k + C k, with A, B (a multiple of every count, so
// exact) and C drawn from `rng` in that order.
struct TimeCurve {
  Time a, b, per;
  Time operator()(int k) const { return a + b / k + per * k; }
};
TimeCurve random_curve(std::mt19937_64& rng) {
  const Time a = static_cast<Time>(rng() % 1'000'000), b = static_cast<Time>(rng() % 1000) << 12,
             per = static_cast<Time>(rng() % 2000);
  return {a, b, per};
}

// An algorithm for `c` that claims `time` (the chunk-search tests' makers).
Algorithm claiming(const Collective& c, Time time) {
  Algorithm x;
  x.collective = c;
  x.claimed_time = time;
  return x;
}

// A chunk search told a time to beat stops once the times so far say no count ahead can beat it.
// Over random times T(k) = A + B/k + C k (B a multiple of every count, so exact), the search
// never stops before a count that beats the time, and stops early where none can.
TEST(BestChunking, StopsOnlyWhereNoCountAheadCanWin) {
  const auto t =
      topo::generate("switch:256");  // 65,280 transfers at one chunk per NPU: a large search
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather);
  std::mt19937_64 rng(77);
  int stopped_early = 0;
  for (int i = 0; i < 500; ++i) {
    const TimeCurve time_at = random_curve(rng);
    Time best = std::numeric_limits<Time>::max();
    for (int k = 1; k <= 64; k *= 2) best = std::min(best, time_at(k));
    const Time to_beat = best + static_cast<Time>(rng() % 400'000) - 200'000;
    auto make = [&](const Collective& cc, Bytes) {
      return claiming(cc, time_at(cc.chunks_per_npu));
    };
    const ChunkingResult r =
        best_chunking(c, Bytes{1} << 30, 64, make, 1, {}, int64_t{1} << 40, to_beat);
    const ChunkingResult all = best_chunking(c, Bytes{1} << 30, 64, make, 1, {}, int64_t{1} << 40);
    ASSERT_LE(r.tried.size(), all.tried.size()) << i;
    if (all.algorithm.claimed_time < to_beat) {
      EXPECT_EQ(r.algorithm.claimed_time, all.algorithm.claimed_time) << i;
    }
    stopped_early += r.tried.size() < all.tried.size();
  }
  EXPECT_GT(stopped_early, 100);
}

// The matcher's variants double alone past the search's last count where one of them was the
// fastest there. A Broadcast over NPUs 0-7 of random fabric 169 (no flow plan for a group): the
// search ends at 64 x 8 = 512 chunks, still gaining (336.6 us at 256, 336.2 at 512); at 1024 the
// matcher takes 333.9 us, at 2048 335.9 (no gain: the doubling stops). Measured whole, that
// fabric's Broadcast of 256 MiB went from 1.087x the bound (512 chunks) to 1.059x (1024).
TEST(BestChunking, TheMatcherGoesOnPastTheLastCountWhileItGains) {
  const topo::Topology t = topo::generate("random-fabric:169");
  Collective c = Collective::over_all(t, CollectiveKind::Broadcast);
  c.ranks = {0, 1, 2, 3, 4, 5, 6, 7};
  const ChunkingResult r = synthesize_auto_chunks(t, c, 16 << 20);
  Time searched = std::numeric_limits<Time>::max();
  std::vector<int> alone;
  for (const ChunkingResult::Try& x : r.tried) {
    if (!x.alone) searched = std::min(searched, x.time);
    if (x.alone == SynthMethod::Matcher) alone.push_back(x.chunks_per_npu);
  }
  EXPECT_EQ(alone, (std::vector<int>{1024, 2048}));
  EXPECT_EQ(r.chunks_per_npu, 1024);
  EXPECT_LT(r.algorithm.claimed_time, searched);
  EXPECT_TRUE(r.algorithm.provenance == Provenance(Producer::Matcher)) << r.algorithm.method;
  const Report report = verify(t, r.algorithm, {.max_reported = 3});
  EXPECT_TRUE(report.correct()) << testing::violation_text(report);
}

// Where the plans' doubling alone beat the matcher's answer past the search, the matcher's
// variants double only where their own last gain in the search, gained again, beats that by
// kDoublingGain. mi250-box.yaml, All-Gather of 1 GiB: the search's fastest is the random matcher's
// 3.425 ms at 64 chunks per NPU (3.507 ms at 32: gained again, 3.343 ms); the pipelines alone reach
// 3.325 ms at 1024, so the matcher is not made at 128, where it took 3.359 ms (0.07 s of the
// command's 0.6 s of CPU) and lost.
TEST(BestChunking, TheMatcherDoesNotDoubleWhereItsTrendCannotBeatThePlans) {
  const topo::Topology t = testing::example_with_steps("mi250-box.yaml");
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather);
  const ChunkingResult r = synthesize_auto_chunks(t, c, Bytes{1} << 30);
  int largest = 0;
  bool pipelines = false;
  for (const ChunkingResult::Try& x : r.tried) {
    EXPECT_NE(x.alone, SynthMethod::Matcher) << x.chunks_per_npu;
    pipelines = pipelines || x.alone == SynthMethod::PlanPipeline;
    if (!x.alone) largest = std::max(largest, x.chunks_per_npu);
  }
  EXPECT_TRUE(pipelines);
  // Made in full at the count left out, neither random run beats the answer by 0.5 %.
  Collective at = c;
  at.chunks_per_npu = 2 * largest;
  for (const bool yield : {false, true}) {
    SynthOptions o;
    o.method = SynthMethod::Matcher;
    o.matcher.priority = ChunkPriority::Random;
    o.matcher.slow_links_yield = yield;
    const Algorithm a = synthesize(t, at, at.chunk_bytes_for(Bytes{1} << 30), o);
    EXPECT_GE(static_cast<double>(a.claimed_time),
              (1 - kDoublingGain) * static_cast<double>(r.algorithm.claimed_time))
        << yield;
  }
  EXPECT_TRUE(verify(t, r.algorithm).correct());
}

// A rival (a time something raced afterwards reaches) ends a large search once two counts say that
// no count ahead beats it, and never hides a count that does: over random T(k) = A + B/k + C k,
// whenever the full search's fastest beats the rival, the search with it finds the same; the rival
// is asked once at most, at the first large count after the first, and searches end sooner with
// it.
TEST(BestChunking, ARivalEndsTheSearchWhereNoCountAheadBeatsIt) {
  const auto t = topo::generate("switch:256");
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather);
  std::mt19937_64 rng(79);
  int shorter = 0;
  for (int i = 0; i < 500; ++i) {
    const TimeCurve time_at = random_curve(rng);
    auto make = [&](const Collective& cc, Bytes) -> ChunkMade {
      return claiming(cc, time_at(cc.chunks_per_npu));
    };
    const ChunkingResult all = best_chunking(c, Bytes{1} << 30, 64, make, 1, {}, int64_t{1} << 40);
    const Time rival = all.algorithm.claimed_time + static_cast<Time>(rng() % 400'000) - 200'000;
    int asked = 0, asked_at = 0;
    Made<ChunkingResult> searched =
        search_chunks(c, Bytes{1} << 30, 64, make, 1, {}, int64_t{1} << 40, -1, 0, nullptr,
                      [&](const Collective& at) {
                        ++asked;
                        asked_at = at.chunks_per_npu;
                        return rival;
                      });
    ChunkingResult* r = made(searched);
    ASSERT_NE(r, nullptr) << i;
    EXPECT_LE(asked, 1) << i;
    // Asked with the collective at the second count (every count here is large; Blink's trees
    // are made there), once the search got there.
    EXPECT_EQ(asked, all.tried.size() > 1 ? 1 : 0) << i;
    if (asked == 1) {
      EXPECT_EQ(asked_at, 2) << i;
    }
    if (all.algorithm.claimed_time < rival) {
      EXPECT_EQ(r->algorithm.claimed_time, all.algorithm.claimed_time) << i;
    }
    if (asked == 0) {
      EXPECT_EQ(r->tried.size(), all.tried.size()) << i;
    }
    EXPECT_LE(r->tried.size(), all.tried.size()) << i;
    shorter += r->tried.size() < all.tried.size();
  }
  EXPECT_GT(shorter, 10);  // the rival ended searches early
}

// The rival is asked before the second count is made: where the first count's time, halved at
// most per doubling (over `bound`), cannot reach it within the counts allowed, no second count is
// made; where it can, the search goes on. (Tenet's own search against a ring 14x faster at one
// chunk per NPU: dragonfly:8x16x8 All-Reduce of 1 GiB.)
TEST(BestChunking, ARivalOutOfReachEndsTheSearchBeforeTheSecondCount) {
  const auto t = topo::generate("switch:256");
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather);
  constexpr Time kRival = 100'000;
  auto search = [&](Time first, Time bound) {
    int made_counts = 0;
    auto make = [&](const Collective& cc, Bytes) -> ChunkMade {
      ++made_counts;
      return claiming(cc, first / cc.chunks_per_npu);
    };
    Made<ChunkingResult> r = search_chunks(
        c, Bytes{1} << 30, 64, make, 1, {}, int64_t{1} << 40, -1, 0, nullptr,
        [&](const Collective&) { return kRival; }, 0, bound);
    EXPECT_NE(made(r), nullptr);
    return made_counts;
  };
  EXPECT_EQ(search(65 * kRival, 0), 1);       // 65 / 64 over the rival at 64 chunks per NPU
  EXPECT_GT(search(63 * kRival, 0), 1);       // 63 / 64 under it
  EXPECT_EQ(search(20 * kRival, 90'000), 1);  // its excess over 90 us halved: 1.2x the rival at 64
  EXPECT_GT(search(20 * kRival, 0), 1);
}

// The last rival (an All-Reduce's halves' answers, made anyway) is asked once, before the last
// count the limits allow, with that count's collective and the fastest so far: where the count
// before, halved at most per doubling, cannot beat it there, the last count is not made; where it
// can, or where nothing was made (-1), it is. The last count is the one past which the chunks or
// the transfer budget stop the search.
TEST(BestChunking, ALastRivalSparesTheLastCountWhereItCannotBeBeaten) {
  const auto t = topo::generate("switch:256");
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather);
  constexpr Time kLast = 100'000;
  struct Run {
    int made = 0, asked = 0, asked_at = 0;
    Time fastest_then = -1;
  };
  auto search = [&](Time first, Time last, int64_t budget) {
    Run run;
    auto make = [&](const Collective& cc, Bytes) -> ChunkMade {
      ++run.made;
      return claiming(cc, first / cc.chunks_per_npu);
    };
    Made<ChunkingResult> r =
        search_chunks(c, Bytes{1} << 30, 64, make, 1, {}, budget, -1, 0, nullptr, {}, 0, 0,
                      [&](const Collective& at, const Algorithm& fastest) {
                        ++run.asked;
                        run.asked_at = at.chunks_per_npu;
                        run.fastest_then = fastest.claimed_time;
                        return last;
                      });
    EXPECT_NE(made(r), nullptr);
    return run;
  };
  const int64_t unlimited = int64_t{1} << 40;
  Run run = search(65 * kLast, kLast, unlimited);  // 65 / 64 over it at 64 chunks per NPU
  EXPECT_EQ(run.made, 6);                          // 1 to 32
  EXPECT_EQ(run.asked, 1);
  EXPECT_EQ(run.asked_at, 64);
  EXPECT_EQ(run.fastest_then, 65 * kLast / 32);
  EXPECT_EQ(search(63 * kLast, kLast, unlimited).made, 7);  // 63 / 64 under it: 64 made
  EXPECT_EQ(search(65 * kLast, -1, unlimited).made, 7);     // nothing made anyway
  // The transfer budget ends the search past 32 chunks per NPU: 32 is the last count.
  Collective at32 = c;
  at32.chunks_per_npu = 32;
  run = search(33 * kLast, kLast, transfer_estimate(at32));  // 33 / 32 over it at 32
  EXPECT_EQ(run.made, 5);
  EXPECT_EQ(run.asked_at, 32);
  EXPECT_EQ(search(31 * kLast, kLast, transfer_estimate(at32)).made, 6);
}

// The last rival's making takes time (the halves' searches): where the deadline passed meanwhile
// (here an interruption while it is made), the last count is not made either, and the search says
// it stopped.
TEST(BestChunking, ALastRivalPastTheDeadlineEndsTheSearch) {
  const auto t = topo::generate("switch:256");
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather);
  Deadline deadline;
  int made_counts = 0;
  auto make = [&](const Collective& cc, Bytes) -> ChunkMade {
    ++made_counts;
    return claiming(cc, 6'300'000 / cc.chunks_per_npu);  // 64 would beat the rival
  };
  Made<ChunkingResult> r =
      search_chunks(c, Bytes{1} << 30, 64, make, 1, {}, int64_t{1} << 40, -1, 0, &deadline, {}, 0,
                    0, [&](const Collective&, const Algorithm&) {
                      deadline.interrupt();
                      return Time{100'000};
                    });
  ASSERT_NE(made(r), nullptr);
  EXPECT_EQ(made_counts, 6);  // 1 to 32
  EXPECT_TRUE(deadline.stopped());
}

// Over random T(k) = A + B/k + C k (each doubling at most halves a time: T(2k) >= T(k) / 2), the
// last rival never hides a count that beats it: whenever the full search's fastest beats the last
// rival, the search with it finds the same, and it is asked at most once, at the last count.
TEST(BestChunking, ALastRivalNeverHidesACountThatBeatsIt) {
  const auto t = topo::generate("switch:256");
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather);
  std::mt19937_64 rng(83);
  int spared = 0;
  for (int i = 0; i < 500; ++i) {
    const TimeCurve time_at = random_curve(rng);
    auto make = [&](const Collective& cc, Bytes) -> ChunkMade {
      return claiming(cc, time_at(cc.chunks_per_npu));
    };
    const ChunkingResult all = best_chunking(c, Bytes{1} << 30, 64, make, 1, {}, int64_t{1} << 40);
    const Time last = all.algorithm.claimed_time + static_cast<Time>(rng() % 400'000) - 200'000;
    int asked = 0;
    Made<ChunkingResult> searched =
        search_chunks(c, Bytes{1} << 30, 64, make, 1, {}, int64_t{1} << 40, -1, 0, nullptr, {}, 0,
                      0, [&](const Collective& at, const Algorithm&) {
                        ++asked;
                        EXPECT_EQ(at.chunks_per_npu, 64) << i;
                        return last;
                      });
    ChunkingResult* r = made(searched);
    ASSERT_NE(r, nullptr) << i;
    EXPECT_LE(asked, 1) << i;
    if (all.algorithm.claimed_time < last) {
      EXPECT_EQ(r->algorithm.claimed_time, all.algorithm.claimed_time) << i;
    }
    EXPECT_LE(r->tried.size(), all.tried.size()) << i;
    spared += r->tried.size() < all.tried.size();
  }
  EXPECT_GT(spared, 10);  // the last rival spared last counts
}

// Past kAutoChunkTurnTransfers, a count more than kChunkSearchTurn slower than the fastest found at
// the count before ends the search (the next would cost twice as much to build); a smaller rise or
// a rise after an earlier fastest goes on. Below it, where asked (`steep_turn`: tenet's flat
// search), a count over steep_turn slower than the fastest found at the count before ends it too
// where the times had fallen to that fastest (a first count's fastest may be a lucky one); the
// baselines' searches do not ask: a rise there may fall back below the fastest (the double binary
// tree's All-Reduce on switch:16, 48.08 -> 52.67 -> 47.49 ms at 8, 16 and 32 chunks per NPU).
// From kFlatSearchCheapTransfers the flat search also ends at the second count in a row that gains
// nothing on the fastest.
TEST(BestChunking, ATurnPastTheFastestEndsASearch) {
  const auto t = topo::generate("switch:4");
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather);
  auto search = [&](std::map<int, Time> times, int64_t transfers, double steep_turn = 0) {
    auto make = [&](const Collective& cc, Bytes) -> ChunkMade {
      Algorithm x = claiming(cc, times.at(cc.chunks_per_npu));
      x.reserve(static_cast<size_t>(transfers), 0, 0);
      for (int64_t i = 0; i < transfers; ++i) x.add(0, 0, 1, {});
      return x;
    };
    Made<ChunkingResult> r = search_chunks(c, Bytes{1} << 30, 16, make, 1, {}, int64_t{1} << 40, -1,
                                           0, nullptr, {}, steep_turn);
    return std::get<ChunkingResult>(std::move(r));
  };
  auto falling_to = [](Time at4) {
    return std::map<int, Time>{{1, 100'000}, {2, 80'000}, {4, at4}, {8, 90'000}, {16, 10'000}};
  };
  const ChunkingResult turned = search(falling_to(85'000), kAutoChunkTurnTransfers);
  EXPECT_EQ(turned.tried.size(), 3u);  // 6 % over 80
  EXPECT_EQ(turned.chunks_per_npu, 2);
  EXPECT_EQ(search(falling_to(81'000), kAutoChunkTurnTransfers).chunks_per_npu, 16);  // 1.25 %
  // Cheaper: on, unless asked; then 6 % ends it and 4 % goes on.
  const int64_t cheap = kAutoChunkTurnTransfers / 2;
  EXPECT_EQ(search(falling_to(85'000), cheap).chunks_per_npu, 16);
  const ChunkingResult steep = search(falling_to(85'000), cheap, kChunkSearchSteepTurn);
  EXPECT_EQ(steep.tried.size(), 3u);
  EXPECT_EQ(steep.chunks_per_npu, 2);
  EXPECT_EQ(search(falling_to(83'000), cheap, kChunkSearchSteepTurn).chunks_per_npu, 16);
  // The first count's fastest: on.
  EXPECT_EQ(search({{1, 80'000}, {2, 90'000}, {4, 95'000}, {8, 97'000}, {16, 10'000}}, cheap,
                   kChunkSearchSteepTurn)
                .chunks_per_npu,
            16);
  // Two counts in a row that gain nothing on the fastest (the first count's too): the flat search
  // ends there where the collective is over kFlatSearchCheapTransfers transfers (switch:64, 4,032
  // at one chunk per NPU); below it (switch:8, 56 per chunk per NPU), and in the baselines'
  // searches, it goes on.
  const std::map<int, Time> flat = {
      {1, 80'000}, {2, 81'000}, {4, 82'000}, {8, 83'000}, {16, 10'000}};
  auto flat_search = [&](const std::string& spec, double steep) {
    const auto on = topo::generate(spec);
    auto make = [&](const Collective& cc, Bytes) -> ChunkMade {
      return claiming(cc, flat.at(cc.chunks_per_npu));
    };
    Made<ChunkingResult> r =
        search_chunks(Collective::over_all(on, CollectiveKind::AllGather), Bytes{1} << 30, 16, make,
                      1, {}, int64_t{1} << 40, -1, 0, nullptr, {}, steep);
    return std::get<ChunkingResult>(std::move(r));
  };
  ASSERT_GT(transfer_estimate(
                Collective::over_all(topo::generate("switch:64"), CollectiveKind::AllGather)),
            kFlatSearchCheapTransfers);
  const ChunkingResult stopped = flat_search("switch:64", kChunkSearchSteepTurn);
  EXPECT_EQ(stopped.tried.size(), 3u);
  EXPECT_EQ(stopped.chunks_per_npu, 1);
  EXPECT_EQ(flat_search("switch:64", 0).chunks_per_npu, 16);
  EXPECT_EQ(flat_search("switch:8", kChunkSearchSteepTurn).chunks_per_npu, 16);
}

// Where the next count would be over kAutoChunkTurnTransfers, three falling times whose fall slows
// (T(k) = A + B/k + C k, B and C > 0) predict the next count's: over random such curves (B a
// multiple of every count, so the prediction is exact), the search ends at the fastest count
// without making the one after it, and finds what every count would; smaller algorithms go on.
TEST(BestChunking, AFallSlowingToItsTurnEndsALargeSearch) {
  const auto t = topo::generate("switch:4");
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather);
  auto with_transfers = [&](int64_t n) {
    Algorithm x = claiming(c, 0);
    x.reserve(static_cast<size_t>(n), 0, 0);
    for (int64_t i = 0; i < n; ++i) x.add(0, 0, 1, {});
    return x;
  };
  const Algorithm large = with_transfers(kAutoChunkTurnTransfers / 2 + 1);
  const Algorithm small = with_transfers(kAutoChunkTurnTransfers / 4);
  std::mt19937_64 rng(83);
  int ended = 0;
  for (int i = 0; i < 60; ++i) {
    const Time a = 1'000'000 + static_cast<Time>(rng() % 1'000'000);
    const Time b = (1 + static_cast<Time>(rng() % 1000)) << 12;
    const Time per = 1 + static_cast<Time>(rng() % 2000);
    const TimeCurve time_at{a, b, per};
    int fastest = 1;
    for (int k = 2; k <= 64; k *= 2)
      if (time_at(k) < time_at(fastest)) fastest = k;
    for (const Algorithm* shape : {&large, &small}) {
      int made_counts = 0;
      auto make = [&](const Collective& cc, Bytes) -> ChunkMade {
        ++made_counts;
        Algorithm x = *shape;
        x.collective = cc;
        x.claimed_time = time_at(cc.chunks_per_npu);
        return x;
      };
      // (The curve's own A as the bound: a fit at the bound is the model's.)
      Made<ChunkingResult> searched = search_chunks(c, Bytes{1} << 30, 64, make, 1, {},
                                                    int64_t{1} << 40, -1, 0, nullptr, {}, 0, a);
      const ChunkingResult* r = made(searched);
      ASSERT_NE(r, nullptr) << i;
      EXPECT_EQ(r->algorithm.claimed_time, time_at(fastest)) << i;
      // The counts up to the fastest where the turn ends the search; else every count (nothing
      // else ends a search of so few chunks: transfer_estimate).
      const bool turns = shape == &large && fastest >= 4 && fastest < 64;
      EXPECT_EQ(made_counts, turns ? std::bit_width(static_cast<unsigned>(fastest)) : 7)
          << i << " fastest " << fastest;
      ended += turns;
    }
  }
  EXPECT_GT(ended, 10);
}

// Three falling times whose fit has its bandwidth term under the lower bound follow no one curve
// (the fastest method changed between counts) and predict nothing: the search goes on. ForestColl's
// 8 MI250 boxes, All-Reduce of 1 GiB (ms): 8.696, 7.939, 7.685 at 2, 4, 8 fit A = 6.93 under the
// bound's bandwidth term (7.34) and predict 7.807 at 16, which made 7.571.
TEST(BestChunking, AFitUnderTheBoundPredictsNoTurn) {
  const auto t = topo::generate("switch:4");
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather);
  Algorithm large = claiming(c, 0);
  large.reserve(static_cast<size_t>(kAutoChunkTurnTransfers / 2 + 1), 0, 0);
  for (int64_t i = 0; i < kAutoChunkTurnTransfers / 2 + 1; ++i) large.add(0, 0, 1, {});
  const std::map<int, Time> ms = {{1, 9'459},  {2, 8'696},  {4, 7'939}, {8, 7'685},
                                  {16, 7'571}, {32, 7'600}, {64, 7'900}};
  auto search = [&](Time bound) {
    auto make = [&](const Collective& cc, Bytes) -> ChunkMade {
      Algorithm x = large;
      x.collective = cc;
      x.claimed_time = ms.at(cc.chunks_per_npu) * 1'000'000;  // ms -> ps
      return x;
    };
    Made<ChunkingResult> r = search_chunks(c, Bytes{1} << 30, 64, make, 1, {}, int64_t{1} << 40, -1,
                                           0, nullptr, {}, 0, bound);
    return std::get<ChunkingResult>(std::move(r));
  };
  EXPECT_EQ(search(0).chunks_per_npu, 8);  // (no bound: the fit's turn ends it at 8)
  const ChunkingResult bounded = search(Time{7'341} * 1'000'000);
  EXPECT_EQ(bounded.chunks_per_npu, 16);
  EXPECT_EQ(bounded.algorithm.claimed_time, Time{7'571} * 1'000'000);
}

// Counts made as CannotBeat (their floor, a lower bound on their time, at least the time to beat)
// are never kept and do not end the search before a count that beats the time: over random times
// T(k) = A + B/k + C k and floors F(k) = (uA + vB/k + wC k)/8 with u, v, w in 0..8, the search
// finds what the full search finds whenever that beats the time, and says NotMade where every count
// was a floor.
// A count past the first that makes nothing (every method left out there: NotMade) ends the
// search with what it has; a first count that makes nothing is the search's answer.
TEST(BestChunking, ACountThatMakesNothingEndsTheSearch) {
  const auto t = topo::generate("switch:4");
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather);
  auto search = [&](int nothing_from) {
    auto make = [&](const Collective& cc, Bytes) -> ChunkMade {
      if (cc.chunks_per_npu >= nothing_from) return NotMade{"left out"};
      return claiming(cc, 100'000 / cc.chunks_per_npu);
    };
    return search_chunks(c, Bytes{1} << 30, 16, make, 1, {}, int64_t{1} << 40, -1, 0, nullptr);
  };
  const Made<ChunkingResult> cut = search(4);
  ASSERT_TRUE(made(cut));
  EXPECT_EQ(made(cut)->chunks_per_npu, 2);
  EXPECT_EQ(made(cut)->tried.size(), 2u);
  EXPECT_EQ(made(cut)->algorithm.claimed_time, 50'000);
  EXPECT_FALSE(made(search(1)));
}

TEST(BestChunking, FloorsStandInForTimesThatCannotWin) {
  const auto t = topo::generate("switch:256");
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather);
  std::mt19937_64 rng(78);
  int floored = 0, all_floored = 0, won = 0;
  for (int i = 0; i < 500; ++i) {
    const TimeCurve time_at = random_curve(rng);
    const Time u = static_cast<Time>(rng() % 9), v = static_cast<Time>(rng() % 9),
               w = static_cast<Time>(rng() % 9);
    auto floor_at = [&](int k) {
      return (u * time_at.a + v * time_at.b / k + w * time_at.per * k) / 8;
    };
    Time best = std::numeric_limits<Time>::max();
    for (int k = 1; k <= 64; k *= 2) best = std::min(best, time_at(k));
    const Time to_beat = best + static_cast<Time>(rng() % 400'000) - 200'000;
    bool threw = false;
    auto make = [&](const Collective& cc, Bytes) -> ChunkMade {
      EXPECT_LE(floor_at(cc.chunks_per_npu), time_at(cc.chunks_per_npu));
      if (floor_at(cc.chunks_per_npu) >= to_beat) {
        threw = true;
        return CannotBeat{floor_at(cc.chunks_per_npu), 0};
      }
      return claiming(cc, time_at(cc.chunks_per_npu));
    };
    auto full = [&](const Collective& cc, Bytes) {
      return claiming(cc, time_at(cc.chunks_per_npu));
    };
    const ChunkingResult all = best_chunking(c, Bytes{1} << 30, 64, full, 1, {}, int64_t{1} << 40);
    std::optional<ChunkingResult> r;
    Made<ChunkingResult> searched =
        search_chunks(c, Bytes{1} << 30, 64, make, 1, {}, int64_t{1} << 40, to_beat);
    if (ChunkingResult* found = made(searched))
      r = std::move(*found);
    else
      ++all_floored;  // every count was a floor
    floored += threw;
    if (all.algorithm.claimed_time < to_beat) {
      ASSERT_TRUE(r) << i;
      EXPECT_EQ(r->algorithm.claimed_time, all.algorithm.claimed_time) << i;
      won += threw;
    } else if (r) {
      EXPECT_GE(r->algorithm.claimed_time, to_beat) << i;
    }
    if (r) {
      // Made counts were under the time to beat; floors are listed as floors, at or over it.
      for (const ChunkingResult::Try& x : r->tried)
        if (x.floor)
          EXPECT_GE(x.time, to_beat) << i;
        else
          EXPECT_LT(floor_at(x.chunks_per_npu), to_beat) << i;
    }
  }
  EXPECT_GT(floored, 100);     // the floors were tried,
  EXPECT_GT(all_floored, 20);  // some searches had nothing but floors,
  EXPECT_GT(won, 20);          // and some found their winner past a floor
}

// With a lower bound on every count's time (search_chunks' `bound`), a count's time over it at
// most halves per doubling: fewer counts ahead can beat to_beat, and the search ends sooner. Over
// random times T(k) = A + B/k + C k, exact floors past to_beat and bounds up to A: the answer is
// the fully timed search's wherever that beats to_beat, and no search tries more counts than it
// does without the bound.
TEST(BestChunking, ABoundEndsTheSearchSooner) {
  const auto t = topo::generate("switch:256");
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather);
  std::mt19937_64 rng(83);
  int shorter = 0, won = 0;
  for (int i = 0; i < 500; ++i) {
    const TimeCurve time_at = random_curve(rng);
    const Time bound = time_at.a * static_cast<Time>(rng() % 9) / 8;
    Time best = std::numeric_limits<Time>::max();
    for (int k = 1; k <= 64; k *= 2) best = std::min(best, time_at(k));
    const Time to_beat = best + static_cast<Time>(rng() % 400'000) - 200'000;
    int counts = 0;
    auto make = [&](const Collective& cc, Bytes) -> ChunkMade {
      ++counts;
      const Time now = time_at(cc.chunks_per_npu);
      if (now >= to_beat) return CannotBeat{now, 0};
      return claiming(cc, now);
    };
    auto search = [&](Time under) {
      counts = 0;
      return search_chunks(c, Bytes{1} << 30, 64, make, 1, {}, int64_t{1} << 40, to_beat, 0,
                           nullptr, {}, 0, under);
    };
    const Made<ChunkingResult> plain = search(0);
    const int plain_counts = counts;
    const Made<ChunkingResult> bounded = search(bound);
    EXPECT_LE(counts, plain_counts) << i;
    shorter += counts < plain_counts;
    ASSERT_EQ(made(bounded) != nullptr, made(plain) != nullptr) << i;
    if (best < to_beat) {
      ASSERT_NE(made(bounded), nullptr) << i;
      EXPECT_EQ(made(bounded)->algorithm.claimed_time, best) << i;
      ++won;
    }
  }
  EXPECT_GT(won, 100);
  EXPECT_GT(shorter, 50);
}

// The flat search times a count only where its floor beats the fastest so far
// (SynthOptions::to_beat); a floor at or over the fastest gains nothing, as a slower time would
// not, and asks the rival as such a time would. Over random times T(k) = A + B/k + C k and floors
// (uA + vB/k + wC k)/8: the answer is never slower than the fully timed search's (with a rival,
// where that beats the rival), every count not timed is listed as a floor at or over the answer,
// and with exact floors (u = v = w = 8) and no rival the search tries the same counts.
TEST(BestChunking, FloorsOverTheFastestEndTheSearchAsTimesDo) {
  const auto t = topo::generate("switch:256");
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather);
  std::mt19937_64 rng(91);
  int floors = 0, rivals = 0;
  for (int i = 0; i < 400; ++i) {
    const TimeCurve time_at = random_curve(rng);
    const bool exact = i % 2 == 0, with_rival = i % 4 >= 2;
    const Time u = exact ? 8 : static_cast<Time>(rng() % 9),
               v = exact ? 8 : static_cast<Time>(rng() % 9),
               w = exact ? 8 : static_cast<Time>(rng() % 9);
    auto floor_at = [&](int k) {
      return (u * time_at.a + v * time_at.b / k + w * time_at.per * k) / 8;
    };
    Time fastest = -1;
    auto flat = [&](const Collective& cc, Bytes) -> ChunkMade {
      const int k = cc.chunks_per_npu;
      if (fastest > 0 && floor_at(k) >= fastest) return CannotBeat{floor_at(k), 0};
      if (fastest < 0 || time_at(k) < fastest) fastest = time_at(k);
      return claiming(cc, time_at(k));
    };
    auto full = [&](const Collective& cc, Bytes) {
      return claiming(cc, time_at(cc.chunks_per_npu));
    };
    const ChunkingResult all = best_chunking(c, Bytes{1} << 30, 64, full, 1, {}, int64_t{1} << 40);
    const Time rival = all.algorithm.claimed_time + static_cast<Time>(rng() % 400'000) - 200'000;
    int asked = 0, asked_timed = 0;
    const std::function<Time(const Collective&)> ask = [&](const Collective&) {
      ++asked;
      return rival;
    };
    Made<ChunkingResult> searched =
        search_chunks(c, Bytes{1} << 30, 64, flat, 1, {}, int64_t{1} << 40, -1, 0, nullptr,
                      with_rival ? ask : std::function<Time(const Collective&)>());
    if (with_rival) {
      // Timed throughout, the same search asks the rival at the same count: exact floors ask it
      // too.
      search_chunks(c, Bytes{1} << 30, 64, full, 1, {}, int64_t{1} << 40, -1, 0, nullptr,
                    [&](const Collective&) {
                      ++asked_timed;
                      return rival;
                    });
      if (exact) {
        EXPECT_EQ(asked, asked_timed) << i;
      }
      rivals += asked;
    }
    const ChunkingResult* r = made(searched);
    ASSERT_NE(r, nullptr) << i;
    if (!with_rival || all.algorithm.claimed_time < rival) {
      EXPECT_LE(r->algorithm.claimed_time, all.algorithm.claimed_time) << i;
    }
    for (const ChunkingResult::Try& x : r->tried) {
      floors += x.floor;
      if (x.floor) {
        EXPECT_GE(x.time, r->algorithm.claimed_time) << i;
      }
    }
    if (exact && !with_rival) {
      EXPECT_EQ(r->chunks_per_npu, all.chunks_per_npu) << i;
      ASSERT_EQ(r->tried.size(), all.tried.size()) << i;
      for (size_t j = 0; j < r->tried.size(); ++j)
        EXPECT_EQ(r->tried[j].chunks_per_npu, all.tried[j].chunks_per_npu) << i;
    }
  }
  EXPECT_GT(floors, 100);  // the counts not timed
  EXPECT_GT(rivals, 50);   // and the rivals asked at them or at slower times
}

// The synthesizer honours SynthOptions::to_beat: with a time it cannot beat, the matcher's
// All-Gather and All-Reduce (its joined halves) claim their floor (synth::time_floor), untimed, and
// say so; with none, or one they beat, they are timed as always.
TEST(BestChunking, ToBeatLeavesALosingCountUntimed) {
  const auto t = testing::charging(topo::generate("hypercube:8"));
  for (CollectiveKind kind : {CollectiveKind::AllGather, CollectiveKind::AllReduce}) {
    const Collective c = Collective::over_all(t, kind, 2);
    SynthOptions o;
    o.method = SynthMethod::Matcher;
    const Algorithm timed = synthesize(t, c, Bytes{1} << 20, o);
    EXPECT_EQ(timed.claimed_time, model_time(t, timed)) << to_string(kind);
    bool floored = false;
    o.floored = &floored;
    o.to_beat = 1;  // nothing beats a picosecond
    const Algorithm a = synthesize(t, c, Bytes{1} << 20, o);
    EXPECT_TRUE(floored) << to_string(kind);
    EXPECT_EQ(a.claimed_time, time_floor(t, a)) << to_string(kind);
    EXPECT_LE(a.claimed_time, timed.claimed_time) << to_string(kind);
    floored = false;
    o.to_beat = 2 * timed.claimed_time;
    const Algorithm b = synthesize(t, c, Bytes{1} << 20, o);
    EXPECT_FALSE(floored) << to_string(kind);
    EXPECT_EQ(b.claimed_time, timed.claimed_time) << to_string(kind);
  }
}

// The plans' doubling past the search is not begun where what they made in it says that it cannot
// win. nvcluster:2x8, an All-Gather of 64 MiB with per-step costs (as the CLI charges them): the
// pipelines and the server plan end the search far behind the matcher on the server plan, so
// neither doubles alone, and the pipelines at the next count are indeed no faster. (On
// switch-cluster.yaml, this test's fabric before the pipelines sent messages, their gain from 32
// to 64 chunks per NPU now says they may win, and they double once.)
TEST(BestChunking, PlansThatCannotWinDoNotDouble) {
  topo::Topology t = topo::generate("nvcluster:2x8");
  t.set_charges_steps(true);
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather);
  const Bytes total = Bytes{64} << 20;
  const ChunkingResult r = synthesize_auto_chunks(t, c, total);
  int largest = 1;
  for (const ChunkingResult::Try& x : r.tried) {
    EXPECT_FALSE(x.alone == SynthMethod::PlanPipeline || x.alone == SynthMethod::ServerPlan)
        << x.chunks_per_npu;
    largest = std::max(largest, x.chunks_per_npu);
  }
  Collective next = c;
  next.chunks_per_npu = 2 * largest;
  SynthOptions pipelines;
  pipelines.method = SynthMethod::PlanPipeline;
  EXPECT_GE(synthesize(t, next, next.chunk_bytes_for(total), pipelines).claimed_time,
            r.algorithm.claimed_time);
  const Report report = verify(t, r.algorithm, {.max_reported = 3});
  EXPECT_TRUE(report.correct()) << testing::violation_text(report);
}

}  // namespace
}  // namespace tenet::synth
