// A folder ASTRA-sim runs as it is (`tenet export --format astra-sim`): the algorithm as a custom
// collective, a workload that uses it, and every configuration file, with a run.sh.
//
//   <dir>/run.sh                  ASTRA-sim's analytical backend (congestion-unaware; $ASTRA_SIM
//                                 names another binary) on the files below, from <dir>
//   <dir>/workload/<name>.<r>.et  the workload: one COMM_COLL node per rank running the algorithm's
//                                 collective at its size (as `tenet workload gen --coll`), or a
//                                 given Chakra workload
//   <dir>/collective/algorithm.<r>.et  the algorithm (chakra::to_collective_graph)
//   <dir>/system.json             the custom implementation for its collective; ASTRA-sim's ring
//                                 (per dimension) for the others a workload may hold, so none
//                                 aborts it; the roofline at Tenet's peak and memory bandwidth, so
//                                 generated workloads' COMP nodes (num_ops, tensor_size) take the
//                                 time they take in `tenet sim`
//   <dir>/network.yml             the topology's dimensions, or the nearest ones (said, with why)
//   <dir>/remote_memory.json      no memory expansion
#pragma once

#include <string>
#include <vector>

#include "astra/analytical.hpp"
#include "chakra/collective_graph.hpp"
#include "synth/ir/algorithm.hpp"
#include "topo/output_folder.hpp"
#include "topo/topology.hpp"

namespace tenet::astra {

struct AstraBundleOptions {
  chakra::GraphOptions graph;
  std::string workload;   // a Chakra ET prefix to run; empty: the one-collective microbenchmark
  double peak_flops = 0;  // FLOP/s of the roofline; 0: SimConfig's default
  Bandwidth memory_bandwidth = 0;  // B/s; 0: SimConfig's default
};

struct AstraBundle {
  std::vector<std::string>
      notes;                  // what a user should know (the nearest network, a workload's sizes)
  Time claimed_time = 0;      // Tenet's time for the algorithm
  AstraRun collective;        // the algorithm run as ASTRA-sim runs it, on network.yml
  bool exact_network = true;  // network.yml is the topology (not the nearest dimensions)
  // With chakra::LinkWaits::Queue (every message its chunk, for networks that queue at links):
  // run.sh runs ASTRA-sim's congestion-aware analytical network, which Tenet does not emulate
  // (`collective` is then the congestion-unaware figure, not what run.sh gives).
  bool congestion_aware = false;
};

// Stages the folder's files under `subdir` of `out`. Throws tenet::Error when ASTRA-sim cannot run
// the algorithm as a custom collective (Broadcast, Reduce, Gather, Scatter; relays outside the
// ranks) or the workload cannot be read; nothing is staged then.
AstraBundle stage_astra_bundle(const synth::Algorithm& a, const topo::Topology& t,
                               topo::OutputFolder& out, const std::string& subdir,
                               const AstraBundleOptions& options = {});

}  // namespace tenet::astra
