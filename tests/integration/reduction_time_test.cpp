// Reduction time in the IR (Algorithm::reduce_bandwidth): the timing model, the verifier, the
// simulator's replay and the file formats agree on it, and it equals the closed form.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "astra/analytical.hpp"
#include "chakra/collective_graph.hpp"
#include "sim/collective_engine.hpp"
#include "synth/cost/timing.hpp"
#include "synth/formats/algorithm_json.hpp"
#include "synth/producers.hpp"
#include "synth/verify/verify.hpp"
#include "tests/synth/test_support.hpp"
#include "topo/generators.hpp"

namespace tenet::synth {
namespace {

using ::testing::HasSubstr;

constexpr Bytes kChunk = 1 << 20;                                       // 1 MiB
constexpr Bandwidth kReduce = 50'000'000'000;                           // 50 GB/s
const Time kStep = 1'000'000 + transfer_time(kChunk, 100'000'000'000);  // 1 us + 1 MiB at 100 GB/s
const Time kReduction = transfer_time(kChunk, kReduce);

// A unidirectional ring's single-channel ring: every step's send waits for the reduction of what
// the step before brought, so Reduce-Scatter takes (N-1)(alpha + s/B + s/R) and All-Reduce adds the
// All-Gather's (N-1)(alpha + s/B), whose copies reduce nothing.
TEST(ReductionTime, RingReduceScatterAndAllReduceEqualTheClosedForm) {
  for (int n : {2, 4, 8}) {
    const auto t = topo::generate(fmt::format("ring:{},bidir=false,bw=100GB/s,lat=1us", n));
    for (CollectiveKind kind : {CollectiveKind::ReduceScatter, CollectiveKind::AllReduce}) {
      const Collective c = Collective::over_all(t, kind);
      SynthOptions o;
      o.reduce_bandwidth = kReduce;
      Algorithm a = make_algorithm("ring:1", t, c, kChunk, o);
      const Time all_gather = kind == CollectiveKind::AllReduce ? (n - 1) * kStep : 0;
      const Time expected = (n - 1) * (kStep + kReduction) + all_gather;
      const std::string what = fmt::format("{} on ring:{}", to_string(kind), n);
      EXPECT_EQ(a.reduce_bandwidth, kReduce) << what;
      EXPECT_EQ(a.reduction_time(), kReduction) << what;
      EXPECT_EQ(a.claimed_time, expected) << what;
      EXPECT_EQ(a.makespan(), expected) << what;
      const Report r = verify(t, a);
      EXPECT_TRUE(r.correct()) << what
                               << (r.violations.empty() ? "" : ": " + r.violations[0].message);
      EXPECT_EQ(r.collective_time, expected) << what;
      EXPECT_EQ(sim::replay(t, a, sim::NetworkKind::Analytical), expected) << what;
      // Free reductions: the plain ring again.
      set_reduce_bandwidth(t, a, 0);
      EXPECT_EQ(a.claimed_time, (n - 1) * kStep + all_gather) << what;
    }
  }
}

// Routes through switches and several chunks per NPU take the event-driven timing; the simulator
// and the verifier still agree with the claim, and the claim grows with the reductions' cost.
TEST(ReductionTime, SynthesizedAlgorithmsReplayAndVerifyAtTheirClaim) {
  for (const char* spec : {"switch:8", "ring:4 x switch:2", "torus2d:3x3"}) {
    const auto t = topo::generate(spec);
    for (CollectiveKind kind :
         {CollectiveKind::ReduceScatter, CollectiveKind::AllReduce, CollectiveKind::Reduce}) {
      const Collective c = Collective::over_all(t, kind, 2);
      const std::string what = fmt::format("{} on {}", to_string(kind), spec);
      Algorithm free = make_algorithm("tenet", t, c, 256 << 10);
      SynthOptions o;
      o.reduce_bandwidth = 20'000'000'000;
      Algorithm a = make_algorithm("tenet", t, c, 256 << 10, o);
      EXPECT_EQ(a.reduce_bandwidth, o.reduce_bandwidth) << what;
      EXPECT_GT(a.claimed_time, free.claimed_time) << what;
      const Report r = verify(t, a);
      EXPECT_TRUE(r.correct()) << what
                               << (r.violations.empty() ? "" : ": " + r.violations[0].message);
      EXPECT_EQ(r.collective_time, a.claimed_time) << what;
      EXPECT_EQ(sim::replay(t, a, sim::NetworkKind::Analytical), a.claimed_time) << what;
    }
  }
  // A collective that reduces nothing has no reductions to time.
  const auto t = topo::generate("switch:4");
  SynthOptions o;
  o.reduce_bandwidth = kReduce;
  EXPECT_EQ(
      make_algorithm("tenet", t, Collective::over_all(t, CollectiveKind::AllGather), kChunk, o)
          .reduce_bandwidth,
      0);
}

// An algorithm timed as if reductions were free, then said to reduce at 50 GB/s: the sends that
// forward a reduced chunk start before it has been reduced, and the verifier says so.
TEST(ReductionTime, TheVerifierCatchesASendBeforeItsReductionEnds) {
  const auto t = topo::generate("ring:4,bidir=false,bw=100GB/s,lat=1us");
  Algorithm a =
      make_algorithm("ring:1", t, Collective::over_all(t, CollectiveKind::ReduceScatter), kChunk);
  a.reduce_bandwidth = kReduce;
  const Report r = verify(t, a);
  ASSERT_FALSE(r.correct());
  bool early = false;
  for (const Violation& v : r.violations)
    if (v.kind == ViolationKind::DependencyViolated || v.kind == ViolationKind::SourceLacksData) {
      early = true;
      EXPECT_THAT(v.message, HasSubstr("reduced"));
    }
  EXPECT_TRUE(early);
  a.reduce_bandwidth = -1;
  EXPECT_THAT(verify(t, a).violations[0].message, HasSubstr("reduction bandwidth is negative"));
}

// Files keep it: JSON (reduce_Bps) and Chakra (tenet_reduce_bandwidth, with COMP nodes of its
// duration in whole microseconds); ASTRA-sim's reading of the graph takes Tenet's time when the
// duration is whole.
TEST(ReductionTime, FilesKeepTheReductionBandwidth) {
  const auto t = topo::generate("ring:4 x switch:2");
  SynthOptions o;
  o.reduce_bandwidth = 1'000'000'000'000;  // 1,000,000 B at 1 TB/s: 1 us, a whole duration_micros
  const Algorithm a =
      make_algorithm("tenet", t, Collective::over_all(t, CollectiveKind::AllReduce), 1'000'000, o);
  ASSERT_EQ(a.reduction_time(), 1'000'000);
  const Algorithm j = parse_algorithm_json(to_json(a));
  EXPECT_EQ(j.reduce_bandwidth, a.reduce_bandwidth);
  EXPECT_EQ(verify(t, j).collective_time, a.claimed_time);
  EXPECT_THAT(to_json(a), HasSubstr("\"reduce_Bps\": 1000000000000,"));
  EXPECT_THAT(
      [&] {
        parse_algorithm_json(
            testing::replaced(to_json(a), "\"reduce_Bps\": 1", "\"reduce_Bps\": -1"), "f.json");
      },
      ::testing::ThrowsMessage<Error>(HasSubstr("reduce_Bps")));

  const std::vector<chakra::EtFile> files = chakra::to_collective_graph(a, t);
  int comps = 0;
  for (const chakra::EtFile& f : files)
    for (const chakra::Node& n : f.nodes)
      if (n.type() == ChakraProtoMsg::COMP_NODE) {
        ++comps;
        EXPECT_EQ(n.duration_micros(), 1u);
      }
  EXPECT_GT(comps, 0);
  const Algorithm back = chakra::from_collective_graph(files, t, "memory");
  EXPECT_EQ(back.reduce_bandwidth, a.reduce_bandwidth);
  const Report r = verify(t, back);
  EXPECT_TRUE(r.correct()) << (r.violations.empty() ? "" : r.violations[0].message);
  EXPECT_EQ(r.collective_time, a.claimed_time);
  const Time astra = astra::run_as_astra_sim(files, t).time;
  EXPECT_NEAR(static_cast<double>(astra) / static_cast<double>(a.claimed_time), 1.0, 0.01);
}

}  // namespace
}  // namespace tenet::synth
