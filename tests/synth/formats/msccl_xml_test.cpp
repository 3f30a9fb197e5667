#include "synth/formats/msccl_xml.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>

#include "synth/baselines/baselines.hpp"
#include "synth/cost/timing.hpp"
#include "synth/synthesizer.hpp"
#include "synth/verify/verify.hpp"
#include "tests/synth/formats/msccl_programs.hpp"
#include "tests/synth/formats/msccl_runtime_rules.hpp"
#include "topo/generators.hpp"

namespace tenet::synth {
namespace {

using ::testing::HasSubstr;
using testing::step;

// Chunks sent, over all transfers (a transfer of several chunks counts each).
size_t chunk_sends(const Algorithm& a) {
  size_t n = 0;
  for (const Transfer& x : a.transfers()) n += x.count;
  return n;
}

// The first problem an import found, "" when none.
std::string first_problem(const MscclImport& in) {
  return in.problems.empty() ? "" : in.problems.front().message;
}

TEST(MscclXml, WritesWhatTheRuntimeNeeds) {
  const auto t = topo::generate("ring:4");
  const Algorithm a = synthesize(t, Collective::over_all(t, CollectiveKind::AllReduce), 1 << 20);
  const std::string xml = to_msccl_xml(a);
  // Both runtimes' tokenizers stop at an XML declaration (microsoft/msccl src/graph/xml.cc and
  // msccl-executor-nccl's copy: "expected >, got '?'"); a file for both needs all ten attributes,
  // and maxBytes 0 is never picked by the legacy runtime (it needs nBytes < maxBytes).
  EXPECT_EQ(xml.find("<?xml"), std::string::npos);
  EXPECT_EQ(xml.find('\t'), std::string::npos);
  EXPECT_EQ(xml.find('\''), std::string::npos);
  for (const char* must :
       {"name=\"", "minBytes=\"0\"", "maxBytes=\"1099511627776\"", "inplace=\"1\"",
        "outofplace=\"0\"", "coll=\"allreduce\"", "ngpus=\"4\"", "nchunksperloop=\"4\"",
        "proto=\"Simple\"", "nchannels=\"", "type=\"rrc\""})
    EXPECT_THAT(xml, HasSubstr(must));
  const Algorithm rs =
      synthesize(t, Collective::over_all(t, CollectiveKind::ReduceScatter), 1 << 20);
  EXPECT_THAT(to_msccl_xml(rs), HasSubstr("coll=\"reducescatter\""));
  MscclOptions legacy, ll128;
  legacy.runtime = MscclRuntime::Legacy;
  ll128.protocol = "LL128";
  EXPECT_THAT(to_msccl_xml(rs, legacy), HasSubstr("coll=\"reduce_scatter\""));
  EXPECT_THAT(to_msccl_xml(a, ll128), HasSubstr("proto=\"LL128\""));
  const Algorithm ag =
      synthesize(t, Collective::over_all(t, CollectiveKind::AllGather, 2), 1 << 20);
  EXPECT_THAT(to_msccl_xml(ag), HasSubstr("outofplace=\"1\""));
  EXPECT_THAT(to_msccl_xml(ag), HasSubstr("i_chunks=\"2\" o_chunks=\"8\""));
}

// The checker the exports are held to, checked itself: each rule it implements catches its case.
TEST(MscclXml, RuntimeRulesCatchWhatTheLoadersReject) {
  const auto t = topo::generate("ring:4");
  const std::string good =
      to_msccl_xml(synthesize(t, Collective::over_all(t, CollectiveKind::AllGather), 1 << 20));
  EXPECT_THAT(testing::msccl_runtime_problems(good, MscclRuntime::Executor), ::testing::IsEmpty());
  auto broken = [&](const std::string& from, const std::string& to) {
    std::string x = good;
    const size_t at = x.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return at == std::string::npos ? x : x.replace(at, from.size(), to);
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"<?xml version=\"1.0\"?>\n" + good, "an XML declaration"},
      {broken("<algo ", "<algo\t"), "a tab"},
      {broken("proto=\"Simple\"", "proto='Simple'"), "a single quote"},
      {broken(" minBytes=\"0\"", ""), "<algo> lacks minBytes"},
      {broken("maxBytes=\"1099511627776\"", "maxBytes=\"0\""), "maxBytes not above minBytes"},
      {broken("coll=\"allgather\"", "coll=\"allgathr\""), "coll 'allgathr'"},
      {broken("<step s=\"0\"", "<step s=\"1\""), "out of order"},
      {broken("cnt=\"1\"", "cnt=\"72\""), "cnt 72"},
      {broken("<tb id=\"0\"", "<tb\nid=\"0\""), "a line break inside a tag"},
  };
  for (const auto& [xml, why] : cases)
    EXPECT_THAT(testing::msccl_runtime_problems(xml, MscclRuntime::Executor),
                ::testing::Contains(HasSubstr(why)))
        << why;
  EXPECT_THAT(testing::msccl_runtime_problems(
                  broken("coll=\"allgather\"", "coll=\"reducescatter\""), MscclRuntime::Legacy),
              ::testing::Contains(HasSubstr("unknown to this runtime")));
}

// Exports that used to exceed the 4095 nodes per rank: dependencies implied by thread-block order
// or by another dependency are no longer written as nops.
TEST(MscclXml, LargeExportsStayWithinTheLoadersLimits) {
  const auto fc = topo::generate("fc:64");
  const std::string ar =
      to_msccl_xml(synthesize(fc, Collective::over_all(fc, CollectiveKind::AllReduce), 1 << 20));
  EXPECT_THAT(testing::msccl_runtime_problems(ar, MscclRuntime::Executor), ::testing::IsEmpty());
  const auto ring = topo::generate("ring:8");
  const Algorithm deep =
      make_baseline({BaselineKind::Ring, {}}, ring,
                    Collective::over_all(ring, CollectiveKind::AllReduce, 128), 1 << 16);
  const std::string xml = to_msccl_xml(deep);
  EXPECT_THAT(testing::msccl_runtime_problems(xml, MscclRuntime::Executor), ::testing::IsEmpty());
  EXPECT_EQ(verify(ring, parse_msccl_xml(xml, ring), {.lower_bound = false}).collective_time,
            deep.claimed_time);
  // And what cannot fit is refused with the count, not written.
  const Algorithm deeper =
      make_baseline({BaselineKind::Ring, {}}, ring,
                    Collective::over_all(ring, CollectiveKind::AllReduce, 512), 1 << 16);
  EXPECT_THAT([&] { to_msccl_xml(deeper); },
              ::testing::ThrowsMessage<Error>(::testing::AnyOf(
                  HasSubstr("at most 4095 per rank"), HasSubstr("the runtime would not load it"))));
}

TEST(MscclXml, RefusesWhatTheRuntimeWouldNotLoad) {
  const auto t = topo::generate("ring:16,bidir=false");
  const Algorithm big = make_baseline(
      {BaselineKind::Ring, {}}, t, Collective::over_all(t, CollectiveKind::AllGather, 160), 1024);
  EXPECT_THAT([&] { to_msccl_xml(big); },
              ::testing::ThrowsMessage<Error>(HasSubstr("the runtime would not load it")));
  const Algorithm bcast = synthesize(t, Collective::over_all(t, CollectiveKind::Broadcast), 1024);
  EXPECT_THAT([&] { to_msccl_xml(bcast); },
              ::testing::ThrowsMessage<Error>(HasSubstr("supports all-reduce")));
}

// An All-Gather ring as another generator would write it: a compound receive-copy-send step, a
// final receive, counts, a local copy, and no Tenet comment.
TEST(MscclXml, ImportsForeignProgramsWithCompoundSteps) {
  std::string xml =
      R"(<algo name="ring-ag" proto="Simple" nchannels="1" nchunksperloop="3" ngpus="3" coll="allgather" inplace="0" outofplace="1" minBytes="0" maxBytes="0">)";
  for (int r = 0; r < 3; ++r)
    xml += fmt::format(R"(
  <gpu id="{0}" i_chunks="1" o_chunks="3" s_chunks="0">
    <tb id="0" send="{1}" recv="{2}" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="o" dstoff="{0}" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="rcs" srcbuf="o" srcoff="{2}" dstbuf="o" dstoff="{2}" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="2" type="r" srcbuf="o" srcoff="{3}" dstbuf="o" dstoff="{3}" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
    <tb id="1" send="-1" recv="-1" chan="0">
      <step s="0" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="{0}" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>)",
                       r, (r + 1) % 3, (r + 2) % 3, (r + 1) % 3);
  xml += "\n</algo>\n";
  const auto t = topo::generate("ring:3,bidir=false");
  const Algorithm a = parse_msccl_xml(xml, t, "ring-ag.xml");
  EXPECT_EQ(a.size(), 6u);
  const Report r = verify(t, a, {.max_reported = 3, .lower_bound = false});
  EXPECT_TRUE(r.correct()) << (r.violations.empty() ? "" : r.violations[0].message);
}

