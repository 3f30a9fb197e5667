#include "synth/baselines/baselines.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <random>
#include <set>
#include <tuple>

#include "synth/baselines/ring_channels.hpp"
#include "synth/cost/timing.hpp"
#include "synth/verify/verify.hpp"
#include "tests/synth/test_support.hpp"
#include "topo/analysis.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"

namespace tenet::synth {
namespace {

constexpr Bytes kChunk = 1 << 20;
constexpr Time kLat = 500'000;
const Time kSer = transfer_time(kChunk, 50'000'000'000);  // 1 MiB at 50 GB/s

Time run(const char* algo, const char* spec, CollectiveKind kind, int k = 1,
         LinkModel m = LinkModel::Pipelined) {
  const auto t = topo::generate(spec);
  const Algorithm a =
      make_baseline(parse_baseline(algo), t, Collective::over_all(t, kind, k), kChunk, m);
  const Report r = verify(t, a, {.max_reported = 5, .lower_bound = false});
  EXPECT_TRUE(r.correct()) << algo << " on " << spec << testing::violation_text(r);
  return a.claimed_time;
}

// Every baseline and collective it supports, on every example and on generated topologies:
// either a verified algorithm, or a NotApplicable that says why.
TEST(Baselines, VerifyOrSayWhyNotEverywhere) {
  std::vector<std::string> inputs = {
      "ring:8",      "ring:5,bidir=false", "fc:6",       "switch:8",          "switch:6",
      "hypercube:8", "torus2d:4x4",        "mesh2d:3x4", "ring:4 x switch:4", "leafspine:2x4",
      "dgx1",        "nvcluster:2x4"};
  for (const auto& e :
       std::filesystem::directory_iterator(std::string(TENET_SOURCE_DIR) + "/examples/topologies"))
    inputs.push_back(e.path().string());
  int built = 0, refused = 0;
  for (const std::string& input : inputs) {
    const auto t = topo::load(input);
    for (BaselineKind b : all_baselines())
      for (CollectiveKind kind : kAllCollectives) {
        if (!supports(b, kind)) continue;
        const Collective c = Collective::over_all(t, kind, 2, t.num_npus() / 2);
        try {
          const Algorithm a = make_baseline({b, {}}, t, c, kChunk);
          const Report r = verify(t, a, {.max_reported = 5, .lower_bound = false});
          EXPECT_TRUE(r.correct()) << to_string(b) << " " << to_string(kind) << " on " << input
                                   << testing::violation_text(r);
          ++built;
        } catch (const NotApplicable& e) {
          EXPECT_FALSE(e.message().empty());
          if (b != BaselineKind::Nvls)
            ++refused;  // nvls needs a reduce-capable switch, which few have
        }
      }
  }
  EXPECT_GT(built, 3 * refused) << built << " built, " << refused << " refused";
}

// NVLS reduces through a reduce-capable switch linked to every rank: there it is built, correct;
// where the switch does not reduce it does not apply, a typed answer that says what to mark (asked
// before anything is built: the simulator asks at every size).
TEST(Baselines, NvlsNeedsAReduceCapableSwitchLinkedToEveryRank) {
  constexpr const char* kYaml = R"(
npus: [g0, g1, g2, g3]
switches: [{name: sw, reduce: REDUCE}]
defaults: {bw: 100GB/s, lat: 1us}
links:
  - {src: "g*", dst: sw}
)";
  auto with = [&](const char* reduce) {
    std::string yaml = kYaml;
    yaml.replace(yaml.find("REDUCE"), 6, reduce);
    return topo::parse_yaml(yaml);
  };
  const topo::Topology reducing = with("true"), plain = with("false");
  const Collective c = Collective::over_all(reducing, CollectiveKind::AllReduce, 2);
  const BaselineSpec nvls{BaselineKind::Nvls, {}};
  Made<Algorithm> built = try_baseline(nvls, reducing, c, kChunk);
  ASSERT_TRUE(made(built)) << std::get<NotMade>(built).why;
  EXPECT_TRUE(verify(reducing, *made(built)).correct());
  Made<Algorithm> refused = try_baseline(nvls, plain, c, kChunk);
  ASSERT_FALSE(made(refused));
  EXPECT_THAT(std::get<NotMade>(refused).why, ::testing::HasSubstr("reduce: true"));
}

TEST(Baselines, RandomTopologiesAndCommunicators) {
  std::mt19937_64 rng(99);
  int built = 0;
  for (int i = 0; i < 60; ++i) {
    const auto t = testing::random_topology(rng, 9);
    for (BaselineKind b : all_baselines())
      for (CollectiveKind kind : kAllCollectives) {
        if (!supports(b, kind) || b == BaselineKind::Hierarchical) continue;
        Collective c = testing::random_collective(rng, t, 3);
        c.kind = kind;
        if (reduces(kind)) c.ranks = Collective::over_all(t, kind).ranks;
        c.root = static_cast<int>(rng() % c.ranks.size());
        try {
          const Algorithm a = make_baseline({b, {}}, t, c, 1 + static_cast<Bytes>(rng() % 100000));
          const Report r = verify(t, a, {.max_reported = 5, .lower_bound = false});
          ASSERT_TRUE(r.correct())
              << to_string(b) << " " << c.describe() << testing::violation_text(r);
          ++built;
        } catch (const NotApplicable&) {
        }
      }
  }
  EXPECT_GT(built, 500);
}

// Closed forms (../shared/reference/cost-models.md) on each baseline's natural topology.
TEST(BaselineClosedForms, RingOnARing) {
  const int p = 8;
  EXPECT_EQ(run("ring:1", "ring:8", CollectiveKind::AllGather), (p - 1) * (kLat + kSer));
  EXPECT_EQ(run("ring:1", "ring:8", CollectiveKind::ReduceScatter), (p - 1) * (kLat + kSer));
  EXPECT_EQ(run("ring:1", "ring:8", CollectiveKind::AllReduce), 2 * (p - 1) * (kLat + kSer));
  // Two rings, half the data each: the same time with twice the data.
  EXPECT_EQ(run("bidir-ring:1", "ring:8", CollectiveKind::AllReduce, 2),
            2 * (p - 1) * (kLat + kSer));
  // Pipelined chain, k chunks (the hold model is the formula's): (p - 2 + k)(alpha + (n/k) beta).
  for (int k : {1, 4})
    EXPECT_EQ(run("ring:1", "ring:8", CollectiveKind::Broadcast, k, LinkModel::Hold),
              (p - 2 + k) * (kLat + kSer));
}

// NCCL-style channels: C rings over links of their own each carry 1/C of the data at full rate;
// C rings forced onto one ring's links share them at 1/C of the rate.
TEST(BaselineClosedForms, MultiChannelRings) {
  const int p = 8;
  // A bidirectional ring feeds two channels, one each way: 2(p-1)(alpha + (n/(2p))/B) with n/(2p)
  // one chunk.
  EXPECT_EQ(run("ring", "ring:8", CollectiveKind::AllReduce, 2), 2 * (p - 1) * (kLat + kSer));
  EXPECT_EQ(run("ring", "ring:8", CollectiveKind::AllGather, 2), (p - 1) * (kLat + kSer));
  // Four rings over a ring of doubled links (two lanes each way): one chunk each, full rate.
  std::string yaml = "npus: 8\nlinks:\n";
  for (int i = 0; i < p; ++i)
    yaml +=
        fmt::format("  - {{src: {}, dst: {}, count: 2, bw: 50GB/s, lat: 0.5us}}\n", i, (i + 1) % p);
  const auto lanes = topo::parse_yaml(yaml);
  const Collective ar = Collective::over_all(lanes, CollectiveKind::AllReduce, 4);
  const Algorithm four = make_baseline(parse_baseline("ring"), lanes, ar, kChunk);
  EXPECT_EQ(four.claimed_time, 2 * (p - 1) * (kLat + kSer));
  EXPECT_TRUE(verify(lanes, four, {.max_reported = 5, .lower_bound = false}).correct());
  // Two channels forced onto a one-way ring share each link at half rate: 2(p-1)(alpha + 2 ser).
  EXPECT_EQ(run("ring:2", "ring:8,bidir=false", CollectiveKind::AllReduce, 2),
            2 * (p - 1) * (kLat + 2 * kSer));
  // Chains per channel: Broadcast on the bidirectional ring, k = 2, one chunk each way:
  // (p - 2 + 1)(alpha + ser) under hold, as a single chain of one chunk.
  EXPECT_EQ(run("ring", "ring:8", CollectiveKind::Broadcast, 2, LinkModel::Hold),
            (p - 1) * (kLat + kSer));
}

// A ring over a switch of 300 NPUs (past the ring search's exact Warnsdorff counting, where every
// member reaches every other): one ring at the NPU links' full rate, 2(p-1) steps of two hops.
TEST(BaselineClosedForms, RingOverALargeSwitch) {
  const int p = 300;
  const auto t = topo::generate("switch:300,bw=50GB/s,lat=0.5us");
  const Algorithm a = make_baseline(parse_baseline("ring"), t,
                                    Collective::over_all(t, CollectiveKind::AllReduce), kChunk);
  EXPECT_EQ(a.claimed_time, 2 * (p - 1) * (2 * kLat + kSer));
  EXPECT_TRUE(verify(t, a, {.max_reported = 5, .lower_bound = false}).correct());
}

// Untimed (for a caller that replays it, as the simulator does): the same transfers, no times.
TEST(Baselines, UntimedIsTheSameAlgorithmWithoutTimes) {
  const auto t = topo::generate("nvcluster:2x4,net=rail");
  int compared = 0;
  for (BaselineKind kind : all_baselines()) {
    const std::string algo = BaselineSpec{kind, {}}.name();
    const Collective c = Collective::over_all(t, CollectiveKind::AllReduce, 2);
    Algorithm timed;
    try {
      timed = make_baseline(parse_baseline(algo), t, c, kChunk);
    } catch (const Error&) {
      continue;  // does not apply here
    }
    ++compared;
    const Algorithm untimed =
        make_baseline(parse_baseline(algo), t, c, kChunk, LinkModel::Pipelined, 0, false);
    EXPECT_EQ(untimed.claimed_time, -1) << algo;
    ASSERT_EQ(untimed.size(), timed.size()) << algo;
    for (TransferId id = 0; id < static_cast<TransferId>(timed.size()); ++id) {
      TransferSpec x = timed.spec(id);
      x.start = x.end = -1;
      const TransferSpec y = untimed.spec(id);
      EXPECT_TRUE(x.chunk == y.chunk && x.src == y.src && x.dst == y.dst && x.op == y.op &&
                  x.route == y.route && x.deps == y.deps && x.rate == y.rate &&
                  x.channel == y.channel && y.start == -1 && y.end == -1)
          << algo << " transfer " << id;
    }
    EXPECT_EQ(collective_time(t, untimed), timed.claimed_time) << algo;
  }
  EXPECT_GE(compared, 5);
}

TEST(BaselineClosedForms, DirectOnFullyConnected) {
  EXPECT_EQ(run("direct", "fc:8", CollectiveKind::AllReduce),
            2 * (kLat + kSer));  // 2 alpha + 2 (n/p)/b
  EXPECT_EQ(run("direct", "fc:8", CollectiveKind::AllGather), kLat + kSer);
  // Pairwise All-to-All: (p-1) alpha + (p-1)/p n beta.
  EXPECT_EQ(run("direct", "fc:8", CollectiveKind::AllToAll), 7 * (kLat + kSer));
}

TEST(BaselineClosedForms, HalvingDoublingOnAHypercubeAndASwitch) {
  // 2 lg p alpha + 2 (p-1)/p n beta; through a switch alpha is two links' latency.
  EXPECT_EQ(run("rhd", "hypercube:8", CollectiveKind::AllReduce), 6 * kLat + 14 * kSer);
  EXPECT_EQ(run("rhd", "hypercube:8", CollectiveKind::ReduceScatter), 3 * kLat + 7 * kSer);
  EXPECT_EQ(run("rhd", "hypercube:8", CollectiveKind::AllGather), 3 * kLat + 7 * kSer);
  EXPECT_EQ(run("rhd", "switch:8", CollectiveKind::AllReduce), 6 * 2 * kLat + 14 * kSer);
  EXPECT_EQ(run("rhd", "switch:16", CollectiveKind::AllGather), 4 * 2 * kLat + 15 * kSer);
}

TEST(BaselineClosedForms, BruckAndBinomialOnFullyConnected) {
  EXPECT_EQ(run("bruck", "fc:8", CollectiveKind::AllGather),
            3 * kLat + 7 * kSer);  // lg p alpha + (p-1)/p n beta
  EXPECT_EQ(run("bruck", "fc:6", CollectiveKind::AllGather),
            3 * kLat + 5 * kSer);  // ceil(lg p) steps
  EXPECT_EQ(run("dbt", "fc:8", CollectiveKind::Broadcast),
            3 * (kLat + kSer));  // ceil(lg p)(alpha + n beta)
  EXPECT_EQ(run("dbt", "fc:8", CollectiveKind::Reduce), 3 * (kLat + kSer));
}

TEST(BaselineClosedForms, HierarchicalOnMultiDimensionalTopologies) {
  // sum over d of 2[(p_d - 1)(alpha_d + n_d/p_d beta_d)], n_1 = n, n_{d+1} = n_d / p_d. An
  // All-Reduce's block of the first dimension is a contiguous shard (4 chunks): one message.
  const Time ser4 = transfer_time(4 * kChunk, 300'000'000'000);
  EXPECT_EQ(run("hierarchical:ring,ring", "ring:8,bw=300GB/s x ring:4,bw=50GB/s",
                CollectiveKind::AllReduce),
            2 * (7 * (kLat + ser4) + 3 * (kLat + kSer)));
  // A Switch dimension: two links per message (ASTRA-sim counts two hops).
  EXPECT_EQ(run("hierarchical:ring,ring", "ring:8,bw=300GB/s x switch:4,bw=50GB/s",
                CollectiveKind::AllReduce),
            2 * (7 * (kLat + ser4) + 3 * (2 * kLat + kSer)));
  EXPECT_EQ(run("hierarchical", "ring:4 x ring:4", CollectiveKind::ReduceScatter),
            3 * (kLat + 4 * kSer) + 3 * (kLat + kSer));
  run("hierarchical:ring,direct", "ring:8 x switch:4", CollectiveKind::AllReduce);
  run("hierarchical:rhd", "hypercube:16", CollectiveKind::AllGather);
  // All-to-All, ASTRA-sim's phases: a store-and-forward ring All-to-All per dimension, each of
  // p(p-1)/2 steps (6 for p = 4), each step a message of the chunks for one line member: every
  // NPU holds 16 chunks, 4 for each coordinate of the dimension.
  EXPECT_EQ(run("hierarchical", "ring:4 x ring:4", CollectiveKind::AllToAll),
            2 * 6 * (kLat + 4 * kSer));
  run("hierarchical", "ring:2 x fc:4 x switch:2", CollectiveKind::AllToAll);
}

// Where steps are charged, a step of hierarchical's rings sends its block at once: one message
// per run of consecutive chunks (an owner's k chunks), not one per chunk. ring:4 x ring:4
// Reduce-Scatter, k = 4 chunks per NPU, per-step cost s: the first dimension's blocks are four
// owners' runs (4 messages of 4 chunks a step), the second's one owner's (1 message of 4).
TEST(BaselineClosedForms, HierarchicalStepsSendTheirBlocksAsMessages) {
  topo::Topology t = topo::generate("ring:4 x ring:4");
  t.set_charges_steps(true);
  const Time s = topo::kDefaultStep;
  const Algorithm a = make_baseline(parse_baseline("hierarchical"), t,
                                    Collective::over_all(t, CollectiveKind::ReduceScatter, 4),
                                    kChunk, LinkModel::Pipelined);
  const Report r = verify(t, a, {.max_reported = 5, .lower_bound = false});
  ASSERT_TRUE(r.correct()) << testing::violation_text(r);
  EXPECT_EQ(a.claimed_time, 3 * (kLat + 4 * s + 16 * kSer) + 3 * (kLat + s + 4 * kSer));
  for (const Transfer& x : a.transfers()) EXPECT_EQ(x.count, 4);
}

// An All-Reduce's result belongs to no rank, so hierarchical lays its chunks out as MPI's
// hierarchical All-Reduce does a contiguous buffer: the first dimension's phase splits it into
// contiguous shards, the next each shard. Every step of its rings and of halving-doubling is one
// message per member. ring:4 x ring:4, k = 4 chunks per NPU (64 chunks), per-step cost s: a ring
// step of the first dimension sends 16 consecutive chunks, of the second 4; each phase twice
// (Reduce-Scatter, then All-Gather back).
TEST(BaselineClosedForms, HierarchicalAllReduceStepsAreOneMessageEach) {
  topo::Topology t = topo::generate("ring:4 x ring:4");
  t.set_charges_steps(true);
  const Time s = topo::kDefaultStep;
  const Collective c = Collective::over_all(t, CollectiveKind::AllReduce, 4);
  const Algorithm a =
      make_baseline(parse_baseline("hierarchical"), t, c, kChunk, LinkModel::Pipelined);
  const Report r = verify(t, a, {.max_reported = 5, .lower_bound = false});
  ASSERT_TRUE(r.correct()) << testing::violation_text(r);
  const Time ser16 = transfer_time(16 * kChunk, 50'000'000'000);
  const Time ser4 = transfer_time(4 * kChunk, 50'000'000'000);
  EXPECT_EQ(a.claimed_time, 2 * (3 * (kLat + s + ser16) + 3 * (kLat + s + ser4)));
  // 16 NPUs, 3 steps of each dimension's ring, each phase twice: one message a member and step.
  EXPECT_EQ(a.transfers().size(), 16u * (3 + 3) * 2);
  // The same with halving-doubling on both dimensions of switch:4 x switch:4 (steps of 32 and
  // 16 chunks, then 8 and 4: one message each).
  topo::Topology sw = topo::generate("switch:4 x switch:4");
  sw.set_charges_steps(true);
  const Algorithm h = make_baseline(parse_baseline("hierarchical:rhd,rhd"), sw,
                                    Collective::over_all(sw, CollectiveKind::AllReduce, 4), kChunk,
                                    LinkModel::Pipelined);
  const Report hr = verify(sw, h, {.max_reported = 5, .lower_bound = false});
  ASSERT_TRUE(hr.correct()) << testing::violation_text(hr);
  EXPECT_EQ(h.transfers().size(), 16u * (2 + 2) * 2);
}

// Where steps are charged, Bruck's and binomial trees' steps send their chunks as messages, a step
// each (runs of consecutive chunk ids). fc:8, per-step cost s: Bruck's All-Gather sends 1, 2 and 4
// blocks, as two messages where they wrap past the last rank (the slowest member of steps 2 and 3):
// s + 2s + 2s steps, 3 alpha, 7 chunk times; the binomial Broadcast of 4 chunks, 3 rounds of one
// message.
TEST(BaselineClosedForms, StepSynchronousFamiliesSendMessages) {
  topo::Topology t = topo::generate("fc:8");
  t.set_charges_steps(true);
  const Time s = topo::kDefaultStep;
  auto made = [&](const char* algo, CollectiveKind kind, int k) {
    const Algorithm a = make_baseline(parse_baseline(algo), t, Collective::over_all(t, kind, k),
                                      kChunk, LinkModel::Pipelined);
    const Report r = verify(t, a, {.max_reported = 5, .lower_bound = false});
    EXPECT_TRUE(r.correct()) << algo << testing::violation_text(r);
    return a.claimed_time;
  };
  EXPECT_EQ(made("bruck", CollectiveKind::AllGather, 1), 3 * kLat + 7 * kSer + 5 * s);
  EXPECT_EQ(made("dbt", CollectiveKind::Broadcast, 4), 3 * (kLat + s + 4 * kSer));
}

// Where the way relays through an NPU (a ring along a line), a run goes in messages that balance
// the steps against the relay holding a message back (balanced_message_chunks): small chunks, many
// to a message; chunk by chunk without steps.
TEST(Baselines, RelayedRunsGoInBalancedMessages) {
  EXPECT_EQ(balanced_message_chunks(100, 1000, 4000), 5);     // sqrt(100 x 1 / 4)
  EXPECT_EQ(balanced_message_chunks(100, 1000, 4000, 4), 3);  // sqrt(100 / 16) = 2.5, rounded up
  EXPECT_EQ(balanced_message_chunks(100, 1000, 1), 100);      // at most every chunk
  EXPECT_EQ(balanced_message_chunks(100, 0, 4000), 1);        // no steps
  // mesh2d:4x4's rows are lines: their rings relay. Adjacent hops send a run as one message either
  // way, so relayed runs in messages show as fewer transfers.
  size_t transfers[2] = {0, 0};
  for (const bool steps : {false, true}) {
    topo::Topology t = topo::generate("mesh2d:4x4");
    t.set_charges_steps(steps);
    const Algorithm a = make_baseline(parse_baseline("hierarchical"), t,
                                      Collective::over_all(t, CollectiveKind::AllGather, 16),
                                      Bytes{1} << 10, LinkModel::Pipelined);
    const Report r = verify(t, a, {.max_reported = 5, .lower_bound = false});
    ASSERT_TRUE(r.correct()) << testing::violation_text(r);
    transfers[steps] = a.size();
  }
  EXPECT_LT(transfers[1], transfers[0]);
}

// NCCL's double binary tree, flat (every NPU a server of one) on fc:7: each tree is the balanced
// binary tree of depth d = 2, the second shifted by one, so a link carries one tree's reduction up
// and the other's broadcast down, C chunks in all (m0 = ceil(C/2) on the first tree, m1 on the
// second). Once m1 covers the 2d - 1 hops the first broadcast chunk needs, those links are busy
// end to end: hold C(alpha + s), pipelined C s + alpha. With C = 7 (m1 = 3) the tree's own
// pipeline is the longer: (2d + m0 - 1)(alpha + s) and 2d alpha + (2d + m0 - 1) s.
TEST(BaselineClosedForms, DoubleBinaryTreeOnFullyConnected) {
  const int d = 2;
  EXPECT_EQ(run("tree:1", "fc:7", CollectiveKind::AllReduce, 1, LinkModel::Hold),
            (2 * d + 4 - 1) * (kLat + kSer));
  EXPECT_EQ(run("tree:1", "fc:7", CollectiveKind::AllReduce, 1),
            2 * d * kLat + (2 * d + 4 - 1) * kSer);
  for (int k : {2, 4, 8}) {
    const int chunks = 7 * k;
    EXPECT_EQ(run("tree:1", "fc:7", CollectiveKind::AllReduce, k, LinkModel::Hold),
              chunks * (kLat + kSer))
        << k;
    EXPECT_EQ(run("tree:1", "fc:7", CollectiveKind::AllReduce, k), chunks * kSer + kLat) << k;
  }
}

// The two trees of dbt are complementary: no rank has more than two children in both together
// (counted from the algorithm: the ranks that reduce into it, per tree), so none takes in more
// than two chunks for every one a tree reduces. A second tree shifted by one gave a rank three
// wherever the count is not 2^n - 1, and every tree All-Reduce ran 1.5x its links' time.
TEST(Baselines, DoubleBinaryTreesAreComplementary) {
  for (int p : {3, 4, 5, 6, 7, 8, 12, 16, 31, 32, 33, 100, 255}) {
    const auto t = topo::generate(fmt::format("switch:{}", p));
    const Algorithm a = make_baseline({BaselineKind::Dbt, {}}, t,
                                      Collective::over_all(t, CollectiveKind::AllReduce, 2), 1024);
    const int half = p;  // chunks 0..p-1 go up the first tree, the rest up the second
    std::vector<std::set<NodeId>> children(2 * p);
    for (const Transfer& x : a.transfers())
      if (x.op == Op::Reduce)
        children[static_cast<size_t>((x.chunk < half ? 0 : p) + x.dst)].insert(x.src);
    for (int v = 0; v < p; ++v)
      EXPECT_LE(
          children[static_cast<size_t>(v)].size() + children[static_cast<size_t>(p + v)].size(), 2u)
          << "rank " << v << " of " << p;
  }
  // How close to the bound that brings the tree All-Reduce on a 512-rank switch:
  // BaselinesQuality.DoubleBinaryTreesOnALargeSwitch.
}

// On NPUs that make no servers, NCCL's tree is one channel of the double binary tree over the
// ranks in order: dbt's transfers exactly, so the portfolio races dbt alone there
// (for_each_baseline). Switches, leaf-spines, direct links and random fabrics, every rank or some.
TEST(Baselines, NcclTreeWithoutServersIsTheDoubleBinaryTree) {
  std::mt19937_64 rng(41);
  const std::vector<topo::Topology> flat =
      testing::fabrics({"switch:8", "switch:13", "leafspine:4x4,spines=2", "leafspine:2x3", "fc:6",
                        "ring:5", "mesh2d:3x3"},
                       rng, 10);
  int compared = 0;
  for (const topo::Topology& t : flat)
    for (int k : {1, 3}) {
      Collective c = Collective::over_all(t, CollectiveKind::AllReduce, k);
      if (k == 3 && t.num_npus() > 3) c.ranks = {c.ranks[2], c.ranks[0], c.ranks[3]};
      if (!topo::servers_of(t, c.ranks).empty()) continue;
      auto make = [&](BaselineKind b) -> std::optional<Algorithm> {
        try {
          return make_baseline({b, {}}, t, c, 4096);
        } catch (const NotApplicable&) {
          return std::nullopt;  // trees reduce between linked NPUs only
        }
      };
      const std::optional<Algorithm> made_tree = make(BaselineKind::Tree),
                                     made_dbt = make(BaselineKind::Dbt);
      ASSERT_EQ(made_tree.has_value(), made_dbt.has_value()) << t.name();
      if (!made_dbt) continue;
      const Algorithm &tree = *made_tree, &dbt = *made_dbt;
      ASSERT_EQ(tree.size(), dbt.size()) << t.name();
      for (TransferId id = 0; id < static_cast<TransferId>(dbt.size()); ++id) {
        const Transfer &x = tree[id], &y = dbt[id];
        EXPECT_EQ(std::tie(x.chunk, x.src, x.dst, x.channel, x.op, x.from_input, x.count),
                  std::tie(y.chunk, y.src, y.dst, y.channel, y.op, y.from_input, y.count))
            << t.name() << " transfer " << id;
        EXPECT_TRUE(std::ranges::equal(tree.route(id), dbt.route(id))) << t.name() << " " << id;
        EXPECT_TRUE(std::ranges::equal(tree.deps(id), dbt.deps(id))) << t.name() << " " << id;
      }
      EXPECT_EQ(tree.claimed_time, dbt.claimed_time) << t.name();
      ++compared;
    }
  EXPECT_GE(compared, 14);
}

// The same rings, in the same order, over the same routes at the same rates.
void expect_same_rings(const std::vector<RingChannel>& got, const std::vector<RingChannel>& want,
                       const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].order, want[i].order) << what;
    EXPECT_EQ(got[i].routes, want[i].routes) << what;
    EXPECT_EQ(got[i].rate, want[i].rate) << what;
  }
}

// The searches one way and both ways round share their ways (RingWays), each from every link's
// whole capacity: the rings each finds are those of a search of its own.
TEST(Baselines, RingSearchesSharingTheirWaysFindTheirOwnRings) {
  std::mt19937_64 rng(47);
  const std::vector<topo::Topology> fabrics = testing::fabrics(
      {"switch:8", "leafspine:4x4,spines=2", "nvcluster:2x4", "dgx1", "ring:6", "mesh2d:3x3"}, rng,
      6);
  int found = 0;
  for (const topo::Topology& t : fabrics) {
    std::vector<NodeId> all(t.num_npus());
    for (NodeId v = 0; v < t.num_npus(); ++v) all[v] = v;
    RingWays shared(t, all);
    for (bool both_ways : {false, true, false}) {
      RingWays own(t, all);
      const std::vector<RingChannel> got = search_ring_channels(shared, 0, both_ways),
                                     want = search_ring_channels(own, 0, both_ways);
      expect_same_rings(got, want, fmt::format("{} both ways {}", t.name(), both_ways));
      found += static_cast<int>(want.size());
    }
  }
  EXPECT_GT(found, 20);
}

// Round servers the rings take only the ways inside each server and into the servers before and
// after it, and only those are routed: the rings are those found over every pair's ways, on
// clusters of even and odd server counts (the ring closes from the last server to the first),
// with and without a fat-tree, unequal NICs, and one way round or both.
TEST(Baselines, RingsRoundServersTakeOnlyTheWaysTheyNeed) {
  std::vector<topo::Topology> fabrics;
  for (const char* spec :
       {"nvcluster:2x4", "nvcluster:3x4", "nvcluster:5x4", "nvcluster:4x8,net=fattree",
        "nvcluster:6x8,net=fattree", "a100-2node-ib"})
    fabrics.push_back(topo::load(spec));
  fabrics.push_back(
      topo::load(std::string(TENET_SOURCE_DIR) + "/examples/topologies/cluster16.yaml"));
  int found = 0;
  for (const topo::Topology& t : fabrics) {
    std::vector<NodeId> all(t.num_npus());
    for (NodeId v = 0; v < t.num_npus(); ++v) all[v] = v;
    ASSERT_FALSE(topo::servers_of(t, all).empty()) << t.name();
    for (bool both_ways : {false, true}) {
      RingWays around(t, all), every(t, all, /*every_way=*/true);
      const std::vector<RingChannel> got = search_ring_channels(around, 0, both_ways),
                                     want = search_ring_channels(every, 0, both_ways);
      expect_same_rings(got, want, fmt::format("{} both ways {}", t.name(), both_ways));
      found += static_cast<int>(want.size());
    }
  }
  EXPECT_GT(found, 40);
}

TEST(Baselines, RingOrdersFollowTheTopology) {
  for (const char* spec :
       {"mesh2d:4x4", "mesh2d:6x3", "torus2d:4x4", "hypercube:16", "mesh3d:2x3x2", "dgx1"}) {
    const auto t = topo::generate(spec);
    std::vector<NodeId> all(t.num_npus());
    std::iota(all.begin(), all.end(), 0);
    const std::vector<NodeId> order = ring_order(t, all);
    ASSERT_EQ(order.size(), all.size());
    for (size_t i = 0; i < order.size(); ++i) {
      const NodeId u = order[i], v = order[(i + 1) % order.size()];
      bool linked = false;
      for (LinkId l : t.out_links(u)) linked = linked || t.link(l).dst == v;
      EXPECT_TRUE(linked) << spec << ": " << u << " -> " << v;
    }
  }
}

TEST(Baselines, SaysWhyNot) {
  const auto t = topo::generate("switch:6");
  auto why = [&](const char* algo, CollectiveKind kind) {
    try {
      make_baseline(parse_baseline(algo), t, Collective::over_all(t, kind), kChunk);
    } catch (const NotApplicable& e) {
      return std::string(e.what());
    }
    return std::string("applies");
  };
  EXPECT_THAT(why("rhd", CollectiveKind::AllGather),
              ::testing::HasSubstr("power-of-two rank count, not 6"));
  EXPECT_EQ(why("rhd", CollectiveKind::AllReduce), "applies");  // MPICH's non-power-of-two scheme
  EXPECT_THAT(why("bruck", CollectiveKind::AllReduce),
              ::testing::HasSubstr("bruck has no all-reduce"));
  EXPECT_THAT(why("hierarchical", CollectiveKind::AllReduce),
              ::testing::HasSubstr("has no dimensions"));
  const auto torus = topo::generate("torus2d:4x4");
  EXPECT_THROW(make_baseline(parse_baseline("dbt"), torus,
                             Collective::over_all(torus, CollectiveKind::AllReduce), kChunk),
               NotApplicable);
  EXPECT_THROW(parse_baseline("butterfly"), Error);
  EXPECT_THROW(parse_baseline("ring:direct"), Error);
  EXPECT_THROW(parse_baseline("hierarchical:bruck"), Error);
  EXPECT_EQ(parse_baseline("hierarchical:ring,direct").name(), "hierarchical:ring,direct");
}

}  // namespace
}  // namespace tenet::synth

namespace tenet::synth {
namespace {

// Steps that wait for the step before (hierarchical's rings, halving-doubling) depend on the last
// transfer of each queue they wait for, which arrives last: dependencies grow with the transfers,
// not with transfers times chunks per step (nvcluster:128x8: 6.7 GB before), and the times are
// the verifier's.
TEST(Baselines, StepBarriersWaitForTheLastOfEachQueue) {
  const auto t = topo::generate("nvcluster:16x8,net=rail");
  for (BaselineKind kind : {BaselineKind::Hierarchical, BaselineKind::Rhd}) {
    const Algorithm a = make_baseline(
        {kind, {}}, t, Collective::over_all(t, CollectiveKind::AllReduce, 1), 1 << 20);
    size_t deps = 0;
    for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id) deps += a.deps(id).size();
    EXPECT_LE(deps, 4 * a.size()) << a.name;
    const Report r = verify(t, a);
    ASSERT_TRUE(r.correct()) << a.name << ": " << testing::violation_text(r);
    EXPECT_EQ(r.collective_time, a.claimed_time) << a.name;
  }
}

}  // namespace
}  // namespace tenet::synth
