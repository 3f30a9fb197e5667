// All-Reduces in C chunks in all (Collective::all_reduce_chunks), and their composition per level
// on clusters of servers (synth/groups/composed.hpp).
#include "synth/groups/composed.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>

#include "chakra/collective_graph.hpp"
#include "synth/auto/composed_search.hpp"
#include "synth/baselines/baselines.hpp"
#include "synth/bounds/lower_bound.hpp"
#include "synth/formats/algorithm_json.hpp"
#include "synth/groups/group_map.hpp"
#include "synth/synthesizer.hpp"
#include "synth/tuning.hpp"
#include "synth/verify/verify.hpp"
#include "tests/synth/test_support.hpp"
#include "topo/generators.hpp"

namespace tenet::synth {
namespace {

Collective in_all(const topo::Topology& t, int chunks) {
  Collective c = Collective::over_all(t, CollectiveKind::AllReduce);
  c.all_reduce_chunks = chunks;
  return c;
}

TEST(AllReduceChunks, ChunksInAllReplaceChunksPerNpu) {
  const auto t = topo::generate("switch:8");
  Collective c = in_all(t, 3);
  c.chunks_per_npu = 5;  // plays no part
  EXPECT_EQ(c.num_chunks(), 3);
  EXPECT_EQ(c.pieces(), 3);
  EXPECT_EQ(c.chunk_bytes_for(300), 100);
  // Chunk c is rank c*P/C's (8 ranks, 3 chunks: ranks 0, 2 and 5), as c/k is for P*k chunks.
  EXPECT_EQ(c.origin(0), 0);
  EXPECT_EQ(c.origin(1), 2);
  EXPECT_EQ(c.origin(2), 5);
  for (int r = 0; r < 8; ++r)
    for (ChunkId ch = 0; ch < 3; ++ch) {
      EXPECT_TRUE(c.initially_holds(r, ch));
      EXPECT_TRUE(c.finally_needs(r, ch));
    }
  EXPECT_EQ(c.describe(), "all-reduce over 8 ranks in 3 chunks");
  // With P*k chunks named in all, origin is what chunks per NPU gives.
  Collective same = in_all(t, 16), per_npu = Collective::over_all(t, CollectiveKind::AllReduce, 2);
  for (ChunkId ch = 0; ch < 16; ++ch) EXPECT_EQ(same.origin(ch), per_npu.origin(ch));
  EXPECT_NO_THROW(c.validate(t));
  c.all_reduce_chunks = -1;
  EXPECT_THROW(c.validate(t), Error);
  Collective ag = Collective::over_all(t, CollectiveKind::AllGather);
  ag.all_reduce_chunks = 4;
  try {
    ag.validate(t);
    FAIL() << "a chunk count in all on an all-gather was accepted";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("is for all-reduce"), std::string::npos) << e.message();
  }
}

// The trees and NVLS take any chunk count; the others refuse, saying why. The bound counts the
// whole buffer: C chunks of b bytes.
TEST(AllReduceChunks, TreesTakeAnyCountAndTheOthersSayWhyNot) {
  const auto t = topo::generate("switch:16");
  const Collective c = in_all(t, 6);
  for (BaselineKind b : {BaselineKind::Dbt, BaselineKind::Tree}) {
    const Algorithm a = make_baseline({b, {}}, t, c, 1 << 20);
    const Report r = verify(t, a);
    EXPECT_TRUE(r.correct()) << to_string(b) << "\n" << testing::violation_text(r);
    EXPECT_EQ(a.collective.num_chunks(), 6);
  }
  for (BaselineKind b : {BaselineKind::Ring, BaselineKind::Direct, BaselineKind::Rhd}) {
    try {
      make_baseline({b, {}}, t, c, 1 << 20);
      ADD_FAILURE() << to_string(b) << " made an all-reduce in 6 chunks in all";
    } catch (const NotApplicable& e) {
      EXPECT_NE(e.message().find("not 6 chunks in all"), std::string::npos) << e.message();
    }
  }
  Collective per_npu = Collective::over_all(t, CollectiveKind::AllReduce, 3);  // 48 chunks
  Collective named = in_all(t, 48);
  EXPECT_EQ(lower_bound(t, per_npu, 1000).bandwidth, lower_bound(t, named, 1000).bandwidth);
  EXPECT_LT(lower_bound(t, c, 1000).bandwidth, lower_bound(t, named, 1000).bandwidth);
}

TEST(AllReduceChunks, FilesKeepTheCount) {
  const auto t = topo::generate("switch:8");
  const Algorithm a = make_baseline({BaselineKind::Dbt, {}}, t, in_all(t, 5), 4096);
  const std::string text = to_json(a);
  EXPECT_NE(text.find("\"chunks\": 5"), std::string::npos);
  const Algorithm back = parse_algorithm_json(text);
  EXPECT_EQ(back.collective.all_reduce_chunks, 5);
  EXPECT_EQ(to_json(back), text);
  EXPECT_TRUE(verify(t, back).correct());
  // A count on another collective, or below 1, names the field.
  using Edit = std::pair<std::string, std::string>;
  for (const auto& [from, to] : {Edit{"\"kind\": \"all-reduce\"", "\"kind\": \"all-gather\""},
                                 Edit{"\"chunks\": 5", "\"chunks\": 0"}}) {
    try {
      parse_algorithm_json(testing::replaced(text, from, to));
      ADD_FAILURE() << "accepted " << to;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("collective.chunks"), std::string::npos) << e.what();
    }
  }
  // Chakra ET keeps it too (its metadata).
  const Algorithm from_et =
      chakra::from_collective_graph(chakra::to_collective_graph(a, t), t, "in-memory");
  EXPECT_EQ(from_et.collective.all_reduce_chunks, 5);
  EXPECT_TRUE(verify(t, from_et).correct());
}

