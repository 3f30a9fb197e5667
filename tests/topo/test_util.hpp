// Helpers shared by the topology tests.
#pragma once

#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "topo/topology.hpp"

namespace tenet::topo::testing {

// Equal as topologies: same nodes (kind, name, flags) and the same links in the same id order.
inline void expect_same_topology(const Topology& a, const Topology& b, const std::string& what) {
  ASSERT_EQ(a.num_npus(), b.num_npus()) << what;
  ASSERT_EQ(a.num_nodes(), b.num_nodes()) << what;
  ASSERT_EQ(a.num_links(), b.num_links()) << what;
  for (NodeId v = 0; v < a.num_nodes(); ++v) {
    EXPECT_EQ(a.node(v).name, b.node(v).name) << what;
    EXPECT_EQ(a.node(v).router, b.node(v).router) << what;
    EXPECT_EQ(a.node(v).can_reduce, b.node(v).can_reduce) << what;
    EXPECT_EQ(a.node(v).can_multicast, b.node(v).can_multicast) << what;
  }
  for (LinkId l = 0; l < a.num_links(); ++l) {
    EXPECT_EQ(a.link(l).src, b.link(l).src) << what << " link " << l;
    EXPECT_EQ(a.link(l).dst, b.link(l).dst) << what << " link " << l;
    EXPECT_EQ(a.link(l).bandwidth, b.link(l).bandwidth) << what << " link " << l;
    EXPECT_EQ(a.link(l).latency, b.link(l).latency) << what << " link " << l;
    EXPECT_EQ(a.link(l).name, b.link(l).name) << what << " link " << l;
    EXPECT_EQ(a.link(l).buffer, b.link(l).buffer) << what << " link " << l;
  }
  EXPECT_EQ(a.fingerprint(), b.fingerprint()) << what;
}

// Nine NPUs on a ring both ways plus chords i -> i + 4 both ways, the k-th directed link at
// 3 x 10^(k mod 15) B/s and the last at 900 TB/s: bandwidths across 14 orders of magnitude, on
// which GLPK's simplex, run unscaled and without a limit, never finished the flow bound's LP.
inline Topology wide_bandwidth_topology() {
  TopologyBuilder b("wide-bandwidths");
  for (int i = 0; i < 9; ++i) b.add_npu();
  std::vector<std::pair<NodeId, NodeId>> pairs;
  for (int step : {1, 4})
    for (NodeId i = 0; i < 9; ++i) pairs.emplace_back(i, (i + step) % 9);
  int k = 0;
  for (const auto& [x, y] : pairs)
    for (const auto& [src, dst] : {std::pair{x, y}, std::pair{y, x}}) {
      Bandwidth bw = 3;
      for (int e = 0; e < k % 15; ++e) bw *= 10;
      if (++k == 2 * static_cast<int>(pairs.size())) bw = 900'000'000'000'000;
      b.add_link(src, dst, bw, 1'000'000);
    }
  return b.build();
}

// A fresh temporary folder, removed when the object goes out of scope.
class TempDir {
 public:
  TempDir() {
    // Unique across the processes ctest runs in parallel, and within one.
    path_ = std::filesystem::temp_directory_path() /
            ("tenet-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  static int& counter() {
    static int c = 0;
    return c;
  }
  std::filesystem::path path_;
};

inline std::string examples_dir() { return std::string(TENET_SOURCE_DIR) + "/examples/topologies"; }

}  // namespace tenet::topo::testing
