// A folder ASTRA-sim runs as it is (`tenet export --format astra-sim`): the algorithm as a custom
// collective, a workload that uses it, and every configuration file, with a run.sh. Its network is
// ASTRA-sim's analytical one where the topology is ASTRA-sim dimensions (exact there), and its
// ns-3 backend otherwise (any graph of NPUs, switches and links; astra/ns3_network.hpp).
//
//   <dir>/run.sh                  ASTRA-sim on the files below, from <dir>: the analytical backend
//                                 (congestion-unaware; $ASTRA_SIM names another binary), or the
//                                 ns-3 one ($ASTRA_SIM_NS3)
//   <dir>/workload/<name>.<r>.et  the workload: one COMM_COLL node per rank running the algorithm's
//                                 collective at its size (as `tenet workload gen --coll`), or a
//                                 given Chakra workload
//   <dir>/collective/algorithm.<r>.et  the algorithm (chakra::to_collective_graph)
//   <dir>/system.json             the custom implementation for its collective; ASTRA-sim's ring
//                                 (per dimension) for the others a workload may hold, so none
//                                 aborts it; the roofline at Tenet's peak and memory bandwidth, so
//                                 generated workloads' COMP nodes (num_ops, tensor_size) take the
//                                 time they take in `tenet sim`
//   <dir>/network.yml             analytical: the topology's dimensions, or the nearest ones
//                                 (said, with why)
//   <dir>/ns3/config.txt          ns-3: its network configuration, naming ns3/topology.txt (every
//                                 NPU, switch and link) and the backend's inputs and outputs there
//   <dir>/logical_topology.json   ns-3: one logical dimension of every NPU
//   <dir>/remote_memory.json      no memory expansion
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "astra/analytical.hpp"
#include "chakra/collective_graph.hpp"
#include "synth/ir/algorithm.hpp"
#include "topo/output_folder.hpp"
#include "topo/topology.hpp"

namespace tenet::astra {

// The ASTRA-sim network backend a bundle runs on.
enum class AstraNetwork {
  Auto,        // analytical where the topology is ASTRA-sim dimensions, ns-3 otherwise
  Analytical,  // analytical always: the nearest dimensions where the topology has none
  Ns3,         // ns-3 always
};
// "auto", "analytical" or "ns3"; throws tenet::Error otherwise.
AstraNetwork parse_astra_network(std::string_view name);

struct AstraBundleOptions {
  AstraNetwork network = AstraNetwork::Auto;
  // On ns-3 the graph carries each message's chunk only (chakra::LinkWaits::Queue) whatever this
  // says: the network queues messages at its links itself.
  chakra::GraphOptions graph;
  std::string workload;   // a Chakra ET prefix to run; empty: the one-collective microbenchmark
  double peak_flops = 0;  // FLOP/s of the roofline; 0: SimConfig's default
  Bandwidth memory_bandwidth = 0;  // B/s; 0: SimConfig's default
};

struct AstraBundle {
  std::vector<std::string>
      notes;              // what a user should know (the nearest network, a workload's sizes)
  Time claimed_time = 0;  // Tenet's time for the algorithm
  // The algorithm run as ASTRA-sim runs it, on network.yml; time -1 on ns-3 (not emulated).
  AstraRun collective;
  bool ns3 = false;        // run.sh runs the ns-3 backend
  Time ns3_estimate = -1;  // on ns-3: astra::ns3_estimate, what it should report (-1 otherwise)
  // The network file is the topology: network.yml not the nearest dimensions, or the ns-3 topology
  // file with no link merged or made symmetric.
  bool exact_network = true;
  // On the nearest network: the topology's lower bound (no per-step cost, as ASTRA-sim charges
  // none) when ASTRA-sim's time there, `collective.time`, is below it; -1 otherwise.
  Time below_bound = -1;
  // With chakra::LinkWaits::Queue (every message its chunk, for networks that queue at links):
  // run.sh runs ASTRA-sim's congestion-aware analytical network, which Tenet does not emulate
  // (`collective` is then the congestion-unaware figure, not what run.sh gives).
  bool congestion_aware = false;
};

// How an analytical bundle on the nearest network (not exact_network) says so: "on the nearest
// network", with the topology's lower bound when ASTRA-sim's time there is below it.
std::string nearest_network_words(const AstraBundle& b);

// What ASTRA-sim will report for `a` run as stage_astra_bundle writes it, without writing anything:
// on the analytical network its time there (exact on the topology's dimensions, the nearest ones'
// otherwise: `exact_network` false), on ns-3 astra::ns3_estimate (`ns3`). Throws as
// stage_astra_bundle when ASTRA-sim cannot run the algorithm.
struct AstraTime {
  Time time = 0;
  bool ns3 = false;
  bool exact_network = true;
};
AstraTime astra_sim_time(const synth::Algorithm& a, const topo::Topology& t,
                         const AstraBundleOptions& options = {});

// Stages the folder's files under `subdir` of `out`. Throws tenet::Error when ASTRA-sim cannot run
// the algorithm as a custom collective (Broadcast, Reduce, Gather, Scatter; relays outside the
// ranks) or the workload cannot be read; nothing is staged then.
AstraBundle stage_astra_bundle(const synth::Algorithm& a, const topo::Topology& t,
                               topo::OutputFolder& out, const std::string& subdir,
                               const AstraBundleOptions& options = {});

}  // namespace tenet::astra
