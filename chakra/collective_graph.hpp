// Algorithms as Chakra collective graphs, as ASTRA-sim's custom collectives load them
// and back.
//
// Export: one ET per rank. A transfer becomes a COMM_SEND at its source and a COMM_RECV at its
// destination (ranks of the communicator; a multi-hop route is one message the network routes),
// matched by a tag unique per message; when the algorithm's reductions take time
// (Algorithm::reduce_bandwidth), a reduction adds a COMP node after the receive lasting its time,
// rounded up to whole microseconds (duration_micros; a custom collective's COMP node has no other
// way to say its time: ASTRA-sim's roofline times workload COMP nodes only). A send depends on the
// receive (or reduction) that brought its chunk (not when it sends its rank's input) and on its
// explicit dependencies at that rank, and on nothing else: ASTRA-sim completes a send when its
// message arrives, so ordering the sends of a link by dependencies would cost a latency each (the
// time a send waits for its link is carried as LinkWaits says). Tenet's own attributes ride along
// on the sends (tenet_transfer, tenet_chunk, tenet_route, tenet_op for a reduction,
// tenet_from_input for a send of the rank's input; the collective in the metadata); ASTRA-sim
// ignores them.
//
// Import: sends and receives are paired by (tag, source, destination) in order, as ASTRA-sim
// pairs them. Routes come from the topology. Chunk identities come from the tenet attributes; a
// graph without them cannot say which data moves, and importing it says so. A send that forwards
// a chunk must depend on the receives that brought it (ASTRA-sim orders nodes by dependencies
// only); in a reduction, a message that brings a chunk to a rank after a send of it from there must
// be ordered after that send through the graph (else it may arrive first and the send carry it:
// write after read). What breaks either is reported (ChakraImport::problems), as `tenet verify`
// does.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "chakra/et.hpp"
#include "chakra/node_graph.hpp"
#include "synth/ir/algorithm.hpp"
#include "synth/ir/import_problem.hpp"
#include "topo/output_folder.hpp"
#include "topo/topology.hpp"

namespace tenet::chakra {

// What a send that waits for its link (its sender's port busy with earlier transfers, a link
// shared by rate) carries. ASTRA-sim's networks differ here: the congestion-unaware analytical one
// (its examples' backend) has no link queue, so a message leaves when its dependencies are met and
// takes latency + bytes / bandwidth whatever else is in flight; the congestion-aware analytical,
// ns-3 and htsim networks queue messages at links.
enum class LinkWaits {
  // Each message carries its wait as extra bytes (wait x its route's bandwidth, on the send and the
  // receive alike; tenet_wait_bytes says how many), so on the congestion-unaware network every
  // message arrives when Tenet's schedule says and the collective takes Tenet's time.
  Bytes,
  // Each message carries its chunk only and leaves when its data is there, for networks that
  // queue at links (the order in which they serve it is theirs).
  Queue,
};
// "bytes" or "queue"; throws tenet::Error otherwise.
LinkWaits parse_link_waits(std::string_view name);

struct GraphOptions {
  LinkWaits link_waits = LinkWaits::Bytes;
};

// How long reducing `bytes` takes at `reduce_bandwidth` (> 0), in microseconds; a COMP node's
// duration_micros holds this rounded up to a whole number.
double reduction_micros(Bytes bytes, Bandwidth reduce_bandwidth);

// The collective graph of an algorithm, planned: which node each transfer becomes on which rank,
// its dependencies and what it carries, without the nodes themselves (a few integers per transfer).
// A rank's ET is built from it on demand, so that an export holds one rank at a time (a 1024-NPU
// All-Gather is a million transfers, two million nodes). Keeps a reference to `a`.
// Throws tenet::Error when the algorithm uses an endpoint that is not a rank (a relay outside the
// communicator, an in-network reduction) or needs more than 500,000,000 tags.
class CollectiveGraphPlan {
 public:
  CollectiveGraphPlan(const synth::Algorithm& a, const topo::Topology& t,
                      const GraphOptions& options = {});
  int num_ranks() const { return a_.collective.num_ranks(); }
  EtFile rank(int r) const;
  // The bytes of rank r's ET file (serialize_et(rank(r)), built without holding its nodes).
  std::string rank_bytes(int r) const;
  // The graph flattened (the same nodes, ids and sizes as the ETs), in transfer order: a send, its
  // receive, the reduction's COMP node.
  NodeGraph node_graph() const;

