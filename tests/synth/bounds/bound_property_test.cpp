// The printed lower bound is one: on 1000 seeded random fabrics of five kinds (random graphs with
// switches and router NPUs, the same with switches that reduce, lines and trees with asymmetric
// links, fully connected ones), with and without per-step costs and runtime protocols, for every
// collective, no algorithm any producer makes is faster than the bound, and every one is verified
// correct. The producers: the synthesizer (each method, both link models), every baseline that
// applies (the in-network NVLS one where a switch reduces), and programs as msccl-tools writes them
// (tests/synth/formats/msccl_programs.hpp), imported; and where an algorithm streams at rates of
// its own, its drain at full rate (synth/plans/full_rate_drain.hpp) from each tail auto tries,
// which also never ends under the floor auto prunes the tails by; where it only copies (or is an
// All-Reduce's copies after its reductions), its last deliveries listed again
// (synth/plans/tail_spread.hpp) from two tails; and a Reduce-Scatter on a
// fabric that is its own reverse, reversed in time into an All-Gather, and its head listed again.
// Sharded so that ctest runs the shards side by side; TENET_BOUND_FABRICS sets the number of
// fabrics (default 1000).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "synth/bounds/lower_bound.hpp"
#include "synth/cost/timing.hpp"
#include "synth/formats/msccl_xml.hpp"
#include "synth/plans/full_rate_drain.hpp"
#include "synth/plans/reversed_answer.hpp"
#include "synth/plans/tail_spread.hpp"
#include "synth/producers.hpp"
#include "synth/tuning.hpp"
#include "synth/verify/verify.hpp"
#include "tests/synth/formats/msccl_programs.hpp"
#include "tests/synth/test_support.hpp"
#include "topo/error.hpp"
#include "topo/topology.hpp"

