// The flow plan (synth/tree_packing) and the synthesizer methods built on it: the trees are real
// spanning trees over real routes, they reach the cut bound exactly, and what the synthesizer makes
// of them verifies, link rates included, on random switched, asymmetric, mixed-speed topologies.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "synth/baselines/baselines.hpp"
#include "synth/bounds/lower_bound.hpp"
#include "synth/formats/msccl_xml.hpp"
#include "synth/plans/tree_packing.hpp"
#include "synth/synthesizer.hpp"
#include "synth/verify/verify.hpp"
#include "tests/synth/plans/flow_plan_support.hpp"
#include "tests/synth/test_support.hpp"
#include "topo/analysis.hpp"
#include "topo/bounds.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"

namespace tenet::synth {
namespace {

using testing::expect_well_formed;
using testing::plan_ratio;
using testing::random_topology;

// Whether `a` is the flow plan's pipelines streaming as `has` asks: their traits, or either half's
// where an All-Reduce's halves ran in turn.
template <typename Has>
bool streamed(const Algorithm& a, Has has) {
  const Provenance& p = a.provenance;
  return p.producer == Producer::FlowPlanPipelines &&
         (has(p.pipeline) || (p.halves_in_turn && has(p.all_gather)));
}
bool in_lanes(const PipelineTraits& p) { return p.lanes; }
bool paced(const PipelineTraits& p) { return p.paced; }
bool sped_up(const PipelineTraits& p) { return p.sped_up; }
bool serial(const PipelineTraits& p) { return p.serial; }
bool serial_in_lanes(const PipelineTraits& p) { return p.lanes && p.serial; }

TEST(TreePacking, SpanningTreesReachTheCutBoundOnRandomTopologies) {
  std::mt19937_64 rng(15);
  int planned = 0;
  for (int i = 0; i < 200; ++i) {
    const topo::Topology t = random_topology(rng, 10);
    const std::optional<TreePacking> p = pack_spanning_trees(t);
    // A switch left unbalanced (in != out) can defeat splitting-off; the synthesizer falls back
    // to the matcher then.
    if (!p) continue;
    ++planned;
    std::vector<NodeId> roots(t.num_npus());
    std::iota(roots.begin(), roots.end(), 0);
    expect_well_formed(t, *p, roots, fmt::format("topology {}", i));
    // The bound: never below it (that would be wrong), at most PackingOptions::near above it.
    const double ratio = plan_ratio(*p) / topo::allgather_cut_bound(t).ratio();
    EXPECT_GE(ratio, 1 - 1e-9) << "topology " << i;
    EXPECT_LE(ratio, 1 + PackingOptions{}.near) << "topology " << i;
  }
  EXPECT_GE(planned, 190);
}

TEST(TreePacking, BroadcastTreesReachTheRootsConnectivity) {
  std::mt19937_64 rng(16);
  int planned = 0;
  for (int i = 0; i < 200; ++i) {
    const topo::Topology t = random_topology(rng, 10);
    const NodeId root = static_cast<NodeId>(rng() % t.num_npus());
    const std::optional<TreePacking> p = pack_broadcast_trees(t, root);
    if (!p) continue;
    ++planned;
    expect_well_formed(t, *p, {root}, fmt::format("topology {}", i));
    const topo::CutBound cut = topo::broadcast_cut_bound(t, root);
    const double ratio = plan_ratio(*p) * static_cast<double>(cut.out_bandwidth);
    EXPECT_GE(ratio, 1 - 1e-9) << "topology " << i;
    EXPECT_LE(ratio, 1 + PackingOptions{}.near) << "topology " << i;
  }
  EXPECT_GE(planned, 190);
}

TEST(TreePacking, FullyConnectedBroadcastUsesEveryLinkOutOfTheRoot) {
  // Seven two-level trees (root -> v -> the rest): Edmonds' theorem, not a power of two.
  const auto t = topo::generate("fc:8,bw=50GB/s");
  const std::optional<TreePacking> p = pack_broadcast_trees(t, 3);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->k, 7);
  EXPECT_DOUBLE_EQ(plan_ratio(*p), 1.0 / 350e9);
}

// Seed 75 of the RandomFabrics benchmark (random-fabric:75): switches sw1 and sw2
// take in less than they send out (asymmetric NICs). At one tree (capacities of 0-3 units) sw0
// cannot be split off completely and no plan was found; at two trees the units are fine enough.
// The trees' pipelines then stream at the root's connectivity (1.30x the bound at the trees'
// rate on every route: a chunk on the route through npu4's 28 GB/s uplink held its tree back;
// in lanes, 1.01x: FlowPlanQuality.UnbalancedSwitchesBroadcastNearTheBound).
const char* const kUnbalancedSwitches = "random-fabric:75";

TEST(TreePacking, UnbalancedSwitchesSplitInFinerUnits) {
  const topo::Topology t = topo::generate(kUnbalancedSwitches);
  const std::optional<TreePacking> p = pack_broadcast_trees(t, 0);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->k, 2);
  expect_well_formed(t, *p, {0}, "random-fabric-75");
  const topo::CutBound cut = topo::broadcast_cut_bound(t, 0);
  EXPECT_NEAR(plan_ratio(*p) * static_cast<double>(cut.out_bandwidth), 1, 1e-9);