 private:
  bool comp() const { return a_.reduce_bandwidth > 0; }  // reductions get a COMP node
  ChakraProtoMsg::GlobalMetadata metadata(int r) const;
  // Rank r's nodes in order, each made by `nodes` (start, data_dep, duration_micros, attr, finish):
  // Node messages or their bytes.
  template <class Nodes>
  void for_each_node(int r, Nodes& nodes) const;
  uint32_t done_id(
      synth::TransferId id) const {  // the node after which the data is at the destination
    return recv_id_[id] + (comp() && a_[id].op == synth::Op::Reduce ? 1 : 0);
  }
  const synth::Algorithm& a_;
  GraphOptions options_;
  // A reduction's COMP duration, whole microseconds (duration_micros): a chunk's (a message's
  // chunks are reduced as they arrive: Algorithm::usable_at).
  uint64_t comp_micros_ = 0;
  std::vector<int> rank_of_;  // NPU -> rank, -1 for none
  std::string set_id_;
  std::vector<uint32_t> send_id_,
      recv_id_;                    // per transfer: its nodes' ids at the source and destination
  std::vector<Bytes> size_;        // per transfer: comm_size (the chunk and any wait)
  std::vector<size_t> dep_begin_;  // per transfer: its send's data dependencies (node ids), CSR
  std::vector<uint32_t> deps_;
  std::vector<size_t>
      item_begin_;  // per rank: its transfers in node order (2 id: send, 2 id + 1: receive)
  std::vector<int64_t> items_;
};

std::vector<EtFile> to_collective_graph(const synth::Algorithm& a, const topo::Topology& t,
                                        const GraphOptions& options = {});

// Writes <dir>/<stem>.<rank>.et and returns the paths written. The set is written whole
// (topo::OutputFolder): a rank of an earlier, larger export goes. ASTRA-sim's system.json and
// network.yml beside them: astra/et_set.hpp.
std::vector<std::string> write_collective_graph(const synth::Algorithm& a, const topo::Topology& t,
                                                const std::string& dir, const std::string& stem,
                                                const GraphOptions& options = {});
// The same for a graph already built by to_collective_graph.
std::vector<std::string> write_collective_graph(const std::vector<EtFile>& files,
                                                const std::string& dir, const std::string& stem);

// The same files staged in `out` under `subdir` (committed with the rest of a command's output).
void stage_collective_graph(const std::vector<EtFile>& files, topo::OutputFolder& out,
                            const std::string& subdir, const std::string& stem);
// The same from a plan, one rank at a time.
void stage_collective_graph(const CollectiveGraphPlan& plan, topo::OutputFolder& out,
                            const std::string& subdir, const std::string& stem);

// A graph read back: its algorithm (the messages that run, in the order ASTRA-sim can run them),
// and what makes it incorrect as ASTRA-sim runs it, each naming the rank and node: a send or
// receive without its partner (same tag, peers and size), a node that never runs (a dependency on
// a node not in its file, a cycle through dependencies and pairings), a send not ordered after the
// receive that brought its data, a receive not ordered after an earlier send of its chunk. Throws
// tenet::Error for a graph that is not well formed (ranks of two exports, a node id used twice, a
// node without the attributes its type needs, a tag out of range) or carries no chunk identities.
struct ChakraImport {
  synth::Algorithm algorithm;
  std::vector<synth::ImportProblem> problems;
  std::vector<std::string> warnings;  // what the checks left unchecked (a graph past their budget)
};
ChakraImport import_collective_graph(const std::vector<EtFile>& files, const topo::Topology& t,
                                     const std::string& prefix);
// import_collective_graph's algorithm; throws tenet::Error when the graph has problems.
synth::Algorithm from_collective_graph(const std::vector<EtFile>& files, const topo::Topology& t,
                                       const std::string& prefix);

// The reader rules ASTRA-sim enforces, pairing across ranks, and nodes that never run: every
// problem found, as a sentence naming the file and node. Empty when the graph is fine.
std::vector<std::string> check_collective_graph(const std::vector<EtFile>& files,
                                                const std::string& prefix);

}  // namespace tenet::chakra
