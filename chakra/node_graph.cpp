#include "chakra/node_graph.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <sstream>
#include <unordered_map>

#include "topo/error.hpp"

namespace tenet::chakra {

using Node = ChakraProtoMsg::Node;
using topo::NodeId;

NodeGraph node_graph(const std::vector<EtFile>& files, const topo::Topology& t) {
  const int p = static_cast<int>(files.size());
  NodeGraph g;
  // Ranks to NPUs.
  g.npu.resize(static_cast<size_t>(p));
  for (int r = 0; r < p; ++r) g.npu[r] = r;
  if (p > 0)
    for (const auto& a : files[0].metadata.attr())
      if (a.name() == "tenet_ranks" && a.has_string_val()) {
        std::stringstream in(a.string_val());
        std::string item;
        for (int r = 0; std::getline(in, item, ',') && r < p; ++r) {
          NodeId v = -1;
          const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
          if (ec != std::errc() || end != item.data() + item.size() || v < 0 || v >= t.num_npus())
            throw Error(fmt::format("tenet_ranks names '{}', not an NPU of the topology", item));
          g.npu[r] = v;
        }
      }
  for (int r = 0; r < p; ++r)
    if (g.npu[r] >= t.num_npus())
      throw Error(fmt::format("rank {} has no NPU in a topology of {}", r, t.num_npus()));
  // Nodes of every rank in one numbering (rank r's node i is first[r] + i), each decoded once.
  std::vector<size_t> first(static_cast<size_t>(p) + 1, 0);
  for (int r = 0; r < p; ++r) first[r + 1] = first[r] + files[r].nodes.size();
  g.nodes.resize(first[p]);
  for (int r = 0; r < p; ++r)
    for (size_t i = 0; i < files[r].nodes.size(); ++i) {
      const Node& n = files[r].nodes[i];
      NodeGraph::Node& x = g.nodes[first[r] + i];
      x.rank = r;
      x.type = n.type();
      x.id = n.id();
      x.micros = n.duration_micros();
      const bool send = n.type() == ChakraProtoMsg::COMM_SEND_NODE,
                 recv = n.type() == ChakraProtoMsg::COMM_RECV_NODE;
      if (!send && !recv) continue;
      bool has_peer = false, has_size = false, has_tag = false;
      for (const auto& a :
           n.attr()) {  // one pass (int_attr scans per name); the first of a name counts
        const std::string& name = a.name();
        const bool peer = name == (send ? "comm_dst" : "comm_src"), size = name == "comm_size",
                   tag = name == "comm_tag";
        if (!(peer && !has_peer) && !(size && !has_size) && !(tag && !has_tag)) continue;
        const auto v = int_value(a);
        if (!v) continue;
        if (peer) x.peer = static_cast<int>(std::clamp<int64_t>(*v, -1, p)), has_peer = true;
        if (size) x.size = *v, has_size = true;
        if (tag) x.tag = *v, has_tag = true;
      }
      if (!has_peer || !has_size || !has_tag)
        throw Error(fmt::format("rank {} node {}: a {} needs comm_{}, comm_size and comm_tag", r,
                                n.id(), send ? "send" : "receive", send ? "dst" : "src"));
      if (x.peer < 0 || x.peer >= p || x.peer == r)
        throw Error(fmt::format("rank {} node {}: comm_{} is not another rank", r, n.id(),
                                send ? "dst" : "src"));
    }
  // Dependencies, data and control alike (ASTRA-sim's feeder waits for both), CSR.
  g.dep_begin.assign(first[p] + 1, 0);
  for (int r = 0; r < p; ++r) {
    const auto& nodes = files[r].nodes;
    // Node ids are usually their positions (Tenet writes them so); otherwise a map.
    bool dense = true;
    for (size_t i = 0; i < nodes.size() && dense; ++i) dense = nodes[i].id() == i;
    std::unordered_map<uint64_t, size_t> index;
    if (!dense)
      for (size_t i = 0; i < nodes.size(); ++i) index[nodes[i].id()] = i;
    for (size_t i = 0; i < nodes.size(); ++i) {
      auto depend = [&](uint64_t on) {
        size_t at = on;
        if (!dense) {
          auto it = index.find(on);
          at = it == index.end() ? nodes.size() : it->second;
        }
        if (at >= nodes.size())
          throw Error(fmt::format("rank {} node {}: depends on node {}, which is not in the file",
                                  r, nodes[i].id(), on));
        g.deps.push_back(first[r] + at);
      };
      for (uint64_t d : nodes[i].data_deps()) depend(d);
      for (uint64_t d : nodes[i].ctrl_deps()) depend(d);
      g.dep_begin[first[r] + i + 1] = g.deps.size();
    }
  }
  return g;
}

}  // namespace tenet::chakra
