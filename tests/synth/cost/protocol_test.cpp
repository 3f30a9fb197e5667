// Runtime protocols (topo::Protocol, Algorithm::protocol): an algorithm that runs one is timed on
// the topology under it (every link's bandwidth times the protocol's share, its per-step cost the
// protocol's), by synth::time, the verifier, the files and the simulator alike; every producer
// runs the fastest protocol it may; the lower bound holds under all of them.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "chakra/collective_graph.hpp"
#include "sim/collective_engine.hpp"
#include "synth/bounds/lower_bound.hpp"
#include "synth/cost/protocol_view.hpp"
#include "synth/cost/timing.hpp"
#include "synth/formats/algorithm_json.hpp"
#include "synth/formats/msccl_xml.hpp"
#include "synth/producers.hpp"
#include "synth/verify/verify.hpp"
#include "tests/synth/test_support.hpp"
#include "topo/io.hpp"

namespace tenet::synth {
namespace {

using testing::link_between;

// Four GPUs on a switch that reduces and multicasts (NVLS), with an LL-like protocol (half the
// bandwidth, a short step; no in-network reduction, as NCCL runs NVLS in Simple only; and, to
// check exclusions, not for direct) and a Simple one.
constexpr const char* kSwitch = R"(
npus: [g0, g1, g2, g3]
switches: [{name: sw, reduce: true, multicast: true}]
defaults: {bw: 100GB/s, lat: 1us, step: 4us}
links:
  - {src: "g*", dst: sw}
protocols:
  - {name: LL, bandwidth: 0.5, step: 0.5us, in_network: false, excludes: [direct]}
  - {name: Simple, bandwidth: 1, step: 4us}
)";

// A one-way ring of three GPUs, 50 GB/s and 0.5 us a link, 3 us a step; LL at a quarter of the
// bandwidth and 1 us a step.
constexpr const char* kRing = R"(
npus: [g0, g1, g2]
defaults: {bw: 50GB/s, lat: 0.5us, step: 3us, bidirectional: false}
links:
  - {src: g0, dst: g1}
  - {src: g1, dst: g2}
  - {src: g2, dst: g0}
protocols:
  - {name: LL, bandwidth: 0.25, step: 1us}
)";

// Two servers of two GPUs, NVLink (1 us a step) inside and InfiniBand (8 us) across: one protocol
// over both classes scales each link's own step.
constexpr const char* kTwoClasses = R"(
npus: [a0, a1, b0, b1]
switches: [nv0, nv1, ib]
defaults: {bw: 100GB/s, lat: 1us}
links:
  - {src: "a*", dst: nv0, step: 1us}
  - {src: "b*", dst: nv1, step: 1us}
  - {src: "[ab]*", dst: ib, bw: 25GB/s, step: 8us}
protocols:
  - {name: LL, bandwidth: 0.5, step_scale: 0.25}
  - {name: Simple, bandwidth: 1, step_scale: 1}
)";

topo::Topology charging(topo::Topology t) {
  t.set_charges_steps(true);
  return t;
}