// A composition per level is a correct All-Reduce of G*k chunks, its claimed time the timing
// model's, on rail and fat-tree clusters of several shapes and on seeded random clusters of
// servers.
TEST(Composed, VerifiedOnClustersOfServers) {
  std::vector<std::string> specs{
      "nvcluster:2x4,net=rail", "nvcluster:4x8,net=rail", "nvcluster:4x8,net=fattree",
      "nvcluster:3x8,net=rail,bw=300GB/s/25GB/s", "nvcluster:5x2,net=fattree"};
  std::mt19937_64 rng(17);
  for (int i = 0; i < 8; ++i) {
    const int servers = 2 + static_cast<int>(rng() % 5), per = 2 + static_cast<int>(rng() % 4);
    specs.push_back(
        fmt::format("nvcluster:{}x{},net={}", servers, per, rng() % 2 ? "rail" : "fattree"));
  }
  SynthOptions o;
  o.method = SynthMethod::Composed;
  int checked = 0;
  for (const std::string& spec : specs) {
    const auto t = topo::generate(spec);
    const auto servers = composed_servers(t, Collective::over_all(t, CollectiveKind::AllReduce));
    ASSERT_TRUE(servers) << spec;
    const int g = static_cast<int>(servers->front().size());
    for (int k : {1, 2, 4}) {
      Collective c = Collective::over_all(t, CollectiveKind::AllReduce, k);
      const Algorithm a = synthesize(t, c, 1 << 16, o);
      SCOPED_TRACE(fmt::format("{} k={}: {}", spec, k, a.method));
      EXPECT_EQ(a.collective.num_chunks(), g * k);
      EXPECT_EQ(a.provenance.producer, Producer::Composed);
      const Report r = verify(t, a);
      EXPECT_TRUE(r.correct()) << testing::violation_text(r);
      EXPECT_EQ(r.collective_time, a.claimed_time);
      // Given in chunks in all, the same composition.
      EXPECT_EQ(synthesize(t, composed_collective(t, c), 1 << 16, o).claimed_time, a.claimed_time);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 39);
}

// That the phases overlap chunk by chunk (many chunks near the bound):
// ComposedQuality.PhasesOverlap (tests/quality/composed_quality_test.cpp).

// A server's levels are made in its part through the links that join it (its NVSwitch): on a fat
// tree, the server's part through any switch is the whole fabric (and its flow plans took 80 % of a
// 2,048-NPU composition's time). Every transfer within a server stays in that server's part (9 of
// the 48 nodes).
TEST(Composed, ServerLevelsStayInsideTheServer) {
  const auto t = topo::generate("nvcluster:4x8,net=fattree");
  Bandwidth joined = 0;
  const auto servers =
      composed_servers(t, Collective::over_all(t, CollectiveKind::AllReduce), &joined);
  ASSERT_TRUE(servers);
  EXPECT_EQ(joined, t.link(t.out_links(0).front()).bandwidth);  // npu0's NVSwitch link, 450 GB/s
  EXPECT_EQ(joined, Bandwidth{450'000'000'000});
  Collective rs;
  rs.kind = CollectiveKind::ReduceScatter;
  rs.ranks = servers->front();
  const auto part = group_part(t, rs, joined);
  ASSERT_TRUE(part);
  EXPECT_EQ(part->topology.num_nodes(), 9);  // 8 GPUs and their NVSwitch
  EXPECT_FALSE(group_part(t, rs));           // through the fabric: over a quarter of the cluster
  SynthOptions o;
  o.method = SynthMethod::Composed;
  const Algorithm a =
      synthesize(t, Collective::over_all(t, CollectiveKind::AllReduce, 2), 1 << 20, o);
  EXPECT_EQ(a.provenance.producer, Producer::Composed) << a.method;
  EXPECT_EQ(t.num_nodes(), 48);
  std::vector<int> server_of(static_cast<size_t>(t.num_nodes()), -1);
  std::vector<std::vector<bool>> in_part;  // per server, the nodes of its part
  for (size_t s = 0; s < servers->size(); ++s) {
    for (topo::NodeId v : (*servers)[s]) server_of[static_cast<size_t>(v)] = static_cast<int>(s);
    Collective level = rs;
    level.ranks = (*servers)[s];
    const auto its = group_part(t, level, joined);
    ASSERT_TRUE(its) << "server " << s;
    EXPECT_EQ(its->topology.num_nodes(), 9) << "server " << s;
    in_part.emplace_back(static_cast<size_t>(t.num_nodes()), false);
    for (topo::NodeId v : its->nodes) in_part.back()[static_cast<size_t>(v)] = true;
  }
  int inside = 0;
  for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id) {
    const int s = server_of[static_cast<size_t>(a[id].src)];
    if (s < 0 || s != server_of[static_cast<size_t>(a[id].dst)]) continue;
    ++inside;
    for (LinkId l : a.route(id))
      ASSERT_TRUE(in_part[static_cast<size_t>(s)][static_cast<size_t>(t.link(l).src)] &&
                  in_part[static_cast<size_t>(s)][static_cast<size_t>(t.link(l).dst)])
          << "transfer " << id << " (" << t.node(a[id].src).name << " -> " << t.node(a[id].dst).name
          << ") leaves its server's part at link " << l << ": " << a.method;
  }
  EXPECT_GT(inside, 0);
  EXPECT_TRUE(verify(t, a).correct());
}

// Where the trees cannot cross the servers (DGX-1 boxes on a switch: a tree's partial sums would
// have to pass through NPUs with contributions of their own), the chunk search goes on to the
// counts at which the rail's chunks split among its ranks and flat synthesis runs there.
TEST(Composed, TheSearchGoesOnWhereACountDoesNotCompose) {
  const auto t = topo::generate("dgx1:8 x switch:4");
  SynthOptions o;
  o.method = SynthMethod::Composed;
  const ChunkingResult r =
      synthesize_auto_chunks(t, Collective::over_all(t, CollectiveKind::AllReduce), 64 << 20, o);
  ASSERT_FALSE(r.tried.empty());
  EXPECT_GT(r.tried.front().chunks_per_npu, 1);
  const Report rep = verify(t, r.algorithm);
  EXPECT_TRUE(rep.correct()) << testing::violation_text(rep);
}

// Across two servers the fastest flat All-Reduce of the rail is the one-shot exchange, whose ranks
// send their inputs (Transfer::from_input). As the level after the servers' Reduce-Scatter each
// rank sent its partial only once the other's had arrived, so it carried it back and the other
// counted itself twice (`--method composed` at 4 to 16 chunks per NPU: 80 to 320 violations,
// nothing written). Such a level does not compose across (composes_across): another way is the
// rail's, and every count verifies.
TEST(Composed, ARailLevelWhoseRanksSendTheirInputsIsNotComposed) {
  const auto t = topo::generate("nvcluster:2x4,net=rail");
  const auto servers = composed_servers(t, Collective::over_all(t, CollectiveKind::AllReduce));
  ASSERT_TRUE(servers);
  Collective rail;
  rail.kind = CollectiveKind::AllReduce;
  for (const auto& server : *servers) rail.ranks.push_back(server.front());
  const Made<Algorithm> exchange =
      try_baseline(BaselineSpec{BaselineKind::Oneshot, {}}, t, rail, 1 << 20);
  ASSERT_TRUE(made(exchange));
  EXPECT_FALSE(composes_across(std::get<Algorithm>(exchange)));
  Collective trees = rail;
  trees.all_reduce_chunks = 4;
  const Made<Algorithm> dbt = try_baseline(BaselineSpec{BaselineKind::Dbt, {}}, t, trees, 1 << 20);
  ASSERT_TRUE(made(dbt));
  EXPECT_TRUE(composes_across(std::get<Algorithm>(dbt)));
  SynthOptions o;
  o.method = SynthMethod::Composed;
  for (const int k : {2, 4, 8, 16}) {
    const Collective c = Collective::over_all(t, CollectiveKind::AllReduce, k);
    const Algorithm a = synthesize(t, c, c.chunk_bytes_for(Bytes{64} << 20), o);
    SCOPED_TRACE(fmt::format("k={}: {}", k, a.method));
    const Report r = verify(t, a);
    EXPECT_TRUE(r.correct()) << testing::violation_text(r);
    EXPECT_EQ(r.collective_time, a.claimed_time);
  }
}

// Beside a flat search's time (to_beat), a composition whose first count is over twice
// kPipelinesContend of it makes no more counts: a doubling at most halves a count's time, so the
// next could not come within kPipelinesContend of it. Without one it doubles on.
TEST(Composed, AFirstCountFarBehindTheFlatSearchIsTheLast) {
  const auto t = topo::generate("nvcluster:2x4,net=rail");
  const Collective c = Collective::over_all(t, CollectiveKind::AllReduce);
  const Made<ChunkingResult> alone = detail::composed_auto_chunks(t, c, 64 << 20, {}, 64);
  ASSERT_TRUE(made(alone));
  const std::vector<ChunkingResult::Try>& tried = std::get<ChunkingResult>(alone).tried;
  ASSERT_GT(tried.size(), 2U);
  const auto far =
      static_cast<Time>(static_cast<double>(tried.front().time) / (2 * kPipelinesContend) * 0.99);
  const Made<ChunkingResult> behind = detail::composed_auto_chunks(t, c, 64 << 20, {}, 64, far);
  ASSERT_TRUE(made(behind));
  EXPECT_EQ(std::get<ChunkingResult>(behind).tried.size(), 1U);
  // Just within it, the second count is made.
  const Made<ChunkingResult> near =
      detail::composed_auto_chunks(t, c, 64 << 20, {}, 64, far * 102 / 99);
  ASSERT_TRUE(made(near));
  EXPECT_GT(std::get<ChunkingResult>(near).tried.size(), 1U);
}

TEST(Composed, OnlyClustersOfServersCompose) {
  SynthOptions o;
  o.method = SynthMethod::Composed;
  const auto torus = topo::generate("torus2d:4x4");
  EXPECT_FALSE(composed_servers(torus, Collective::over_all(torus, CollectiveKind::AllReduce)));
  try {
    synthesize(torus, Collective::over_all(torus, CollectiveKind::AllReduce), 1024, o);
    FAIL() << "composed a torus";
  } catch (const NotApplicable& e) {
    EXPECT_NE(e.message().find("two or more servers"), std::string::npos) << e.message();
  }
  const auto cluster = topo::generate("nvcluster:2x4,net=rail");
  // A group, an All-Gather, chunks in all that do not split into the servers' slices.
  Collective group = Collective::over_all(cluster, CollectiveKind::AllReduce);
  group.ranks.pop_back();
  EXPECT_FALSE(composed_servers(cluster, group));
  EXPECT_FALSE(composed_servers(cluster, Collective::over_all(cluster, CollectiveKind::AllGather)));
  EXPECT_THROW(synthesize(cluster, in_all(cluster, 6), 1024, o), NotApplicable);
  EXPECT_EQ(synthesize(cluster, in_all(cluster, 8), 1024, o).collective.num_chunks(), 8);
  EXPECT_THROW(synthesize_auto_chunks(torus, Collective::over_all(torus, CollectiveKind::AllReduce),
                                      1 << 20, o),
               NotApplicable);
}

// Method auto composes only where flat synthesis is out of reach (kFlatTransferCap) or ends short
// of the bound; as_synthesized says which collective a run will make.
TEST(Composed, AutoComposesWhereFlatIsOutOfReach) {
  const auto t = topo::generate("nvcluster:4x8,net=rail");
  const Collective c = Collective::over_all(t, CollectiveKind::AllReduce, 2);
  SynthOptions o;
  EXPECT_EQ(as_synthesized(t, c, o).all_reduce_chunks, 0);
  o.method = SynthMethod::Composed;
  EXPECT_EQ(as_synthesized(t, c, o).all_reduce_chunks, 16);
  // 32,768 NPUs (one of 8 per server): flat is 2^31 transfers; composed at 1 chunk per NPU,
  // 2*8*(P-1).
  const auto big = topo::generate("nvcluster:4096x8,net=rail");
  const Collective huge = Collective::over_all(big, CollectiveKind::AllReduce);
  EXPECT_GT(transfer_estimate(huge), kFlatTransferCap);
  const Collective made = as_synthesized(big, huge, SynthOptions{});
  EXPECT_EQ(made.all_reduce_chunks, 8);
  EXPECT_EQ(transfer_estimate(made), int64_t{2} * 8 * 32767);
}

}  // namespace
}  // namespace tenet::synth
