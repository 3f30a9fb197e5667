// The checks of a collective graph: the reader rules ASTRA-sim enforces, and sends paired with
// receives across ranks as ASTRA-sim pairs them.
#include "chakra/collective_graph.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include "chakra/collective_graph_detail.hpp"

namespace tenet::chakra {
namespace detail {

Pairing pair_up(const std::vector<EtFile>& files, const std::string& prefix) {
  Pairing out;
  const int p = static_cast<int>(files.size());
  std::map<std::tuple<int64_t, int, int>, std::vector<Pairing::End>> sends, recvs;
  for (int r = 0; r < p; ++r)
    for (size_t i = 0; i < files[r].nodes.size(); ++i) {
      const Node& n = files[r].nodes[i];
      const std::string where = fmt::format("{}: node {}", et_path(prefix, r), n.id());
      if (n.type() == ChakraProtoMsg::COMM_SEND_NODE) {
        auto dst = int_attr(n, "comm_dst"), tag = int_attr(n, "comm_tag");
        if (!dst || !tag) continue;  // reported by the attribute rules
        if (*dst < 0 || *dst >= p) {
          out.problems.push_back(
              fmt::format("{}: comm_dst {} is not a rank (0..{})", where, *dst, p - 1));
          continue;
        }
        sends[{*tag, r, static_cast<int>(*dst)}].push_back({r, i});
      } else if (n.type() == ChakraProtoMsg::COMM_RECV_NODE) {
        auto src = int_attr(n, "comm_src"), tag = int_attr(n, "comm_tag");
        if (!src || !tag) continue;
        if (*src < 0 || *src >= p) {
          out.problems.push_back(
              fmt::format("{}: comm_src {} is not a rank (0..{})", where, *src, p - 1));
          continue;
        }
        recvs[{*tag, static_cast<int>(*src), r}].push_back({r, i});
      }
    }
  for (auto& [key, list] : sends) {
    auto& [tag, src, dst] = key;
    auto it = recvs.find(key);
    const size_t matched = it == recvs.end() ? 0 : std::min(list.size(), it->second.size());
    for (size_t k = 0; k < list.size(); ++k) {
      const Node& s = files[src].nodes[list[k].index];
      if (k >= matched) {
        out.problems.push_back(
            fmt::format("{}: node {}: send to rank {} with tag {} has no matching receive in {}",
                        et_path(prefix, src), s.id(), dst, tag, et_path(prefix, dst)));
        continue;
      }
      const Node& rv = files[dst].nodes[it->second[k].index];
      const auto ss = int_attr(s, "comm_size"), rs = int_attr(rv, "comm_size");
      if (ss && rs && *ss != *rs)
        out.problems.push_back(fmt::format(
            "{}: node {}: sends {} bytes to rank {} (tag {}), but {} node {} expects {}",
            et_path(prefix, src), s.id(), *ss, dst, tag, et_path(prefix, dst), rv.id(), *rs));
      out.pairs.push_back({list[k], it->second[k]});
    }
  }
  for (auto& [key, list] : recvs) {
    auto& [tag, src, dst] = key;
    auto it = sends.find(key);
    const size_t have = it == sends.end() ? 0 : it->second.size();
    for (size_t k = have; k < list.size(); ++k)
      out.problems.push_back(
          fmt::format("{}: node {}: receive from rank {} with tag {} has no matching send in {}",
                      et_path(prefix, dst), files[dst].nodes[list[k].index].id(), src, tag,
                      et_path(prefix, src)));
  }
  return out;
}

}  // namespace detail

namespace {

using detail::kMaxTag;
using detail::meta_string;
using detail::pair_up;
using detail::Pairing;

}  // namespace

std::vector<std::string> check_collective_graph(const std::vector<EtFile>& files,
                                                const std::string& prefix) {
  std::vector<std::string> problems;
  // Tenet's exports name their set: every rank must come from the same one.
  if (!files.empty())
    if (const auto set = meta_string(files[0].metadata, "tenet_set"))
      for (size_t r = 1; r < files.size(); ++r)
        if (const auto other = meta_string(files[r].metadata, "tenet_set").value_or("none");
            other != *set)
          problems.push_back(fmt::format(
              "{}: from another export than rank 0 (tenet_set {}, rank 0's {}): a folder "
              "mixing two runs",
              et_path(prefix, static_cast<int>(r)), other, *set));
  for (size_t r = 0; r < files.size(); ++r) {
    const std::string file = et_path(prefix, static_cast<int>(r));
    const auto& nodes = files[r].nodes;
    std::unordered_map<uint64_t, size_t> index;
    for (size_t i = 0; i < nodes.size(); ++i)
      if (!index.emplace(nodes[i].id(), i).second)
        problems.push_back(fmt::format("{}: node id {} is used twice", file, nodes[i].id()));
    bool root = false;
    for (const Node& n : nodes) {
      const std::string where = fmt::format("{}: node {} ('{}')", file, n.id(), n.name());
      root = root || (n.data_deps_size() == 0 && n.ctrl_deps_size() == 0);
      for (const auto& deps : {n.data_deps(), n.ctrl_deps()})
        for (uint64_t d : deps)
          if (!index.count(d))
            problems.push_back(
                fmt::format("{}: depends on node {}, which is not in this file", where, d));
      auto need = [&](std::initializer_list<const char*> names) {
        for (const char* a : names)
          if (!has_attr(n, a))
            problems.push_back(fmt::format("{}: {} needs the attribute {}", where,
                                           ChakraProtoMsg::NodeType_Name(n.type()), a));
      };
      switch (n.type()) {
        case ChakraProtoMsg::COMM_SEND_NODE:
          need({"comm_dst", "comm_size", "comm_tag"});
          break;
        case ChakraProtoMsg::COMM_RECV_NODE:
          need({"comm_src", "comm_size", "comm_tag"});
          break;
        case ChakraProtoMsg::COMM_COLL_NODE:
          need({"comm_type", "comm_size"});
          break;
        case ChakraProtoMsg::COMP_NODE:
          if (n.duration_micros() == 0 && !has_attr(n, "num_ops")) need({"num_ops", "tensor_size"});
          break;
        case ChakraProtoMsg::INVALID_NODE:
          problems.push_back(fmt::format("{}: has type INVALID_NODE", where));
          break;
        default:
          break;
      }
      if (auto tag = int_attr(n, "comm_tag"); tag && (*tag < 0 || *tag >= kMaxTag))
        problems.push_back(fmt::format("{}: comm_tag {} is outside [0, 500,000,000)", where, *tag));
    }
    if (!nodes.empty() && !root)
      problems.push_back(fmt::format("{}: every node has a dependency: nothing can start", file));
    // Cycles: Kahn's algorithm over the file's dependencies.
    std::vector<int> indegree(nodes.size(), 0);
    std::vector<std::vector<size_t>> users(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i)
      for (const auto& deps : {nodes[i].data_deps(), nodes[i].ctrl_deps()})
        for (uint64_t d : deps)
          if (auto it = index.find(d); it != index.end()) {
            ++indegree[i];
            users[it->second].push_back(i);
          }
    std::vector<size_t> queue;
    for (size_t i = 0; i < nodes.size(); ++i)
      if (indegree[i] == 0) queue.push_back(i);
    for (size_t q = 0; q < queue.size(); ++q)
      for (size_t u : users[queue[q]])
        if (--indegree[u] == 0) queue.push_back(u);
    if (queue.size() < nodes.size()) {
      size_t stuck = 0;
      while (indegree[stuck] == 0) ++stuck;
      problems.push_back(fmt::format(
          "{}: the dependencies form a cycle ({} nodes never become ready, e.g. node {})", file,
          nodes.size() - queue.size(), nodes[stuck].id()));
    }
  }
  Pairing pairing = pair_up(files, prefix);
  problems.insert(problems.end(), pairing.problems.begin(), pairing.problems.end());
  return problems;
}

}  // namespace tenet::chakra