TEST(MscclXml, ImportsWhatMscclToolsWrites) {
  for (int g : {2, 4}) {
    const auto t = topo::generate(fmt::format("fc:{},bw=300GB/s x ring:2,bw=50GB/s", g));
    const MscclImport in = import_msccl_xml(testing::hierarchical_allreduce(g), t, "hier.xml");
    EXPECT_TRUE(in.problems.empty()) << first_problem(in);
    const Report r = verify(t, in.algorithm, {.max_reported = 3, .lower_bound = false});
    EXPECT_TRUE(r.correct()) << g << ": " << r.violations[0].message;
    EXPECT_EQ(chunk_sends(in.algorithm), static_cast<size_t>(2 * g * (4 * (g - 1) + 2)));
  }
  for (int p : {2, 4, 8}) {
    const auto t = topo::generate(fmt::format("hypercube:{}", p));
    const MscclImport in = import_msccl_xml(testing::recursive_doubling_allgather(p), t, "rd.xml");
    EXPECT_TRUE(in.problems.empty()) << first_problem(in);
    // Step d sends 2^d consecutive chunks with cnt 2^d: one transfer of 2^d chunks (a message).
    EXPECT_EQ(chunk_sends(in.algorithm), static_cast<size_t>(p * (p - 1)));
    EXPECT_EQ(in.algorithm.size(), static_cast<size_t>(p * std::countr_zero(unsigned(p))));
    const Report r = verify(t, in.algorithm, {.max_reported = 3, .lower_bound = false});
    EXPECT_TRUE(r.correct()) << p << ": " << r.violations[0].message;
  }
  for (int g : {2, 4}) {
    const auto t = topo::generate(fmt::format("fc:{}", 2 * g));
    const std::string xml = testing::two_step_alltoall(g);
    const MscclImport in = import_msccl_xml(xml, t, "a2a.xml");
    EXPECT_TRUE(in.problems.empty()) << first_problem(in);
    EXPECT_EQ(chunk_sends(in.algorithm),
              static_cast<size_t>(2 * g * (g + 2 * (g - 1))));  // cross, forwarded, direct
    const Report r = verify(t, in.algorithm, {.max_reported = 3, .lower_bound = false});
    EXPECT_TRUE(r.correct()) << g << ": " << r.violations[0].message;
    // Forwarding the wrong scratch slot delivers a chunk to the wrong GPU's output: caught.
    std::string wrong = xml;
    const std::string forward =
        step(2, "s", 's', 1, 'o', g, 1, 0, 1);  // gpu 0 forwards s[1] to gpu 1
    ASSERT_NE(wrong.find(forward), std::string::npos);
    wrong.replace(wrong.find(forward), forward.size(), step(2, "s", 's', 0, 'o', g, 1, 0, 1));
    EXPECT_FALSE(import_msccl_xml(wrong, t).problems.empty());
  }
  for (int channels : {1, 2, 4, 8})
    for (const char* proto : {"Simple", "LL", "LL128"}) {
      const auto t = topo::generate("ring:4,bidir=false");
      const MscclImport in =
          import_msccl_xml(testing::ring_allgather_in_place(4, channels, proto), t, "ring.xml");
      EXPECT_TRUE(in.problems.empty()) << first_problem(in);
      EXPECT_THAT(in.warnings,
                  ::testing::Contains(HasSubstr("lacks maxBytes: the executor runtime")));
      EXPECT_EQ(in.algorithm.size(), static_cast<size_t>(4 * 3 * channels));
      const Report r = verify(t, in.algorithm, {.max_reported = 3, .lower_bound = false});
      EXPECT_TRUE(r.correct()) << channels << " " << proto << ": " << r.violations[0].message;
    }
  for (int p : {3, 4, 8}) {
    const auto t = topo::generate(fmt::format("fc:{}", p));
    const MscclImport in = import_msccl_xml(testing::allpairs_allreduce(p), t, "allpairs.xml");
    EXPECT_TRUE(in.problems.empty()) << first_problem(in);
    const Report r = verify(t, in.algorithm, {.max_reported = 3, .lower_bound = false});
    EXPECT_TRUE(r.correct()) << p << ": " << r.violations[0].message;
    size_t reduces = 0;
    for (const Transfer& x : in.algorithm.transfers()) reduces += x.op == Op::Reduce;
    EXPECT_EQ(reduces, static_cast<size_t>(p * (p - 1)));  // every contribution, reduced by an 're'
  }
  // An All-Reduce with fewer chunks than GPUs (msccl-tools' allreduce_a100_ncv4: 2 chunks on 4):
  // reduce both into GPU 0 (rrc), then send the result back.
  {
    const auto star = topo::generate("switch:4");
    const MscclImport in = import_msccl_xml(testing::two_chunk_allreduce(), star, "ar2.xml");
    EXPECT_TRUE(in.problems.empty()) << first_problem(in);
    EXPECT_EQ(in.algorithm.collective.all_reduce_chunks, 2);  // 2 chunks in all
    EXPECT_EQ(chunk_sends(in.algorithm), 2u * 3u * 2u);
    const Report r = verify(star, in.algorithm, {.max_reported = 3, .lower_bound = false});
    EXPECT_TRUE(r.correct()) << r.violations[0].message;
  }
  // A swap in which both GPUs reduce (send the own data, then rrc the other's) is a correct
  // 2-GPU All-Reduce in MSCCL: each send is of its GPU's input (Transfer::from_input).
  {
    std::string swap =
        R"(<algo name="swap" proto="Simple" nchannels="1" nchunksperloop="2" ngpus="2" coll="allreduce" inplace="1">)";
    for (int r = 0; r < 2; ++r)
      swap += fmt::format(
                  "<gpu id=\"{}\" i_chunks=\"2\" o_chunks=\"0\" s_chunks=\"0\"><tb id=\"0\" "
                  "send=\"{}\" recv=\"{}\" chan=\"0\">",
                  r, 1 - r, 1 - r) +
              step(0, "s", 'i', 0, 'i', 0, 2) + step(1, "rrc", 'i', 0, 'i', 0, 2) + "</tb></gpu>";
    swap += "</algo>";
    const auto pair = topo::generate("ring:2");
    const MscclImport in = import_msccl_xml(swap, pair, "swap.xml");
    ASSERT_TRUE(in.problems.empty()) << first_problem(in);
    EXPECT_EQ(chunk_sends(in.algorithm), 4u);
    for (const Transfer& x : in.algorithm.transfers()) EXPECT_TRUE(x.from_input);
    EXPECT_TRUE(verify(pair, in.algorithm, {.lower_bound = false}).correct());
  }
  // reduce_scatter (msccl-tools', the legacy runtime's) and reducescatter (the executor's).
  const auto t = topo::generate("ring:4");
  const Algorithm rs =
      synthesize(t, Collective::over_all(t, CollectiveKind::ReduceScatter), 1 << 20);
  std::string xml = to_msccl_xml(rs);
  xml.replace(xml.find("reducescatter"), 13, "reduce_scatter");
  EXPECT_TRUE(verify(t, parse_msccl_xml(xml, t), {.lower_bound = false}).correct());
}

