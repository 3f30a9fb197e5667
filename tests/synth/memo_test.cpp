// What a synthesis run keeps between its steps (synth/memo.hpp) is owned by the caller and never
// changes an answer: a memo shared over many topologies gives each the bound computed afresh, the
// flow plans are packed once per topology and root, and an algorithm synthesized with a memo the
// caller holds equals the one synthesized without.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "synth/bounds/lower_bound.hpp"
#include "synth/memo.hpp"
#include "synth/synthesizer.hpp"
#include "tests/synth/test_support.hpp"
#include "topo/error.hpp"
#include "topo/generators.hpp"

namespace tenet::synth {
namespace {

bool same(const LowerBound& a, const LowerBound& b) {
  return a.bandwidth == b.bandwidth && a.step == b.step && a.latency == b.latency &&
         a.cut_latency == b.cut_latency && a.total == b.total && a.coarse == b.coarse &&
         a.steering == b.steering && a.label == b.label && a.limit == b.limit;
}

// One memo asked about many topologies, collectives, groups and sizes in a shuffled order (each
// question twice, so that its kept answers are used, often right after the same question on a
// topology of as many NPUs) answers each as a fresh computation does: every kept answer is keyed on
// all that decides it.
TEST(BoundMemo, SharedOverTopologiesAnswersAsAFreshBound) {
  std::mt19937_64 rng(20261129);
  std::vector<topo::Topology> topologies;
  for (int i = 0; i < 40; ++i) topologies.push_back(testing::random_topology(rng, 4, i % 2 == 1));
  struct Question {
    size_t topology;
    Collective collective;
    Bytes chunk;
    bool steps;
  };
  std::vector<Question> questions;
  for (size_t i = 0; i < topologies.size(); ++i) {
    const topo::Topology& t = topologies[i];
    for (CollectiveKind kind : {CollectiveKind::AllGather, CollectiveKind::AllReduce,
                                CollectiveKind::AllToAll, CollectiveKind::Gather}) {
      Collective c = Collective::over_all(t, kind);
      if (i % 3 == 0) c.ranks.pop_back();  // a group (random topologies have 3 NPUs or more)
      for (Bytes chunk : {Bytes{4096}, Bytes{1} << 20})
        for (bool steps : {true, false})
          for (int twice = 0; twice < 2; ++twice) questions.push_back({i, c, chunk, steps});
    }
  }
  std::shuffle(questions.begin(), questions.end(), rng);
  BoundMemo memo;
  for (const Question& q : questions) {
    const topo::Topology& t = topologies[q.topology];
    const LowerBound kept = lower_bound(t, q.collective, q.chunk, q.steps, &memo);
    const LowerBound fresh = lower_bound(t, q.collective, q.chunk, q.steps);
    ASSERT_TRUE(same(kept, fresh))
        << "topology " << q.topology << ", " << q.collective.describe() << ", chunk " << q.chunk
        << ": " << describe(kept) << " against " << describe(fresh);
  }
}

// Per-step costs are not in a topology's fingerprint: the same links with other steps get their
// own bound from a memo that last answered for the first.
TEST(BoundMemo, KeysOnTheLinksSteps) {
  auto pair = [](Time step) {
    topo::TopologyBuilder b("pair");
    const topo::NodeId x = b.add_npu(), y = b.add_npu();
    const topo::LinkId l = b.add_bidirectional(x, y, 100'000'000'000, 1'000'000);
    b.set_link_step(l, step);
    b.set_link_step(l + 1, step);
    topo::Topology t = b.build();
    t.set_charges_steps(true);
    return t;
  };
  const topo::Topology cheap = pair(300'000), dear = pair(2'000'000);
  ASSERT_EQ(cheap.fingerprint(), dear.fingerprint());
  const Collective c = Collective::over_all(cheap, CollectiveKind::AllGather);
  BoundMemo memo;
  EXPECT_EQ(lower_bound(cheap, c, 4096, &memo).step, 300'000);
  EXPECT_EQ(lower_bound(dear, c, 4096, &memo).step, 2'000'000);
  EXPECT_EQ(lower_bound(cheap, c, 4096, &memo).step, 300'000);
}

// So are the terms kept per topology and group: an All-Reduce's arrivals (the least step of the
// links into its islands) and the farthest pair's latency paying its steps (on a line whose links
// cost different steps, the pair at its ends pays the dearer one). Each asked in turn of two lines
// alike but for one link's step, each answer that of a fresh bound.
TEST(BoundMemo, KeysItsTermsOnTheLinksSteps) {
  auto line = [](Time step) {  // x - y at 0.3 us a step, y - z at `step`
    topo::TopologyBuilder b("line");
    const topo::NodeId x = b.add_npu(), y = b.add_npu(), z = b.add_npu();
    const topo::LinkId near = b.add_bidirectional(x, y, 100'000'000'000, 1'000'000);
    const topo::LinkId far = b.add_bidirectional(y, z, 100'000'000'000, 1'000'000);
    for (topo::LinkId l : {near, near + 1}) b.set_link_step(l, 300'000);
    for (topo::LinkId l : {far, far + 1}) b.set_link_step(l, step);
    topo::Topology t = b.build();
    t.set_charges_steps(true);
    return t;
  };
  const topo::Topology cheap = line(500'000), dear = line(4'000'000);
  ASSERT_EQ(cheap.fingerprint(), dear.fingerprint());
  for (CollectiveKind kind : {CollectiveKind::AllReduce, CollectiveKind::AllGather}) {
    const Collective c = Collective::over_all(cheap, kind);
    BoundMemo memo;
    for (int round = 0; round < 2; ++round)
      for (const topo::Topology* t : {&cheap, &dear})
        for (Bytes chunk : {Bytes{4096}, Bytes{1} << 20}) {
          const LowerBound kept = lower_bound(*t, c, chunk, &memo);
          const LowerBound fresh = lower_bound(*t, c, chunk);
          ASSERT_TRUE(same(kept, fresh)) << c.describe() << ", chunk " << chunk << ": "
                                         << describe(kept) << " against " << describe(fresh);
        }
    // (The two lines' bounds differ: the memo told them apart.)
    EXPECT_LT(lower_bound(cheap, c, 4096).latency, lower_bound(dear, c, 4096).latency);
  }
  const Collective all_reduce = Collective::over_all(cheap, CollectiveKind::AllReduce);
  EXPECT_NE(lower_bound(cheap, all_reduce, 4096).total, lower_bound(dear, all_reduce, 4096).total);
}

// Two fabrics alike but for which link pays which step: the same distinct steps, so only the links'
// own steps tell the farthest paying pair apart. x - y is far (10 us) and x - z near (1 us); one
// charges 0.3 us a step on x - y and 4 us on x - z, the other the reverse.
TEST(BoundMemo, KeysTheFarthestPayingPairOnWhichLinkPaysWhichStep) {
  auto star = [](Time far_step, Time near_step) {
    topo::TopologyBuilder b("star");
    const topo::NodeId x = b.add_npu(), y = b.add_npu(), z = b.add_npu();
    const topo::LinkId far = b.add_bidirectional(x, y, 100'000'000'000, 10'000'000);
    const topo::LinkId near = b.add_bidirectional(x, z, 100'000'000'000, 1'000'000);
    for (topo::LinkId l : {far, far + 1}) b.set_link_step(l, far_step);
    for (topo::LinkId l : {near, near + 1}) b.set_link_step(l, near_step);
    topo::Topology t = b.build();
    t.set_charges_steps(true);
    return t;
  };
  const topo::Topology cheap_far = star(300'000, 4'000'000), dear_far = star(4'000'000, 300'000);
  ASSERT_EQ(cheap_far.fingerprint(), dear_far.fingerprint());
  bool told_apart = false;
  for (CollectiveKind kind :
       {CollectiveKind::Broadcast, CollectiveKind::AllGather, CollectiveKind::AllReduce}) {
    const Collective c = Collective::over_all(cheap_far, kind);
    BoundMemo memo;
    for (int round = 0; round < 2; ++round)
      for (const topo::Topology* t : {&cheap_far, &dear_far}) {
        const LowerBound kept = lower_bound(*t, c, 4096, &memo);
        const LowerBound fresh = lower_bound(*t, c, 4096);
        ASSERT_TRUE(same(kept, fresh))
            << c.describe() << ": " << describe(kept) << " against " << describe(fresh);
      }
    told_apart = told_apart ||
                 lower_bound(cheap_far, c, 4096).latency != lower_bound(dear_far, c, 4096).latency;
  }
  EXPECT_TRUE(told_apart);
}

// The flow plans are packed once per topology and root and live as long as the memo.
TEST(FlowPlans, PackedOncePerTopologyAndRoot) {
  SynthMemo memo;
  const topo::Topology torus = topo::generate("torus2d:3x3");
  const topo::Topology mesh = topo::generate("mesh2d:3x3");
  const TreePacking* all = memo.plans.of(torus);
  ASSERT_NE(all, nullptr);
  EXPECT_EQ(memo.plans.of(torus), all);
  EXPECT_NE(memo.plans.of(mesh), all);
  const TreePacking* from_root = memo.plans.of(torus, 4);
  ASSERT_NE(from_root, nullptr);
  EXPECT_NE(from_root, all);
  EXPECT_EQ(memo.plans.of(torus, 4), from_root);
  EXPECT_EQ(memo.plans.of(torus), all);  // still the first one
}

// A caller's memo, shared over sizes and collectives, gives the algorithms a run without one makes.
TEST(SynthMemo, HeldByTheCallerChangesNoAlgorithm) {
  const topo::Topology t = topo::generate("hetmesh2d:3x3");
  SynthMemo memo;
  SynthOptions held;
  held.memo = &memo;
  for (CollectiveKind kind : {CollectiveKind::AllGather, CollectiveKind::ReduceScatter,
                              CollectiveKind::AllReduce, CollectiveKind::AllGather})
    for (int k : {1, 4}) {
      const Collective c = Collective::over_all(t, kind, k);
      const Algorithm with = synthesize(t, c, 65536, held);
      const Algorithm without = synthesize(t, c, 65536);
      EXPECT_EQ(with.claimed_time, without.claimed_time) << c.describe();
      EXPECT_EQ(with.size(), without.size()) << c.describe();
      EXPECT_EQ(with.method, without.method) << c.describe();
    }
}

// An NPU that cannot reach another is its own error type, which callers trying a part of a
// topology tell from the other errors.
TEST(Unreachable, ATopologyWhoseNpusAreNotJoinedSaysSo) {
  topo::TopologyBuilder b("cut in two");
  const topo::NodeId x = b.add_npu(), y = b.add_npu(), z = b.add_npu();
  b.add_bidirectional(x, y, 1'000'000'000, 1000);
  b.add_link(y, z, 1'000'000'000, 1000);  // z never sends back
  EXPECT_THROW(b.build(), Unreachable);
}

}  // namespace
}  // namespace tenet::synth
