// The order a collective graph's sends keep (collective_graph_detail.hpp, check_send_order).
#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <unordered_map>

#include "chakra/collective_graph_detail.hpp"

namespace tenet::chakra::detail {
namespace {

// One rank's file as a graph of node indices: each node's dependencies (data and control), and
// for a receive the COMP node that reduces it (a COMP node whose one data dependency it is).
struct RankGraph {
  explicit RankGraph(const EtFile& f) : deps(f.nodes.size()) {
    std::unordered_map<uint64_t, size_t> index;
    for (size_t i = 0; i < f.nodes.size(); ++i) index.emplace(f.nodes[i].id(), i);
    for (size_t i = 0; i < f.nodes.size(); ++i) {
      const Node& n = f.nodes[i];
      for (const auto& list : {n.data_deps(), n.ctrl_deps()})
        for (uint64_t d : list)
          if (auto it = index.find(d); it != index.end()) deps[i].push_back(it->second);
      if (n.type() == ChakraProtoMsg::COMP_NODE && n.data_deps_size() == 1)
        if (auto it = index.find(n.data_deps(0)); it != index.end())
          if (f.nodes[it->second].type() == ChakraProtoMsg::COMM_RECV_NODE)
            reduced_by.emplace(it->second, i);
    }
  }
  // Where a received chunk is usable: after its reduction's COMP node, else its receive.
  size_t done(size_t recv) const {
    auto it = reduced_by.find(recv);
    return it == reduced_by.end() ? recv : it->second;
  }

  std::vector<std::vector<size_t>> deps;
  std::unordered_map<size_t, size_t> reduced_by;
};

// Which of `targets` node `from` depends on, directly or through others (breadth first, stopping
// once all are found). `seen` is scratch of the graph's size, marked with `stamp` (a new one per
// call), so a search costs what it visits, not the whole file.
std::vector<bool> depends_on(const RankGraph& g, size_t from, const std::vector<size_t>& targets,
                             std::vector<uint64_t>& seen, uint64_t stamp) {
  std::unordered_map<size_t, std::vector<size_t>> wanted;  // node -> positions in targets
  for (size_t t = 0; t < targets.size(); ++t) wanted[targets[t]].push_back(t);
  std::vector<bool> found(targets.size(), false);
  size_t missing = targets.size();
  std::vector<size_t> queue(g.deps[from].begin(), g.deps[from].end());
  for (size_t q = 0; q < queue.size() && missing > 0; ++q) {
    const size_t y = queue[q];
    if (seen[y] == stamp) continue;
    seen[y] = stamp;
    if (auto it = wanted.find(y); it != wanted.end())
      for (size_t t : it->second) {
        found[t] = true;
        --missing;
      }
    queue.insert(queue.end(), g.deps[y].begin(), g.deps[y].end());
  }
  return found;
}

}  // namespace

std::vector<synth::ImportProblem> check_send_order(const std::vector<EtFile>& files,
                                                   const std::vector<Message>& messages,
                                                   const std::string& prefix) {
  std::vector<RankGraph> graphs;
  for (const EtFile& f : files) graphs.emplace_back(f);
  std::vector<std::vector<uint64_t>> seen;  // per rank: depends_on's scratch
  for (const RankGraph& g : graphs) seen.emplace_back(g.deps.size(), 0);
  uint64_t stamp = 0;
  std::vector<synth::ImportProblem> problems;
  // (rank, chunk) -> the messages that brought it there so far
  std::map<std::pair<int, int64_t>, std::vector<size_t>> arrived;
  for (size_t m = 0; m < messages.size(); ++m) {
    const Message& msg = messages[m];
    const RankGraph& g = graphs[msg.send.rank];
    if (auto it = arrived.find({msg.send.rank, msg.chunk});
        !msg.from_input && it != arrived.end()) {
      std::vector<size_t> targets;
      for (size_t e : it->second) targets.push_back(g.done(messages[e].recv.index));
      const std::vector<bool> found =
          depends_on(g, msg.send.index, targets, seen[msg.send.rank], ++stamp);
      for (size_t t = 0; t < targets.size(); ++t) {
        if (found[t]) continue;
        const Node& send = files[msg.send.rank].nodes[msg.send.index];
        const Node& need = files[msg.send.rank].nodes[targets[t]];
        problems.push_back(
            {synth::ImportProblemKind::Unordered, msg.send.rank, -1,
             static_cast<int64_t>(send.id()),
             fmt::format("{}: node {} sends chunk {} to rank {} without depending on node {} "
                         "('{}'), which brings that chunk from rank {} before it: ASTRA-sim "
                         "would send it before its data has arrived",
                         et_path(prefix, msg.send.rank), send.id(), msg.chunk, msg.recv.rank,
                         need.id(), need.name(), messages[it->second[t]].send.rank)});
      }
    }
    arrived[{msg.recv.rank, msg.chunk}].push_back(m);
  }
  return problems;
}

}  // namespace tenet::chakra::detail