// A verifier that trusts nothing follows the buffers: each mutant of a correct export is rejected,
// by a clear error or by a buffer slot (or the IR) that ends wrong.
// msccl-tools' one-step All-Reduce reduces every chunk on every GPU from the inputs the peers
// sent: each send is of its GPU's input alone, so it imports as transfers that send their input
// (Transfer::from_input), verifies, and is faster than the ring on a switch. Without the local
// thread block's waits its reductions race with the sends and receives.
TEST(MscclXml, ImportsTheOneStepAllReduce) {
  for (int p : {2, 3, 4, 8}) {
    // Each step of cnt p sends p consecutive chunks: one transfer of p chunks (one message, one
    // step cost, as MSCCL pays it).
    const topo::Topology t = topo::generate(fmt::format("switch:{}", p));
    const MscclImport in = import_msccl_xml(testing::one_step_allreduce(p), t, "1step.xml");
    ASSERT_TRUE(in.problems.empty()) << p << ": " << first_problem(in);
    EXPECT_EQ(in.algorithm.size(), static_cast<size_t>(p * (p - 1)));
    EXPECT_EQ(chunk_sends(in.algorithm), static_cast<size_t>(p * p * (p - 1)));
    for (const Transfer& x : in.algorithm.transfers()) {
      EXPECT_TRUE(x.from_input);
      EXPECT_EQ(x.op, Op::Reduce);
    }
    Algorithm a = in.algorithm;
    a.chunk_bytes = 1024;
    synth::time(t, a);
    const Report r = verify(t, a, {.max_reported = 3, .lower_bound = false});
    EXPECT_TRUE(r.correct()) << p << ": " << r.violations[0].message;
    const Collective c = Collective::over_all(t, CollectiveKind::AllReduce);
    EXPECT_LT(a.claimed_time, make_baseline({BaselineKind::Ring, {}}, t, c, 1024).claimed_time);
    const MscclImport racing =
        import_msccl_xml(testing::one_step_allreduce(p, true), t, "race.xml");
    ASSERT_FALSE(racing.problems.empty()) << p;
    EXPECT_EQ(racing.problems.front().kind, ImportProblemKind::Unordered) << first_problem(racing);
  }
}