  const ChunkingResult r = synthesize_auto_chunks(
      t, Collective::over_all(t, CollectiveKind::Broadcast), Bytes{256} << 20);
  EXPECT_TRUE(streamed(r.algorithm, in_lanes)) << r.algorithm.method;
  EXPECT_TRUE(verify(t, r.algorithm).correct());
}

// drop_thin_lanes keeps the packing well formed (lanes summing to 1, no link over its bandwidth
// at the plan's rates), only drops lanes under half (the rest grow), and leaves a thin lane only
// where moving it would load some link past its bandwidth.
TEST(TreePacking, ThinLanesDropWhereTheOtherRoutesHaveRoom) {
  int dropped = 0;
  for (const int seed : {122, 138, 24, 26, 177, 75}) {
    const std::string where = fmt::format("random-fabric:{}", seed);
    const topo::Topology t = topo::generate(where);
    const std::optional<TreePacking> p = pack_spanning_trees(t);
    ASSERT_TRUE(p) << where;
    const TreePacking q = drop_thin_lanes(t, *p);
    std::vector<NodeId> roots(t.num_npus());
    std::iota(roots.begin(), roots.end(), 0);
    expect_well_formed(t, q, roots, where);
    ASSERT_EQ(q.trees.size(), p->trees.size()) << where;
    const double per_copy = static_cast<double>(q.unit) / q.congestion;
    std::vector<double> load(t.num_links(), 0.0);
    for (const PackedTree& tr : q.trees)
      for (NodeId v = 0; v < t.num_npus(); ++v)
        for (size_t r = 0; r < tr.routes[v].size(); ++r)
          for (LinkId l : tr.routes[v][r]) load[l] += per_copy * tr.copies * tr.lanes[v][r];
    for (size_t i = 0; i < q.trees.size(); ++i) {
      const PackedTree &was = p->trees[i], &now = q.trees[i];
      ASSERT_EQ(now.copies, was.copies) << where;
      ASSERT_EQ(now.parent, was.parent) << where;
      ASSERT_EQ(now.routes, was.routes) << where;
      for (NodeId v = 0; v < t.num_npus(); ++v)
        for (size_t r = 0; r < now.lanes[v].size(); ++r) {
          if (now.lanes[v][r] == 0 && was.lanes[v][r] > 0) {
            EXPECT_LT(was.lanes[v][r], 0.5) << where << ": tree " << i << " to NPU " << v;
            ++dropped;
          } else {
            EXPECT_GE(now.lanes[v][r], was.lanes[v][r] - 1e-12)
                << where << ": tree " << i << " to NPU " << v;
          }
          // A thin lane left: its rate moved to the other routes would overload one of their links.
          const double share = now.lanes[v][r];
          if (share <= 0 || share >= 0.5) continue;
          std::map<LinkId, double> change;
          const double moved = per_copy * now.copies * share;
          for (LinkId l : now.routes[v][r]) change[l] -= moved;
          for (size_t o = 0; o < now.lanes[v].size(); ++o)
            if (o != r && now.lanes[v][o] > 0)
              for (LinkId l : now.routes[v][o]) change[l] += moved * now.lanes[v][o] / (1 - share);
          bool over = false;
          for (const auto& [l, c] : change)
            over = over ||
                   (c > 0 && load[l] + c > static_cast<double>(t.link(l).bandwidth) * (1 + 1e-9));
          EXPECT_TRUE(over) << where << ": tree " << i << " to NPU " << v << " keeps a lane of "
                            << share;
        }
    }
  }
  EXPECT_GT(dropped, 100);
}

// Seed 5 of the RandomFabrics benchmark: six NPUs on one switch with asymmetric NICs and two
// direct links. The All-Reduce's pipelines share the switch's links at fractional rates; unpaced,
// a stream whose chunks are there runs ahead and crowds out one that falls behind for good
// (1.017x the bound at best); paced, each stream keeps to its share (1.002x), as it does in
// serial channels (one chunk of a stream at a time: 1.0035x). The ratio:
// FlowPlanQuality.PacedPipelinesKeepToTheirShare.
const char* const kSharedSwitch = "random-fabric:5";

