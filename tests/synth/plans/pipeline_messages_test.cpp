// The flow plan's pipelines in messages (PipelineShape::messages): where steps are charged, a
// stream sends several of its tree's chunks as one transfer, sized so that its steps and the fill
// it adds balance; the algorithm verifies (every chunk of a message at its source when it leaves,
// reductions counted once) and its claimed time is its timing's.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <random>
#include <vector>

#include "synth/baselines/baselines.hpp"
#include "synth/bounds/lower_bound.hpp"
#include "synth/plans/pipelines.hpp"
#include "synth/plans/tree_packing.hpp"
#include "synth/synthesizer.hpp"
#include "synth/verify/verify.hpp"
#include "tests/synth/test_support.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"

namespace tenet::synth {
namespace {

using detail::block_dealing;
using detail::message_chunks;

// Whether some transfer of `a` carries several chunks.
bool sends_messages(const Algorithm& a) {
  for (const Transfer& x : a.transfers())
    if (x.count > 1) return true;
  return false;
}

// message_chunks is sqrt(N s / ((h - 1) c)), rounded, at least 1 and at most N (h - 1 at least
// 1): on a two-NPU link with a 2.6 us step, a stream of 100 chunks of 1 MB at 10 GB/s (c = 100
// us) sends sqrt(2.6) -> 2 at a time; of 16 KB chunks (c = 1.6 us), sqrt(162.5) -> 13; of 3 such
// chunks, sqrt(4.875) -> 2; of 3 chunks of 1 KB (c = 0.1 us), sqrt(78) capped at all 3. Without
// steps charged, one.
TEST(PipelineMessages, MessageSizeBalancesStepsAgainstFill) {
  topo::Topology t = topo::parse_yaml(
      "npus: [a, b]\nlinks:\n  - {src: a, dst: b, bw: 100GB/s, lat: 1us, step: 2.6us}\n");
  PackedTree tr;
  tr.root = 0;
  tr.copies = 1;
  tr.parent = {-1, 0};
  tr.routes = {{}, {{testing::link_between(t, 0, 1)}}};
  tr.shares = {{}, {1.0}};
  tr.lanes = tr.shares;
  const double rate = 10e9;
  t.set_charges_steps(false);
  EXPECT_EQ(message_chunks(t, tr, 1, 100, 16'000, rate, 1), 1);
  t.set_charges_steps(true);
  EXPECT_EQ(message_chunks(t, tr, 1, 100, 1'000'000, rate, 1), 2);
  EXPECT_EQ(message_chunks(t, tr, 1, 100, 16'000, rate, 1), 13);
  EXPECT_EQ(message_chunks(t, tr, 1, 3, 16'000, rate, 1), 2);
  EXPECT_EQ(message_chunks(t, tr, 1, 3, 1'000, rate, 1), 3);
  EXPECT_EQ(message_chunks(t, tr, 1, 1, 16'000, rate, 1), 1);
}

// Down a deeper tree the last message waits at every NPU that forwards it, so messages are smaller:
// on a chain of six NPUs (height 5, 2.6 us steps), the stream of 100 chunks of 16 KB at 10 GB/s
// (c = 1.6 us) sends sqrt(162.5 / 4) -> 6 at a time into every NPU of the chain, not 13;
// tree_height counts the chain's five arcs. A stream of 1 MB chunks sends them one by one
// (sqrt(2.6 / 4) -> 1).
TEST(PipelineMessages, DeeperTreesSendSmallerMessages) {
  topo::Topology t = topo::parse_yaml(
      "npus: 6\ndefaults: {bw: 100GB/s, lat: 1us, step: 2.6us}\nlinks:\n"
      "  - {src: 0, dst: 1}\n  - {src: 1, dst: 2}\n  - {src: 2, dst: 3}\n"
      "  - {src: 3, dst: 4}\n  - {src: 4, dst: 5}\n");
  t.set_charges_steps(true);
  PackedTree tr;
  tr.root = 0;
  tr.copies = 1;
  tr.parent = {-1, 0, 1, 2, 3, 4};
  tr.routes.assign(6, {});
  tr.shares.assign(6, {});
  for (NodeId v = 1; v < 6; ++v) {
    tr.routes[v] = {{testing::link_between(t, v - 1, v)}};
    tr.shares[v] = {1.0};
  }
  tr.lanes = tr.shares;
  ASSERT_EQ(detail::tree_height(tr), 5);
  const double rate = 10e9;
  for (NodeId v = 1; v < 6; ++v) {
    EXPECT_EQ(message_chunks(t, tr, v, 100, 16'000, rate, 5), 6) << "into npu" << v;
    EXPECT_EQ(message_chunks(t, tr, v, 100, 1'000'000, rate, 5), 1) << "into npu" << v;
  }
}

// block_dealing keeps each tree's number of chunks and gives each tree consecutive chunks of its
// root's.
TEST(PipelineMessages, BlockDealingKeepsCountsAndMakesRuns) {
  const topo::Topology t = topo::generate("hypercube:8");
  const std::optional<TreePacking> p = pack_spanning_trees(t);
  ASSERT_TRUE(p);
  const int per_root = 12;
  std::mt19937_64 rng(5);
  std::vector<std::vector<int>> trees_of(t.num_npus());
  for (size_t i = 0; i < p->trees.size(); ++i)
    trees_of[p->trees[i].root].push_back(static_cast<int>(i));
  std::vector<int> dealing;
  for (NodeId r = 0; r < t.num_npus(); ++r)
    for (int q = 0; q < per_root; ++q) dealing.push_back(trees_of[r][rng() % trees_of[r].size()]);
  const std::vector<int> blocked = block_dealing(dealing, *p);
  ASSERT_EQ(blocked.size(), dealing.size());
  std::vector<int> before(p->trees.size(), 0), after(p->trees.size(), 0);
  for (size_t ch = 0; ch < dealing.size(); ++ch) {
    ++before[dealing[ch]];
    ++after[blocked[ch]];
    EXPECT_EQ(p->trees[blocked[ch]].root, static_cast<NodeId>(ch / per_root));
  }
  EXPECT_EQ(before, after);
  // Runs: once a tree's chunks stop, no later chunk goes to it.
  std::vector<char> closed(p->trees.size(), 0);
  for (size_t ch = 0; ch < blocked.size(); ++ch) {
    EXPECT_FALSE(closed[blocked[ch]]) << "chunk " << ch;
    if (ch + 1 < blocked.size() && blocked[ch + 1] != blocked[ch]) closed[blocked[ch]] = 1;
  }
}

// On random fabrics charging per-step costs, the pipelines of every collective they make verify,
// are no faster than the bound, and send messages somewhere; with steps not charged, none.
TEST(PipelineMessages, VerifyOnRandomFabricsWithSteps) {
  std::mt19937_64 rng(41);
  SynthOptions o;
  o.method = SynthMethod::PlanPipeline;
  int made = 0, in_messages = 0;
  for (int i = 0; i < 30; ++i) {
    const topo::Topology t = testing::random_topology(rng, 8, /*steps=*/true);
    const CollectiveKind kind = std::array{CollectiveKind::AllGather, CollectiveKind::ReduceScatter,
                                           CollectiveKind::AllReduce, CollectiveKind::Broadcast,
                                           CollectiveKind::Reduce}[i % 5];
    Collective c = Collective::over_all(t, kind, 16 + static_cast<int>(rng() % 48));
    c.root = static_cast<int>(rng() % c.num_ranks());
    const Bytes chunk = Bytes{1} << (12 + rng() % 8);
    Algorithm a;
    try {
      a = synthesize(t, c, chunk, o);
    } catch (const NotApplicable&) {
      continue;
    }
    ++made;
    in_messages += sends_messages(a);
    const Report r = verify(t, a, {.max_reported = 3});
    EXPECT_TRUE(r.correct()) << "fabric " << i << " " << to_string(kind)
                             << testing::violation_text(r);
    EXPECT_GE(a.claimed_time, lower_bound(t, c, chunk).total) << "fabric " << i;
    topo::Topology free = t;
    free.set_charges_steps(false);
    const Algorithm b = synthesize(free, c, chunk, o);
    EXPECT_FALSE(sends_messages(b)) << "fabric " << i;
  }
  EXPECT_GE(made, 20);
  EXPECT_GT(in_messages, made / 2);
}

// The 16-GPU cluster a user wrote (examples/topologies/cluster16.yaml): its 2.6 us network steps
// make the pipelines' All-Reduce of 64 MiB send messages, with fewer transfers than chunk sends.
TEST(PipelineMessages, ClusterAllReduceSendsFewerTransfers) {
  const topo::Topology t = testing::charging(
      topo::load(std::string(TENET_SOURCE_DIR) + "/examples/topologies/cluster16.yaml"));
  const Collective c = Collective::over_all(t, CollectiveKind::AllReduce, 64);
  SynthOptions o;
  o.method = SynthMethod::PlanPipeline;
  const Algorithm a = synthesize(t, c, c.chunk_bytes_for(Bytes{64} << 20), o);
  EXPECT_TRUE(a.provenance.pipeline.messages) << a.method;
  int64_t sends = 0;
  for (const Transfer& x : a.transfers()) sends += x.count;
  EXPECT_LT(static_cast<int64_t>(a.size()), sends);
  const Report r = verify(t, a, {.max_reported = 3});
  EXPECT_TRUE(r.correct()) << testing::violation_text(r);
}

}  // namespace
}  // namespace tenet::synth