TEST(MscclXml, BufferMutantsAreRejected) {
  const auto t = topo::generate("ring:8");
  const Algorithm ag = make_baseline({BaselineKind::Ring, {}}, t,
                                     Collective::over_all(t, CollectiveKind::AllGather), 1 << 20);
  const std::string good = to_msccl_xml(ag);
  {
    const MscclImport in = import_msccl_xml(good, t);
    ASSERT_TRUE(in.problems.empty()) << first_problem(in);
    ASSERT_TRUE(verify(t, in.algorithm, {.lower_bound = false}).correct());
  }
  // The n-th occurrence of `what` (a step's attribute text) replaced.
  auto mutate = [&](const std::string& what, const std::string& with, int nth = 0) {
    std::string x = good;
    size_t at = x.find(what);
    for (int i = 0; i < nth && at != std::string::npos; ++i) at = x.find(what, at + 1);
    if (at == std::string::npos) return std::string();
    return x.replace(at, what.size(), with);
  };
  auto rejected = [&](const std::string& xml, std::string& why) {
    if (xml.empty()) return (why = "mutation not applicable", false);
    try {
      const MscclImport in = import_msccl_xml(xml, t);
      if (!in.problems.empty()) return (why = first_problem(in), true);
      const Report r = verify(t, in.algorithm, {.max_reported = 1, .lower_bound = false});
      if (!r.correct()) return (why = r.violations[0].message, true);
      return (why = "accepted", false);
    } catch (const Error& e) {
      return (why = e.what(), true);
    }
  };
  std::vector<std::pair<std::string, std::string>> mutants = {
      {"wrong dstoff of a receive",
       mutate(R"(type="r" srcbuf="o" srcoff="1" dstbuf="o" dstoff="1")",
              R"(type="r" srcbuf="o" srcoff="1" dstbuf="o" dstoff="0")")},
      {"wrong dstoff, second receive",
       mutate(R"(type="r" srcbuf="o" srcoff="2" dstbuf="o" dstoff="2")",
              R"(type="r" srcbuf="o" srcoff="2" dstbuf="o" dstoff="5")")},
      {"wrong srcoff of a send",
       mutate(R"(type="s" srcbuf="o" srcoff="7")", R"(type="s" srcbuf="o" srcoff="6")")},
      {"wrong srcoff of the first send",
       mutate(R"(type="s" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0")",
              R"(type="s" srcbuf="o" srcoff="3" dstbuf="o" dstoff="0")")},
      {"local copy to the wrong slot",
       mutate(R"(type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="3")",
              R"(type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="4")")},
      {"wrong cnt", mutate(R"(cnt="1" depid="-1")", R"(cnt="2" depid="-1")", 5)},
      {"receive into input", mutate(R"(type="r" srcbuf="o" srcoff="1" dstbuf="o")",
                                    R"(type="r" srcbuf="o" srcoff="1" dstbuf="i")")},
      {"missing step", mutate(R"(type="cpy")", R"(type="nop")")},
      {"extra step",
       mutate(
           R"(<step s="0" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="3")",
           R"(<step s="0" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" dstoff="3" cnt="1" depid="-1" deps="-1" hasdep="0"/><step s="9" type="cpy" srcbuf="o" srcoff="2" dstbuf="o" dstoff="3")")},
  };
  // Two receives that swap their slots (gpu 0 gets chunk 6 into o[5] and chunk 5 into o[6]).
  std::string swapped =
      mutate(R"(<step s="1" type="r" srcbuf="o" srcoff="6" dstbuf="o" dstoff="6")",
             R"(<step s="1" type="r" srcbuf="o" srcoff="6" dstbuf="o" dstoff="X")");
  if (!swapped.empty()) {
    const std::string second =
        R"(<step s="2" type="r" srcbuf="o" srcoff="5" dstbuf="o" dstoff="5")";
    swapped.replace(swapped.find(second), second.size(),
                    R"(<step s="2" type="r" srcbuf="o" srcoff="5" dstbuf="o" dstoff="6")");
    swapped.replace(swapped.find(R"(dstoff="X")"), 10, R"(dstoff="5")");
  }
  mutants.emplace_back("swapped slots of two receives", swapped);
  ASSERT_EQ(mutants.size(), 10u);
  for (const auto& [name, xml] : mutants) {
    std::string why;
    EXPECT_TRUE(rejected(xml, why)) << name << ": " << why;
  }
  // The first one, as `tenet verify` words it: the GPU, the slot, what it holds, who wrote it.
  const MscclImport wrong = import_msccl_xml(mutants[0].second, t);
  EXPECT_THAT(wrong.problems,
              ::testing::Contains(::testing::Field(
                  &ImportProblem::message,
                  "gpu 0: o[0] ends holding chunk 1 (last written by tb 2 step 6), not chunk 0")))
      << first_problem(wrong);
  EXPECT_THAT([&] { parse_msccl_xml(mutants[0].second, t, "m.xml"); },
              ::testing::ThrowsMessage<Error>(
                  HasSubstr("m.xml: the program is incorrect in the MSCCL runtime")));
}