TEST(FlowPlanSynthesis, PacedPipelinesKeepToTheirShare) {
  const topo::Topology t = topo::generate(kSharedSwitch);
  // (The baselines left out: blink's trees are faster here, and this is about the pipelines.)
  SynthOptions synthesized;
  synthesized.portfolio.baselines = false;
  const ChunkingResult r = synthesize_auto_chunks(
      t, Collective::over_all(t, CollectiveKind::AllReduce), Bytes{256} << 20, synthesized);
  EXPECT_TRUE(streamed(r.algorithm, paced) || streamed(r.algorithm, serial)) << r.algorithm.method;
  EXPECT_TRUE(verify(t, r.algorithm).correct());
  // Paced pipelines verify forward (Broadcast) and reversed (Reduce-Scatter): the pacing
  // dependencies point back in the list both ways.
  SynthOptions o;
  o.method = SynthMethod::PlanPipeline;
  for (auto [kind, chunks] :
       {std::pair{CollectiveKind::Broadcast, 256}, std::pair{CollectiveKind::ReduceScatter, 64}}) {
    const Collective c = Collective::over_all(t, kind, chunks);
    const Algorithm a = synthesize(t, c, c.chunk_bytes_for(Bytes{256} << 20), o);
    EXPECT_TRUE(streamed(a, paced)) << a.method;
    const Report rep = verify(t, a, {.max_reported = 3});
    EXPECT_TRUE(rep.correct()) << to_string(kind) << testing::violation_text(rep);
  }
}

// A sender serves each channel in list order, so the pipelines give every stream (a tree's
// chunks from one NPU to one child over one route) a channel of its own: a queue (a first link and
// a channel) carries one stream, forward and reversed. Per tree was one queue per tree at an NPU,
// and a transfer waiting for a full route held the tree's streams to its other children (200
// random fabrics' 40 first seeds: 21 cases faster, All-Reduce by up to 15 %). Channels are reused
// across links, so a pipeline over direct links still exports to MSCCL-XML (32 channels at most).
TEST(FlowPlanSynthesis, EveryStreamIsAQueueOfItsOwn) {
  std::mt19937_64 rng(23);
  SynthOptions o;
  o.method = SynthMethod::PlanPipeline;
  int checked = 0;
  for (int i = 0; i < 12; ++i) {
    const topo::Topology t = i == 0 ? topo::generate(kSharedSwitch) : random_topology(rng, 8);
    for (CollectiveKind kind : {CollectiveKind::Broadcast, CollectiveKind::ReduceScatter}) {
      const Collective c = Collective::over_all(t, kind, 8);
      Algorithm a;
      try {
        a = synthesize(t, c, c.chunk_bytes_for(Bytes{64} << 20), o);
      } catch (const NotApplicable&) {
        continue;
      }
      ++checked;
      std::map<std::pair<LinkId, int>, std::pair<NodeId, std::vector<LinkId>>>
          stream_of;  // queue -> (dst, route)
      for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id) {
        const auto route = a.route(id);
        const std::pair<NodeId, std::vector<LinkId>> stream{a[id].dst,
                                                            {route.begin(), route.end()}};
        const auto [it, fresh] = stream_of.try_emplace({route.front(), a[id].channel}, stream);
        EXPECT_TRUE(fresh || it->second == stream)
            << "topology " << i << " " << to_string(kind) << ": transfer " << id
            << " shares channel " << a[id].channel << " of link " << route.front()
            << " with another stream";
      }
    }
  }
  EXPECT_GT(checked, 6);
  const topo::Topology mesh = topo::generate("hetmesh2d:4x4");
  const Collective c = Collective::over_all(mesh, CollectiveKind::AllGather, 8);
  EXPECT_NO_THROW(to_msccl_xml(synthesize(mesh, c, c.chunk_bytes_for(Bytes{64} << 20), o)));
}

// Seed 26 of the RandomFabrics benchmark: seven NPUs on three switches, a Reduce to npu0 whose
// plan saturates npu5's uplinks (41 and 85 GB/s). Streams that fall behind catch up
// two chunks at once and leave room too small for a whole chunk of another: 1.145x the bound at
// 4096 chunks with whole chunks, 1.03x with four at a time at a quarter of the rate.
const char* const kThreeSwitches = "random-fabric:26";

using testing::Pipelines;
using testing::run_variants;
using testing::VariantRun;

// The flow plan's pipelines alone (testing::pipelines), verified; the quality tests pin its ratio
// (tests/quality/flow_plan_quality_test.cpp).
Pipelines verified_pipelines(const std::string& spec, CollectiveKind kind, int chunks) {
  Pipelines p = testing::pipelines(spec, kind, chunks);
  const Report rep = verify(p.topology, p.algorithm, {.max_reported = 3});
  EXPECT_TRUE(rep.correct()) << spec << testing::violation_text(rep);
  return p;
}

// `alone` ran exactly the variants of `mask`, each at its time in `all`.
void expect_ran_alone(const VariantRun& alone, uint64_t mask, const std::map<int, Time>& all) {
  EXPECT_EQ(alone.times.size(), static_cast<size_t>(std::popcount(mask)));
  for (const auto& [v, time] : alone.times) {
    EXPECT_NE(mask >> v & 1, 0u) << "variant " << v << " was not asked for";
    EXPECT_EQ(time, all.at(v)) << "variant " << v;
  }
}

