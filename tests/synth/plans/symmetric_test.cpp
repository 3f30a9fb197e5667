// Topologies that look the same from every NPU (topo/symmetry.hpp), and synthesis by translation on
// them (synth/plans/symmetric.hpp).
#include "synth/plans/symmetric.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "synth/baselines/baselines.hpp"
#include "synth/bounds/lower_bound.hpp"
#include "synth/cost/timing.hpp"
#include "synth/synthesizer.hpp"
#include "synth/verify/verify.hpp"
#include "tests/synth/test_support.hpp"
#include "topo/generators.hpp"
#include "topo/symmetry.hpp"

namespace tenet::synth {
namespace {

constexpr Bytes kChunk = 1 << 20;

// A w x h torus built link by link (NPU x + w*y), with `levels` recorded and, when `slow` >= 0,
// that link at half bandwidth.
topo::Topology hand_torus(int w, int h, bool record_levels, int slow = -1) {
  topo::TopologyBuilder b("hand");
  for (int i = 0; i < w * h; ++i) b.add_npu();
  int link = 0;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const topo::NodeId v = x + w * y;
      for (topo::NodeId u : {(x + 1) % w + w * y, x + w * ((y + 1) % h)}) {
        b.add_link(v, u, link == slow ? 25e9 : 50e9, 500'000);
        b.add_link(u, v, 50e9, 500'000);
        link += 2;
      }
    }
  if (record_levels) b.set_levels({w, h});
  return b.build();
}

// Every link moved by every translation is its orbit's link at its anchor moved: same bandwidth
// and latency, its NPU end moved by the translation.
void expect_moves(const topo::Topology& t, const topo::Translations& tr) {
  for (LinkId l = 0; l < t.num_links(); ++l)
    for (topo::NodeId s = 0; s < t.num_npus(); ++s) {
      const topo::Link& a = t.link(l);
      const LinkId m = tr.link_of(tr.orbit(l), tr.shift(tr.anchor(t, l), s));
      const topo::Link& b = t.link(m);
      ASSERT_EQ(b.bandwidth, a.bandwidth);
      ASSERT_EQ(b.latency, a.latency);
      if (t.is_npu(a.src)) {
        ASSERT_EQ(b.src, tr.shift(a.src, s)) << t.describe_link(l);
      }
      if (t.is_npu(a.dst)) {
        ASSERT_EQ(b.dst, tr.shift(a.dst, s)) << t.describe_link(l);
      }
      ASSERT_EQ(t.is_npu(b.src), t.is_npu(a.src));
      ASSERT_EQ(t.is_npu(b.dst), t.is_npu(a.dst));
    }
}

TEST(Translations, ATorusIsTheGroupOfItsDimensions) {
  const auto t = topo::generate("torus2d:4x6,bw=50GB/s/100GB/s");
  const std::optional<topo::Translations> tr = topo::translation_symmetry(t);
  ASSERT_TRUE(tr);
  EXPECT_EQ(tr->dims(), (std::vector<int>{4, 6}));
  EXPECT_EQ(tr->describe(), "Z4 x Z6");
  EXPECT_EQ(tr->num_out_slots(), 4);
  EXPECT_EQ(tr->num_in_slots(), 0);
  EXPECT_TRUE(tr->reversible());
  expect_moves(t, *tr);
  for (topo::NodeId x : {0, 5, 23}) {
    topo::Translations::Walker walk(*tr, x);
    for (topo::NodeId s = 0; s < 24; ++s, walk.step()) EXPECT_EQ(walk.at(), tr->shift(x, s));
  }
  for (LinkId l = 0; l < t.num_links(); ++l) {
    const topo::Link& back = t.link(tr->reverse(l));
    EXPECT_EQ(back.src, t.link(l).dst);
    EXPECT_EQ(back.dst, t.link(l).src);
    EXPECT_EQ(back.bandwidth, t.link(l).bandwidth);
    EXPECT_EQ(tr->reverse(tr->reverse(l)), l);  // one way back per link: a pairing
  }
}

// A cluster of servers on rails: Z_G x Z_S, its NVSwitches and rails moved along.
TEST(Translations, ServersOnRailsMoveWithTheirSwitches) {
  const auto t = topo::generate("nvcluster:4x8,net=rail");
  const std::optional<topo::Translations> tr = topo::translation_symmetry(t);
  ASSERT_TRUE(tr);
  EXPECT_EQ(tr->describe(), "Z8 x Z4");
  EXPECT_EQ(tr->num_out_slots(), 2);  // to the NVSwitch, to the rail
  EXPECT_EQ(tr->num_in_slots(), 2);
  EXPECT_TRUE(tr->reversible());
  expect_moves(t, *tr);
  const auto one_switch = topo::translation_symmetry(topo::generate("switch:8"));
  ASSERT_TRUE(one_switch);
  EXPECT_EQ(one_switch->describe(), "Z8");
}

TEST(Translations, FoundOnlyWhereEveryLinkMoves) {
  EXPECT_TRUE(topo::translation_symmetry(hand_torus(4, 3, true)));
  EXPECT_FALSE(topo::translation_symmetry(hand_torus(4, 3, false)));       // no dimensions known
  EXPECT_FALSE(topo::translation_symmetry(hand_torus(4, 3, true, 6)));     // one link slower
  EXPECT_FALSE(topo::translation_symmetry(topo::generate("mesh2d:4x4")));  // edges differ
  EXPECT_FALSE(
      topo::translation_symmetry(topo::generate("nvcluster:2x4,net=fattree")));  // switch to switch
  EXPECT_FALSE(topo::translation_symmetry(topo::generate("dgx1")));
  const auto cube = topo::translation_symmetry(topo::generate("hypercube:16"));
  ASSERT_TRUE(cube);
  EXPECT_EQ(cube->describe(), "Z2 x Z2 x Z2 x Z2");
  // Dimensions of size 2 in a torus: two parallel links each way, each its own slot.
  const auto thin_topology = topo::generate("torus2d:2x3");
  const auto thin = topo::translation_symmetry(thin_topology);
  ASSERT_TRUE(thin);
  EXPECT_TRUE(thin->reversible());
  expect_moves(thin_topology, *thin);
  // A one-way ring moves onto itself, but has no way back.
  topo::TopologyBuilder b("one-way");
  for (int i = 0; i < 5; ++i) b.add_npu();
  for (int i = 0; i < 5; ++i) b.add_link(i, (i + 1) % 5, 50e9, 0);
  b.set_levels({5});
  const auto one_way = topo::translation_symmetry(b.build());
  ASSERT_TRUE(one_way);
  EXPECT_EQ(one_way->num_out_slots(), 1);
  EXPECT_FALSE(one_way->reversible());
}

// Every algorithm made by translation verifies, and claims the time the verifier finds, over
// seeded random tori, rings and hypercubes of random bandwidth and latency per dimension, switches
// and clusters of servers on rails, random chunk counts, both link models, and ranks in a random
// order.
// Verified, and timed (on the quotient: rank 0's sends, one link per orbit) exactly as synth::time
// times the whole algorithm, transfer by transfer, with reductions that take time or none.
TEST(Symmetric, VerifiedOnRandomSymmetricTopologies) {
  std::mt19937_64 rng(4242);
  auto pick = [&](int lo, int hi) {
    return lo + static_cast<int>(rng() % static_cast<uint64_t>(hi - lo + 1));
  };
  int made = 0;
  for (int i = 0; i < 60; ++i) {
    std::string spec;
    switch (i % 6) {
      case 0:
        spec = fmt::format("torus2d:{}x{}", pick(2, 6), pick(2, 6));
        break;
      case 1:
        spec = fmt::format("torus3d:{}x{}x{}", pick(2, 3), pick(2, 4), pick(2, 3));
        break;
      case 2:
        spec = fmt::format("ring:{}", pick(3, 12));
        break;
      case 3:
        spec = fmt::format("hypercube:{}", 1 << pick(2, 5));
        break;
      case 4:
        spec = fmt::format("switch:{}", pick(3, 12));
        break;
      default:
        spec = fmt::format("nvcluster:{}x{},net=rail", pick(2, 5), pick(2, 6));
        break;
    }
    if (i % 6 < 2) {
      std::vector<std::string> bw, lat;
      for (int d = 0; d < i % 6 + 2; ++d) {
        bw.push_back(fmt::format("{}GB/s", 25 * pick(1, 4)));
        lat.push_back(fmt::format("{}ns", 100 * pick(0, 10)));
      }
      spec += fmt::format(",bw={},lat={}", fmt::join(bw, "/"), fmt::join(lat, "/"));
    }
    const auto t = topo::generate(spec);
    for (CollectiveKind kind : {CollectiveKind::AllGather, CollectiveKind::ReduceScatter,
                                CollectiveKind::AllReduce, CollectiveKind::AllToAll}) {
      Collective c = Collective::over_all(t, kind, pick(1, 3));
      std::shuffle(c.ranks.begin(), c.ranks.end(), rng);
      const LinkModel model = i % 3 == 0 ? LinkModel::Hold : LinkModel::Pipelined;
      std::string why;
      // Reductions taking time (500 GB/s to 4 TB/s) on a third of the cases.
      const Bandwidth reduce_bandwidth = i % 3 == 1 ? Bandwidth{500'000'000'000} * (1 + i % 8) : 0;
      const std::optional<Algorithm> a =
          synthesize_symmetric(t, c, kChunk, model, &why, reduce_bandwidth);
      ASSERT_TRUE(a) << spec << ": " << why;
      VerifyOptions quick;
      quick.lower_bound = false;
      const Report r = verify(t, *a, quick);
      EXPECT_TRUE(r.correct()) << spec << " " << c.describe() << "\n" << testing::violation_text(r);
      EXPECT_EQ(r.claimed_time, r.model_time) << spec << " " << c.describe();
      EXPECT_EQ(a->provenance.producer, Producer::Symmetric) << a->method;
      // Its time and size are known before it is written out for every NPU (the portfolio writes
      // out only a schedule it keeps).
      const std::optional<SymmetricSchedule> planned =
          plan_symmetric(t, c, kChunk, model, nullptr, reduce_bandwidth);
      ASSERT_TRUE(planned);
      EXPECT_EQ(planned->time(), a->claimed_time) << spec << " " << c.describe();
      EXPECT_EQ(planned->transfers(), a->size()) << spec << " " << c.describe();
      Algorithm whole = *a;
      time(t, whole);
      EXPECT_EQ(whole.claimed_time, a->claimed_time) << spec << " " << c.describe();
      for (TransferId id = 0; id < static_cast<TransferId>(a->size()); ++id)
        ASSERT_TRUE((*a)[id].start == whole[id].start && (*a)[id].end == whole[id].end)
            << spec << " " << c.describe() << ": transfer " << id << " at " << (*a)[id].start
            << ".." << (*a)[id].end << ", timed whole " << whole[id].start << ".." << whole[id].end;
      ++made;
    }
  }
  EXPECT_EQ(made, 240);
}

// That the schedules reach the bound on tori, hypercubes and servers on rails (All-Gather,
// All-Reduce, All-to-All): SymmetricQuality (tests/quality/symmetric_quality_test.cpp).

// Auto takes the symmetric schedule where it is at the bound, and says so: its provenance, on the
// translations of the torus, Z16 x Z16.
TEST(Symmetric, AutoTakesItAtTheBoundAndSaysSo) {
  const auto t = topo::generate("torus2d:16x16");
  const Algorithm a = synthesize(t, Collective::over_all(t, CollectiveKind::AllGather, 4), kChunk);
  EXPECT_TRUE(a.provenance == Provenance(Producer::Symmetric)) << a.method;
  const std::optional<topo::Translations> group = topo::translation_symmetry(t);
  ASSERT_TRUE(group);
  EXPECT_EQ(group->dims(), (std::vector<int>{16, 16})) << group->describe();
  EXPECT_TRUE(verify(t, a).correct());
  // Short of the bound (ring:8 at one chunk: 7 chunks on 2 slots), the others run and tie to them.
  const auto ring = topo::generate("ring:8");
  const Algorithm on_ring =
      synthesize(ring, Collective::over_all(ring, CollectiveKind::AllGather), kChunk);
  EXPECT_NE(on_ring.provenance.producer, Producer::Symmetric) << on_ring.method;
}

// Short of the bound, auto runs the others beside it; the plain matcher only within its own budget
// there (SynthOptions::portfolio.matcher_work_beside_symmetric), saying when it left it out.
TEST(Symmetric, AutoBesideTheMatcherShortOfTheBound) {
  const auto t = topo::generate("torus2d:4x4");
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather);
  const Time bound = lower_bound(t, c, 4096).total;
  const Algorithm alone = *synthesize_symmetric(t, c, 4096, LinkModel::Pipelined);
  ASSERT_GT(static_cast<double>(alone.claimed_time),
            1.001 * static_cast<double>(bound));  // latency: short of it
  SynthOptions o;
  o.portfolio.matcher_work_beside_symmetric = 1;
  const Algorithm a = synthesize(t, c, 4096, o);
  EXPECT_LE(a.claimed_time, alone.claimed_time);
  EXPECT_TRUE(verify(t, a).correct());
  EXPECT_TRUE(a.provenance.matcher_left_out) << a.method;
  const Algorithm kept = synthesize(t, c, 4096);
  EXPECT_FALSE(kept.provenance.matcher_left_out) << kept.method;
}

// A large symmetric schedule (over kPortfolioTransferBudget transfers) within kSymmetricEnough of
// the bound is auto's answer: a 512-NPU cluster on rails, where the server plan costs far more.
TEST(Symmetric, AutoKeepsALargeScheduleNearTheBound) {
  const auto t = topo::generate("nvcluster:64x8,net=rail");
  const Collective c = Collective::over_all(t, CollectiveKind::AllReduce);
  const Algorithm a = synthesize(t, c, kChunk);
  EXPECT_TRUE(a.provenance == Provenance(Producer::Symmetric)) << a.method;
  const std::optional<topo::Translations> group = topo::translation_symmetry(t);
  ASSERT_TRUE(group);
  EXPECT_EQ(group->dims(), (std::vector<int>{8, 64}))
      << group->describe();  // 8 GPUs per server, 64 servers
  EXPECT_GT(static_cast<int64_t>(a.size()), kPortfolioTransferBudget);
  EXPECT_LE(static_cast<double>(a.claimed_time),
            kSymmetricEnough * static_cast<double>(lower_bound(t, c, kChunk).total));
  EXPECT_TRUE(verify(t, a).correct());
}

// An All-Reduce's All-Gather is its Reduce-Scatter's schedule forward: each rank sends first the
// chunk reduced into it first (as the matcher's mirrored halves, synth/plans/gather_order.hpp),
// not the one reduced last. `ring:8` All-Reduce of 1 MiB at -k auto: 24.05 -> 23.55 us.
TEST(Symmetric, AnAllReducesRanksSendFirstWhatTheyReducedFirst) {
  for (const char* spec : {"ring:8", "torus2d:4x4"}) {
    const topo::Topology t = testing::charging(topo::generate(spec));
    const Collective c = Collective::over_all(t, CollectiveKind::AllReduce, 4);
    const std::optional<Algorithm> a =
        synthesize_symmetric(t, c, c.chunk_bytes_for(Bytes{1} << 20), LinkModel::Pipelined);
    ASSERT_TRUE(a) << spec;
    EXPECT_TRUE(testing::each_owner_sends_as_reduced(*a, *a)) << spec;
    EXPECT_TRUE(verify(t, *a).correct()) << spec;
  }
}

TEST(Symmetric, SaysWhyItDoesNotApply) {
  SynthOptions o;
  o.method = SynthMethod::Symmetric;
  auto message = [&](const topo::Topology& t, const Collective& c) -> std::string {
    try {
      synthesize(t, c, kChunk, o);
    } catch (const NotApplicable& e) {
      return e.what();
    }
    return "applied";
  };
  const auto mesh = topo::generate("mesh2d:4x4");
  EXPECT_NE(message(mesh, Collective::over_all(mesh, CollectiveKind::AllGather))
                .find("does not look the same from every NPU"),
            std::string::npos);
  const auto torus = topo::generate("torus2d:4x4");
  Collective group = Collective::over_all(torus, CollectiveKind::AllGather);
  group.ranks = {0, 1, 2, 3};
  EXPECT_NE(message(torus, group).find("every NPU"), std::string::npos);
  EXPECT_NE(message(torus, Collective::over_all(torus, CollectiveKind::Broadcast))
                .find("covers All-Gather"),
            std::string::npos);
  Collective uneven = Collective::over_all(torus, CollectiveKind::AllToAll);
  std::vector<int32_t> units(16 * 16, 1);
  for (int r = 0; r < 16; ++r) units[r * 16 + r] = 0;
  units[1] = 3;
  uneven.set_pair_units(units);
  EXPECT_NE(message(torus, uneven).find("the same traffic between every pair"), std::string::npos);
  topo::TopologyBuilder b("one-way");
  for (int i = 0; i < 4; ++i) b.add_npu();
  for (int i = 0; i < 4; ++i) b.add_link(i, (i + 1) % 4, 50e9, 0);
  b.set_levels({4});
  const auto one_way = b.build();
  EXPECT_NE(message(one_way, Collective::over_all(one_way, CollectiveKind::ReduceScatter))
                .find("no link back"),
            std::string::npos);
  EXPECT_EQ(message(one_way, Collective::over_all(one_way, CollectiveKind::AllGather)), "applied");
  EXPECT_EQ(message(one_way, Collective::over_all(one_way, CollectiveKind::AllToAll)), "applied");
}

}  // namespace
}  // namespace tenet::synth