// A program whose sends and receives do not pair up, or whose steps wait forever, is well formed
// and wrong: the runtime hangs or loses the message. It imports with its problems (`tenet verify`:
// INCORRECT, exit 3), as a Chakra graph does, not as a bad file.
TEST(MscclXml, ProgramsThatHangAreIncorrect) {
  const auto t = topo::generate("ring:4");
  const std::string head =
      R"(<algo name="x" proto="Simple" nchannels="1" nchunksperloop="4" ngpus="4" coll="allreduce" inplace="1" outofplace="0" minBytes="0" maxBytes="0">)";
  // One <gpu> of thread block 0 talking to `peer` (recv and send), with these steps.
  auto gpu = [](int id, int peer, const std::string& steps) {
    return fmt::format(
        R"(<gpu id="{}" i_chunks="4" o_chunks="0" s_chunks="0"><tb id="0" send="{}" recv="{}" chan="0">{}</tb></gpu>)",
        id, peer, peer, steps);
  };
  auto step = [](int s, const char* type, int cnt = 1) {
    return fmt::format(
        R"(<step s="{}" type="{}" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="{}" depid="-1" deps="-1" hasdep="0"/>)",
        s, type, cnt);
  };
  struct Case {
    std::string what, xml;
    ImportProblemKind kind;
    std::string says;
  };
  const std::vector<Case> cases{
      {"a send nobody receives", head + gpu(0, 1, step(0, "s")) + "</algo>",
       ImportProblemKind::Unpaired,
       "gpu 0 tb 0 step 0 is send 1 of 1 from gpu 0 to gpu 1 on channel 0, which receives 0 "
       "times: the message never lands"},
      {"a receive nobody sends", head + gpu(1, 0, step(0, "r") + step(1, "cpy")) + "</algo>",
       ImportProblemKind::Unpaired, "which sends there 0 times: it never completes"},
      {"what waits on it", head + gpu(1, 0, step(0, "r") + step(1, "cpy")) + "</algo>",
       ImportProblemKind::NeverReady, "gpu 1 tb 0 step 1 never runs, nor 0 other steps"},
      {"counts that differ",
       head + gpu(0, 1, step(0, "s")) + gpu(1, 0, step(0, "r", 2)) + "</algo>",
       ImportProblemKind::Unpaired, "receives cnt 2 but gpu 0 tb 0 step 0 sends cnt 1"},
      {"each waits for the other",
       head + gpu(0, 1, step(0, "r") + step(1, "s")) + gpu(1, 0, step(0, "r") + step(1, "s")) +
           "</algo>",
       ImportProblemKind::NeverReady, "nor 3 other steps"},
  };
  for (const Case& c : cases) {
    MscclImport in;
    ASSERT_NO_THROW(in = import_msccl_xml(c.xml, t, "hang.xml")) << c.what;
    bool found = false;
    for (const ImportProblem& p : in.problems)
      found = found || (p.kind == c.kind && p.message.find(c.says) != std::string::npos);
    std::string all;
    for (const ImportProblem& p : in.problems) all += p.message + "\n";
    EXPECT_TRUE(found) << c.what << ":\n" << all;
    Report r = verify(t, in.algorithm, {.lower_bound = false});
    add_import_problems(r, in.problems);
    EXPECT_FALSE(r.correct()) << c.what;
  }
}