// Serial in lanes, their thin lanes dropped, are faster still there (1.007x); without them, the
// fastest variants left are the split ones (the ratios:
// FlowPlanQuality.SplitPipelinesFitTheRoomLeft).
TEST(FlowPlanSynthesis, SplitPipelinesFitTheRoomLeft) {
  const Pipelines p = verified_pipelines(kThreeSwitches, CollectiveKind::Reduce, 4096);
  EXPECT_TRUE(streamed(p.algorithm, serial_in_lanes)) << p.algorithm.method;
  const topo::Topology t = topo::generate(kThreeSwitches);
  const Collective c = Collective::over_all(t, CollectiveKind::Reduce, 4096);
  const Bytes chunk = c.chunk_bytes_for(Bytes{256} << 20);
  const Algorithm a = testing::without_the_fastest_serial(t, c, chunk);
  EXPECT_TRUE(streamed(a, [](const PipelineTraits& x) { return x.split == 4; })) << a.method;
  const Report r = verify(t, a, {.max_reported = 3});
  EXPECT_TRUE(r.correct()) << testing::violation_text(r);
}

// Seed 184 of the RandomFabrics benchmark: a Broadcast from npu0 whose plan packs 292 tree units
// (1 GB/s each) in 19 trees of 1 to dozens of copies. In quarters a chunk takes four of its
// tree's chunk times per level: 131 us per level for a tree of one copy at 8192 chunks of 32 KiB.
// Dealt in proportion to their copies the thin trees ended last (1.138x the bound); dealt by when
// each chunk would reach a tree's last NPU, they take fewer, and the trees end together (1.076x:
// FlowPlanQuality.PipelinesDealChunksByWhenTheyWouldArrive).
TEST(FlowPlanSynthesis, PipelinesDealChunksByWhenTheyWouldArrive) {
  const Pipelines p = verified_pipelines("random-fabric:184", CollectiveKind::Broadcast, 8192);
  EXPECT_TRUE(streamed(p.algorithm, [](const PipelineTraits& x) { return x.dealt_by_arrival; }))
      << p.algorithm.method;
}

// Seed 142 of the RandomFabrics benchmark: a Broadcast whose plan leaves most links some room.
// Sped up, the streams go faster than their trees' rates (as much as every link they cross has
// room for), so a chunk crosses the unsaturated levels sooner: 1.0248x the bound at 4096 chunks at
// the plan's rates, 1.0166x sped up (FlowPlanQuality.PipelinesGoFasterWhereTheirLinksHaveRoom).
TEST(FlowPlanSynthesis, PipelinesGoFasterWhereTheirLinksHaveRoom) {
  const Pipelines p = verified_pipelines("random-fabric:142", CollectiveKind::Broadcast, 4096);
  EXPECT_TRUE(streamed(p.algorithm, sped_up)) << p.algorithm.method;
}

// Seed 177 of the RandomFabrics benchmark: a Broadcast whose 13 trees (506 tree units) saturate
// ten links at once. Where a channel's transfers may be under way together, a stream whose chunks
// are all there runs over its rate and the one it crowds out falls behind for good (1.091x the
// bound at 8192 chunks, split and in lanes of at least half a tree's rate, which put 1.84x its
// bandwidth on one 108 GB/s link). In serial channels, one chunk of a stream at a time in exact
// lanes, no stream waits on another: 1.045x
// (FlowPlanQuality.PipelinesInSerialChannelsKeepToTheirRates).
TEST(FlowPlanSynthesis, PipelinesInSerialChannelsKeepToTheirRates) {
  const Pipelines p = verified_pipelines("random-fabric:177", CollectiveKind::Broadcast, 8192);
  EXPECT_TRUE(p.algorithm.serial_channels) << p.algorithm.method;
  EXPECT_TRUE(streamed(p.algorithm, serial)) << p.algorithm.method;
}

// In serial channels the pipelines stream each lane at the tree's rate times it; a thin lane's
// chunks take many of the tree's chunk times a hop, and the subtree below waits. With the thin
// lanes dropped where the other routes have room: random fabric 138's All-Gather at 512 chunks per
// NPU, 1.069x the bound (split pipelines; serial in lanes 1.10x), 1.029x
// (FlowPlanQuality.SerialLanesDropTheThinOnes).
TEST(FlowPlanSynthesis, SerialLanesDropTheThinOnes) {
  const Pipelines p = verified_pipelines("random-fabric:138", CollectiveKind::AllGather, 512);
  EXPECT_TRUE(streamed(p.algorithm, serial_in_lanes)) << p.algorithm.method;
}

