// ASTRA-sim's native collectives over several dimensions, as `tenet sim --system` runs them: each
// dataset split a phase per dimension through the dimensions' queues (sim/dimension_phases.hpp),
// and each message's reduction over all of it (sim/collective_engine.hpp, EndpointModel).
//
// The figures are ASTRA-sim's own (analytical congestion-unaware backend, upstream 518bd51 built
// outside this repository), on the two networks below with the system.json of its example
// examples/system/native_collectives/Ring_4chunks.json (LIFO, endpoint-delay 10, localBWAware,
// local-mem-bw 1600) with a ring per dimension, and microbenchmark workloads of one collective
// per rank (`tenet workload gen --coll`). Before phases, Tenet ran the splits in turn (1.19x
// ASTRA-sim with 4 splits here) and charged a reduced message's memory passes per chunk (Reduce-
// Scatter 0.91x with 1 split).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "astra/system_json.hpp"
#include "sim/system.hpp"
#include "sim/workload.hpp"
#include "topo/io.hpp"

namespace tenet::astra {
namespace {

using synth::CollectiveKind;

class AstraDimensionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           fmt::format("tenet-astra-dimensions-{}", ::getpid());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string file(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    topo::write_file_atomically(path, text);
    return path;
  }
  // The iteration of one `kind` of `size` (NCCL's convention) per rank on `network`, under the
  // example's system.json with `splits` splits, `active` of them per dimension, and `policy`.
  Time run(const std::string& network, int dims, CollectiveKind kind, Bytes size, int splits,
           int active = 1, const char* policy = "LIFO") {
    std::string rings = "\"ring\"";
    for (int d = 1; d < dims; ++d) rings += ", \"ring\"";
    const std::string system =
        file("system.json", fmt::format(R"({{"scheduling-policy": "{}", "endpoint-delay": 10,
          "active-chunks-per-dimension": {}, "preferred-dataset-splits": {},
          "all-reduce-implementation": [{}], "all-gather-implementation": [{}],
          "reduce-scatter-implementation": [{}], "all-to-all-implementation": [{}],
          "collective-optimization": "localBWAware", "local-mem-bw": 1600, "boost-mode": 0,
          "roofline-enabled": 0, "peak-perf": 900}})",
                                        policy, active, splits, rings, rings, rings, rings));
    const topo::Topology t = topo::load(network);
    sim::SimConfig cfg;
    apply_astra_system(read_astra_system(system), cfg, false);
    const int p = t.num_npus();
    return sim::simulate(t, sim::collective_microbenchmark(kind, size, p), cfg).iteration;
  }
  std::filesystem::path dir_;
};

// Within 0.2 % of ASTRA-sim (it truncates every message and reduction to whole nanoseconds).
void expect_near(Time tenet, int64_t astra_ns, const std::string& what) {
  const double ratio = static_cast<double>(tenet) / (1000.0 * static_cast<double>(astra_ns));
  EXPECT_NEAR(ratio, 1.0, 0.002) << what << ": Tenet " << tenet << " ps, ASTRA-sim " << astra_ns
                                 << " ns";
}

TEST_F(AstraDimensionsTest, TwoDimensionsTakeASTRASimsTime) {
  const std::string net = file("ring-switch.yml",
                               "topology: [ Ring, Switch ]\nnpus_count: [ 4, 4 ]\n"
                               "bandwidth: [ 200.0, 50.0 ]\nlatency: [ 50.0, 500.0 ]\n");
  const Bytes mib = 1 << 20;
  expect_near(run(net, 2, CollectiveKind::AllReduce, mib, 1), 22'917, "All-Reduce, 1 split");
  expect_near(run(net, 2, CollectiveKind::ReduceScatter, mib, 1), 12'377,
              "Reduce-Scatter, 1 split");
  expect_near(run(net, 2, CollectiveKind::AllGather, mib, 1), 10'550, "All-Gather, 1 split");
  expect_near(run(net, 2, CollectiveKind::AllReduce, mib, 4), 34'530, "All-Reduce, 4 splits");
  expect_near(run(net, 2, CollectiveKind::ReduceScatter, mib, 4), 17'645,
              "Reduce-Scatter, 4 splits");
  expect_near(run(net, 2, CollectiveKind::AllGather, mib, 4), 16'925, "All-Gather, 4 splits");
  expect_near(run(net, 2, CollectiveKind::AllReduce, 64 * mib, 4), 657'759,
              "All-Reduce of 64 MiB, 4 splits");
  // Two pieces per dimension at once; the oldest piece first.
  expect_near(run(net, 2, CollectiveKind::AllReduce, mib, 4, 2), 18'550,
              "All-Reduce, 4 splits, 2 active");
  expect_near(run(net, 2, CollectiveKind::ReduceScatter, mib, 4, 2), 9'555,
              "Reduce-Scatter, 4 splits, 2 active");
  expect_near(run(net, 2, CollectiveKind::AllReduce, mib, 4, 1, "FIFO"), 34'530,
              "All-Reduce, 4 splits, FIFO");
  // All-to-All: a store-and-forward ring per dimension (Tenet ran one ring over all 16 before).
  expect_near(run(net, 2, CollectiveKind::AllToAll, mib, 1), 43'052, "All-to-All, 1 split");
  expect_near(run(net, 2, CollectiveKind::AllToAll, mib, 4), 55'760, "All-to-All, 4 splits");
}

// astra-network-analytical's own 3-D example, input/Ring_FullyConnected_Switch.yml: 2 x 8 x 4.
TEST_F(AstraDimensionsTest, ThreeDimensionsTakeASTRASimsTime) {
  const std::string net = file("ring-fc-switch.yml",
                               "topology: [ Ring, FullyConnected, Switch ]\n"
                               "npus_count: [ 2, 8, 4 ]\nbandwidth: [ 200.0, 100.0, 50.0 ]\n"
                               "latency: [ 50.0, 500.0, 2000.0 ]\n");
  const Bytes size = 64 << 20;
  expect_near(run(net, 3, CollectiveKind::AllReduce, size, 1), 1'131'773, "All-Reduce, 1 split");
  expect_near(run(net, 3, CollectiveKind::ReduceScatter, size, 1), 627'816,
              "Reduce-Scatter, 1 split");
  expect_near(run(net, 3, CollectiveKind::AllGather, size, 1), 503'967, "All-Gather, 1 split");
  expect_near(run(net, 3, CollectiveKind::AllReduce, size, 4), 724'490, "All-Reduce, 4 splits");
  expect_near(run(net, 3, CollectiveKind::ReduceScatter, size, 4), 425'771,
              "Reduce-Scatter, 4 splits");
  expect_near(run(net, 3, CollectiveKind::AllGather, size, 4), 353'558, "All-Gather, 4 splits");
  expect_near(run(net, 3, CollectiveKind::AllToAll, size, 1), 4'257'180, "All-to-All, 1 split");
  expect_near(run(net, 3, CollectiveKind::AllToAll, size, 4), 2'776'584, "All-to-All, 4 splits");
}

}  // namespace
}  // namespace tenet::astra
