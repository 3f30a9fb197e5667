#include "synth/msccl_xml.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "synth/baselines.hpp"
#include "synth/synthesizer.hpp"
#include "synth/verify.hpp"
#include "topo/generators.hpp"

namespace tenet::synth {
namespace {

using ::testing::HasSubstr;

TEST(MscclXml, WritesWhatTheRuntimeNeeds) {
  const auto t = topo::generate("ring:4");
  const Algorithm a = synthesize(t, Collective::over_all(t, CollectiveKind::AllReduce), 1 << 20);
  const std::string xml = to_msccl_xml(a);
  for (const char* must : {"minBytes=\"0\"", "maxBytes=\"0\"", "inplace=\"1\"", "outofplace=\"0\"", "coll=\"allreduce\"",
                           "ngpus=\"4\"", "nchunksperloop=\"4\"", "proto=\"Simple\"", "type=\"rrc\""})
    EXPECT_THAT(xml, HasSubstr(must));
  const Algorithm ag = synthesize(t, Collective::over_all(t, CollectiveKind::AllGather, 2), 1 << 20);
  EXPECT_THAT(to_msccl_xml(ag), HasSubstr("outofplace=\"1\""));
  EXPECT_THAT(to_msccl_xml(ag), HasSubstr("i_chunks=\"2\" o_chunks=\"8\""));
}

TEST(MscclXml, RefusesWhatTheRuntimeWouldNotLoad) {
  const auto t = topo::generate("ring:16,bidir=false");
  const Algorithm big = make_baseline({BaselineKind::Ring, {}}, t, Collective::over_all(t, CollectiveKind::AllGather, 160), 1024);
  EXPECT_THAT([&] { to_msccl_xml(big); }, ::testing::ThrowsMessage<Error>(HasSubstr("the runtime would not load it")));
  const Algorithm bcast = synthesize(t, Collective::over_all(t, CollectiveKind::Broadcast), 1024);
  EXPECT_THAT([&] { to_msccl_xml(bcast); }, ::testing::ThrowsMessage<Error>(HasSubstr("supports all-reduce")));
}

// An All-Gather ring as another generator would write it: a compound receive-copy-send step, a
// final receive, counts, a local copy, and no Tenet comment.
TEST(MscclXml, ImportsForeignProgramsWithCompoundSteps) {
  std::string xml = R"(<algo name="ring-ag" proto="Simple" nchannels="1" nchunksperloop="3" ngpus="3" coll="allgather" inplace="0" outofplace="1" minBytes="0" maxBytes="0">)";
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
  const std::string head = R"(<algo name="x" proto="Simple" nchannels="1" nchunksperloop="4" ngpus="4" coll="allreduce" inplace="1" outofplace="0" minBytes="0" maxBytes="0">)";
  EXPECT_THAT(error("<algo"), HasSubstr("a.xml:1: not valid XML"));
  EXPECT_THAT(error("<notalgo/>"), HasSubstr("no <algo> element"));
  EXPECT_THAT(error(R"(<algo ngpus="4" nchunksperloop="4" coll="allreduce" inplace="1" outofplace="0" minBytes="0"/>)"),
              HasSubstr("lacks maxBytes: the MSCCL runtime would ignore this file"));
  EXPECT_THAT(error(head + "\n<gpu id=\"0\"><tb id=\"0\" send=\"1\" recv=\"-1\" chan=\"0\">\n<step s=\"0\" type=\"teleport\"/></tb></gpu></algo>"),
              HasSubstr("a.xml:3: unknown step type 'teleport'"));
  EXPECT_THAT(error(head + "<gpu id=\"0\"><tb id=\"0\" send=\"1\" recv=\"-1\" chan=\"0\"><step s=\"0\" type=\"s\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"i\" dstoff=\"0\" cnt=\"1\" depid=\"-1\" deps=\"-1\"/></tb></gpu></algo>"),
              HasSubstr("gpu 0 sends 1 times to gpu 1 on channel 0, which receives 0 times"));
  EXPECT_THAT(error(head + "<gpu id=\"9\"/></algo>"), HasSubstr("gpu id 9 is outside 0..3"));
  EXPECT_THAT(error(head + "<gpu id=\"0\"><tb id=\"0\" send=\"0\" recv=\"-1\" chan=\"0\"/></gpu></algo>"),
              HasSubstr("peer is its own GPU"));
  EXPECT_THAT(error(head + "<gpu id=\"0\"><tb id=\"0\" send=\"-1\" recv=\"-1\" chan=\"0\"><step s=\"0\" type=\"re\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"i\" dstoff=\"0\" cnt=\"1\" depid=\"-1\" deps=\"-1\"/></tb></gpu></algo>"),
              HasSubstr("local reductions ('re') cannot be represented"));
  EXPECT_THAT(error(R"(<algo name="x" nchunksperloop="6" ngpus="4" coll="allreduce" inplace="1" outofplace="0" minBytes="0" maxBytes="0"/>)"),
              HasSubstr("nchunksperloop 6 is not a multiple of ngpus 4"));
  EXPECT_THAT(error(R"(<algo name="x" nchunksperloop="4" ngpus="four" coll="allreduce" inplace="1" outofplace="0" minBytes="0" maxBytes="0"/>)"),
              HasSubstr("ngpus='four' is not a whole number"));
}

}  // namespace
}  // namespace tenet::synth
