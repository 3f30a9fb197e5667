// Import: a collective graph back into an algorithm (from_collective_graph), its sends and receives
// paired as ASTRA-sim pairs them, its routes from the file or the topology.
#include "chakra/collective_graph.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <unordered_map>

#include "chakra/collective_graph_detail.hpp"
#include "topo/error.hpp"
#include "topo/limits.hpp"
#include "topo/routing.hpp"

namespace tenet::chakra {
namespace detail {

std::optional<std::string> meta_string(const ChakraProtoMsg::GlobalMetadata& m,
                                       std::string_view name) {
  for (const auto& a : m.attr())
    if (a.name() == name && a.value_case() == ChakraProtoMsg::AttributeProto::kStringVal)
      return a.string_val();
  return std::nullopt;
}
std::optional<int64_t> meta_int(const ChakraProtoMsg::GlobalMetadata& m, std::string_view name) {
  for (const auto& a : m.attr())
    if (a.name() == name && a.value_case() == ChakraProtoMsg::AttributeProto::kInt64Val)
      return a.int64_val();
  return std::nullopt;
}

}  // namespace detail

namespace {

using synth::Algorithm;
using synth::ChunkId;
using synth::Collective;
using synth::Op;
using synth::Transfer;
using synth::TransferId;
using topo::LinkId;
using topo::NodeId;

using detail::meta_int;
using detail::meta_string;
using detail::pair_up;
using detail::Pairing;

// tenet_ranks: the NPU of each of the `p` ranks (rank r on NPU r when absent).
void read_ranks(const ChakraProtoMsg::GlobalMetadata& meta, const topo::Topology& t, int p,
                const std::string& prefix, Collective& c) {
  if (auto ranks = meta_string(meta, "tenet_ranks")) {
    std::stringstream in(*ranks);
    std::string item;
    while (std::getline(in, item, ',')) {
      int npu = -1;
      const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), npu);
      if (ec != std::errc() || end != item.data() + item.size() || npu < 0 || npu >= t.num_npus())
        throw Error(
            fmt::format(
                "tenet_ranks in the metadata names '{}', not an NPU of the topology (0..{})", item,
                t.num_npus() - 1),
            {et_path(prefix, 0)});
      c.ranks.push_back(npu);
    }
  } else {
    for (int r = 0; r < p; ++r) c.ranks.push_back(r);
  }
  if (static_cast<int>(c.ranks.size()) != p)
    throw Error(
        fmt::format("the metadata names {} ranks but there are {} files", c.ranks.size(), p),
        {prefix});
}

// tenet_pair_units, when present: an All-to-Allv's P x P units, row-major.
void read_pair_units(const ChakraProtoMsg::GlobalMetadata& meta, const std::string& prefix,
                     Collective& c) {
  const auto units = meta_string(meta, "tenet_pair_units");
  if (!units) return;
  std::vector<int32_t> matrix;
  std::stringstream in(*units);
  std::string item;
  while (std::getline(in, item, ',')) {
    int32_t u = -1;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), u);
    if (ec != std::errc() || end != item.data() + item.size() || u < 0)
      throw Error(
          fmt::format("tenet_pair_units in the metadata holds '{}', not a count of units", item),
          {et_path(prefix, 0)});
    matrix.push_back(u);
  }
  if (c.kind != synth::CollectiveKind::AllToAll)
    throw Error(
        fmt::format("tenet_pair_units in the metadata of a {}: a traffic matrix is for all-to-all",
                    synth::to_string(c.kind)),
        {et_path(prefix, 0)});
  try {
    c.set_pair_units(std::move(matrix));
  } catch (const Error& e) {
    throw Error(fmt::format("tenet_pair_units in the metadata: {}", e.message()),
                {et_path(prefix, 0)});
  }
}

