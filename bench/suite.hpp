// A benchmark suite: topologies x collectives x sizes x algorithms x chunk counts, read from YAML.
//
//   name: my-suite
//   topologies:                 # generator specs, topology files (relative to the suite file),
//     - torus2d:4x4             # or a Tenet topology written inline as a map
//     - ../topologies/leaf-spine.json
//     - {name: pair, npus: [a, b], links: [{src: a, dst: b, bw: 25GB/s, lat: 1us}]}
//     - {topology: "nvcluster:4x8,net=rail", ranks: "0-31:8"}  # a process group (tenet synth
//     --ranks):
//                               # the collectives run over it; workloads over the whole topology
//   collectives: [all-reduce, all-gather]
//   sizes: [1MiB, 64MiB, 1GiB]
//   algorithms: all             # or a list: tenet, ring, bidir-ring, direct, rhd, dbt, bruck, ...
//   chunks: [1, 4, auto]        # chunks per NPU; auto (the default): each algorithm picks its own
//   (1, 2, 4, ...) restarts: 4                 # the synthesizer keeps the best of this many seeds
//   networks: []                # simulator backends to replay every algorithm on, e.g.
//                               # [analytical, analytical-congestion, packet]
//   workloads:                  # training iterations to simulate on every topology (optional)
//     - resnet50                # a model preset, data-parallel over every NPU
//     - {model: gpt3-175b, tp: 8, pp: 2, microbatches: 8, schedule: 1f1b, batch: 16, seq-len: 2048}
//     - {chakra: traces/rank}   # a Chakra ET prefix (<prefix>.<rank>.et), relative to the suite
//     file
//   sim-algorithms: [tenet, ring]  # producers of the workloads' collectives, one simulation each
//   quick: {sizes: [1MiB]}      # what --quick replaces (any of the keys above)
//
// A suite has collectives (and sizes), workloads, or both. Workloads run on every topology, network
// (`networks`, default analytical) and sim-algorithm.
// `default_suite_yaml()` is the built-in suite. Errors name the file and line.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sim/network.hpp"
#include "sim/workload.hpp"
#include "synth/ir/collective.hpp"
#include "topo/topology.hpp"

namespace tenet::bench {

struct SuiteTopology {
  std::string label;  // the spec, the path as written, or the inline topology's name; " ranks LIST"
                      // for a group
  topo::Topology topology;
  std::vector<topo::NodeId> ranks;  // the collectives' process group; empty: every NPU
  // The number of ranks of its collectives.
  int num_ranks() const {
    return ranks.empty() ? topology.num_npus() : static_cast<int>(ranks.size());
  }
};

struct SuiteWorkload {
  std::string
      label;  // the preset with its layout ("gpt3-175b tp8 pp2 mb8"), or the prefix as written
  std::string preset;  // a model preset, or empty for a Chakra ET prefix
  std::string prefix;  // the Chakra ET prefix, relative paths anchored at the suite file
  sim::BatchShape shape;
  int tp = 1, pp = 1, microbatches = 1;
  sim::PipelineSchedule schedule = sim::PipelineSchedule::OneFOneB;
};

struct Suite {
  std::string name;
  std::vector<SuiteTopology> topologies;
  std::vector<synth::CollectiveKind> collectives;
  std::vector<Bytes> sizes;
  std::vector<std::string> algorithms;  // "tenet" and baseline names; "all" expanded per case
  std::vector<int> chunks;
  int restarts = 1;
  std::vector<sim::NetworkKind> networks;
  std::vector<SuiteWorkload> workloads;
  std::vector<std::string> sim_algorithms{"tenet", "ring"};

  size_t num_cases() const {
    return topologies.size() * collectives.size() * sizes.size() * chunks.size();
  }
  // The backends workloads run on: `networks`, or analytical when it is empty.
  std::vector<sim::NetworkKind> sim_networks() const {
    return networks.empty() ? std::vector<sim::NetworkKind>{sim::NetworkKind::Analytical}
                            : networks;
  }
  size_t num_simulations() const {
    return topologies.size() * workloads.size() * sim_networks().size() * sim_algorithms.size();
  }
};

// Parses a suite; `file` names it in errors and anchors relative topology paths. With `quick`,
// the `quick:` block's keys replace the top-level ones.
Suite parse_suite(std::string_view text, const std::string& file, bool quick = false);
Suite load_suite(const std::string& path, bool quick = false);
// The built-in suite (`tenet bench` without a file): rings, 2-D/3-D meshes and tori, a
// hypercube, a switch, a leaf-spine fat-tree, NVSwitch nodes on rails, a heterogeneous mesh and
// two islands joined by a slow link; 1 MiB to 1 GiB. Its quick form has 16 cases.
std::string_view default_suite_yaml();

}  // namespace tenet::bench