// SynthOptions::pipelines.variants runs the variants asked for alone, each as it runs among all
// (the chunk search's doubling past kPipelineTransferBudget runs the two fastest this way), and
// on_pipeline_variant reports each one's time.
// An All-Reduce's variants are timed with their halves joined.
void expect_variants_run_alone(const topo::Topology& t, CollectiveKind kind, int chunks) {
  SCOPED_TRACE(fmt::format("{} {} chunks", to_string(kind), chunks));
  const Collective c = Collective::over_all(t, kind, chunks);
  const Bytes chunk = c.chunk_bytes_for(Bytes{256} << 20);
  const VariantRun run = run_variants(t, c, chunk);
  EXPECT_EQ(run.repeated, 0);
  const Algorithm& fastest = run.algorithm;
  std::map<int, Time> all = run.times;
  // An All-Reduce's halves in turn come last, their halves' own variants numbered above them: not
  // whole collectives, left out here (AllReduceHalvesInTurn).
  std::erase_if(all, [&](const auto& vt) { return vt.first > run.last; });
  ASSERT_GE(all.size(), 4u);  // mixed speeds: whole, in lanes, paced, sped up, in serial channels
  Time least = all.begin()->second;
  int slowest = all.begin()->first;
  for (const auto& [v, time] : all) {
    least = std::min(least, time);
    if (time > all.at(slowest)) slowest = v;
  }
  EXPECT_EQ(fastest.claimed_time, least);
  // The slowest alone, then with the fastest.
  int quickest = -1;
  for (const auto& [v, time] : all)
    if (time == least && quickest < 0) quickest = v;
  for (const uint64_t mask :
       {uint64_t{1} << slowest, uint64_t{1} << slowest | uint64_t{1} << quickest}) {
    const VariantRun alone = run_variants(t, c, chunk, mask);
    expect_ran_alone(alone, mask, all);
    const Algorithm& a = alone.algorithm;
    EXPECT_EQ(a.claimed_time, std::popcount(mask) == 1 ? all.at(slowest) : least);
    const Report r = verify(t, a, {.max_reported = 3});
    EXPECT_TRUE(r.correct()) << testing::violation_text(r);
  }
}

TEST(FlowPlanSynthesis, PipelineVariantsRunAlone) {
  const topo::Topology t = topo::generate("random-fabric:142");
  expect_variants_run_alone(t, CollectiveKind::Broadcast, 256);
  expect_variants_run_alone(t, CollectiveKind::AllReduce, 4);
}

// An All-Reduce's pipelines also run their halves in turn, each its own fastest variant (on mixed
// speeds where the halves together end over 1.02x the RS+AG bound): each NPU sends its own chunks'
// All-Gather only once every reduction into it is done. Random fabric 184 at 8192 chunks per NPU:
// 1.028x the bound together, 1.012x in turn.
TEST(FlowPlanSynthesis, AllReduceHalvesInTurn) {
  const topo::Topology t = topo::generate("random-fabric:177");
  const Collective c = Collective::over_all(t, CollectiveKind::AllReduce, 64);
  const Bytes chunk = c.chunk_bytes_for(Bytes{256} << 20);
  const VariantRun run = run_variants(t, c, chunk);
  EXPECT_EQ(run.repeated, 0);
  const std::map<int, Time>& all = run.times;
  // The halves in turn are reported last; before them, each half's own variants, numbered above
  // them.
  const int in_turn = run.last;
  ASSERT_GE(in_turn, 0);
  std::map<int, Time> halves;
  for (const auto& [v, time] : all)
    if (v >= in_turn) halves.emplace(v, time);
  // Asked for with each half's fastest variant (as the chunk search asks past
  // kPipelineTransferBudget), they run those alone, at their time among all.
  const uint64_t mask = fastest_pipeline_variants(halves, 1);
  ASSERT_EQ(std::popcount(mask), 3);
  ASSERT_NE(mask >> in_turn & 1, 0u);
  const VariantRun alone = run_variants(t, c, chunk, mask);
  expect_ran_alone(alone, mask, all);
  const Algorithm& a = alone.algorithm;
  EXPECT_EQ(a.provenance.producer, Producer::FlowPlanPipelines) << a.method;
  EXPECT_TRUE(a.provenance.halves_in_turn) << a.method;
  EXPECT_EQ(a.claimed_time, all.at(in_turn));
  const Report r = verify(t, a, {.max_reported = 3});
  EXPECT_TRUE(r.correct()) << testing::violation_text(r);
  std::map<NodeId, Time> reduced;            // per NPU, its last reduction's arrival
  std::set<std::pair<NodeId, ChunkId>> got;  // copies received
  for (const Transfer& x : a.transfers())
    if (x.op == Op::Reduce) reduced[x.dst] = std::max(reduced[x.dst], x.end);
  int own = 0;
  for (const Transfer& x : a.transfers()) {
    if (x.op != Op::Copy) continue;
    if (!got.count({x.src, x.chunk})) {  // the chunk's own NPU sends it
      ++own;
      EXPECT_GE(x.start, reduced[x.src]) << "chunk " << x.chunk << " leaves " << t.node(x.src).name;
    }
    got.emplace(x.dst, x.chunk);
  }
  EXPECT_GT(own, 0);
}