// The collective and the algorithm's settings from rank 0's metadata, without transfers.
Algorithm algorithm_from_metadata(const std::vector<EtFile>& files, const topo::Topology& t,
                                  const std::string& prefix) {
  const auto& meta = files[0].metadata;
  const auto kind = meta_string(meta, "tenet_collective");
  if (!kind)
    throw Error(
        "this collective graph carries no chunk identities (no tenet_collective metadata, no "
        "tenet_chunk "
        "attributes): which data each message moves cannot be determined, so it cannot be verified "
        "for "
        "correctness. `tenet chakra check` validates its structure (pairing, sizes, dependencies).",
        {prefix});
  Algorithm a;
  a.collective.kind = synth::parse_collective(*kind);
  // Metadata values checked before anything is sized by them.
  auto meta_in = [&](std::string_view name, int64_t otherwise, int64_t lo, int64_t hi) {
    const int64_t v = meta_int(meta, name).value_or(otherwise);
    if (v < lo || v > hi)
      throw Error(fmt::format("{} {} in the metadata is outside [{}, {}]", name, v, lo, hi),
                  {et_path(prefix, 0)});
    return v;
  };
  a.collective.chunks_per_npu =
      static_cast<int>(meta_in("tenet_chunks_per_npu", 1, 1, topo::kMaxChunksPerNpuOfAlgorithm));
  if (a.collective.kind == synth::CollectiveKind::AllReduce)
    a.collective.all_reduce_chunks =
        static_cast<int>(meta_in("tenet_chunks", 0, 0, std::numeric_limits<int32_t>::max()));
  a.collective.root =
      static_cast<int>(meta_in("tenet_root", 0, 0, static_cast<int64_t>(files.size()) - 1));
  a.chunk_bytes = meta_in("tenet_chunk_bytes", 0, 0, int64_t{1} << 50);
  a.name = meta_string(meta, "tenet_name").value_or("chakra");
  a.link_model =
      synth::parse_link_model(meta_string(meta, "tenet_link_model").value_or("pipelined"));
  a.reduce_bandwidth = meta_in("tenet_reduce_bandwidth", 0, 0, int64_t{1'000'000'000'000'000});
  a.serial_channels = meta_in("tenet_serial_channels", 0, 0, 1) == 1;
  a.step_costs = meta_in("tenet_step_costs", 0, 0, 1) == 1;
  a.protocol = meta_string(meta, "tenet_protocol").value_or("");
  {
    const std::string fp = meta_string(meta, "tenet_fingerprint").value_or("0");
    const auto [end, ec] =
        std::from_chars(fp.data(), fp.data() + fp.size(), a.topology_fingerprint, 16);
    if (ec != std::errc() || end != fp.data() + fp.size())
      throw Error(
          fmt::format("tenet_fingerprint '{}' in the metadata is not a hexadecimal number", fp),
          {et_path(prefix, 0)});
  }
  a.topology_name = t.name();
  read_ranks(meta, t, static_cast<int>(files.size()), prefix, a.collective);
  read_pair_units(meta, prefix, a.collective);
  a.collective.validate(t);
  return a;
}

// A transfer: the send and the receive that carry it.
struct Item {
  Pairing::End send, recv;
};

// Transfers in the order ASTRA-sim can run them (ready_order), ties broken by the order the sends
// carry (tenet_transfer); `problems` learns what never runs.
std::vector<Item> transfers_in_order(const std::vector<EtFile>& files, const Pairing& pairing,
                                     const std::string& prefix,
                                     std::vector<synth::ImportProblem>& problems) {
  std::vector<int64_t> key;
  for (auto& [s, rv] : pairing.pairs) {
    const Node& n = files[s.rank].nodes[s.index];
    auto order = int_attr(n, "tenet_transfer");
    auto chunk = int_attr(n, "tenet_chunk");
    if (!order || !chunk)
      throw Error(fmt::format("{}: node {} carries no tenet_transfer/tenet_chunk attribute",
                              et_path(prefix, s.rank), n.id()),
                  {prefix});
    if (auto count = int_attr(n, "tenet_count");
        count && (*count < 1 || *count > synth::kMaxChunksPerTransfer))
      throw Error(
          fmt::format("{}: node {} carries tenet_count {} (1 to {} chunks)",
                      et_path(prefix, s.rank), n.id(), *count, synth::kMaxChunksPerTransfer),
          {prefix});
    key.push_back(*order);
  }
  detail::ReadyOrder ready = detail::ready_order(files, pairing, key, prefix);
  problems.insert(problems.end(), ready.problems.begin(), ready.problems.end());
  std::vector<Item> items;
  for (size_t k : ready.pairs) items.push_back({pairing.pairs[k].first, pairing.pairs[k].second});
  return items;
}

// Per rank, node -> transfer, to turn node dependencies into transfer dependencies.
std::vector<std::unordered_map<uint64_t, TransferId>> node_owners(const std::vector<EtFile>& files,
                                                                  const std::vector<Item>& items) {
  std::vector<std::unordered_map<uint64_t, TransferId>> owner(files.size());
  for (size_t i = 0; i < items.size(); ++i) {
    owner[items[i].send.rank][files[items[i].send.rank].nodes[items[i].send.index].id()] =
        static_cast<TransferId>(i);
    owner[items[i].recv.rank][files[items[i].recv.rank].nodes[items[i].recv.index].id()] =
        static_cast<TransferId>(i);
  }
  // Reductions belong to the transfer whose receive they follow.
  for (size_t r = 0; r < files.size(); ++r)
    for (const Node& n : files[r].nodes)
      if (n.type() == ChakraProtoMsg::COMP_NODE && n.data_deps_size() == 1)
        if (auto it = owner[r].find(n.data_deps(0)); it != owner[r].end())
          owner[r][n.id()] = it->second;
  return owner;
}

// The route send `s` names (tenet_route) when it leads from src to dst, link to link, over
// links of `t`; empty otherwise.
std::vector<LinkId> file_route(const Node& s, NodeId src, NodeId dst, const topo::Topology& t) {
  const auto text = string_attr(s, "tenet_route");
  if (!text || text->empty()) return {};
  std::vector<LinkId> route;
  std::stringstream in(*text);
  for (std::string item; std::getline(in, item, ',');) {
    LinkId l = -1;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), l);
    if (ec != std::errc() || end != item.data() + item.size() || l < 0 || l >= t.num_links())
      return {};
    route.push_back(l);
  }
  // It must lead from src to dst, link to link.
  NodeId at = src;
  for (LinkId l : route) {
    if (t.link(l).src != at) return {};
    at = t.link(l).dst;
  }
  return at == dst ? route : std::vector<LinkId>{};
}

