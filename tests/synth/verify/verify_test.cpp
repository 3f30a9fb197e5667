#include "synth/verify/verify.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>

#include "synth/cost/timing.hpp"
#include "tests/synth/test_support.hpp"
#include "topo/generators.hpp"

namespace tenet::synth {
namespace {

using ::testing::HasSubstr;
using testing::link_between;

constexpr Bytes kChunk = 1 << 20;

std::string kinds(const Report& r) {
  std::string s;
  for (int k = 0; k < kViolationKinds; ++k)
    if (r.counts[k])
      s += fmt::format("{} x{} ", to_string(static_cast<ViolationKind>(k)), r.counts[k]);
  for (const Violation& v : r.violations) s += "\n  " + v.message;
  return s;
}

Algorithm base(const topo::Topology& t, CollectiveKind kind, int chunks = 1, int root = 0) {
  Algorithm a;
  a.name = "hand-built";
  a.collective = Collective::over_all(t, kind, chunks, root);
  a.chunk_bytes = kChunk;
  a.topology_fingerprint = t.fingerprint();
  return a;
}

TransferId send(Algorithm& a, const topo::Topology& t, ChunkId c, NodeId u, NodeId v,
                Op op = Op::Copy, std::vector<TransferId> deps = {}) {
  LinkId l = link_between(t, u, v);
  return a.add(c, u, v, std::span(&l, 1), op, deps);
}

TEST(VerifyHandBuilt, RingAllGatherOnFourNpus) {
  auto t = topo::generate("ring:4,bidir=false");
  Algorithm a = base(t, CollectiveKind::AllGather);
  std::vector<TransferId> brought(4, -1);
  for (int s = 0; s < 3; ++s) {
    std::vector<TransferId> next = brought;
    for (int i = 0; i < 4; ++i) {
      ChunkId c = ((i - s) % 4 + 4) % 4;
      next[c] =
          send(a, t, c, i, (i + 1) % 4, Op::Copy,
               brought[c] >= 0 ? std::vector<TransferId>{brought[c]} : std::vector<TransferId>{});
    }
    brought = next;
  }
  time(t, a);
  Report r = verify(t, a);
  EXPECT_TRUE(r.correct()) << kinds(r);
  EXPECT_EQ(r.warning_count, 0u);
  EXPECT_EQ(r.collective_time, a.claimed_time);
  EXPECT_EQ(r.model_time, a.claimed_time);
  EXPECT_EQ(r.links_used, 4);
  // The cut bound of a unidirectional ring is (N-1) chunks over one link, plus one latency; the
  // ring reaches it for the bandwidth part and pays N-1 latencies.
  EXPECT_EQ(r.bound.bandwidth, 3 * transfer_time(kChunk, 50'000'000'000));
  EXPECT_GT(r.ratio(), 1.0);
}

// Recursive halving (Reduce-Scatter) then recursive doubling (All-Gather) on a hypercube of 8.
TEST(VerifyHandBuilt, HalvingDoublingAllReduceOnEight) {
  auto t = topo::generate("hypercube:8");
  Algorithm a = base(t, CollectiveKind::AllReduce);
  for (int d : {4, 2, 1})
    for (int r = 0; r < 8; ++r)
      for (ChunkId c = 0; c < 8; ++c) {
        // r still owns c if c agrees with r on the bits above d; it gives away the half where bit d
        // differs.
        bool owned = (c & ~(2 * d - 1) & 7) == (r & ~(2 * d - 1) & 7);
        if (owned && (c & d) != (r & d)) send(a, t, c, r, r ^ d, Op::Reduce);
      }
  for (int d : {1, 2, 4})
    for (int r = 0; r < 8; ++r)
      for (ChunkId c = 0; c < 8; ++c) {
        bool held = (c & ~(d - 1) & 7) == (r & ~(d - 1) & 7);
        if (held) send(a, t, c, r, r ^ d, Op::Copy);
      }
  time(t, a);
  Report r = verify(t, a);
  EXPECT_TRUE(r.correct()) << kinds(r);
  EXPECT_EQ(r.transfers, 2u * 8 * 7);
  EXPECT_EQ(r.bound.label, "arrivals bound");  // 2 x 7 chunk-sized arrivals of every byte
}

TEST(VerifyHandBuilt, BroadcastTreeThroughASwitch) {
  auto t = topo::generate("switch:4");
  Algorithm a = base(t, CollectiveKind::Broadcast);
  auto via = [&](NodeId u, NodeId v) {
    return std::vector<LinkId>{link_between(t, u, 4), link_between(t, 4, v)};
  };
  TransferId first = a.add(0, 0, 1, via(0, 1));
  a.add(0, 0, 2, via(0, 2));
  a.add(0, 1, 3, via(1, 3), Op::Copy, std::vector<TransferId>{first});
  time(t, a);
  Report r = verify(t, a);
  EXPECT_TRUE(r.correct()) << kinds(r);
  // 0 -> 2 waits for 0 -> 1 on the uplink of npu0 (pipelined: one serialization).
  EXPECT_EQ(a[1].start, transfer_time(kChunk, 50'000'000'000));
}

// The defect the public TACOS code has: a chunk sent on from a node before it has arrived there.
TEST(VerifySpecific, SendBeforeArrivalNamesTheArrival) {
  auto t = topo::generate("line:3");
  Algorithm a = base(t, CollectiveKind::Broadcast);
  send(a, t, 0, 0, 1);
  send(a, t, 0, 1, 2);
  time(t, a);
  a.set_times(1, a[0].end - 1000, a[0].end - 1000 + (a[1].end - a[1].start));
  a.claimed_time = a.makespan();
  Report r = verify(t, a);
  ASSERT_EQ(r.count(ViolationKind::SourceLacksData), 1u) << kinds(r);
  EXPECT_THAT(r.violations[0].message,
              HasSubstr("npu1 does not hold chunk 0 when the transfer starts"));
  EXPECT_THAT(r.violations[0].message, HasSubstr("it arrives there at"));
}

TEST(VerifySpecific, RouteThroughAnNpuThatIsNoRouter) {
  auto t = topo::generate("line:3");
  Algorithm a = base(t, CollectiveKind::Broadcast);
  a.add(0, 0, 2, std::vector<LinkId>{link_between(t, 0, 1), link_between(t, 1, 2)});
  a.add(0, 0, 1, std::vector<LinkId>{link_between(t, 0, 1)});
  Report r = verify(t, a);
  EXPECT_EQ(r.count(ViolationKind::BrokenRoute), 1u) << kinds(r);
  EXPECT_THAT(r.violations[0].message, HasSubstr("which is no router"));
  auto routed = topo::generate("line:3,router=true");
  a.topology_fingerprint = routed.fingerprint();
  EXPECT_TRUE(verify(routed, a).correct());
}

TEST(VerifySpecific, SwitchWithoutReduceCapability) {
  auto t = topo::generate("switch:2");
  Algorithm a = base(t, CollectiveKind::Reduce);
  a.add(0, 0, 2, std::vector<LinkId>{link_between(t, 0, 2)}, Op::Reduce);
  Report r = verify(t, a);
  EXPECT_EQ(r.count(ViolationKind::SwitchCapability), 1u) << kinds(r);
}

TEST(VerifySpecific, DoubleCountNamesTheRank) {
  auto t = topo::generate("fc:3");
  Algorithm a = base(t, CollectiveKind::Reduce);
  send(a, t, 0, 1, 0, Op::Reduce);
  send(a, t, 0, 2, 0, Op::Reduce);
  send(a, t, 0, 1, 0, Op::Reduce);  // rank 1 again
  time(t, a);
  Report r = verify(t, a);
  EXPECT_EQ(r.count(ViolationKind::DoubleCount), 1u) << kinds(r);
  EXPECT_THAT(kinds(r), HasSubstr("counts rank 1 twice"));
}

TEST(VerifySpecific, CopyOverwritesAnUnsentPartial) {
  auto t = topo::generate("fc:3");
  Algorithm a = base(t, CollectiveKind::AllReduce, 1);  // chunks 0,1,2 owned by ranks 0,1,2
  // Rank 1's own contribution to chunk 0 is overwritten by rank 0's before rank 1 sends it.
  send(a, t, 0, 0, 1, Op::Copy);
  time(t, a);
  Report r = verify(t, a);
  EXPECT_EQ(r.count(ViolationKind::Overwrite), 1u) << kinds(r);
  EXPECT_THAT(kinds(r), HasSubstr("contributions {1} are lost"));
  EXPECT_GT(r.count(ViolationKind::PostconditionUnmet), 0u);
}

TEST(VerifySpecific, UntimedAlgorithmsAreTimedByTheModel) {
  auto t = topo::generate("line:2");
  Algorithm a = base(t, CollectiveKind::AllGather);
  send(a, t, 0, 0, 1);
  send(a, t, 1, 1, 0);
  Report r = verify(t, a);
  EXPECT_TRUE(r.correct()) << kinds(r);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_EQ(r.warnings[0].kind, WarningKind::TimesComputed);
  EXPECT_EQ(r.collective_time, r.model_time);
}

// A schedule that waits longer than it must verifies, with a warning giving the time the model
// would reach. The model's times part from the algorithm's in the middle of the list (the
// transfers before match them): what follows must wait for the model's end, not the algorithm's.
TEST(VerifySpecific, IdleSchedulesGetTheModelsTime) {
  auto t = topo::generate("line:4");
  const Time d = transfer_time(kChunk, t.link(link_between(t, 0, 1)).bandwidth) +
                 t.link(link_between(t, 0, 1)).latency;
  Algorithm a = base(t, CollectiveKind::Broadcast);
  const TransferId x = send(a, t, 0, 0, 1);
  const TransferId y = send(a, t, 0, 1, 2, Op::Copy, {x});
  send(a, t, 0, 2, 3, Op::Copy, {y});
  a.set_times(0, 0, d);
  a.set_times(1, 5 * d, 6 * d);  // could start at d
  a.set_times(2, 6 * d, 7 * d);
  a.claimed_time = 7 * d;
  Report r = verify(t, a);
  EXPECT_TRUE(r.correct()) << kinds(r);
  EXPECT_EQ(r.collective_time, 7 * d);
  EXPECT_EQ(r.model_time, 3 * d);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_EQ(r.warnings[0].kind, WarningKind::Idle);
  // Without the model's replay (a caller that has just timed it): the same verdict on the
  // schedule, no model time and so no idle warning.
  const Report unmodelled = verify(t, a, {.model_time = false});
  EXPECT_TRUE(unmodelled.correct()) << kinds(unmodelled);
  EXPECT_EQ(unmodelled.collective_time, 7 * d);
  EXPECT_EQ(unmodelled.model_time, -1);
  EXPECT_TRUE(unmodelled.warnings.empty());
  a.set_times(2, 6 * d, 6 * d + d / 2);  // shorter than its route allows
  a.claimed_time = 6 * d + d / 2;
  EXPECT_EQ(verify(t, a, {.model_time = false}).count(ViolationKind::TooShort), 1u);
  a.set_times(2, 6 * d, 7 * d);
  a.claimed_time = 7 * d;
  EXPECT_EQ(collective_time(t, a), 7 * d);  // claimed
  a.claimed_time = -1;
  EXPECT_EQ(collective_time(t, a), 3 * d);  // the model's
  // time() writes the model's times into the algorithm itself.
  time(t, a);
  EXPECT_EQ(a[1].start, d);
  EXPECT_EQ(a[2].end, 3 * d);
  EXPECT_EQ(a.claimed_time, 3 * d);
  EXPECT_TRUE(verify(t, a).warnings.empty());
}

// The verifier walks a list in start order without sorting a copy of it; a list that is not in
// start order (independent transfers listed late first) is checked in start order all the same.
TEST(VerifySpecific, ListsOutOfStartOrderAreCheckedInStartOrder) {
  auto t = topo::generate("line:3");
  const Time d = transfer_time(kChunk, t.link(link_between(t, 0, 1)).bandwidth) +
                 t.link(link_between(t, 0, 1)).latency;
  auto make = [&](bool late_first, Time relay_start) {
    Algorithm a = base(t, CollectiveKind::Broadcast);
    const LinkId l01 = link_between(t, 0, 1), l12 = link_between(t, 1, 2);
    if (late_first) {  // the relay's send to 2 is listed first, without a dependency
      a.add(0, 1, 2, std::span(&l12, 1), Op::Copy, {}, relay_start, relay_start + d);
      a.add(0, 0, 1, std::span(&l01, 1), Op::Copy, {}, 0, d);
    } else {
      a.add(0, 0, 1, std::span(&l01, 1), Op::Copy, {}, 0, d);
      a.add(0, 1, 2, std::span(&l12, 1), Op::Copy, {}, relay_start, relay_start + d);
    }
    a.claimed_time = relay_start + d;
    return a;
  };
  for (bool late_first : {false, true}) {
    const Report ok = verify(t, make(late_first, d));
    EXPECT_TRUE(ok.correct()) << late_first << kinds(ok);
    EXPECT_EQ(ok.collective_time, 2 * d);
    // The relay sends before the chunk reaches it: caught whichever way the list is ordered.
    const Report early = verify(t, make(late_first, d / 2));
    EXPECT_EQ(early.count(ViolationKind::SourceLacksData), 1u) << late_first << kinds(early);
  }
}

// The replay's order holds however far apart the times are: the events are sorted by radix where
// the times' spread and the ids fit 64 bits together, by comparison where they do not (a relay
// that waits 2^62 ps, with three transfers: 63 + 2 bits). A Broadcast down line:4, listed last
// hop first: correct with the last relay late, caught with it before the chunk reaches it.
TEST(VerifySpecific, ReplayOrderHoldsAtAnySpreadOfTimes) {
  auto t = topo::generate("line:4");
  const Time d = transfer_time(kChunk, t.link(link_between(t, 0, 1)).bandwidth) +
                 t.link(link_between(t, 0, 1)).latency;
  auto make = [&](Time last_start) {
    Algorithm a = base(t, CollectiveKind::Broadcast);
    const LinkId l01 = link_between(t, 0, 1), l12 = link_between(t, 1, 2),
                 l23 = link_between(t, 2, 3);
    a.add(0, 2, 3, std::span(&l23, 1), Op::Copy, {}, last_start, last_start + d);
    a.add(0, 1, 2, std::span(&l12, 1), Op::Copy, {}, d, 2 * d);
    a.add(0, 0, 1, std::span(&l01, 1), Op::Copy, {}, 0, d);
    a.claimed_time = last_start + d;
    return a;
  };
  for (const Time late : {2 * d, Time{1} << 40, Time{1} << 62}) {
    const Report ok = verify(t, make(late));
    EXPECT_TRUE(ok.correct()) << late << kinds(ok);
    EXPECT_EQ(ok.collective_time, late + d) << late;
  }
  const Report early = verify(t, make(d));
  EXPECT_EQ(early.count(ViolationKind::SourceLacksData), 1u) << kinds(early);
}

TEST(VerifySpecific, InvalidCollective) {
  auto t = topo::generate("line:2");
  Algorithm a = base(t, CollectiveKind::AllGather);
  a.collective.ranks = {0, 7};
  Report r = verify(t, a);
  EXPECT_EQ(r.count(ViolationKind::BadReference), 1u);
}

// An algorithm file states its chunk count (an All-Reduce's in all, up to 2^31 - 1), and the
// replay keeps a cell per node and chunk: past the memory there is (TENET_MEMORY here) it is a
// clear error naming both, not an allocation the kernel kills (40 GiB on ring:4 before).
TEST(VerifySpecific, ChunksPastTheMemoryAreAnError) {
  auto t = topo::generate("ring:4");
  Algorithm a = base(t, CollectiveKind::AllReduce);
  a.collective.ranks = {0, 1};
  a.collective.all_reduce_chunks = std::numeric_limits<int32_t>::max();
  const char* before = std::getenv("TENET_MEMORY");
  const std::string saved = before ? before : "";
  ::setenv("TENET_MEMORY", "1GiB", 1);
  std::string error;
  try {
    verify(t, a);
  } catch (const Error& e) {
    error = e.what();
  }
  if (before)
    ::setenv("TENET_MEMORY", saved.c_str(), 1);
  else
    ::unsetenv("TENET_MEMORY");
  EXPECT_NE(error.find("verifying 2147483647 chunks on 4 nodes would need about 40 GiB"),
            std::string::npos)
      << error;
}

// Every random tree algorithm is correct, and its claimed time is the timing model's.
TEST(VerifyProperty, TreeAlgorithmsOnRandomTopologiesAreCorrect) {
  std::mt19937_64 rng(42);
  int cases = 0;
  for (int i = 0; i < 200; ++i) {
    auto t = testing::random_topology(rng);
    Collective c = testing::random_collective(rng, t);
    LinkModel m = rng() % 2 ? LinkModel::Pipelined : LinkModel::Hold;
    Algorithm a = testing::tree_algorithm(t, c, 1000 + static_cast<Bytes>(rng() % 100000), m);
    Report r = verify(t, a, {.max_reported = 5, .lower_bound = false});
    ASSERT_TRUE(r.correct()) << c.describe() << "\n" << kinds(r);
    EXPECT_EQ(r.collective_time, a.claimed_time);
    EXPECT_EQ(r.model_time, a.claimed_time);
    ++cases;
  }
  EXPECT_EQ(cases, 200);
}

// ---- Mutation testing ----------------------------------------------------------------------

enum class Mutation {
  DropTransfer,
  DuplicateReduce,
  SendBeforeArrival,
  SwapChunk,
  OverbookLink,
  MissingLink,
  DependencyCycle,
  TooShort,
  PostconditionUnmet,
  ClaimWrongTime,
  RateTooHigh,
};
constexpr Mutation kMutations[] = {
    Mutation::DropTransfer,    Mutation::DuplicateReduce, Mutation::SendBeforeArrival,
    Mutation::SwapChunk,       Mutation::OverbookLink,    Mutation::MissingLink,
    Mutation::DependencyCycle, Mutation::TooShort,        Mutation::PostconditionUnmet,
    Mutation::ClaimWrongTime,  Mutation::RateTooHigh};
const char* name(Mutation m) {
  const char* names[] = {"drop a transfer",
                         "duplicate a reduce",
                         "send before arrival",
                         "swap a chunk id",
                         "overbook a link",
                         "use a missing link",
                         "add a dependency cycle",
                         "claim a too-short transfer",
                         "leave a postcondition unmet",
                         "claim a wrong collective time",
                         "move faster than the route"};
  return names[static_cast<int>(m)];
}

// The kinds that correctly describe each mutation.
std::set<ViolationKind> expected(Mutation m) {
  using K = ViolationKind;
  switch (m) {
    case Mutation::DropTransfer:
      return {K::PostconditionUnmet, K::SourceLacksData, K::ReduceIntoNothing};
    case Mutation::DuplicateReduce:
      return {K::DoubleCount};
    case Mutation::SendBeforeArrival:
      return {K::SourceLacksData};
    case Mutation::SwapChunk:
      return {K::SourceLacksData, K::PostconditionUnmet, K::DoubleCount, K::Overwrite,
              K::ReduceIntoNothing};
    case Mutation::OverbookLink:
      return {K::LinkOverbooked};
    case Mutation::MissingLink:
      return {K::BrokenRoute};
    case Mutation::DependencyCycle:
      return {K::DependencyCycle};
    case Mutation::TooShort:
      return {K::TooShort};
    case Mutation::PostconditionUnmet:
      return {K::PostconditionUnmet};
    case Mutation::ClaimWrongTime:
      return {K::TimeMismatch};
    case Mutation::RateTooHigh:
      return {K::BadRate};
  }
  return {};
}

std::vector<TransferSpec> specs_of(const Algorithm& a) {
  std::vector<TransferSpec> s;
  for (TransferId i = 0; i < static_cast<TransferId>(a.size()); ++i) s.push_back(a.spec(i));
  return s;
}

std::vector<TransferSpec> without(std::vector<TransferSpec> s, TransferId drop) {
  s.erase(s.begin() + drop);
  for (TransferSpec& x : s) {
    std::erase(x.deps, drop);
    for (TransferId& d : x.deps)
      if (d > drop) --d;
  }
  return s;
}

// Applies `m` to a correct, timed algorithm; nothing when it does not apply to this one.
std::optional<Algorithm> mutate(const topo::Topology& t, const Algorithm& a, Mutation m,
                                std::mt19937_64& rng) {
  const auto n = static_cast<TransferId>(a.size());
  if (n < 2) return std::nullopt;
  std::vector<TransferSpec> s = specs_of(a);
  const Collective& c = a.collective;
  auto pick = [&](auto&& ok) -> TransferId {
    std::vector<TransferId> v;
    for (TransferId i = 0; i < n; ++i)
      if (ok(i)) v.push_back(i);
    return v.empty() ? -1 : v[rng() % v.size()];
  };
  switch (m) {
    case Mutation::DropTransfer: {
      Algorithm out = with_transfers(a, without(s, static_cast<TransferId>(rng() % n)));
      out.claimed_time = out.makespan();
      return out;
    }
    case Mutation::DuplicateReduce: {
      TransferId i = pick([&](TransferId k) { return s[k].op == Op::Reduce; });
      if (i < 0) return std::nullopt;
      TransferSpec dup = s[i];
      dup.deps.clear();
      dup.start = a.makespan();  // after everything: no overlap, the source still holds its data
      dup.end = dup.start + (s[i].end - s[i].start);
      s.push_back(dup);
      Algorithm out = with_transfers(a, s);
      out.claimed_time = out.makespan();
      return out;
    }
    case Mutation::SendBeforeArrival: {
      if (reduces(c.kind)) return std::nullopt;
      // A transfer whose source received its chunk: start it just before that arrival.
      TransferId i = pick([&](TransferId k) { return s[k].src != c.ranks[c.origin(s[k].chunk)]; });
      if (i < 0) return std::nullopt;
      Time arrival = -1;
      for (TransferId k = 0; k < i; ++k)
        if (s[k].dst == s[i].src && s[k].chunk == s[i].chunk) arrival = s[k].end;
      if (arrival <= 0) return std::nullopt;
      Time shift = s[i].start - (arrival - 1);
      s[i].start -= shift;
      s[i].end -= shift;
      return with_transfers(a, s);
    }
    case Mutation::SwapChunk: {
      if (c.num_chunks() < 2) return std::nullopt;
      TransferId i = static_cast<TransferId>(rng() % n);
      ChunkId other = static_cast<ChunkId>(rng() % (c.num_chunks() - 1));
      s[i].chunk = other >= s[i].chunk ? other + 1 : other;
      return with_transfers(a, s);
    }
    case Mutation::OverbookLink: {
      // Two transfers on one link whose rates together exceed it: start the later with the earlier.
      auto held = [&](TransferId k, LinkId l) {
        return held_rate(
            t, l,
            route_cost(t, s[k].route, a.chunk_bytes, a.link_model, a.step_costs, s[k].rate).rate,
            a.link_model);
      };
      for (TransferId j = n - 1; j > 0; --j)
        for (TransferId i = 0; i < j; ++i)
          for (LinkId l : s[j].route)
            if (std::find(s[i].route.begin(), s[i].route.end(), l) != s[i].route.end() &&
                held(i, l) + held(j, l) > t.link(l).bandwidth) {
              Time shift = s[j].start - s[i].start;
              s[j].start -= shift;
              s[j].end -= shift;
              return with_transfers(a, s);
            }
      return std::nullopt;
    }
    case Mutation::RateTooHigh: {
      TransferId i = static_cast<TransferId>(rng() % n);
      s[i].rate = route_cost(t, s[i].route, a.chunk_bytes, a.link_model, a.step_costs).bottleneck +
                  1 + static_cast<Bandwidth>(rng() % 1000);
      return with_transfers(a, s);
    }
    case Mutation::MissingLink: {
      TransferId i = static_cast<TransferId>(rng() % n);
      // Either a link that does not exist or one that does not leave the source.
      if (rng() % 2) {
        s[i].route[0] = t.num_links() + static_cast<LinkId>(rng() % 5);
      } else {
        LinkId l = -1;
        for (LinkId k = 0; k < t.num_links(); ++k)
          if (t.link(k).src != s[i].src) l = k;
        if (l < 0) return std::nullopt;
        s[i].route[0] = l;
      }
      return with_transfers(a, s);
    }
    case Mutation::DependencyCycle: {
      TransferId j = pick([&](TransferId k) { return !s[k].deps.empty(); });
      if (j >= 0) {
        s[s[j].deps[0]].deps.push_back(j);  // j waits for i, and now i waits for j
      } else {
        s[0].deps.push_back(1);
        s[1].deps.push_back(0);
      }
      return with_transfers(a, s);
    }
    case Mutation::TooShort: {
      TransferId i = static_cast<TransferId>(rng() % n);
      s[i].end -= 1 + static_cast<Time>(rng() % std::max<Time>(1, s[i].end - s[i].start));
      return with_transfers(a, s);
    }
    case Mutation::PostconditionUnmet: {
      // Drop a transfer that hands a rank a chunk it keeps: nothing leaves from there later.
      TransferId i = pick([&](TransferId k) {
        for (TransferId later = k + 1; later < n; ++later)
          if (s[later].src == s[k].dst && s[later].chunk == s[k].chunk) return false;
        for (int r = 0; r < c.num_ranks(); ++r)
          if (c.ranks[r] == s[k].dst && c.finally_needs(r, s[k].chunk)) return true;
        return false;
      });
      if (i < 0) return std::nullopt;
      Algorithm out = with_transfers(a, without(s, i));
      out.claimed_time = out.makespan();
      return out;
    }
    case Mutation::ClaimWrongTime: {
      Algorithm out = a;
      out.claimed_time += rng() % 2 ? 1 : -1;
      return out;
    }
  }
  return std::nullopt;
}

TEST(VerifyMutation, RejectsEveryMutantAndNamesTheViolation) {
  std::mt19937_64 rng(2026);
  std::map<Mutation, std::pair<int, int>>
      killed;  // mutation -> (killed with the right kind, total)
  for (int i = 0; i < 150; ++i) {
    auto t = testing::random_topology(rng);
    Collective c = testing::random_collective(rng, t);
    // Make sure reductions and copies are both well represented.
    if (i % 3 == 0) c = Collective::over_all(t, CollectiveKind::AllReduce, 1 + i % 2);
    Algorithm a = testing::tree_algorithm(t, c, 4096 + static_cast<Bytes>(rng() % 100000));
    ASSERT_TRUE(verify(t, a, {.max_reported = 5, .lower_bound = false}).correct());
    for (Mutation m : kMutations) {
      auto mutant = mutate(t, a, m, rng);
      if (!mutant) continue;
      Report r = verify(t, *mutant, {.max_reported = 5, .lower_bound = false});
      bool right = false;
      for (ViolationKind k : expected(m)) right = right || r.count(k) > 0;
      auto& [ok, total] = killed[m];
      ++total;
      ok += !r.correct() && right;
      EXPECT_TRUE(!r.correct() && right) << name(m) << " on " << c.describe() << ": " << kinds(r);
    }
  }
  int ok_all = 0, total_all = 0;
  std::cout << "mutation kill rate (rejected, naming the right violation kind):\n";
  for (Mutation m : kMutations) {
    auto [ok, total] = killed[m];
    ok_all += ok;
    total_all += total;
    std::cout << fmt::format("  {:<32} {:>4} / {:<4}\n", name(m), ok, total);
    EXPECT_GT(total, 20) << name(m) << " was applied too rarely to mean anything";
  }
  std::cout << fmt::format("  {:<32} {:>4} / {:<4} ({:.1f} %)\n", "all", ok_all, total_all,
                           100.0 * ok_all / std::max(1, total_all));
  EXPECT_EQ(ok_all, total_all);
}

}  // namespace
}  // namespace tenet::synth