TEST(MscclXml, MalformedFilesGiveClearErrors) {
  const auto t = topo::generate("ring:4");
  auto error = [&](const std::string& xml) {
    try {
      parse_msccl_xml(xml, t, "a.xml");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string head =
      R"(<algo name="x" proto="Simple" nchannels="1" nchunksperloop="4" ngpus="4" coll="allreduce" inplace="1" outofplace="0" minBytes="0" maxBytes="0">)";
  EXPECT_THAT(error("<algo"), HasSubstr("a.xml:1: not valid XML"));
  EXPECT_THAT(error("<notalgo/>"), HasSubstr("no <algo> element"));
  const MscclImport bare =
      import_msccl_xml(R"(<algo ngpus="4" nchunksperloop="4" coll="allreduce" inplace="1"/>)", t);
  EXPECT_THAT(bare.warnings,
              ::testing::Contains(HasSubstr("lacks maxBytes: the executor runtime")));
  EXPECT_THAT(bare.warnings, ::testing::Contains(HasSubstr("lacks name: the legacy runtime")));
  EXPECT_THAT(error(head + "\n<gpu id=\"0\" i_chunks=\"4\" o_chunks=\"0\" s_chunks=\"0\"><tb "
                           "id=\"0\" send=\"1\" recv=\"-1\" chan=\"0\">\n<step "
                           "s=\"0\" type=\"teleport\"/></tb></gpu></algo>"),
              HasSubstr("a.xml:3: unknown step type 'teleport'"));
  EXPECT_THAT(error(head + "<gpu id=\"9\"/></algo>"), HasSubstr("gpu id 9 is outside 0..3"));
  EXPECT_THAT(error(head + "<gpu id=\"0\" i_chunks=\"4\" o_chunks=\"0\" s_chunks=\"0\"><tb "
                           "id=\"0\" send=\"0\" recv=\"-1\" chan=\"0\"/></gpu></algo>"),
              HasSubstr("peer is its own GPU"));
  EXPECT_THAT(error(head + "<gpu id=\"0\" i_chunks=\"4\" o_chunks=\"0\" s_chunks=\"0\"><tb "
                           "id=\"0\" send=\"-1\" recv=\"-1\" chan=\"0\"><step "
                           "s=\"0\" type=\"re\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"i\" "
                           "dstoff=\"1\" cnt=\"1\" depid=\"-1\" deps=\"-1\"/></tb></gpu></algo>"),
              HasSubstr("gpu 0 tb 0 step 0 reduces i[0] (chunk 0) with i[1], which holds chunk "
                        "1: the sum of two different chunks"));
  // Both runtimes require every <gpu>'s buffer sizes: the bounds every access is checked against.
  EXPECT_THAT(error(head + "<gpu id=\"0\" o_chunks=\"0\" s_chunks=\"0\"/></algo>"),
              HasSubstr("<gpu> lacks the attribute i_chunks"));
  EXPECT_THAT(
      error(
          R"(<algo name="x" nchunksperloop="6" ngpus="4" coll="allgather" inplace="0" outofplace="1" minBytes="0" maxBytes="0"/>)"),
      HasSubstr("nchunksperloop 6 is not a multiple of ngpus 4"));
  EXPECT_THAT(
      error(
          R"(<algo name="x" nchunksperloop="4" ngpus="four" coll="allreduce" inplace="1" outofplace="0" minBytes="0" maxBytes="0"/>)"),
      HasSubstr("ngpus='four' is not a whole number"));
  // GPUs x chunks: the import checks every output slot of every GPU, so a 300-byte header naming
  // 1000 GPUs and 2^20 chunks each is refused before anything is sized by it.
  EXPECT_THAT(
      [] {
        parse_msccl_xml(
            R"(<algo name="x" nchunksperloop="1048576000" ngpus="1000" coll="allgather" inplace="0" outofplace="1" minBytes="0" maxBytes="0"/>)",
            topo::generate("switch:1000"), "a.xml");
      },
      ::testing::ThrowsMessage<Error>(HasSubstr(
          "1000 GPUs x nchunksperloop 1048576000 = 1048576000000 output slots to check, over "
          "Tenet's limit of 268435456")));
  // An All-Reduce's (or All-to-All's) GPUs each hold their whole buffer at the start, an entry per
  // slot: 16 GPUs x 2^24 chunks (under the slots checked) took some 16 GiB before; refused at once.
  EXPECT_THAT(
      [] {
        parse_msccl_xml(
            R"(<algo name="x" nchunksperloop="16777216" ngpus="16" coll="allreduce" inplace="1" outofplace="0" minBytes="0" maxBytes="0"/>)",
            topo::generate("switch:16"), "a.xml");
      },
      ::testing::ThrowsMessage<Error>(
          HasSubstr("16 GPUs x nchunksperloop 16777216 = 268435456 buffer slots held at the "
                    "start, over Tenet's limit of 16777216 (all-reduce)")));
}

}  // namespace
}  // namespace tenet::synth