// Two boxes of 16 MI250 GCDs (the link layout of ForestColl's mi250_topology, topologies.py:
// 200 GB/s within a package, 100 or 50 GB/s between packages, a 16 GB/s NIC per GCD on one
// switch), written out here. The optimum needs 610 distinct trees (83 units per GCD); the
// pipelines stream 64 (2 per GCD) at 3.75 % above its rate, well formed and nowhere past a link.
// (Building the optimum stops at the cap, so the test does not pay for all of it.)
TEST(TreePacking, PipelinesStreamFewTreesWhereTheOptimumNeedsMany) {
  const int box[][3] = {{0, 1, 200},   {0, 4, 100},  {0, 8, 50},    {1, 5, 50},    {1, 9, 50},
                        {1, 10, 50},   {2, 3, 200},  {2, 6, 50},    {2, 9, 50},    {2, 10, 50},
                        {3, 7, 100},   {3, 11, 50},  {4, 5, 200},   {4, 6, 50},    {5, 6, 50},
                        {5, 7, 50},    {6, 7, 200},  {8, 9, 200},   {8, 12, 100},  {9, 13, 50},
                        {10, 11, 200}, {10, 14, 50}, {11, 15, 100}, {12, 13, 200}, {12, 14, 50},
                        {13, 14, 50},  {13, 15, 50}, {14, 15, 200}};
  std::string yaml = "npus: 32\nswitches: [ib]\ndefaults: {lat: 0.5us}\nlinks:\n";
  for (int b = 0; b < 2; ++b) {
    for (const auto& [u, v, bw] : box)
      yaml += fmt::format("  - {{src: {}, dst: {}, bw: {}GB/s}}\n", 16 * b + u, 16 * b + v, bw);
    for (int g = 0; g < 16; ++g)
      yaml += fmt::format("  - {{src: {}, dst: ib, bw: 16GB/s}}\n", 16 * b + g);
  }
  const topo::Topology t = topo::parse_yaml(yaml);
  PackingOptions capped;
  capped.max_trees = kMostTreesPerRoot * t.num_npus();
  EXPECT_FALSE(pack_spanning_trees(t, capped));  // the optimum needs more
  const std::optional<TreePacking> streamed = pack_pipelined_trees(t);
  ASSERT_TRUE(streamed);
  EXPECT_LE(streamed->trees.size(), static_cast<size_t>(kMostTreesPerRoot) * t.num_npus());
  // Seconds per byte of each root: U / k / unit; the optimum's is the cut bound's.
  const topo::CutBound cut = topo::allgather_cut_bound(t);
  const double optimum =
                   static_cast<double>(cut.members_inside) / static_cast<double>(cut.out_bandwidth),
               rate = streamed->congestion / streamed->k / static_cast<double>(streamed->unit);
  EXPECT_GE(rate, optimum * (1 - 1e-9));  // no packing beats the optimum
  EXPECT_LT(rate, optimum * 1.05);
  std::vector<NodeId> roots(t.num_npus());
  std::iota(roots.begin(), roots.end(), 0);
  expect_well_formed(t, *streamed, roots, "two MI250 boxes");
  const double per_copy = static_cast<double>(streamed->unit) / streamed->congestion;
  std::vector<double> load(t.num_links(), 0.0);
  for (const PackedTree& tr : streamed->trees)
    for (NodeId v = 0; v < t.num_npus(); ++v)
      for (size_t r = 0; r < tr.routes[v].size(); ++r)
        for (LinkId l : tr.routes[v][r]) load[l] += per_copy * tr.copies * tr.lanes[v][r];
  for (LinkId l = 0; l < t.num_links(); ++l)
    EXPECT_LE(load[l], static_cast<double>(t.link(l).bandwidth) * (1 + 1e-6)) << t.describe_link(l);
  // Where the optimum needs few trees, the pipelines stream it.
  for (const int seed : {8, 12, 60}) {
    const topo::Topology r = topo::generate(fmt::format("random-fabric:{}", seed));
    const std::optional<TreePacking> a = pack_spanning_trees(r), b = pack_pipelined_trees(r);
    ASSERT_TRUE(a && b);
    EXPECT_EQ(a->trees.size(), b->trees.size()) << seed;
    EXPECT_EQ(a->k, b->k) << seed;
    EXPECT_EQ(a->congestion, b->congestion) << seed;
  }
}

TEST(TreePacking, TooLargeGivesNothing) {
  PackingOptions o;
  o.max_npus = 8;
  EXPECT_FALSE(pack_spanning_trees(topo::generate("ring:9"), o));
  o = {};
  o.max_flow_budget = 3;
  EXPECT_FALSE(pack_spanning_trees(topo::generate("switch:8"), o));
}

