// Recorded Chakra traces (sim/recorded_trace.hpp) and what the simulator does with their CPU
// operators, process groups and dependencies, on a PyTorch-shaped trace built by the test.
#include "sim/recorded_trace.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include "sim/system.hpp"
#include "sim/workload.hpp"
#include "tests/sim/pytorch_trace.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"

namespace tenet::sim {
namespace {

using ::testing::HasSubstr;
constexpr Time kMicro = 1'000'000;

SimConfig config() {
  SimConfig c;
  c.algorithms[synth::CollectiveKind::AllReduce] = "ring";
  c.chunks_per_npu = 1;
  return c;
}

// The time of one collective on its own, as the simulator runs it.
Time alone(const topo::Topology& t, synth::CollectiveKind kind, Bytes size, int ranks) {
  return simulate(t, collective_microbenchmark(kind, size, ranks), config()).iteration;
}

std::string error_of(std::vector<chakra::EtFile> w, const TraceOptions& o) {
  try {
    prepare_trace(w, o, "trace");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(RecordedTrace, ReplicatedToEightRanksRunsToTheCriticalPath) {
  // Written to disk and read back, as `tenet sim --workload PREFIX --replicate 8` reads it.
  const auto dir =
      std::filesystem::temp_directory_path() / fmt::format("tenet-trace-{}", ::getpid());
  std::filesystem::create_directories(dir);
  chakra::write_et(chakra::et_path((dir / "ddp").string(), 0), testing::pytorch_like_trace(1)[0]);
  std::vector<chakra::EtFile> w = chakra::read_prefix((dir / "ddp").string());
  std::filesystem::remove_all(dir);
  ASSERT_EQ(w.size(), 1u);

  TraceOptions o;
  o.replicate = 8;
  const TraceSummary s = prepare_trace(w, o, "ddp");
  EXPECT_TRUE(s.from_pytorch);
  EXPECT_EQ(s.deps, DepsMode::Data);
  EXPECT_EQ(s.ranks_recorded, 1);
  EXPECT_EQ(s.ranks, 8);
  EXPECT_EQ(s.nodes, 8);
  EXPECT_EQ(s.node_types.at("COMM_COLL_NODE"), 3);
  EXPECT_EQ(s.cpu_ops, 3);  // two operators and the host side of the All-Reduce
  EXPECT_EQ(s.gpu_kernels, 2);
  EXPECT_EQ(s.gpu_streams, 2);
  EXPECT_EQ(s.collectives.at("all-reduce"), 1);
  EXPECT_EQ(s.collectives.at("broadcast"), 1);
  EXPECT_EQ(s.absent_deps_dropped, 3);  // 2 -> 1, 10 -> 3, 14 -> 99
  EXPECT_EQ(s.ctrl_deps_dropped, 3);    // 11 -> 10, 12 -> 10, 15 -> 14
  EXPECT_EQ(s.groups.at("1"),
            (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));  // replicas: every collective spans all
  ASSERT_EQ(w.size(), 8u);

  const topo::Topology t = topo::generate("switch:8");
  const SimResult r = simulate(t, w, config(), "ddp");
  // CPU op 10, kernel 11, All-Reduce, Broadcast, CPU op 14 in sequence; kernel 15 ran at 0, and
  // the host side of the All-Reduce (16) on the CPU during kernel 11.
  const Time expected = 10 * kMicro + 20 * kMicro +
                        alone(t, synth::CollectiveKind::AllReduce, 1 << 20, 8) +
                        alone(t, synth::CollectiveKind::Broadcast, 64 << 10, 8) + 5 * kMicro;
  EXPECT_EQ(r.iteration, expected);
  EXPECT_EQ(r.collectives, 2);
  for (const RankStats& k : r.ranks) {
    EXPECT_EQ(k.cpu, 18 * kMicro);
    EXPECT_EQ(k.compute, 21 * kMicro);
  }
}

TEST(RecordedTrace, ControlDependenciesAreFollowedWhenAsked) {
  const topo::Topology t = topo::generate("switch:8");
  auto run = [&](DepsMode mode) {
    std::vector<chakra::EtFile> w = testing::pytorch_like_trace(1);
    TraceOptions o;
    o.replicate = 8;
    o.deps = mode;
    const TraceSummary s = prepare_trace(w, o, "ddp");
    EXPECT_EQ(s.ctrl_deps_dropped, mode == DepsMode::All ? 0 : 3);
    return simulate(t, w, config(), "ddp").iteration;
  };
  // Followed, the kernel 15 waits for the optimizer step 14 (its operator parent) and ends the
  // iteration.
  EXPECT_EQ(run(DepsMode::All), run(DepsMode::Data) + 1 * kMicro);
  EXPECT_EQ(run(DepsMode::Auto), run(DepsMode::Data));
}

TEST(RecordedTrace, ProcessGroupsFromTheTraceAndFromACommGroupFile) {
  const topo::Topology t = topo::generate("switch:4");
  std::vector<chakra::EtFile> w = testing::pytorch_like_trace(4);
  const TraceSummary s = prepare_trace(w, {}, "job");
  EXPECT_EQ(s.groups.at("0"), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(s.groups.at("1"), (std::vector<int>{0, 1}));
  const SimResult r = simulate(t, w, config(), "job");
  EXPECT_EQ(r.collectives, 2);  // the All-Reduce of all four, the Broadcast of the pair
  // Ranks 2 and 3 are not in the Broadcast: they finish first.
  EXPECT_LT(r.ranks[2].finish, r.ranks[0].finish);

  // Without the trace's own table, a communicator-group file (ASTRA-sim's format) names the group.
  std::vector<chakra::EtFile> bare = testing::pytorch_like_trace(4);
  for (auto& f : bare) f.nodes.erase(f.nodes.begin());  // the METADATA node
  EXPECT_THAT(error_of(bare, {}),
              HasSubstr("node 13 ('ncclDevKernel_Broadcast_RING_LL'): process group '1' is in "
                        "neither the trace's process-group table"));
  TraceOptions o;
  o.groups["1"] = {0, 1};
  EXPECT_NO_THROW(prepare_trace(bare, o, "job"));
  EXPECT_EQ(simulate(t, bare, config(), "job").iteration, r.iteration);
}

TEST(RecordedTrace, BadInputIsNamed) {
  TraceOptions replicate;
  replicate.replicate = 4;
  EXPECT_THAT(error_of(testing::pytorch_like_trace(2), replicate),
              HasSubstr("--replicate runs a one-rank trace as N ranks, but it has 2 rank files"));
  // One rank of a job whose group "1" holds ranks 0 and 1.
  EXPECT_THAT(
      error_of(testing::pytorch_like_trace(1), {}),
      HasSubstr("process group '1' holds rank 1, but the workload has 1 rank (--replicate N runs"));
  // A table that is not JSON is reported and ignored; the group is then unknown.
  std::vector<chakra::EtFile> broken = testing::pytorch_like_trace(2);
  for (auto& f : broken) f.nodes[0].mutable_inputs()->set_values("['[{\"pg_name\": ']");
  EXPECT_THAT(error_of(broken, {}), HasSubstr("process group '1' is in neither"));
  std::vector<chakra::EtFile> deep = testing::pytorch_like_trace(2);
  for (auto& f : deep)
    f.nodes[0].mutable_inputs()->set_values("['" + std::string(100000, '[') + "']");
  EXPECT_THAT(error_of(deep, {}), HasSubstr("process group '1' is in neither"));
  EXPECT_THROW(parse_deps_mode("ctrl"), Error);

  const auto dir =
      std::filesystem::temp_directory_path() / fmt::format("tenet-groups-{}", ::getpid());
  std::filesystem::create_directories(dir);
  auto groups_error = [&](const std::string& text) {
    topo::write_file_atomically((dir / "g.json").string(), text);
    try {
      read_comm_groups((dir / "g.json").string());
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(groups_error("[1, 2]"), HasSubstr("g.json: a communicator-group file is an object"));
  EXPECT_THAT(groups_error("{\"1\": [0, -1]}"), HasSubstr("g.json: group '1': -1 is not a rank"));
  EXPECT_THAT(groups_error("{\"1\": 3}"), HasSubstr("g.json: group '1': not a list of ranks"));
  EXPECT_THAT(groups_error("{\"1\": [0,"), HasSubstr("g.json: not JSON"));
  EXPECT_EQ(groups_error("{\"1\": [0, 1], \"2\": [2, 3]}"), "no error");
  std::filesystem::remove_all(dir);
}

TEST(RecordedTrace, CpuOperatorsOverlapGpuKernels) {
  // A 50 us CPU operator and a 30 us GPU kernel with no dependency between them run side by side;
  // two CPU operators run one after the other.
  std::vector<chakra::EtFile> w(1);
  auto node = [&](uint64_t id, uint64_t micros, bool cpu) {
    chakra::Node& n = w[0].nodes.emplace_back();
    n.set_id(id);
    n.set_type(ChakraProtoMsg::COMP_NODE);
    n.set_duration_micros(micros);
    auto* a = n.add_attr();
    a->set_name("is_cpu_op");
    a->set_bool_val(cpu);
  };
  node(1, 50, true);
  node(2, 30, false);
  EXPECT_EQ(simulate(topo::generate("ring:2"), w, config()).iteration, 50 * kMicro);
  node(3, 40, true);
  const SimResult r = simulate(topo::generate("ring:2"), w, config());
  EXPECT_EQ(r.iteration, 90 * kMicro);
  EXPECT_EQ(r.ranks[0].cpu, 90 * kMicro);
  EXPECT_EQ(r.ranks[0].compute, 30 * kMicro);
  // INVALID nodes finish at once, as ASTRA-sim skips them.
  chakra::Node& skip = w[0].nodes.emplace_back();
  skip.set_id(4);
  skip.set_type(ChakraProtoMsg::INVALID_NODE);
  EXPECT_EQ(simulate(topo::generate("ring:2"), w, config()).iteration, 90 * kMicro);
}

}  // namespace
}  // namespace tenet::sim