// Routes chosen on import: of a pair's equal-cost routes (parallel links, spines), the one that
// has carried the least so far (busiest link, then total), so that the load spreads.
class RouteSpread {
 public:
  explicit RouteSpread(const topo::Topology& t)
      : router_(t), carried_(static_cast<size_t>(t.num_links()), 0) {}

  // The least loaded route from src to dst, now carrying one more message; none when the pair is
  // not joined.
  std::optional<std::vector<LinkId>> take(NodeId src, NodeId dst) {
    auto& routes = spread_[{src, dst}];
    if (routes.empty()) routes = router_.equal_cost_routes(src, dst);
    if (routes.empty()) return std::nullopt;
    // The busiest link, then the total (the links all routes share tie on the first).
    auto load = [&](const topo::Route& r) {
      int64_t most = 0, sum = 0;
      for (LinkId l : r.links) {
        most = std::max(most, carried_[static_cast<size_t>(l)]);
        sum += carried_[static_cast<size_t>(l)];
      }
      return std::pair(most, sum);
    };
    std::vector<LinkId> route = std::min_element(routes.begin(), routes.end(),
                                                 [&](const topo::Route& x, const topo::Route& y) {
                                                   return load(x) < load(y);
                                                 })
                                    ->links;
    for (LinkId l : route) ++carried_[static_cast<size_t>(l)];
    return route;
  }

 private:
  topo::Router router_;
  // Pair -> its equal-cost routes.
  std::map<std::pair<NodeId, NodeId>, std::vector<topo::Route>> spread_;
  std::vector<int64_t> carried_;  // messages per link so far
};

// The dependencies of transfer `i`, sent by `s` from `src` over `route`, on earlier transfers
// (`mine`: node -> transfer at the sender), sorted and unique.
void transfer_deps(const Algorithm& a, const Node& s, TransferId i, NodeId src,
                   const std::vector<LinkId>& route,
                   const std::unordered_map<uint64_t, TransferId>& mine,
                   std::vector<TransferId>& deps) {
  deps.clear();
  for (uint64_t d : s.data_deps())
    if (auto it = mine.find(d); it != mine.end() && it->second < i) deps.push_back(it->second);
  // A control dependency on an earlier send over the same first link only orders the two, which
  // the IR's list order already does (a sender's port serves its transfers in list order); others
  // are kept.
  for (uint64_t d : s.ctrl_deps())
    if (auto it = mine.find(d); it != mine.end() && it->second < i) {
      const Transfer& prev = a[it->second];
      const bool same_link =
          prev.src == src && !a.route(it->second).empty() && a.route(it->second)[0] == route[0];
      if (!same_link) deps.push_back(it->second);
    }
  std::sort(deps.begin(), deps.end());
  deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
}

}  // namespace

