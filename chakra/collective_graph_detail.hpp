// What the collective graph's export (collective_graph.cpp), checks (collective_graph_check.cpp)
// and import (collective_graph_read.cpp, collective_graph_order.cpp) share: ASTRA-sim's tag limit,
// Tenet's values in a rank's metadata, sends paired with receives, and the order sends keep.
// Internal to chakra.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "chakra/et.hpp"
#include "synth/ir/import_problem.hpp"

namespace tenet::chakra::detail {

// ASTRA-sim's tags are in [0, 500,000,000).
constexpr int64_t kMaxTag = 500'000'000;

// A value named `name` in a rank's metadata, when it is there with that type.
std::optional<std::string> meta_string(const ChakraProtoMsg::GlobalMetadata& m,
                                       std::string_view name);
std::optional<int64_t> meta_int(const ChakraProtoMsg::GlobalMetadata& m, std::string_view name);

// Sends and receives paired as ASTRA-sim pairs them: by (tag, source, destination, size), in order
// (its analytical frontend's ChunkIdGenerator and CallbackTracker key a message so). A send or
// receive left without a partner, or naming a peer that is no rank, is an Unpaired problem: the
// graph is well formed, and the algorithm it describes never delivers that message.
struct Pairing {
  struct End {
    int rank;
    size_t index;  // node index in its file
  };
  std::vector<std::pair<End, End>> pairs;  // (send, recv)
  std::vector<End> unpaired_recvs;         // complete never
  std::vector<synth::ImportProblem> problems;
};

Pairing pair_up(const std::vector<EtFile>& files, const std::string& prefix);

// What makes a graph unreadable as a collective graph (a bad input, not a wrong algorithm): ranks
// from two exports, a node id used twice, a node without the attributes its type needs, an
// INVALID_NODE, a tag out of ASTRA-sim's range.
std::vector<std::string> well_formed_problems(const std::vector<EtFile>& files,
                                              const std::string& prefix);

// The order ASTRA-sim can run the graph in: nodes become ready when their dependencies are done,
// and a receive completes after the send it pairs with. `pairs` come back in the order their sends
// become ready, ties (and whenever the graph leaves a choice) broken by `key(pair)` (Tenet's
// tenet_transfer), so a graph whose keys already respect its dependencies keeps exactly that order.
// A pair whose send or receive never becomes ready is left out. NeverReady problems: one per
// dependency on a node not in its file, one for the nodes a cycle holds, one for the nodes that
// wait on those or on an unpaired receive.
struct ReadyOrder {
  std::vector<size_t> pairs;  // indices into Pairing::pairs
  std::vector<synth::ImportProblem> problems;
};
ReadyOrder ready_order(const std::vector<EtFile>& files, const Pairing& pairing,
                       const std::vector<int64_t>& key, const std::string& prefix);

// A message of the algorithm: its send and receive, and the chunk it carries (tenet_chunk).
struct Message {
  Pairing::End send, recv;
  int64_t chunk;
  int64_t count = 1;        // the chunks it carries, from `chunk` on (tenet_count)
  bool from_input = false;  // sends its rank's input (tenet_from_input): it reads no arrival
};

// One rank's file as a graph of node indices: each node's dependencies (data and control), and
// for a receive the COMP node that reduces it (a COMP node whose one data dependency it is). Built
// once per import, read by both order checks below.
struct RankGraph {
  explicit RankGraph(const EtFile& f);
  // Where a received chunk is usable: after its reduction's COMP node, else its receive.
  size_t done(size_t recv) const {
    auto it = reduced_by.find(recv);
    return it == reduced_by.end() ? recv : it->second;
  }

  std::vector<std::vector<size_t>> deps;
  std::unordered_map<size_t, size_t> reduced_by;
};

// `messages` in the algorithm's order (ready_order): every send must depend (data_deps and
// ctrl_deps, through its rank's nodes) on each earlier message that brought its chunk to its rank,
// on the receive or, when there is one, the COMP node reducing it. ASTRA-sim issues a node as soon
// as its dependencies are done, so a send without that dependency leaves before its data is there
// (and the graph runs faster than the algorithm can). A send of its rank's input waits for nothing.
// One Unordered problem per missing one.
std::vector<synth::ImportProblem> check_send_order(const std::vector<EtFile>& files,
                                                   const std::vector<RankGraph>& graphs,
                                                   const std::vector<Message>& messages,
                                                   const std::string& prefix);

// `messages` in the algorithm's order: a message that brings a chunk to a rank after a send of that
// chunk from it (its copy as the earlier arrivals left it) must be ordered after that send, through
// the graph (dependencies, and a receive after the send it pairs with): else it may arrive first
// and the send carry what it brings (write after read). One Unordered problem per pair not
// ordered; past a budget of graph steps the pairs left are counted in `unchecked`.
std::vector<synth::ImportProblem> check_write_after_read(const std::vector<EtFile>& files,
                                                         const std::vector<RankGraph>& graphs,
                                                         const std::vector<Message>& messages,
                                                         const std::string& prefix,
                                                         int64_t& unchecked);

}  // namespace tenet::chakra::detail