namespace tenet::synth {
namespace {

constexpr int kShards = 8;

int fabrics() {
  const char* n = std::getenv("TENET_BOUND_FABRICS");
  return n != nullptr ? std::max(kShards, std::atoi(n)) : 1000;
}

Bandwidth random_bandwidth(std::mt19937_64& rng) {
  return Bandwidth{1'000'000'000} * static_cast<Bandwidth>(1 + rng() % 400);
}
Time random_latency(std::mt19937_64& rng) { return Time{10'000} * static_cast<Time>(rng() % 300); }

// A link each way between x and y, of independent bandwidths (asymmetric) unless `symmetric`;
// each pays a random per-step cost where `steps`.
void join(topo::TopologyBuilder& b, std::mt19937_64& rng, topo::NodeId x, topo::NodeId y,
          bool symmetric, bool steps) {
  const Bandwidth bw = random_bandwidth(rng);
  const Time lat = random_latency(rng);
  for (const topo::LinkId l :
       {b.add_link(x, y, bw, lat), b.add_link(y, x, symmetric ? bw : random_bandwidth(rng), lat)})
    if (steps)
      b.set_link_step(l, std::array<Time, 3>{300'000, 2'600'000,
                                             static_cast<Time>(rng() % 3'000'001)}[rng() % 3]);
}

// Fabric `i` of its kind (i % 5): a random graph (testing::random_topology), NPUs around a
// reducing switch, a line of NPUs, a tree of router NPUs and switches, or a fully connected set of
// NPUs. Odd fabrics charge per-step costs; one in three of those, not random graphs, lists runtime
// protocols (topo::Protocol: a cheap step at a random share of the links, with or without the
// switches' reduction, NVLS excluded; a dear one at all of them), which every producer chooses
// among.
topo::Topology fabric(int i, std::mt19937_64& rng) {
  const bool steps = i % 2 == 1;
  if (i % 5 == 0) return testing::random_topology(rng, 7, steps);
  topo::TopologyBuilder b(fmt::format("fabric-{}", i));
  const int npus = 2 + static_cast<int>(rng() % 6);
  std::vector<topo::NodeId> nodes;
  for (int v = 0; v < npus; ++v) nodes.push_back(b.add_npu("", i % 5 == 3));
  const bool symmetric = rng() % 3 == 0;
  switch (i % 5) {
    case 1: {  // NPUs around a reducing switch, plus random direct links
      const topo::NodeId sw = b.add_switch();
      b.node_props(sw).can_reduce = true;
      for (topo::NodeId v : nodes) join(b, rng, v, sw, symmetric, steps);
      const int extra = static_cast<int>(rng() % (npus + 1));
      for (int k = 0; k < extra; ++k) {
        const topo::NodeId x = nodes[rng() % nodes.size()], y = nodes[rng() % nodes.size()];
        if (x != y) join(b, rng, x, y, symmetric, steps);
      }
      break;
    }
    case 2:  // a line
      for (size_t v = 1; v < nodes.size(); ++v)
        join(b, rng, nodes[v - 1], nodes[v], symmetric, steps);
      break;
    case 3: {  // a tree: each node under a random earlier one, switches among them
      const int switches = static_cast<int>(rng() % 3);
      for (int s = 0; s < switches; ++s) nodes.insert(nodes.begin() + 1, b.add_switch());
      for (size_t v = 1; v < nodes.size(); ++v)
        join(b, rng, nodes[rng() % v], nodes[v], symmetric, steps);
      break;
    }
    default:  // fully connected
      for (size_t x = 0; x < nodes.size(); ++x)
        for (size_t y = x + 1; y < nodes.size(); ++y)
          join(b, rng, nodes[x], nodes[y], symmetric, steps);
  }
  if (steps && i % 3 == 1) {
    topo::Protocol ll, simple;
    ll.name = "LL";
    ll.bandwidth = static_cast<double>(1 + rng() % 4) / 5.0;
    ll.step = static_cast<Time>(rng() % 1'000'001);
    ll.in_network = rng() % 2 == 0;
    ll.excludes = {"nvls"};
    simple.name = "Simple";
    simple.step = static_cast<Time>(1'000'000 + rng() % 8'000'001);
    b.set_protocols({ll, simple});
  }
  topo::Topology t = b.build();
  t.set_charges_steps(steps);
  return t;
}

// The programs msccl-tools would write for c (all NPUs, in order), imported on t.
void for_each_msccl_program(const topo::Topology& t, const Collective& c, Bytes chunk,
                            const std::function<void(const Algorithm&, const std::string&)>& f) {
  const int p = c.num_ranks();
  if (p != t.num_npus() || p < 2) return;
  const bool power_of_two = (p & (p - 1)) == 0;
  std::vector<std::pair<std::string, std::string>> programs;
  if (c.kind == CollectiveKind::AllGather) {
    programs.emplace_back("msccl ring all-gather",
                          testing::ring_allgather_in_place(p, 1, "Simple"));
    if (power_of_two)
      programs.emplace_back("msccl recursive doubling", testing::recursive_doubling_allgather(p));
  } else if (c.kind == CollectiveKind::AllReduce && p >= 3) {
    programs.emplace_back("msccl ring all-reduce", testing::ring_allreduce(p));
    programs.emplace_back("msccl all-pairs all-reduce", testing::allpairs_allreduce(p));
    if (power_of_two)
      programs.emplace_back("msccl halving-doubling",
                            testing::recursive_halving_doubling_allreduce(p));
  }
  for (const auto& [who, xml] : programs) {
    MscclImport in;
    try {
      in = import_msccl_xml(xml, t, who + ".xml");
    } catch (const Error&) {  // two of the program's GPUs have no way between them
      continue;
    }
    EXPECT_TRUE(in.problems.empty()) << who << " on " << t.name();
    Algorithm a = std::move(in.algorithm);
    a.chunk_bytes = chunk;  // MSCCL-XML carries no size: the case's
    time(t, a);
    f(a, who);
  }
}

class BoundProperty : public ::testing::TestWithParam<int> {};

TEST_P(BoundProperty, NoVerifiedAlgorithmBeatsTheBound) {
  int checked = 0, imported = 0, in_network = 0, with_protocol = 0, drained = 0, spread = 0,
      spread_floored = 0;
  const int n = fabrics();
  for (int i = GetParam(); i < n; i += kShards) {
    std::mt19937_64 rng(58'000 + i);
    const topo::Topology t = fabric(i, rng);
    const std::optional<std::vector<LinkId>> twins = topo::twin_links(t);
    for (CollectiveKind kind : kAllCollectives) {
      Collective c = testing::random_collective(rng, t, 2);
      c.kind = kind;
      if (reduces(kind)) c.ranks = Collective::over_all(t, kind).ranks;
      c.root = static_cast<int>(rng() % c.num_ranks());
      const Bytes chunk = Bytes{1} << (6 + rng() % 20);
      const LowerBound b = lower_bound(t, c, chunk);
      auto check = [&](const Algorithm& a, const std::string& who) {
        const std::string at =
            fmt::format("fabric {} ({} steps), {}, {}: {} of {} B chunks over {}", i,
                        t.charges_steps() ? "with" : "no", t.name(), who, c.describe(),
                        a.chunk_bytes, fmt::join(c.ranks, ","));
        const Report r = verify(t, a, {.max_reported = 3});
        EXPECT_TRUE(r.correct()) << at << testing::violation_text(r);
        const LowerBound own = lower_bound(t, a.collective, a.chunk_bytes);
        EXPECT_GE(a.claimed_time, own.total) << at << ": " << describe(own);
        EXPECT_GE(r.collective_time, own.total) << at;
        ++checked;
        with_protocol += !a.protocol.empty();
      };
      EXPECT_GT(b.total, 0);
      testing::for_each_producer(t, c, chunk, [&](const Algorithm& a, const std::string& who) {
        in_network += a.method.find("nvls") != std::string::npos || who.rfind("nvls", 0) == 0;
        check(a, who);
        // Its drain at full rate from each of the tails auto tries (detail::drain_at_full_rate),
        // never under the floor that decides whether a tail is tried.
        const Time span = a.makespan();
        for (double tail : kDrainTails) {
          const Time cut = detail::drain_cut(span, tail);
          if (const std::optional<Algorithm> b = detail::drained_from(t, a, cut)) {
            check(*b, fmt::format("{}, drained at full rate from {} ps", who, cut));
            EXPECT_GE(b->claimed_time, detail::drained_floor(t, a, cut, span)) << who;
            ++drained;
          }
        }
        // Its last deliveries listed again (detail::spread_tail) from a short and a long tail of
        // those it schedules: collectives that copy, an All-Reduce's copies after its reductions;
        // never under the floor that decides whether a tail is scheduled.
        for (double tail : {kSpreadTails[1], kSpreadTails[5]})
          if (Time scheduled = -1; const std::optional<Algorithm> b = detail::spread_from(
                                       t, a, detail::drain_cut(span, tail), &scheduled)) {
            check(*b, fmt::format("{}, its deliveries from {} ps listed again", who,
                                  detail::drain_cut(span, tail)));
            const std::optional<Time> floor =
                detail::spread_floor(t, a, detail::drain_cut(span, tail));
            if (floor) {
              EXPECT_GE(scheduled, *floor) << who << ", from " << tail;
            }
            spread_floored += floor.has_value();
            ++spread;
          }
        // A Reduce-Scatter reversed in time into an All-Gather, and its head listed again through
        // it (detail::spread_head), where the fabric is its own reverse (no shard's count is held
        // to a least: some shards' fabrics are none; tests/synth/plans/reversed_answer_test.cpp
        // reverses every producer's on such topologies).
        if (kind == CollectiveKind::ReduceScatter && twins)
          if (const std::optional<Algorithm> g = detail::all_gather_reversed(t, a, *twins)) {
            check(*g, who + ", reversed in time");
            Algorithm r = a;
            if (detail::spread_head(t, r, *twins, /*drain=*/true, nullptr))
              check(r, who + ", its first reductions listed again");
          }
      });
      for_each_msccl_program(t, c, chunk, [&](const Algorithm& a, const std::string& who) {
        ++imported;
        check(a, who);
      });
    }
  }
  // Every shard exercises every kind of producer (and, where it charges steps, protocols).
  const int shard_fabrics = (n - GetParam() + kShards - 1) / kShards;
  EXPECT_GE(checked, 20 * shard_fabrics);
  EXPECT_GE(imported, shard_fabrics / 10);
  EXPECT_GE(in_network, shard_fabrics / 20);
  EXPECT_GE(drained, shard_fabrics / 10);
  EXPECT_GE(spread, shard_fabrics / 10);
  EXPECT_GE(spread_floored, spread / 2);
  if (GetParam() % 2 == 1) {  // odd: steps charged
    EXPECT_GE(with_protocol, shard_fabrics / 2);
  }
}

INSTANTIATE_TEST_SUITE_P(Shards, BoundProperty, ::testing::Range(0, kShards));

}  // namespace
}  // namespace tenet::synth