ChakraImport import_collective_graph(const std::vector<EtFile>& files, const topo::Topology& t,
                                     const std::string& prefix) {
  // A graph that is not well formed is a bad input; one that is, but whose messages do not pair
  // up or whose nodes never run, describes a wrong algorithm (its problems, as `tenet verify`
  // reports them).
  const std::vector<std::string> malformed = detail::well_formed_problems(files, prefix);
  if (!malformed.empty())
    throw Error(
        fmt::format(
            "not a valid collective graph ({} problem{}; `tenet chakra check` lists them): {}",
            malformed.size(), malformed.size() == 1 ? "" : "s", malformed.front()),
        {prefix});
  ChakraImport out;
  Algorithm& a = out.algorithm;
  a = algorithm_from_metadata(files, t, prefix);
  Pairing pairing = pair_up(files, prefix);
  out.problems = std::move(pairing.problems);
  const std::vector<Item> items = transfers_in_order(files, pairing, prefix, out.problems);
  std::vector<detail::Message> messages;
  for (const Item& item : items) {
    const Node& send = files[item.send.rank].nodes[item.send.index];
    messages.push_back({item.send, item.recv, *int_attr(send, "tenet_chunk"),
                        int_attr(send, "tenet_count").value_or(1),
                        int_attr(send, "tenet_from_input").value_or(0) != 0});
  }
  {  // The order checks share each rank's graph, freed before the routes are chosen.
    std::vector<detail::RankGraph> graphs;
    for (const EtFile& f : files) graphs.emplace_back(f);
    std::vector<synth::ImportProblem> order =
        detail::check_send_order(files, graphs, messages, prefix);
    out.problems.insert(out.problems.end(), order.begin(), order.end());
    if (synth::reduces(a.collective.kind)) {
      int64_t unchecked = 0;
      std::vector<synth::ImportProblem> war =
          detail::check_write_after_read(files, graphs, messages, prefix, unchecked);
      if (unchecked > 0)
        out.warnings.push_back(fmt::format(
            "{} later arrivals of a chunk were not checked against the sends of it before them "
            "(write after read): the graph is past the check's budget",
            unchecked));
      out.problems.insert(out.problems.end(), war.begin(), war.end());
    }
  }
  const auto owner = node_owners(files, items);
  RouteSpread spread(t);
  std::vector<TransferId> deps;
  // Routes: Tenet's own (tenet_route) when the file was made for this topology; otherwise chosen
  // to spread the load (RouteSpread).
  const bool same_topology = a.topology_fingerprint == t.fingerprint();
  size_t from_file = 0, spread_out = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    const Node& s = files[items[i].send.rank].nodes[items[i].send.index];
    const NodeId src = a.collective.ranks[items[i].send.rank],
                 dst = a.collective.ranks[items[i].recv.rank];
    std::vector<LinkId> route = same_topology ? file_route(s, src, dst, t) : std::vector<LinkId>{};
    if (!route.empty()) {
      ++from_file;
    } else {
      std::optional<std::vector<LinkId>> spread_route = spread.take(src, dst);
      if (!spread_route)
        throw Error(fmt::format("{}: node {}: ranks {} and {} are not joined by a link or a route "
                                "through switches or "
                                "router NPUs in this topology",
                                et_path(prefix, items[i].send.rank), s.id(), items[i].send.rank,
                                items[i].recv.rank),
                    {prefix});
      route = std::move(*spread_route);
      ++spread_out;
    }
    transfer_deps(a, s, static_cast<TransferId>(i), src, route, owner[items[i].send.rank], deps);
    a.add(static_cast<ChunkId>(*int_attr(s, "tenet_chunk")), src, dst, route,
          int_attr(s, "tenet_op").value_or(0) ? Op::Reduce : Op::Copy, deps, -1, -1,
          static_cast<Bandwidth>(int_attr(s, "tenet_rate").value_or(0)),
          static_cast<uint16_t>(
              std::clamp<int64_t>(int_attr(s, "tenet_channel").value_or(0), 0, 65535)),
          int_attr(s, "tenet_from_input").value_or(0) != 0,
          static_cast<uint16_t>(messages[i].count));
  }
  a.method = spread_out == 0 ? "routes from the file (tenet_route)"
             : from_file == 0
                 ? "routes chosen on import: of each pair's equal-cost routes, the least loaded so "
                   "far (the file names none "
                   "for this topology)"
                 : fmt::format("routes from the file for {} messages, chosen on import for {}",
                               from_file, spread_out);
  return out;
}

Algorithm from_collective_graph(const std::vector<EtFile>& files, const topo::Topology& t,
                                const std::string& prefix) {
  ChakraImport in = import_collective_graph(files, t, prefix);
  if (!in.problems.empty())
    throw Error(fmt::format("the graph is incorrect as ASTRA-sim runs it ({} problem{}; `tenet "
                            "verify` lists them): {}",
                            in.problems.size(), in.problems.size() == 1 ? "" : "s",
                            in.problems.front().message),
                {prefix});
  return std::move(in.algorithm);
}

}  // namespace tenet::chakra
