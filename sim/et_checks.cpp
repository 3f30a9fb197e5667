#include "sim/et_checks.hpp"

#include <fmt/format.h>

#include "sim/comm_types.hpp"

namespace tenet::sim::detail {
namespace {

using chakra::Node;

// One day: 2^63 ps is 106 days for the whole run.
constexpr uint64_t kMaxNodeMicros = 86'400'000'000;
constexpr int64_t kMaxBytes = int64_t{1} << 50;

// Rank r's graph, its nodes checked in file order.
RankGraph read_rank(const std::string& name, int ranks, int r, const chakra::EtFile& f,
                    CommGroups& groups) {
  RankGraph rk;
  for (const Node& n : f.nodes) {
    if (!rk.index.emplace(n.id(), rk.nodes.size()).second)
      throw node_error(name, r, n, "node id used twice");
    rk.nodes.push_back(&n);
  }
  const size_t n = rk.nodes.size();
  rk.users.assign(n, {});
  rk.pending.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const Node& node = *rk.nodes[i];
    for (const auto& deps : {node.data_deps(), node.ctrl_deps()})
      for (uint64_t d : deps) {
        auto it = rk.index.find(d);
        if (it == rk.index.end())
          throw node_error(name, r, node,
                           fmt::format("depends on node {}, which is not in this rank's graph", d));
        rk.users[it->second].push_back(i);
        ++rk.pending[i];
      }
    check_node(name, ranks, r, node, groups);
  }
  return rk;
}

// A cycle would leave nodes waiting forever: find it up front.
void check_acyclic(const std::string& name, int r, const RankGraph& rk) {
  const size_t n = rk.nodes.size();
  std::vector<int> indegree = rk.pending;
  std::vector<size_t> queue;
  for (size_t i = 0; i < n; ++i)
    if (indegree[i] == 0) queue.push_back(i);
  for (size_t q = 0; q < queue.size(); ++q)
    for (size_t u : rk.users[queue[q]])
      if (--indegree[u] == 0) queue.push_back(u);
  if (queue.size() < n) {
    size_t stuck = 0;
    while (indegree[stuck] == 0) ++stuck;
    throw node_error(name, r, *rk.nodes[stuck],
                     fmt::format("is on a dependency cycle ({} nodes of rank {} can never run)",
                                 n - queue.size(), r));
  }
}

}  // namespace

Error node_error(const std::string& workload, int r, const Node& n, const std::string& what) {
  return Error(fmt::format("{}: rank {} node {} ('{}'): {}", workload, r, n.id(), n.name(), what));
}

std::vector<RankGraph> read_workload(const topo::Topology& t,
                                     const std::vector<chakra::EtFile>& workload,
                                     const std::string& name, CommGroups& groups) {
  const int p = static_cast<int>(workload.size());
  if (p > t.num_npus())
    throw Error(fmt::format("{}: {} ranks, but the topology has {} NPUs", name, p, t.num_npus()));
  std::vector<RankGraph> graphs(p);
  for (int r = 0; r < p; ++r) {
    graphs[r] = read_rank(name, p, r, workload[r], groups);
    check_acyclic(name, r, graphs[r]);
  }
  return graphs;
}

void check_node(const std::string& name, int ranks, int r, const Node& n, CommGroups& groups) {
  auto error = [&](const std::string& what) { return node_error(name, r, n, what); };
  auto peer = [&](const char* attr) {
    auto v = chakra::int_attr(n, attr);
    if (!v)
      throw error(
          fmt::format("{} needs the attribute {}", ChakraProtoMsg::NodeType_Name(n.type()), attr));
    if (*v < 0 || *v >= ranks)
      throw error(fmt::format("{} {} is not a rank of the workload (0..{})", attr, *v, ranks - 1));
  };
  // Sizes and durations checked before any time is computed from them: a comm_size of 2^64 - 1
  // reads as -1, and duration_micros near 2^63 wraps when turned into picoseconds.
  if (n.duration_micros() > kMaxNodeMicros)
    throw error(fmt::format("duration_micros {} is over the limit of {} (a day)",
                            n.duration_micros(), kMaxNodeMicros));
  for (const char* attr : {"comm_size", "tensor_size"})
    if (const auto v = chakra::int_attr(n, attr); v && (*v < 0 || *v > kMaxBytes))
      throw error(fmt::format("{} {} is outside [0, 2^50] bytes", attr, static_cast<uint64_t>(*v)));
  if (const auto ops = chakra::int_attr(n, "num_ops"); ops && *ops < 0)
    throw error(fmt::format("num_ops {} is not a count (negative, or over 2^63 unsigned)", *ops));
  switch (n.type()) {
    case ChakraProtoMsg::COMP_NODE:
    case ChakraProtoMsg::MEM_LOAD_NODE:
    case ChakraProtoMsg::MEM_STORE_NODE:
    case ChakraProtoMsg::METADATA_NODE:
    case ChakraProtoMsg::INVALID_NODE:
      break;
    case ChakraProtoMsg::COMM_SEND_NODE:
      peer("comm_dst");
      if (!chakra::int_attr(n, "comm_tag") || !chakra::int_attr(n, "comm_size"))
        throw error("a send needs comm_tag and comm_size");
      break;
    case ChakraProtoMsg::COMM_RECV_NODE:
      peer("comm_src");
      if (!chakra::int_attr(n, "comm_tag") || !chakra::int_attr(n, "comm_size"))
        throw error("a receive needs comm_tag and comm_size");
      break;
    case ChakraProtoMsg::COMM_COLL_NODE:
      if (!chakra::int_attr(n, "comm_type") || !chakra::int_attr(n, "comm_size"))
        throw error("a collective needs comm_type and comm_size");
      if (const int64_t type = *chakra::int_attr(n, "comm_type");
          type != ChakraProtoMsg::BARRIER && !collective_of_comm_type(type))
        throw error(
            fmt::format("comm_type {} is no Chakra collective (ALL_REDUCE 0 ... BARRIER 9)", type));
      (void)groups.of(r, n);
      break;
    default:
      throw error(
          fmt::format("cannot run a node of type {}", ChakraProtoMsg::NodeType_Name(n.type())));
  }
}

}  // namespace tenet::sim::detail