// A fabric whose switches would take far more max-flows to split than the budget allows gives up
// as soon as that is clear, having spent a small part of it; one within the budget still packs.
TEST(TreePacking, SplittingGivesUpOnceTheBudgetIsOutOfReach) {
  int64_t spent = 0;
  PackingOptions o;
  o.spent = &spent;
  EXPECT_FALSE(pack_spanning_trees(topo::generate("leafspine:16x8"), o));
  EXPECT_GT(spent, 0);
  EXPECT_LT(spent, o.max_flow_budget / 20);
  const std::optional<TreePacking> p = pack_spanning_trees(topo::generate("leafspine:4x8"), o);
  ASSERT_TRUE(p);
  EXPECT_EQ(spent, p->max_flows);
}

// Building the trees gives up past its work budget (the arcs and nodes its max-flows scan), and
// packs within it.
TEST(TreePacking, TreeBuildingGivesUpPastItsWorkBudget) {
  const topo::Topology t = topo::generate("torus2d:4x4");
  PackingOptions o;
  EXPECT_TRUE(pack_spanning_trees(t, o));
  o.max_tree_work = 1000;
  EXPECT_FALSE(pack_spanning_trees(t, o));
}

// Building the trees gives up as soon as its work is projected past the budget (each node a tree
// still lacks takes a max-flow over a graph about as large as now), having spent a small part of
// what packing takes, not after running into it.
TEST(TreePacking, TreeBuildingGivesUpOnceItsBudgetIsOutOfReach) {
  const topo::Topology t = topo::generate("torus2d:8x8");
  int64_t spent = 0;
  PackingOptions o;
  o.spent = &spent;
  ASSERT_TRUE(pack_spanning_trees(t, o));
  const int64_t packing = spent;
  o.max_tree_work = 1'000'000;  // a small part of what building its trees takes
  spent = 0;
  EXPECT_FALSE(pack_spanning_trees(t, o));
  EXPECT_GT(spent, 0);
  EXPECT_LT(spent, packing / 20);
}

// Every flow-plan method on random topologies: correct (the verifier checks rates against link
// capacity too), and not faster than the bound.
TEST(FlowPlanSynthesis, VerifiesOnRandomTopologies) {
  std::mt19937_64 rng(17);
  int made = 0;
  int lanes = 0, sped = 0, serial_made = 0;  // how often each pipeline variant was the fastest
  for (int i = 0; i < 60; ++i) {
    const topo::Topology t = random_topology(rng, 8);
    const CollectiveKind kind = std::array{CollectiveKind::AllGather, CollectiveKind::ReduceScatter,
                                           CollectiveKind::AllReduce, CollectiveKind::Broadcast,
                                           CollectiveKind::Reduce}[i % 5];
    // 1-3 chunks per NPU, or (every fourth) 16, where the pipelines' streams pace.
    Collective c = Collective::over_all(t, kind, i % 4 == 3 ? 16 : 1 + static_cast<int>(rng() % 3));
    c.root = static_cast<int>(rng() % c.num_ranks());
    const Bytes chunk = Bytes{1} << (10 + rng() % 12);
    for (SynthMethod m : {SynthMethod::PlanPipeline, SynthMethod::PlanMatcher}) {
      SynthOptions o;
      o.method = m;
      const std::string where = fmt::format("topology {} {} {}", i, to_string(kind), to_string(m));
      Algorithm a;
      try {
        a = synthesize(t, c, chunk, o);
      } catch (const NotApplicable&) {
        continue;  // no plan for this topology
      }
      ++made;
      if (m == SynthMethod::PlanPipeline) {
        lanes += streamed(a, in_lanes);
        sped += streamed(a, sped_up);
        serial_made += streamed(a, serial);
      }
      const Report r = verify(t, a, {.max_reported = 3});
      EXPECT_TRUE(r.correct()) << where << testing::violation_text(r);
      EXPECT_GE(a.claimed_time, lower_bound(t, c, chunk).total) << where;
    }
  }
  EXPECT_GE(made, 100);
  // The pipelines in lanes and sped up were verified (the verifier holds every link's rates to its
  // bandwidth; paced ones: PacedPipelinesKeepToTheirShare, split ones:
  // SplitPipelinesFitTheRoomLeft).
  EXPECT_GT(lanes, 0);
  EXPECT_GT(sped, 0);
  EXPECT_GT(serial_made, 0);
}

// Auto keeps the fastest of every method, so it is never slower than the matcher alone.
TEST(FlowPlanSynthesis, AutoIsNeverSlowerThanTheMatcher) {
  std::mt19937_64 rng(18);
  for (int i = 0; i < 30; ++i) {
    const topo::Topology t = random_topology(rng, 8);
    const Collective c =
        Collective::over_all(t, i % 2 ? CollectiveKind::AllGather : CollectiveKind::Broadcast, 2);
    SynthOptions matcher;
    matcher.method = SynthMethod::Matcher;
    EXPECT_LE(synthesize(t, c, 1 << 20).claimed_time,
              synthesize(t, c, 1 << 20, matcher).claimed_time)
        << i;
  }
}

