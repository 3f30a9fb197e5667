// Tenet's C++ API (tenet/tenet.hpp): what it makes is what the layers make, verified; rescaling
// keeps a schedule's structure; bad input gives the command's errors.
#include "tenet/tenet.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "synth/baselines/baselines.hpp"
#include "synth/formats/algorithm_json.hpp"
#include "tests/topo/test_util.hpp"

namespace tenet {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

TEST(Api, SynthesizesVerifiedAtOrAboveTheBound) {
  const Topology t = load_topology("torus2d:3x3");
  for (CollectiveKind kind :
       {CollectiveKind::AllGather, CollectiveKind::ReduceScatter, CollectiveKind::AllReduce}) {
    const Synthesis s = synthesize(t, {.kind = kind, .size = 9 * MiB});
    EXPECT_TRUE(s.report.correct()) << synth::to_string(kind);
    EXPECT_TRUE(verify(t, s.algorithm).correct());
    EXPECT_EQ(s.time, s.algorithm.claimed_time);
    EXPECT_GE(s.ratio, 1.0);
    EXPECT_GT(s.report.bound.total, 0);
    EXPECT_GE(s.chunks_per_npu, 1);
    EXPECT_FALSE(s.stopped_early);
  }
}

// A baseline by name, at a chunk count given, is the baseline the layers build.
TEST(Api, BaselinesAreTheLayersOwn) {
  const Topology t = load_topology("ring:8");
  const Synthesis ring = synthesize(t, {.kind = CollectiveKind::AllReduce, .size = 8 * MiB},
                                    {.algorithm = "ring", .chunks_per_npu = 2});
  const synth::Collective c = synth::Collective::over_all(t, CollectiveKind::AllReduce, 2);
  const Algorithm built =
      synth::make_baseline({synth::BaselineKind::Ring, {}}, t, c, c.chunk_bytes_for(8 * MiB));
  EXPECT_EQ(ring.time, built.claimed_time);
  EXPECT_EQ(ring.algorithm.size(), built.size());
  EXPECT_EQ(ring.chunks_per_npu, 2);
}

TEST(Api, GroupsAndRoots) {
  const Topology t = load_topology("switch:8");
  const Synthesis s =
      synthesize(t, {.kind = CollectiveKind::Broadcast, .size = MiB, .ranks = "2-5", .root = 1});
  EXPECT_TRUE(s.report.correct());
  EXPECT_EQ(s.algorithm.collective.ranks, (std::vector<topo::NodeId>{2, 3, 4, 5}));
  EXPECT_EQ(s.algorithm.collective.root, 1);
}

// A ring rescaled is the ring built at that size, transfer for transfer and in time.
TEST(Api, RescaledRingIsTheRingBuiltAtThatSize) {
  const Topology t = load_topology("ring:6");
  const synth::Collective c = synth::Collective::over_all(t, CollectiveKind::AllReduce, 4);
  const Algorithm small =
      synth::make_baseline({synth::BaselineKind::Ring, {}}, t, c, c.chunk_bytes_for(MiB));
  for (Bytes size : {Bytes{1000}, 3 * MiB, 256 * MiB}) {
    const Algorithm built =
        synth::make_baseline({synth::BaselineKind::Ring, {}}, t, c, c.chunk_bytes_for(size));
    const Algorithm rescaled = rescale(t, small, size);
    EXPECT_EQ(rescaled.chunk_bytes, built.chunk_bytes) << size;
    EXPECT_EQ(rescaled.claimed_time, built.claimed_time) << size;
    EXPECT_TRUE(verify(t, rescaled).correct());
  }
}

// A synthesized schedule rescaled keeps its structure: correct, timed by the model, and near what
// the synthesizer makes at that size where its structure does not depend on the size (a bandwidth-
// bound All-Gather on a ring).
TEST(Api, RescaledSynthesisKeepsItsStructure) {
  const Topology t = load_topology("ring:8");
  const Synthesis at_64 =
      synthesize(t, {.kind = CollectiveKind::AllGather, .size = 64 * MiB}, {.chunks_per_npu = 4});
  const Synthesis at_256 =
      synthesize(t, {.kind = CollectiveKind::AllGather, .size = 256 * MiB}, {.chunks_per_npu = 4});
  Algorithm rescaled = rescale(t, at_64.algorithm, 256 * MiB);
  EXPECT_EQ(rescaled.size(), at_64.algorithm.size());
  EXPECT_EQ(rescaled.chunk_bytes, at_256.algorithm.chunk_bytes);
  const synth::Report r = verify(t, rescaled);
  EXPECT_TRUE(r.correct());
  EXPECT_EQ(r.model_time, rescaled.claimed_time);
  EXPECT_NEAR(static_cast<double>(rescaled.claimed_time) / static_cast<double>(at_256.time), 1.0,
              0.01);
  // Re-timing leaves the times as they are.
  EXPECT_EQ(retime(t, rescaled), r.collective_time);
}

TEST(Api, RescaleBelowTheChunksIsRefused) {
  const Topology t = load_topology("ring:4");
  const Synthesis s = synthesize(t, {.kind = CollectiveKind::AllGather, .size = MiB},
                                 {.algorithm = "ring", .chunks_per_npu = 4});
  EXPECT_THAT([&] { rescale(t, s.algorithm, 15); },
              ThrowsMessage<Error>(HasSubstr("it has 16 chunks, and each is at least a byte")));
  EXPECT_THAT([&] { rescale(t, s.algorithm, 0); },
              ThrowsMessage<Error>(HasSubstr("a size is at least one byte")));
}

TEST(Api, ExportsAndLoadsBack) {
  topo::testing::TempDir dir;
  const Topology t = load_topology("switch:4");
  const Synthesis s = synthesize(t, {.kind = CollectiveKind::AllReduce, .size = 4 * MiB});
  const exporting::Exported e =
      export_algorithm(t, s.algorithm, {"json", "msccl-xml", "chakra"}, dir.file("out"));
  EXPECT_TRUE(e.skipped.empty());
  const Algorithm back = load_algorithm(dir.file("out/algorithm.json"), t);
  EXPECT_EQ(back.size(), s.algorithm.size());
  EXPECT_TRUE(verify(t, back).correct());
  EXPECT_EQ(verify(t, back).collective_time, s.time);
}

TEST(Api, SimulatesAPresetAsTheSimulatorDoes) {
  const Topology t = load_topology("switch:4");
  const Simulation ring = simulate(t, {.workload = "resnet50"}, {.collectives = "all-reduce=ring"});
  EXPECT_GT(ring.result.iteration, 0);
  EXPECT_THAT(ring.name, HasSubstr("resnet50 (dp 4 x tp 1 x pp 1"));
  EXPECT_GT(ring.mfu, 0.0);
  EXPECT_LE(ring.mfu, 1.0);
  // Half the compute speed: a longer iteration, a lower MFU.
  const Simulation slow = simulate(t, {.workload = "resnet50"},
                                   {.collectives = "all-reduce=ring", .compute_efficiency = 0.5});
  EXPECT_GT(slow.result.iteration, ring.result.iteration);
  EXPECT_LT(slow.mfu, ring.mfu);
}

// One algorithm file for every All-Reduce of ResNet-50, rescaled to each call, runs the iteration
// within 2 % of an algorithm synthesized per size.
TEST(Api, OneRescaledFileRunsAnIterationAsPerSizeAlgorithms) {
  topo::testing::TempDir dir;
  const Topology t = load_topology("torus2d:2x4");
  const Simulation per_size = simulate(t, {.workload = "resnet50"});
  const Synthesis one = synthesize(t, {.kind = CollectiveKind::AllReduce, .size = 32 * MiB});
  synth::save_algorithm(one.algorithm, dir.file("ar.json"));
  const Simulation from_file =
      simulate(t, {.workload = "resnet50"}, {.collectives = "all-reduce=" + dir.file("ar.json")});
  EXPECT_NEAR(static_cast<double>(from_file.result.iteration) /
                  static_cast<double>(per_size.result.iteration),
              1.0, 0.02);
  ASSERT_FALSE(from_file.result.warnings.empty());  // the calls of other sizes say so
  EXPECT_THAT(from_file.result.warnings[0], HasSubstr("rescaled"));
}

// The bound a synthesis reports is the API's bound for the same collective, and what it says
// limits the collective is the topology's own narrowest place.
TEST(Api, LowerBoundIsTheOneSynthesisReports) {
  const Topology t = parse_topology(
      "name: pair-of-pairs\nnpus: [a, b, c, d]\nlinks:\n"
      "  - {src: a, dst: b, bw: 100GB/s, lat: 1us}\n"
      "  - {src: b, dst: c, bw: 25GB/s, lat: 1us}\n"
      "  - {src: c, dst: d, bw: 100GB/s, lat: 1us}\n");
  EXPECT_EQ(t.num_npus(), 4);
  for (CollectiveKind kind : {CollectiveKind::AllGather, CollectiveKind::AllReduce}) {
    const CollectiveSpec spec{.kind = kind, .size = 64 * MiB};
    const synth::LowerBound b = lower_bound(t, spec);
    const Synthesis s = synthesize(t, spec, {.chunks_per_npu = 4});
    EXPECT_EQ(b.total, s.report.bound.total) << synth::to_string(kind);
    EXPECT_GE(s.time, b.total);
    EXPECT_NE(b.limit.find("25 GB/s"), std::string::npos) << b.limit;
  }
  EXPECT_THAT([&] { lower_bound(t, {.kind = CollectiveKind::AllGather, .size = 3}); },
              ThrowsMessage<Error>(HasSubstr("too small")));
  EXPECT_THAT([] { parse_topology("npus: [a]\nlinks: [{src: a, dst: zz}]\n", true, "t.yaml"); },
              ThrowsMessage<Error>(HasSubstr("t.yaml")));
}

TEST(Api, BadInputGivesTheCommandsErrors) {
  EXPECT_THAT([] { load_topology("/nonexistent/cluster.yaml"); },
              ThrowsMessage<Error>(HasSubstr("/nonexistent/cluster.yaml")));
  EXPECT_THAT([] { load_topology("torus2d:0x3"); }, ThrowsMessage<Error>(HasSubstr("torus2d")));
  const Topology t = load_topology("ring:4");
  EXPECT_THAT([&] { synthesize(t, {.kind = CollectiveKind::AllReduce, .size = 0}); },
              ThrowsMessage<Error>(HasSubstr("at least one byte")));
  EXPECT_THAT([&] { synthesize(t, {.size = MiB}, {.algorithm = "rong"}); },
              ThrowsMessage<Error>(HasSubstr("rong")));
  EXPECT_THAT([&] { synthesize(t, {.size = MiB, .ranks = "0-9"}); },
              ThrowsMessage<Error>(HasSubstr("9")));
  EXPECT_THAT([&] { synthesize(t, {.size = MiB}, {.time_limit = -1}); },
              ThrowsMessage<Error>(HasSubstr("time limit")));
  EXPECT_THROW(synthesize(t, {.kind = CollectiveKind::AllToAll, .size = MiB}, {.algorithm = "rhd"}),
               NotApplicable);
  EXPECT_THAT([] { parse_collective("all-reduc"); }, ThrowsMessage<Error>(HasSubstr("all-reduce")));
  EXPECT_THAT([&] { simulate(t, {.workload = "resnet50"}, {.network = "ns3"}); },
              ThrowsMessage<Error>(HasSubstr("ns3")));
  EXPECT_THAT([&] { simulate(t, {.workload = "resnet50"}, {.collectives = "all-reduce"}); },
              ThrowsMessage<Error>(HasSubstr("collective=algorithm")));
  EXPECT_THAT([&] { simulate(t, {.workload = "resnet50"}, {.compute_efficiency = 1.5}); },
              ThrowsMessage<Error>(HasSubstr("(0, 1]")));
  EXPECT_THAT(
      [&] { simulate(t, {.workload = "resnet50"}, {.system = "/nonexistent/system.json"}); },
      ThrowsMessage<Error>(HasSubstr("/nonexistent/system.json")));
  EXPECT_THAT([&] { simulate(t, {.workload = "/nonexistent/trace"}); },
              ThrowsMessage<Error>(HasSubstr("/nonexistent/trace")));
}

}  // namespace
}  // namespace tenet
