// The answer's drain at full rate (synth/plans/full_rate_drain.hpp): the pipelines' last transfers
// at their routes' full rate end sooner where the links stand idle at the end, the algorithm still
// verifies, the floor that decides which tails are timed is under what each takes, an algorithm
// whose transfers have no rates of their own is left as it is, a chunk search drains its answer,
// and nothing is timed past the deadline. (Every producer on 1000 random fabrics, drained from
// every tail: tests/synth/bounds/bound_property_test.cpp; how near the bound the MI250 box's
// drained All-Gather comes: tests/quality/flow_plan_quality_test.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>

#include "synth/baselines/baselines.hpp"
#include "synth/bounds/lower_bound.hpp"
#include "synth/plans/full_rate_drain.hpp"
#include "synth/synthesizer.hpp"
#include "synth/tuning.hpp"
#include "synth/verify/verify.hpp"
#include "tests/synth/test_support.hpp"
#include "topo/generators.hpp"

namespace tenet::synth {
namespace {

using detail::drain_at_full_rate;
using detail::drained_floor;
using detail::drained_from;

// The MI250 box's All-Gather in the flow plan's pipelines (`mi250-box.yaml`, steps charged), 256
// chunks per NPU of 1 GiB: its links stand mostly idle in its last few percent while the trees'
// last chunks crawl down at their fluid rates.
Algorithm mi250_pipelines() {
  const topo::Topology t = testing::example_with_steps("mi250-box.yaml");
  Collective c = Collective::over_all(t, CollectiveKind::AllGather);
  c.chunks_per_npu = 256;
  SynthOptions o;
  o.method = SynthMethod::PlanPipeline;
  return synthesize(t, c, c.chunk_bytes_for(Bytes{1} << 30), o);
}

TEST(FullRateDrain, ThePipelinesLastTransfersAtFullRateEndSooner) {
  const topo::Topology t = testing::example_with_steps("mi250-box.yaml");
  const Algorithm made = mi250_pipelines();
  ASSERT_TRUE(made.has_rates());
  Algorithm a = made;
  ASSERT_TRUE(drain_at_full_rate(t, a, nullptr)) << made.method;
  EXPECT_LT(static_cast<double>(a.claimed_time),
            (1 - kDrainGain) * static_cast<double>(made.claimed_time));
  // The tail it drained from is one of the ladder's, and only transfers that started in it, in
  // the algorithm as made, lost their rates.
  const double tail = a.provenance.full_rate_drain;
  EXPECT_NE(std::find(std::begin(kDrainTails), std::end(kDrainTails), tail), std::end(kDrainTails));
  const Time span = made.makespan();
  const Time cut = detail::drain_cut(span, tail);
  ASSERT_EQ(a.size(), made.size());
  int re_rated = 0;
  for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id)
    if (a.rate(id) != made.rate(id)) {
      EXPECT_EQ(a.rate(id), 0) << id;
      EXPECT_GE(made[id].start, cut) << id;
      ++re_rated;
    }
  EXPECT_GT(re_rated, 0);
  const Report r = verify(t, a);
  EXPECT_TRUE(r.correct()) << testing::violation_text(r);
  EXPECT_EQ(r.collective_time, a.claimed_time);
  EXPECT_GE(a.claimed_time, drained_floor(t, made, cut, span));
  EXPECT_GE(a.claimed_time, lower_bound(t, a.collective, a.chunk_bytes).total);
}

// Each tail's floor is under what the drain from it takes (the floor decides which tails are
// timed at all).
TEST(FullRateDrain, EachTailsFloorIsUnderItsTime) {
  const topo::Topology t = testing::example_with_steps("mi250-box.yaml");
  const Algorithm made = mi250_pipelines();
  const Time span = made.makespan();
  for (double tail : kDrainTails) {
    const Time cut = detail::drain_cut(span, tail);
    const std::optional<Algorithm> b = drained_from(t, made, cut);
    ASSERT_TRUE(b) << tail;
    EXPECT_LE(drained_floor(t, made, cut, span), b->claimed_time) << tail;
    EXPECT_GT(drained_floor(t, made, cut, span), cut) << tail;
  }
}

// A ring's transfers take their links' full rate already: nothing to drain, nothing timed.
TEST(FullRateDrain, AnAlgorithmAtFullRatesIsLeftAsItIs) {
  const topo::Topology t = testing::charging(topo::generate("ring:8"));
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather);
  Algorithm a = make_baseline(BaselineSpec{BaselineKind::Ring, {}}, t, c, Bytes{1} << 20);
  ASSERT_FALSE(a.has_rates());
  const Time before = a.claimed_time;
  EXPECT_FALSE(drain_at_full_rate(t, a, nullptr));
  EXPECT_EQ(a.claimed_time, before);
  EXPECT_EQ(a.provenance.full_rate_drain, 0);
  EXPECT_FALSE(drained_from(t, a, 0));
}

// A chunk search drains its answer: the MI250 box's All-Gather of 256 MiB ends sooner than every
// count it tried (their times are the answers before the drain), and verifies.
TEST(FullRateDrain, AChunkSearchDrainsItsAnswer) {
  const topo::Topology t = testing::example_with_steps("mi250-box.yaml");
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather);
  const ChunkingResult r = synthesize_auto_chunks(t, c, Bytes{256} << 20);
  EXPECT_GT(r.algorithm.provenance.full_rate_drain, 0);
  ASSERT_FALSE(r.tried.empty());
  for (const ChunkingResult::Try& x : r.tried)
    EXPECT_LT(r.algorithm.claimed_time, x.time) << x.chunks_per_npu;
  EXPECT_TRUE(verify(t, r.algorithm).correct());
  SynthOptions o;
  o.portfolio.full_rate_drain = false;
  EXPECT_EQ(synthesize_auto_chunks(t, c, Bytes{256} << 20, o).algorithm.provenance.full_rate_drain,
            0);
}

// Past the deadline no tail is timed, and the search is marked stopped (its answer is then not
// the whole search's, and not cached); where no tail would be timed (no rates of its own), the
// deadline is not asked.
TEST(FullRateDrain, PastTheDeadlineNoTailIsTimed) {
  const topo::Topology t = testing::example_with_steps("mi250-box.yaml");
  const Algorithm made = mi250_pipelines();
  Deadline over;
  over.interrupt();
  Algorithm a = made;
  EXPECT_FALSE(drain_at_full_rate(t, a, &over));
  EXPECT_EQ(a.claimed_time, made.claimed_time);
  EXPECT_TRUE(over.stopped());
  const topo::Topology ring = testing::charging(topo::generate("ring:8"));
  Algorithm b =
      make_baseline(BaselineSpec{BaselineKind::Ring, {}}, ring,
                    Collective::over_all(ring, CollectiveKind::AllGather), Bytes{1} << 20);
  Deadline other;
  other.interrupt();
  EXPECT_FALSE(drain_at_full_rate(ring, b, &other));
  EXPECT_FALSE(other.stopped());
}

}  // namespace
}  // namespace tenet::synth
