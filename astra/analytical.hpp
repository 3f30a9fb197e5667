// ASTRA-sim's analytical network, congestion-unaware (the backend its examples and Tenet's
// exports run on), and how ASTRA-sim runs a Chakra collective graph on it as a custom collective.
//
// The network (astra-network-analytical, congestion_unaware/): a topology of dimensions, each a
// Ring, FullyConnected or Switch with one bandwidth (GB/s read as 2^30 B/s) and one latency (ns).
// A message goes in the first dimension where its endpoints' addresses differ and takes
//   hops x latency + bytes / bandwidth,  truncated to whole nanoseconds,
// (Ring: the shorter way round; FullyConnected: 1 hop; Switch: 2), whatever else is in flight: no
// link is shared, nothing queues.
//
// A custom collective (astra-sim/system/astraccl/custom_collectives/CustomAlgorithm.cc) issues
// every node whose data and control dependencies have completed. A COMM_SEND completes when its
// message arrives (CommonNetworkApi::process_chunk_arrival calls the send handler then), a
// COMM_RECV when the message matched to it by (tag, source, destination, size), in order, has
// arrived and it was issued; a COMP_NODE takes duration_micros, or 1 ns without one.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "chakra/et.hpp"
#include "chakra/node_graph.hpp"
#include "topo/routing.hpp"
#include "topo/topology.hpp"

namespace tenet::astra {

using chakra::EtFile;
using chakra::NodeGraph;

struct AstraDimension {
  enum class Kind { Ring, FullyConnected, Switch };
  Kind kind = Kind::Ring;
  int npus = 0;
  Bandwidth bandwidth = 0;  // B/s
  Time latency = 0;         // per hop
};

// The topology as ASTRA-sim dimensions (first dimension fastest, as Tenet numbers NPUs), when its
// levels are Ring, FullyConnected or Switch dimensions with one bandwidth and latency each
// (checked by rebuilding it from them), else nothing.
// `why`, when given, gets the reason when there are none.
std::optional<std::vector<AstraDimension>> astra_dimensions(const topo::Topology& t,
                                                            std::string* why = nullptr);
// The nearest ASTRA-sim network for a topology that has none: one Switch dimension of all its
// NPUs, at the least NPU egress bandwidth, with half the largest NPU-to-NPU latency per hop.
std::vector<AstraDimension> nearest_astra_dimensions(const topo::Topology& t);

// ASTRA-sim's network.yml for the topology, when astra_dimensions has it.
std::optional<std::string> astra_network_yml(const topo::Topology& t);
// network.yml for these dimensions; `comment` goes on the first line, on that line only
// (topo::one_line: a name in it cannot start a YAML key).
std::string astra_network_yml(const std::vector<AstraDimension>& dims, const std::string& comment);

// Message times as ASTRA-sim's congestion-unaware analytical network gives them, in whole ns (as
// picoseconds). On a topology that is not expressible as dimensions, a message takes Tenet's
// least-cost route (latency + bytes / narrowest bandwidth), truncated the same way.
class AstraMessageTime {
 public:
  explicit AstraMessageTime(const topo::Topology& t);
  // On these dimensions (a network.yml written for the topology, maybe the nearest one).
  AstraMessageTime(const topo::Topology& t, std::vector<AstraDimension> dims);
  Time operator()(topo::NodeId src, topo::NodeId dst, Bytes bytes) const;
  bool dimensions() const { return dims_.has_value(); }

 private:
  const topo::Topology& t_;
  std::optional<std::vector<AstraDimension>> dims_;
  // Without dimensions: the route of each pair, found once.
  std::optional<topo::Router> router_;
  mutable std::unordered_map<int64_t, std::pair<Time, Bandwidth>>
      routes_;  // src * nodes + dst -> latency, bottleneck
};

struct AstraRun {
  Time time = 0;             // the last node's completion, ps (whole ns)
  std::vector<Time> finish;  // per rank
  int64_t messages = 0;
  bool on_dimensions =
      true;  // false: the topology has no ASTRA-sim dimensions; Tenet's routes timed it
};

// Runs a collective graph as ASTRA-sim runs a custom collective on its analytical network. Throws
// tenet::Error when a node never completes (a dependency cycle, a receive no send matches:
// ASTRA-sim would wait forever). `dims`: the network.yml ASTRA-sim runs on, when not the topology's
// own dimensions.
AstraRun run_as_astra_sim(const NodeGraph& g, const topo::Topology& t,
                          const std::vector<AstraDimension>* dims = nullptr);
AstraRun run_as_astra_sim(const std::vector<EtFile>& files, const topo::Topology& t,
                          const std::vector<AstraDimension>* dims = nullptr);

}  // namespace tenet::astra
