// The order a collective graph's sends keep (collective_graph_detail.hpp, check_send_order).
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <unordered_map>

#include "chakra/collective_graph_detail.hpp"

namespace tenet::chakra::detail {
namespace {

// How many graph steps the write-after-read check takes in all before it stops checking.
constexpr int64_t kWriteAfterReadSteps = int64_t{1} << 26;

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

RankGraph::RankGraph(const EtFile& f) : deps(f.nodes.size()) {
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

std::vector<synth::ImportProblem> check_send_order(const std::vector<EtFile>& files,
                                                   const std::vector<RankGraph>& graphs,
                                                   const std::vector<Message>& messages,
                                                   const std::string& prefix) {
  std::vector<std::vector<uint64_t>> seen;  // per rank: depends_on's scratch
  for (const RankGraph& g : graphs) seen.emplace_back(g.deps.size(), 0);
  uint64_t stamp = 0;
  std::vector<synth::ImportProblem> problems;
  // (rank, chunk) -> the messages that brought it there so far
  std::map<std::pair<int, int64_t>, std::vector<size_t>> arrived;
  for (size_t m = 0; m < messages.size(); ++m) {
    const Message& msg = messages[m];
    const RankGraph& g = graphs[msg.send.rank];
    for (int64_t chunk = msg.chunk; chunk < msg.chunk + msg.count; ++chunk) {
      if (auto it = arrived.find({msg.send.rank, chunk}); !msg.from_input && it != arrived.end()) {
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
                           et_path(prefix, msg.send.rank), send.id(), chunk, msg.recv.rank,
                           need.id(), need.name(), messages[it->second[t]].send.rank)});
        }
      }
    }
    for (int64_t chunk = msg.chunk; chunk < msg.chunk + msg.count; ++chunk)
      arrived[{msg.recv.rank, chunk}].push_back(m);
  }
  return problems;
}

std::vector<synth::ImportProblem> check_write_after_read(const std::vector<EtFile>& files,
                                                         const std::vector<RankGraph>& graphs,
                                                         const std::vector<Message>& messages,
                                                         const std::string& prefix,
                                                         int64_t& unchecked) {
  // Node v of rank r is base[r] + v. Its predecessors: its dependencies and, for a receive, the
  // send it pairs with (CSR lists, built in two passes).
  std::vector<size_t> base(files.size() + 1, 0);
  for (size_t r = 0; r < files.size(); ++r) base[r + 1] = base[r] + files[r].nodes.size();
  const size_t n = base.back();
  std::vector<size_t> begin(n + 1, 0);
  for (size_t r = 0; r < files.size(); ++r)
    for (size_t i = 0; i < graphs[r].deps.size(); ++i)
      begin[base[r] + i + 1] += graphs[r].deps[i].size();
  for (const Message& m : messages) ++begin[base[m.recv.rank] + m.recv.index + 1];
  for (size_t v = 0; v < n; ++v) begin[v + 1] += begin[v];
  std::vector<size_t> preds(begin[n]), fill(begin.begin(), begin.end() - 1);
  for (size_t r = 0; r < files.size(); ++r)
    for (size_t i = 0; i < graphs[r].deps.size(); ++i)
      for (size_t d : graphs[r].deps[i]) preds[fill[base[r] + i]++] = base[r] + d;
  for (const Message& m : messages)
    preds[fill[base[m.recv.rank] + m.recv.index]++] = base[m.send.rank] + m.send.index;
  // Longest-path depth from the sources: a node reaches only deeper ones, so a search backwards
  // for `from` never goes at or above its depth.
  std::vector<uint32_t> depth(n, 0);
  {
    std::vector<uint32_t> left(n, 0);
    std::vector<size_t> succ_begin(n + 1, 0);
    for (size_t v = 0; v < n; ++v) {
      left[v] = static_cast<uint32_t>(begin[v + 1] - begin[v]);
      for (size_t k = begin[v]; k < begin[v + 1]; ++k) ++succ_begin[preds[k] + 1];
    }
    for (size_t v = 0; v < n; ++v) succ_begin[v + 1] += succ_begin[v];
    std::vector<size_t> succs(succ_begin[n]), at(succ_begin.begin(), succ_begin.end() - 1);
    for (size_t v = 0; v < n; ++v)
      for (size_t k = begin[v]; k < begin[v + 1]; ++k) succs[at[preds[k]]++] = v;
    std::vector<size_t> queue;
    for (size_t v = 0; v < n; ++v)
      if (left[v] == 0) queue.push_back(v);
    for (size_t q = 0; q < queue.size(); ++q)
      for (size_t k = succ_begin[queue[q]]; k < succ_begin[queue[q] + 1]; ++k) {
        const size_t w = succs[k];
        depth[w] = std::max(depth[w], depth[queue[q]] + 1);
        if (--left[w] == 0) queue.push_back(w);
      }
  }
  std::vector<uint64_t> seen(n, 0);
  uint64_t stamp = 0;
  int64_t budget = kWriteAfterReadSteps;
  std::vector<size_t> queue;
  // Whether `from` reaches `to` (false when the budget ran out first: then `budget` < 0).
  auto reaches = [&](size_t from, size_t to) {
    queue.assign(1, to);
    ++stamp;
    for (size_t q = 0; q < queue.size(); ++q)
      for (size_t k = begin[queue[q]]; k < begin[queue[q] + 1]; ++k) {
        const size_t u = preds[k];
        if (u == from) return true;
        if (seen[u] == stamp || depth[u] <= depth[from]) continue;
        if (--budget < 0) return false;
        seen[u] = stamp;
        queue.push_back(u);
      }
    return false;
  };
  std::vector<synth::ImportProblem> problems;
  std::map<std::pair<int, int64_t>, std::vector<size_t>> read;  // (rank, chunk) -> its sends so far
  for (size_t m = 0; m < messages.size(); ++m) {
    const Message& msg = messages[m];
    for (int64_t chunk = msg.chunk; chunk < msg.chunk + msg.count; ++chunk)
      if (auto it = read.find({msg.recv.rank, chunk}); it != read.end())
        for (size_t s : it->second) {
          const Message& earlier = messages[s];
          const bool ordered = budget >= 0 && reaches(base[earlier.send.rank] + earlier.send.index,
                                                      base[msg.recv.rank] + msg.recv.index);
          if (budget < 0) ++unchecked;  // the search ran out before it found the order, or before
          if (ordered || budget < 0) continue;
          const Node& send = files[earlier.send.rank].nodes[earlier.send.index];
          const Node& recv = files[msg.recv.rank].nodes[msg.recv.index];
          problems.push_back(
              {synth::ImportProblemKind::Unordered, msg.recv.rank, -1,
               static_cast<int64_t>(recv.id()),
               fmt::format(
                   "{}: node {} ('{}') brings chunk {} from rank {} with nothing ordering it "
                   "after node {} ('{}'), which sends that chunk before it: it may arrive "
                   "first, and the send would carry what it brings",
                   et_path(prefix, msg.recv.rank), recv.id(), recv.name(), chunk, msg.send.rank,
                   send.id(), send.name())});
        }
    if (!msg.from_input)
      for (int64_t chunk = msg.chunk; chunk < msg.chunk + msg.count; ++chunk)
        read[{msg.send.rank, chunk}].push_back(m);
  }
  return problems;
}

}  // namespace tenet::chakra::detail