// Broadcast and Reduce on a pod whose servers reach each other only through 25 GB/s NICs: the
// root's four NICs carry it all, so the bound is M / 100 GB/s (the cut bound from or to the root),
// and the plan's result verifies. That it gets within 3 % (ring: 2.4x):
// FlowPlanQuality.BroadcastOnAPodNearTheCutBound.
TEST(FlowPlanSynthesis, BroadcastOnAPodIsBoundByTheRootsNics) {
  testing::for_each_rooted_on_a_pod([](const topo::Topology& t, CollectiveKind kind,
                                       const ChunkingResult& r, const LowerBound& b) {
    EXPECT_EQ(b.label, kind == CollectiveKind::Broadcast ? "cut bound (from the root)"
                                                         : "cut bound (to the root)");
    EXPECT_NEAR(static_cast<double>(b.bandwidth), 256.0 * (1 << 20) / 100e9 * 1e12, 1e3);
    EXPECT_TRUE(verify(t, r.algorithm).correct()) << r.algorithm.method;
  });
}

}  // namespace
}  // namespace tenet::synth

namespace tenet::synth {
namespace {

// Routed collectives under the flow plan (ways spread like the multicommodity-flow optimum): on
// random switched, asymmetric, mixed-speed topologies and random groups, correct and never faster
// than the bound.
TEST(FlowWays, VerifyOnRandomTopologiesAndGroups) {
  std::mt19937_64 rng(2026);
  for (int i = 0; i < 60; ++i) {
    const topo::Topology t = random_topology(rng, 9);
    const CollectiveKind kind = std::array{CollectiveKind::AllToAll, CollectiveKind::Scatter,
                                           CollectiveKind::Gather}[i % 3];
    Collective c = Collective::over_all(t, kind, 1 + static_cast<int>(rng() % 3));
    if (i % 2) {  // a random group in a random order
      std::shuffle(c.ranks.begin(), c.ranks.end(), rng);
      c.ranks.resize(2 + rng() % static_cast<size_t>(t.num_npus() - 1));
    }
    c.root = static_cast<int>(rng() % c.num_ranks());
    const Bytes chunk = Bytes{1} << (10 + rng() % 12);
    SynthOptions o;
    o.method = SynthMethod::PlanMatcher;
    const std::string where =
        fmt::format("topology {} {} over {} NPUs", i, c.describe(), c.num_ranks());
    const Algorithm a = synthesize(t, c, chunk, o);
    EXPECT_TRUE(a.provenance == Provenance(Producer::FlowWaysMatcher)) << where << ": " << a.method;
    const Report r = verify(t, a, {.max_reported = 3});
    EXPECT_TRUE(r.correct()) << where << testing::violation_text(r);
    EXPECT_GE(a.claimed_time, lower_bound(t, c, chunk).total) << where;
  }
}

// The ways at their shares of the links: on a dragonfly and a 2:1 leaf-spine whose network steps
// cost 2.6 us, an All-to-All of 64 MiB at one chunk per pair within 2 % and 1 % of the bound
// (1.0182x and 1.0004x; full-rate ways, their steps one after another on the shared global and
// spine links: 1.2276x and 1.1501x), verified.
TEST(FlowWays, SharedWaysPayTheirStepsSideBySide) {
  for (const auto& [spec, within] :
       {std::pair{"dragonfly:4x4x2", 1.02}, std::pair{"leafspine:4x8,spines=2", 1.01}}) {
    topo::Topology t = topo::generate(spec);
    t.set_charges_steps(true);
    const Collective c = Collective::over_all(t, CollectiveKind::AllToAll, 1);
    const Bytes chunk = c.chunk_bytes_for(Bytes{64} << 20);
    SynthOptions o;
    o.method = SynthMethod::PlanMatcher;
    const Algorithm a = synthesize(t, c, chunk, o);
    EXPECT_NE(a.method.find("at its share of the links"), std::string::npos) << spec << a.method;
    const Report r = verify(t, a, {.max_reported = 3});
    EXPECT_TRUE(r.correct()) << spec << testing::violation_text(r);
    const auto bound = static_cast<double>(lower_bound(t, c, chunk).total);
    EXPECT_GE(static_cast<double>(a.claimed_time), bound) << spec;
    EXPECT_LT(static_cast<double>(a.claimed_time), within * bound) << spec;
  }
}

// All-to-All at 64 MiB with -k auto verifies on regular topologies, a DGX-1, a rail cluster and a
// 2:1 leaf-spine. How close to the maximum-concurrent-flow bound:
// FlowWaysQuality.AllToAllNearTheBound.
TEST(FlowWays, AllToAllVerifies) {
  testing::for_each_all_to_all(
      [](const char* spec, const topo::Topology& t, const ChunkingResult& r) {
        EXPECT_TRUE(verify(t, r.algorithm, {.max_reported = 3}).correct())
            << spec << ": " << r.algorithm.method;
      });
}

}  // namespace
}  // namespace tenet::synth