TEST(Protocols, UnderAProtocolEveryLinkCarriesItsShareAndPaysItsStep) {
  const topo::Topology t = charging(topo::parse_yaml(kSwitch));
  ASSERT_EQ(t.protocols().size(), 2u);
  const topo::Protocol& ll = t.protocols()[0];
  EXPECT_EQ(ll.name, "LL");
  EXPECT_FALSE(ll.in_network);
  EXPECT_TRUE(ll.excludes_producer("direct"));
  EXPECT_FALSE(ll.excludes_producer("ring:2"));
  const topo::Topology u = t.under(ll);
  ASSERT_NE(u.applied(), nullptr);
  EXPECT_EQ(u.applied()->name, "LL");
  EXPECT_TRUE(u.protocols().empty());
  EXPECT_TRUE(u.charges_steps());
  EXPECT_NE(u.fingerprint(), t.fingerprint());  // its bandwidths differ
  for (LinkId l = 0; l < t.num_links(); ++l) {
    EXPECT_EQ(u.link(l).bandwidth, t.link(l).bandwidth / 2);
    EXPECT_EQ(u.link(l).step, 500'000);
  }
  const topo::NodeId sw = t.num_npus();
  EXPECT_TRUE(t.node(sw).can_reduce && t.node(sw).can_multicast);
  EXPECT_FALSE(u.node(sw).can_reduce || u.node(sw).can_multicast);  // LL: not in the network
  EXPECT_TRUE(t.under(t.protocols()[1]).node(sw).can_reduce);
  EXPECT_EQ(t.applied(), nullptr);
}

// step_scale: each link's own step times the factor, so NVLink and InfiniBand keep their ratio;
// every consumer charges it per link, the simulator too.
TEST(Protocols, AScaledStepKeepsEachLinkClass) {
  const topo::Topology t = charging(topo::parse_yaml(kTwoClasses));
  const topo::Topology ll = t.under(t.protocols()[0]);
  for (LinkId l = 0; l < t.num_links(); ++l)
    EXPECT_EQ(ll.link(l).step, t.link(l).step / 4) << t.describe_link(l);
  const topo::Topology back = topo::parse_yaml(topo::to_yaml(t));
  EXPECT_EQ(back.protocols()[0].step_scale, 0.25);
  const Collective c = Collective::over_all(t, CollectiveKind::AllReduce);
  for (Bytes size : {Bytes{64} << 10, Bytes{64} << 20}) {
    const Algorithm a = make_algorithm_auto_chunks("ring", t, c, size).algorithm;
    ASSERT_FALSE(a.protocol.empty());
    const Time model = model_time(t, a);
    EXPECT_TRUE(verify(t, a).correct());
    EXPECT_NEAR(static_cast<double>(sim::replay(t, a, sim::NetworkKind::Analytical)),
                static_cast<double>(model), 1e-6 * static_cast<double>(model));
  }
}

TEST(Protocols, TopologyFilesKeepThem) {
  const topo::Topology t = topo::parse_yaml(kSwitch);
  for (const topo::Topology& back :
       {topo::parse_yaml(topo::to_yaml(t)), topo::parse_yaml(topo::to_json(t))}) {
    ASSERT_EQ(back.protocols().size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(back.protocols()[i].name, t.protocols()[i].name);
      EXPECT_EQ(back.protocols()[i].bandwidth, t.protocols()[i].bandwidth);
      EXPECT_EQ(back.protocols()[i].step, t.protocols()[i].step);
      EXPECT_EQ(back.protocols()[i].excludes, t.protocols()[i].excludes);
      EXPECT_EQ(back.protocols()[i].in_network, t.protocols()[i].in_network);
    }
    EXPECT_EQ(back.fingerprint(), t.fingerprint());
  }
}

// Ring All-Gather on the one-way ring: at step s, GPU i forwards chunk (i - s) mod 3.
Algorithm ring_allgather(const topo::Topology& t, Bytes chunk) {
  Algorithm a = empty_algorithm("ring", t, Collective::over_all(t, CollectiveKind::AllGather),
                                chunk, LinkModel::Pipelined);
  std::vector<TransferId> brought(3, -1);
  for (int s = 0; s < 2; ++s) {
    std::vector<TransferId> next = brought;
    for (int i = 0; i < 3; ++i) {
      const ChunkId c = ((i - s) % 3 + 3) % 3;
      std::vector<TransferId> deps;
      if (brought[c] >= 0) deps.push_back(brought[c]);
      const LinkId l = link_between(t, i, (i + 1) % 3);
      next[c] = a.add(c, i, (i + 1) % 3, std::span(&l, 1), Op::Copy, deps);
    }
    brought = next;
  }
  return a;
}

// 2 x (step + bytes / (share x bandwidth) + latency), as the ring's closed form on the ring's links
// under the protocol; with no protocol, the links as described.
TEST(Protocols, RingAllGatherUnderAProtocolEqualsTheClosedForm) {
  const topo::Topology t = charging(topo::parse_yaml(kRing));
  constexpr Bytes kChunk = 1 << 20;
  Algorithm a = ring_allgather(t, kChunk);
  const Time described = 2 * (3'000'000 + transfer_time(kChunk, 50'000'000'000) + 500'000);
  EXPECT_EQ(model_time(t, a), described);
  a.protocol = "LL";
  const Time ll = 2 * (1'000'000 + transfer_time(kChunk, 12'500'000'000) + 500'000);
  EXPECT_EQ(model_time(t, a), ll);
  time(t, a);
  EXPECT_EQ(a.claimed_time, ll);
  const Report r = verify(t, a);
  EXPECT_TRUE(r.correct()) << r.violations.front().message;
  EXPECT_EQ(r.collective_time, ll);
  // On the topology under LL, the same algorithm without a protocol takes the same time.
  Algorithm plain = a;
  plain.protocol.clear();
  EXPECT_EQ(model_time(t.under(t.protocols()[0]), plain), ll);
  // The floor is exact on a ring: under the protocol too.
  EXPECT_EQ(time_floor(t, a), ll);
}

TEST(Protocols, AnUnlistedProtocolIsAClearError) {
  const topo::Topology t = charging(topo::parse_yaml(kRing));
  Algorithm a = ring_allgather(t, 1 << 10);
  a.protocol = "LL128";
  try {
    model_time(t, a);
    FAIL() << "timed an algorithm running a protocol its topology does not list";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("'LL128'"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("it lists 'LL'"), std::string::npos) << e.message();
  }
  const Report r = verify(t, a);
  EXPECT_FALSE(r.correct());
  // A consumer that forgets the protocol fails loudly, never times the links as described.
  a.protocol = "LL";
  EXPECT_THROW(RouteCoster(t, a), Error);
}

// Each producer's time is the least of its times under the protocols it may run, found as each
// would be by hand; LL's short steps win small buffers and Simple's full bandwidth large ones.
TEST(Protocols, EveryProducerRunsItsFastestProtocol) {
  const topo::Topology t = charging(topo::parse_yaml(kSwitch));
  const Collective c = Collective::over_all(t, CollectiveKind::AllReduce);
  for (const char* name : {"ring", "direct", "tenet", "nvls"})
    for (Bytes size : {Bytes{64} << 10, Bytes{256} << 20}) {
      SCOPED_TRACE(::testing::Message() << name << " " << size << " B");
      const ChunkingResult r = make_algorithm_auto_chunks(name, t, c, size);
      Time least = -1;
      std::string fastest;
      for (const topo::Protocol& p : t.protocols()) {
        if (p.excludes_producer(name)) continue;
        const topo::Topology u = t.under(p);
        Time x = 0;
        try {
          x = collective_time(u, make_algorithm_auto_chunks(name, u, c, size).algorithm);
        } catch (const NotApplicable&) {  // nvls where the switch does not reduce
          continue;
        }
        if (least < 0 || x < least) {
          least = x;
          fastest = p.name;
        }
      }
      EXPECT_EQ(r.algorithm.protocol, fastest);
      EXPECT_EQ(model_time(t, r.algorithm), least);
      EXPECT_EQ(r.algorithm.topology_fingerprint, t.fingerprint());
      const Report v = verify(t, r.algorithm);
      EXPECT_TRUE(v.correct());
      EXPECT_EQ(v.warnings.size(), 0u) << v.warnings.front().message;
      if (std::string(name) == "nvls" || std::string(name) == "direct")
        EXPECT_EQ(r.algorithm.protocol, "Simple");  // LL has no NVLS, and excludes direct
      else
        EXPECT_EQ(r.algorithm.protocol, size < (Bytes{1} << 20) ? "LL" : "Simple");
    }
}

// No algorithm under any protocol beats the bound; the bound is the least of the bounds under
// each protocol and the links as described.
TEST(Protocols, TheBoundHoldsUnderEveryProtocol) {
  const topo::Topology t = charging(topo::parse_yaml(kSwitch));
  for (CollectiveKind kind :
       {CollectiveKind::AllGather, CollectiveKind::ReduceScatter, CollectiveKind::AllReduce})
    for (Bytes size : {Bytes{4} << 10, Bytes{1} << 20, Bytes{64} << 20}) {
      const Collective c = Collective::over_all(t, kind);
      const Bytes chunk = c.chunk_bytes_for(size);
      const LowerBound b = lower_bound(t, c, chunk);
      Time least = lower_bound(t, c, chunk, true, nullptr).total;
      for (const topo::Protocol& p : t.protocols()) {
        const topo::Topology u = t.under(p);
        least = std::min(least, lower_bound(u, c, chunk).total);
        for (const char* name : {"ring", "direct", "tenet"}) {
          const Algorithm a = make_algorithm(name, u, c, chunk);
          EXPECT_GE(collective_time(u, a), b.total) << name << " under " << p.name;
        }
      }
      EXPECT_EQ(b.total, least);
    }
}

// JSON, MSCCL-XML and Chakra carry the protocol; each file reads back to the same time.
TEST(Protocols, FilesKeepTheProtocolAndTheTime) {
  const topo::Topology t = charging(topo::parse_yaml(kSwitch));
  const Collective c = Collective::over_all(t, CollectiveKind::AllReduce);
  const Algorithm a = make_algorithm_auto_chunks("ring", t, c, Bytes{64} << 10).algorithm;
  ASSERT_EQ(a.protocol, "LL");
  const Time time = model_time(t, a);

  const Algorithm json = parse_algorithm_json(to_json(a));
  EXPECT_EQ(json.protocol, "LL");
  EXPECT_EQ(model_time(t, json), time);

  const std::string xml = to_msccl_xml(a);
  EXPECT_NE(xml.find("proto=\"LL\""), std::string::npos);
  const Algorithm back = parse_msccl_xml(xml, t);
  EXPECT_EQ(back.protocol, "LL");
  EXPECT_EQ(model_time(t, back), time);

  const Algorithm chakra =
      chakra::from_collective_graph(chakra::to_collective_graph(a, t), t, "<memory>");
  EXPECT_EQ(chakra.protocol, "LL");
  EXPECT_EQ(model_time(t, chakra), time);
}

// The simulator's network is shared by algorithms of any protocol: it replays one as the links
// carry it (its bytes on the wire), in the same time (to rounding of a byte per chunk).
TEST(Protocols, TheSimulatorReplaysTheBytesOnTheWire) {
  const topo::Topology t = charging(topo::parse_yaml(kSwitch));
  for (CollectiveKind kind : {CollectiveKind::AllGather, CollectiveKind::AllReduce}) {
    const Collective c = Collective::over_all(t, kind);
    const Algorithm a = make_algorithm_auto_chunks("ring", t, c, Bytes{64} << 10).algorithm;
    ASSERT_EQ(a.protocol, "LL");
    const Time model = model_time(t, a);
    EXPECT_NEAR(static_cast<double>(sim::replay(t, a, sim::NetworkKind::Analytical)),
                static_cast<double>(model), 1e-6 * static_cast<double>(model));
    const std::optional<Algorithm> wire = on_the_wire(t, a);
    ASSERT_TRUE(wire.has_value());
    EXPECT_EQ(wire->chunk_bytes, 2 * a.chunk_bytes);
    EXPECT_TRUE(wire->protocol.empty());
    const topo::Topology carried = wire_topology(t, a);
    EXPECT_EQ(carried.link(0).bandwidth, t.link(0).bandwidth);
    EXPECT_EQ(carried.link(0).step, 500'000);
    EXPECT_NEAR(static_cast<double>(model_time(carried, *wire)), static_cast<double>(model),
                1e-6 * static_cast<double>(model));
  }
}

}  // namespace
}  // namespace tenet::synth
