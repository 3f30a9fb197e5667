#include "chakra/collective_graph.hpp"

#include <fmt/compile.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <sstream>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "synth/timing.hpp"
#include "topo/error.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"
#include "topo/output_folder.hpp"
#include "topo/limits.hpp"
#include "topo/routing.hpp"

namespace tenet::chakra {
namespace {

using synth::Algorithm;
using synth::ChunkId;
using synth::Collective;
using synth::Op;
using synth::Transfer;
using synth::TransferId;
using topo::LinkId;
using topo::NodeId;

constexpr int64_t kMaxTag = 500'000'000;

void add_string(ChakraProtoMsg::GlobalMetadata& m, const std::string& name, const std::string& value) {
  set_string(m.add_attr(), name, value);
}
void add_int(ChakraProtoMsg::GlobalMetadata& m, const std::string& name, int64_t value) {
  auto* a = m.add_attr();
  a->set_name(name);
  a->set_int64_val(value);
}
std::optional<std::string> meta_string(const ChakraProtoMsg::GlobalMetadata& m, std::string_view name) {
  for (const auto& a : m.attr())
    if (a.name() == name && a.value_case() == ChakraProtoMsg::AttributeProto::kStringVal) return a.string_val();
  return std::nullopt;
}
std::optional<int64_t> meta_int(const ChakraProtoMsg::GlobalMetadata& m, std::string_view name) {
  for (const auto& a : m.attr())
    if (a.name() == name && a.value_case() == ChakraProtoMsg::AttributeProto::kInt64Val) return a.int64_val();
  return std::nullopt;
}

}  // namespace

std::optional<std::string> astra_collective_name(synth::CollectiveKind k) {
  switch (k) {
    case synth::CollectiveKind::AllReduce: return "all-reduce";
    case synth::CollectiveKind::AllGather: return "all-gather";
    case synth::CollectiveKind::ReduceScatter: return "reduce-scatter";
    case synth::CollectiveKind::AllToAll: return "all-to-all";
    default: return std::nullopt;
  }
}

double reduction_micros(Bytes bytes, Bandwidth reduce_bandwidth) {
  return static_cast<double>(bytes) * 1e6 / static_cast<double>(reduce_bandwidth);
}

LinkWaits parse_link_waits(std::string_view name) {
  if (name == "bytes") return LinkWaits::Bytes;
  if (name == "queue") return LinkWaits::Queue;
  throw Error(fmt::format("unknown link-wait encoding '{}' (bytes, queue)", name));
}

CollectiveGraphPlan::CollectiveGraphPlan(const Algorithm& a, const topo::Topology& t, const GraphOptions& options)
    : a_(a), options_(options) {
  const Collective& c = a.collective;
  const int p = c.num_ranks();
  rank_of_.assign(static_cast<size_t>(t.num_nodes()), -1);
  for (int r = 0; r < p; ++r) rank_of_[c.ranks[r]] = r;
  if (static_cast<int64_t>(a.size()) >= kMaxTag)
    throw Error(fmt::format("{} transfers need more tags than ASTRA-sim allows (500,000,000)", a.size()));

  // Which export the files belong to: a digest of the algorithm (the same for a re-export of the same
  // one), so that a folder mixing ranks of two exports (a killed run, another algorithm written
  // over part of it) is refused by the check and the import.
  uint64_t digest = 1469598103934665603ULL;  // FNV-1a
  auto mix = [&](int64_t v) {
    for (int i = 0; i < 8; ++i) digest = (digest ^ static_cast<uint64_t>((v >> (8 * i)) & 0xff)) * 1099511628211ULL;
  };
  mix(p), mix(c.chunks_per_npu), mix(a.chunk_bytes), mix(static_cast<int64_t>(a.size()));
  if (c.all_reduce_chunks > 0) mix(c.all_reduce_chunks);
  for (synth::TransferId id = 0; id < static_cast<synth::TransferId>(a.size()); ++id) {
    const synth::Transfer& x = a[id];
    mix(x.src), mix(x.dst), mix(x.chunk), mix(x.start), mix(x.end);
  }
  set_id_ = fmt::format("{:016x}", digest);

  const size_t n = a.size();
  send_id_.resize(n), recv_id_.resize(n), size_.assign(n, a.chunk_bytes);
  dep_begin_.assign(n + 1, 0);
  std::vector<uint32_t> next_id(static_cast<size_t>(p), 0);  // per rank: the next node id
  std::vector<size_t> items_per_rank(static_cast<size_t>(p) + 1, 0);
  // Flat table (a 1024-NPU All-Gather has a million transfers): the last arrival of each chunk at
  // each rank, -1 for none, and before each arrival the one it followed there: a send reads its
  // chunk as every earlier arrival left it (the IR's implicit data dependency; an All-Reduce's
  // owner sends a chunk on after every reduction into it), so it depends on all of them.
  const size_t chunks = static_cast<size_t>(c.num_chunks());
  std::vector<TransferId> last_arrival(static_cast<size_t>(p) * chunks, -1), earlier_arrival(n, -1);
  auto key = [&](int r, ChunkId ch) { return static_cast<size_t>(r) * chunks + static_cast<size_t>(ch); };
  // For LinkWaits::Bytes: Tenet's arrival of every transfer, and when its data is usable at the
  // destination (after the reduction's COMP node, when there is one): a send's wait is its
  // arrival less when its dependencies were met less what the message itself takes.
  const bool pad = options.link_waits == LinkWaits::Bytes;
  std::vector<Time> end, usable;
  std::optional<synth::RouteCoster> coster;
  if (pad) {
    end.resize(n);
    bool timed = true;
    for (const Transfer& x : a.transfers()) timed = timed && x.end >= 0;
    if (timed) {
      for (TransferId id = 0; id < static_cast<TransferId>(n); ++id) end[id] = a[id].end;
    } else {
      std::vector<Time> start(n);
      synth::compute_times(t, a, start, end);
    }
    usable = end;
    coster.emplace(t, a.chunk_bytes, a.link_model);
  }
  if (comp()) comp_micros_ = static_cast<uint64_t>(std::ceil(reduction_micros(a.chunk_bytes, a.reduce_bandwidth)));
  std::vector<uint32_t> data;
  for (TransferId id = 0; id < static_cast<TransferId>(n); ++id) {
    const Transfer& x = a[id];
    const int src = rank_of_.at(x.src), dst = rank_of_.at(x.dst);
    if (src < 0 || dst < 0)
      throw Error(fmt::format("transfer {} goes {} -> {}, and {} is not a rank: a collective graph has nodes for "
                              "ranks only (relays outside the communicator and in-network reduction cannot be "
                              "expressed)",
                              id, t.node(x.src).name, t.node(x.dst).name, t.node(src < 0 ? x.src : x.dst).name));
    // The send depends on the arrival that brought its chunk and on its dependencies at this rank.
    data.clear();
    for (TransferId e = last_arrival[key(src, x.chunk)]; e >= 0; e = earlier_arrival[e]) data.push_back(done_id(e));
    for (TransferId d : a.deps(id)) {
      if (rank_of_[a[d].dst] == src) data.push_back(done_id(d));
      else if (rank_of_[a[d].src] == src) data.push_back(send_id_[d]);
    }
    std::sort(data.begin(), data.end());
    data.erase(std::unique(data.begin(), data.end()), data.end());
    deps_.insert(deps_.end(), data.begin(), data.end());
    dep_begin_[id + 1] = deps_.size();
    send_id_[id] = next_id[src]++;
    recv_id_[id] = next_id[dst]++;
    if (comp() && x.op == Op::Reduce) ++next_id[dst];  // the COMP node after the receive
    ++items_per_rank[src + 1], ++items_per_rank[dst + 1];
    if (pad) {
      // When the dependencies above are met, in Tenet's schedule (a send completes at arrival).
      Time ready = 0;
      for (TransferId e = last_arrival[key(src, x.chunk)]; e >= 0; e = earlier_arrival[e]) ready = std::max(ready, usable[e]);
      for (TransferId d : a.deps(id)) {
        if (rank_of_[a[d].dst] == src) ready = std::max(ready, usable[d]);
        else if (rank_of_[a[d].src] == src) ready = std::max(ready, end[d]);
      }
      const synth::RouteCost cost = (*coster)(a.route(id));
      const Time wait = end[id] - ready - cost.latency - transfer_time(a.chunk_bytes, cost.bottleneck);
      if (wait > 0) size_[id] += static_cast<Bytes>(static_cast<Int128>(wait) * cost.bottleneck / 1'000'000'000'000);
      if (comp() && x.op == Op::Reduce) usable[id] = end[id] + static_cast<Time>(comp_micros_) * 1'000'000;
    }
    earlier_arrival[id] = last_arrival[key(dst, x.chunk)];
    last_arrival[key(dst, x.chunk)] = id;
  }
  // Per rank, its transfers in the order their nodes were numbered: 2 id (send) or 2 id + 1 (receive).
  for (int r = 0; r < p; ++r) items_per_rank[r + 1] += items_per_rank[r];
  item_begin_ = items_per_rank;
  items_.resize(item_begin_.back());
  std::vector<size_t> fill(item_begin_.begin(), item_begin_.end() - 1);
  for (TransferId id = 0; id < static_cast<TransferId>(n); ++id) {
    items_[fill[rank_of_[a[id].src]]++] = 2 * static_cast<int64_t>(id);
    items_[fill[rank_of_[a[id].dst]]++] = 2 * static_cast<int64_t>(id) + 1;
  }
}

ChakraProtoMsg::GlobalMetadata CollectiveGraphPlan::metadata(int r) const {
  const Collective& c = a_.collective;
  ChakraProtoMsg::GlobalMetadata m;
  m.set_version("0.0.4");
  add_string(m, "tenet_collective", std::string(synth::to_string(c.kind)));
  add_string(m, "tenet_ranks", fmt::format("{}", fmt::join(c.ranks, ",")));
  add_int(m, "tenet_chunks_per_npu", c.chunks_per_npu);
  if (c.all_reduce_chunks > 0) add_int(m, "tenet_chunks", c.all_reduce_chunks);  // All-Reduce: C chunks in all
  // All-to-Allv: the P x P unit matrix, in rank 0's file only (the import reads rank 0's metadata).
  if (c.uneven() && r == 0) add_string(m, "tenet_pair_units", fmt::format("{}", fmt::join(c.pair_units, ",")));
  add_int(m, "tenet_root", c.root);
  add_int(m, "tenet_chunk_bytes", a_.chunk_bytes);
  add_string(m, "tenet_link_model", std::string(synth::to_string(a_.link_model)));
  if (a_.reduce_bandwidth > 0) add_int(m, "tenet_reduce_bandwidth", a_.reduce_bandwidth);
  if (a_.serial_channels) add_int(m, "tenet_serial_channels", 1);
  add_string(m, "tenet_fingerprint", fmt::format("{:016x}", a_.topology_fingerprint));
  add_string(m, "tenet_name", a_.name);
  add_int(m, "tenet_rank", r);
  add_string(m, "tenet_set", set_id_);
  return m;
}

namespace {

// Where for_each_node puts the nodes: Node messages, each handed to `emit` ...
template <class Emit>
struct MessageNodes {
  Node& n;
  Emit emit;
  void start(uint64_t id, std::string_view name, ChakraProtoMsg::NodeType type) {
    n.Clear();  // keeps the attributes' memory for the next node
    n.set_id(id);
    n.set_name(name.data(), name.size());
    n.set_type(type);
  }
  void data_dep(uint64_t d) { n.add_data_deps(d); }
  void duration_micros(uint64_t micros) { n.set_duration_micros(micros); }
  void attr(std::string_view name, int64_t value) { set_int(n, name, value); }
  void attr(std::string_view name, std::string_view value) { set_string(n.add_attr(), name, value); }
  void finish() { emit(n); }
};

// ... or their bytes, encoded straight into a rank's file (the same bytes).
struct EncodedNodes : NodeEncoder {
  EtWriter& out;
  explicit EncodedNodes(EtWriter& o) : out(o) {}
  void finish() { out.node(*this); }
};

}  // namespace

template <class Nodes>
void CollectiveGraphPlan::for_each_node(int r, Nodes& n) const {
  uint64_t next_id = 0;
  fmt::memory_buffer name, route;
  for (size_t i = item_begin_[r]; i < item_begin_[r + 1]; ++i) {
    const TransferId id = static_cast<TransferId>(items_[i] / 2);
    const Transfer& x = a_[id];
    const int src = rank_of_[x.src], dst = rank_of_[x.dst];
    const int64_t tag = id + 1;
    name.clear();
    if (items_[i] % 2 == 0) {
      fmt::format_to(std::back_inserter(name), FMT_COMPILE("send chunk {} to {}"), x.chunk, dst);
      n.start(next_id++, {name.data(), name.size()}, ChakraProtoMsg::COMM_SEND_NODE);
      for (size_t d = dep_begin_[id]; d < dep_begin_[id + 1]; ++d) n.data_dep(deps_[d]);
      n.attr("comm_dst", static_cast<int64_t>(dst));
      n.attr("comm_tag", tag);
      n.attr("tenet_transfer", static_cast<int64_t>(id));
      n.attr("tenet_chunk", static_cast<int64_t>(x.chunk));
      if (x.op == Op::Reduce) n.attr("tenet_op", int64_t{1});  // absent: a copy
      if (const Bandwidth rate = a_.rate(id); rate > 0) n.attr("tenet_rate", static_cast<int64_t>(rate));
      if (x.channel > 0) n.attr("tenet_channel", static_cast<int64_t>(x.channel));
      // The route, so that importing on the same topology gives back the same links (and lanes).
      route.clear();
      for (LinkId l : a_.route(id)) {
        if (route.size()) route.push_back(',');
        fmt::format_to(std::back_inserter(route), FMT_COMPILE("{}"), l);
      }
      n.attr("tenet_route", std::string_view(route.data(), route.size()));
      if (size_[id] != a_.chunk_bytes) n.attr("tenet_wait_bytes", static_cast<int64_t>(size_[id] - a_.chunk_bytes));
      n.attr("comm_size", static_cast<int64_t>(size_[id]));
      n.finish();
    } else {
      fmt::format_to(std::back_inserter(name), FMT_COMPILE("recv chunk {} from {}"), x.chunk, src);
      const uint64_t recv_id = next_id++;
      n.start(recv_id, {name.data(), name.size()}, ChakraProtoMsg::COMM_RECV_NODE);
      n.attr("comm_src", static_cast<int64_t>(src));
      n.attr("comm_size", static_cast<int64_t>(size_[id]));
      n.attr("comm_tag", tag);  // the send carries the transfer's identity; a receive its tag only
      n.finish();
      if (comp() && x.op == Op::Reduce) {  // at 0 a reduction takes no time: no node
        name.clear();
        fmt::format_to(std::back_inserter(name), FMT_COMPILE("reduce chunk {}"), x.chunk);
        n.start(next_id++, {name.data(), name.size()}, ChakraProtoMsg::COMP_NODE);
        n.data_dep(recv_id);
        n.duration_micros(comp_micros_);
        n.attr("num_ops", static_cast<int64_t>(a_.chunk_bytes / 4));
        n.attr("tensor_size", static_cast<int64_t>(a_.chunk_bytes));
        n.attr("tenet_transfer", static_cast<int64_t>(id));
        n.finish();
      }
    }
  }
}

EtFile CollectiveGraphPlan::rank(int r) const {
  EtFile f;
  f.metadata = metadata(r);
  f.nodes.reserve(item_begin_[r + 1] - item_begin_[r]);
  Node scratch;
  auto keep = [&](const Node& n) { f.nodes.push_back(n); };
  MessageNodes<decltype(keep)> nodes{scratch, keep};
  for_each_node(r, nodes);
  return f;
}

std::string CollectiveGraphPlan::rank_bytes(int r) const {
  EtWriter out;
  out.reserve(128 * (item_begin_[r + 1] - item_begin_[r]));  // about a node's size each
  out.metadata(metadata(r));
  EncodedNodes nodes(out);
  for_each_node(r, nodes);
  return std::move(out).bytes();
}

AstraGraph CollectiveGraphPlan::astra_graph() const {
  // Nodes in transfer order (a send, its receive, the reduction's COMP node): the emulation meets
  // them roughly in that order, so it walks memory forwards instead of jumping between ranks.
  const int p = num_ranks();
  const size_t n = a_.size();
  AstraGraph g;
  g.npu.assign(a_.collective.ranks.begin(), a_.collective.ranks.end());
  // Where each rank's node ids land: global index of (rank r, id i) at local_begin[r] + i.
  std::vector<size_t> local_begin(static_cast<size_t>(p) + 1, 0);
  for (int r = 0; r < p; ++r) {
    size_t count = item_begin_[r + 1] - item_begin_[r];
    if (comp())
      for (size_t i = item_begin_[r]; i < item_begin_[r + 1]; ++i)
        count += items_[i] % 2 == 1 && a_[static_cast<TransferId>(items_[i] / 2)].op == Op::Reduce;
    local_begin[r + 1] = local_begin[r] + count;
  }
  std::vector<size_t> global(local_begin[p]);
  g.nodes.reserve(local_begin[p]);
  g.dep_begin.reserve(local_begin[p] + 1);
  g.dep_begin.push_back(0);
  g.deps.reserve(deps_.size() + n);
  auto place = [&](AstraGraph::Node node) {
    global[local_begin[node.rank] + node.id] = g.nodes.size();
    g.nodes.push_back(node);
  };
  for (TransferId id = 0; id < static_cast<TransferId>(n); ++id) {
    const Transfer& x = a_[id];
    const int src = rank_of_[x.src], dst = rank_of_[x.dst];
    const int64_t tag = id + 1;
    // Its dependencies are nodes of earlier transfers at the sender, placed already.
    for (size_t d = dep_begin_[id]; d < dep_begin_[id + 1]; ++d) g.deps.push_back(global[local_begin[src] + deps_[d]]);
    place({ChakraProtoMsg::COMM_SEND_NODE, src, dst, static_cast<int64_t>(size_[id]), tag, 0, send_id_[id]});
    g.dep_begin.push_back(g.deps.size());
    place({ChakraProtoMsg::COMM_RECV_NODE, dst, src, static_cast<int64_t>(size_[id]), tag, 0, recv_id_[id]});
    g.dep_begin.push_back(g.deps.size());
    if (comp() && x.op == Op::Reduce) {
      g.deps.push_back(g.nodes.size() - 1);  // after the receive
      place({ChakraProtoMsg::COMP_NODE, dst, -1, 0, 0, comp_micros_, recv_id_[id] + 1});
      g.dep_begin.push_back(g.deps.size());
    }
  }
  return g;
}

std::vector<EtFile> to_collective_graph(const Algorithm& a, const topo::Topology& t, const GraphOptions& options) {
  const CollectiveGraphPlan plan(a, t, options);
  std::vector<EtFile> files;
  files.reserve(static_cast<size_t>(plan.num_ranks()));
  for (int r = 0; r < plan.num_ranks(); ++r) files.push_back(plan.rank(r));
  return files;
}

std::vector<std::string> write_collective_graph(const Algorithm& a, const topo::Topology& t, const std::string& dir,
                                                const std::string& stem, const GraphOptions& options) {
  return write_collective_graph(to_collective_graph(a, t, options), a, t, dir, stem);
}

std::vector<std::string> write_collective_graph(const std::vector<EtFile>& files, const Algorithm& a,
                                                const topo::Topology& t, const std::string& dir, const std::string& stem) {
  topo::OutputFolder out(dir);
  stage_collective_graph(files, a, t, out, "", stem);
  return out.commit();
}

void stage_collective_graph(const std::vector<EtFile>& files, const Algorithm& a, const topo::Topology& t,
                            topo::OutputFolder& out, const std::string& subdir, const std::string& stem) {
  stage_et_set(files, out, (std::filesystem::path(subdir) / stem).string());  // ranks of an earlier, larger export go
  stage_astra_files(a, t, out, subdir, stem);
}

void stage_collective_graph(const CollectiveGraphPlan& plan, const Algorithm& a, const topo::Topology& t,
                            topo::OutputFolder& out, const std::string& subdir, const std::string& stem) {
  stage_et_set(plan.num_ranks(), [&](int r) { return plan.rank_bytes(r); }, out, (std::filesystem::path(subdir) / stem).string());
  stage_astra_files(a, t, out, subdir, stem);
}

void stage_astra_files(const Algorithm& a, const topo::Topology& t, topo::OutputFolder& out, const std::string& subdir,
                       const std::string& stem) {
  const auto rel = [&](const std::string& name) { return (std::filesystem::path(subdir) / name).string(); };
  // So do an earlier export's system.json and network.yml that this one does not replace.
  out.remove_at_commit(rel("system.json"));
  out.remove_at_commit(rel("network.yml"));
  if (auto key = astra_collective_name(a.collective.kind)) {
    nlohmann::ordered_json sys;
    sys["scheduling-policy"] = "LIFO";
    sys["endpoint-delay"] = 10;
    sys["active-chunks-per-dimension"] = 1;
    sys["preferred-dataset-splits"] = 1;
    sys[*key + "-implementation-custom"] = nlohmann::ordered_json::array({stem});
    sys["collective-optimization"] = "localBWAware";
    sys["local-mem-bw"] = 1600;
    sys["boost-mode"] = 0;
    topo::write_file_atomically(out.stage(rel("system.json")), sys.dump(2) + "\n");
  }
  if (auto yml = astra_network_yml(t)) topo::write_file_atomically(out.stage(rel("network.yml")), *yml);
}

namespace {

// Sends and receives paired as ASTRA-sim pairs them: by (tag, source, destination), in order.
struct Pairing {
  struct End {
    int rank;
    size_t index;  // node index in its file
  };
  std::vector<std::pair<End, End>> pairs;  // (send, recv)
  std::vector<std::string> problems;
};

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
          out.problems.push_back(fmt::format("{}: comm_dst {} is not a rank (0..{})", where, *dst, p - 1));
          continue;
        }
        sends[{*tag, r, static_cast<int>(*dst)}].push_back({r, i});
      } else if (n.type() == ChakraProtoMsg::COMM_RECV_NODE) {
        auto src = int_attr(n, "comm_src"), tag = int_attr(n, "comm_tag");
        if (!src || !tag) continue;
        if (*src < 0 || *src >= p) {
          out.problems.push_back(fmt::format("{}: comm_src {} is not a rank (0..{})", where, *src, p - 1));
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
        out.problems.push_back(fmt::format("{}: node {}: send to rank {} with tag {} has no matching receive in {}",
                                           et_path(prefix, src), s.id(), dst, tag, et_path(prefix, dst)));
        continue;
      }
      const Node& rv = files[dst].nodes[it->second[k].index];
      const auto ss = int_attr(s, "comm_size"), rs = int_attr(rv, "comm_size");
      if (ss && rs && *ss != *rs)
        out.problems.push_back(fmt::format("{}: node {}: sends {} bytes to rank {} (tag {}), but {} node {} expects {}",
                                           et_path(prefix, src), s.id(), *ss, dst, tag, et_path(prefix, dst), rv.id(), *rs));
      out.pairs.push_back({list[k], it->second[k]});
    }
  }
  for (auto& [key, list] : recvs) {
    auto& [tag, src, dst] = key;
    auto it = sends.find(key);
    const size_t have = it == sends.end() ? 0 : it->second.size();
    for (size_t k = have; k < list.size(); ++k)
      out.problems.push_back(fmt::format("{}: node {}: receive from rank {} with tag {} has no matching send in {}",
                                         et_path(prefix, dst), files[dst].nodes[list[k].index].id(), src, tag,
                                         et_path(prefix, src)));
  }
  return out;
}

}  // namespace

std::vector<std::string> check_collective_graph(const std::vector<EtFile>& files, const std::string& prefix) {
  std::vector<std::string> problems;
  // Tenet's exports name their set: every rank must come from the same one.
  if (!files.empty())
    if (const auto set = meta_string(files[0].metadata, "tenet_set"))
      for (size_t r = 1; r < files.size(); ++r)
        if (const auto other = meta_string(files[r].metadata, "tenet_set").value_or("none"); other != *set)
          problems.push_back(fmt::format("{}: from another export than rank 0 (tenet_set {}, rank 0's {}): a folder "
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
            problems.push_back(fmt::format("{}: depends on node {}, which is not in this file", where, d));
      auto need = [&](std::initializer_list<const char*> names) {
        for (const char* a : names)
          if (!has_attr(n, a))
            problems.push_back(fmt::format("{}: {} needs the attribute {}", where,
                                           ChakraProtoMsg::NodeType_Name(n.type()), a));
      };
      switch (n.type()) {
        case ChakraProtoMsg::COMM_SEND_NODE: need({"comm_dst", "comm_size", "comm_tag"}); break;
        case ChakraProtoMsg::COMM_RECV_NODE: need({"comm_src", "comm_size", "comm_tag"}); break;
        case ChakraProtoMsg::COMM_COLL_NODE: need({"comm_type", "comm_size"}); break;
        case ChakraProtoMsg::COMP_NODE:
          if (n.duration_micros() == 0 && !has_attr(n, "num_ops")) need({"num_ops", "tensor_size"});
          break;
        case ChakraProtoMsg::INVALID_NODE: problems.push_back(fmt::format("{}: has type INVALID_NODE", where)); break;
        default: break;
      }
      if (auto tag = int_attr(n, "comm_tag"); tag && (*tag < 0 || *tag >= kMaxTag))
        problems.push_back(fmt::format("{}: comm_tag {} is outside [0, 500,000,000)", where, *tag));
    }
    if (!nodes.empty() && !root) problems.push_back(fmt::format("{}: every node has a dependency: nothing can start", file));
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
      problems.push_back(fmt::format("{}: the dependencies form a cycle ({} nodes never become ready, e.g. node {})",
                                     file, nodes.size() - queue.size(), nodes[stuck].id()));
    }
  }
  Pairing pairing = pair_up(files, prefix);
  problems.insert(problems.end(), pairing.problems.begin(), pairing.problems.end());
  return problems;
}

Algorithm from_collective_graph(const std::vector<EtFile>& files, const topo::Topology& t, const std::string& prefix) {
  const int p = static_cast<int>(files.size());
  const std::vector<std::string> problems = check_collective_graph(files, prefix);
  if (!problems.empty())
    throw Error(fmt::format("not a valid collective graph ({} problem{}; `tenet chakra check` lists them): {}",
                            problems.size(), problems.size() == 1 ? "" : "s", problems.front()),
                {prefix});
  const auto& meta = files[0].metadata;
  const auto kind = meta_string(meta, "tenet_collective");
  if (!kind)
    throw Error("this collective graph carries no chunk identities (no tenet_collective metadata, no tenet_chunk "
                "attributes): which data each message moves cannot be determined, so it cannot be verified for "
                "correctness. `tenet chakra check` validates its structure (pairing, sizes, dependencies).",
                {prefix});
  Algorithm a;
  a.collective.kind = synth::parse_collective(*kind);
  // Metadata values checked before anything is sized by them.
  auto meta_in = [&](std::string_view name, int64_t otherwise, int64_t lo, int64_t hi) {
    const int64_t v = meta_int(meta, name).value_or(otherwise);
    if (v < lo || v > hi)
      throw Error(fmt::format("{} {} in the metadata is outside [{}, {}]", name, v, lo, hi), {et_path(prefix, 0)});
    return v;
  };
  a.collective.chunks_per_npu =
      static_cast<int>(meta_in("tenet_chunks_per_npu", 1, 1, topo::kMaxChunksPerNpuOfAlgorithm));
  if (a.collective.kind == synth::CollectiveKind::AllReduce)
    a.collective.all_reduce_chunks =
        static_cast<int>(meta_in("tenet_chunks", 0, 0, std::numeric_limits<int32_t>::max()));
  a.collective.root = static_cast<int>(meta_in("tenet_root", 0, 0, static_cast<int64_t>(files.size()) - 1));
  a.chunk_bytes = meta_in("tenet_chunk_bytes", 0, 0, int64_t{1} << 50);
  a.name = meta_string(meta, "tenet_name").value_or("chakra");
  a.link_model = synth::parse_link_model(meta_string(meta, "tenet_link_model").value_or("pipelined"));
  a.reduce_bandwidth = meta_in("tenet_reduce_bandwidth", 0, 0, int64_t{1'000'000'000'000'000});
  a.serial_channels = meta_in("tenet_serial_channels", 0, 0, 1) == 1;
  {
    const std::string fp = meta_string(meta, "tenet_fingerprint").value_or("0");
    const auto [end, ec] = std::from_chars(fp.data(), fp.data() + fp.size(), a.topology_fingerprint, 16);
    if (ec != std::errc() || end != fp.data() + fp.size())
      throw Error(fmt::format("tenet_fingerprint '{}' in the metadata is not a hexadecimal number", fp), {et_path(prefix, 0)});
  }
  a.topology_name = t.name();
  if (auto ranks = meta_string(meta, "tenet_ranks")) {
    std::stringstream in(*ranks);
    std::string item;
    while (std::getline(in, item, ',')) {
      int npu = -1;
      const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), npu);
      if (ec != std::errc() || end != item.data() + item.size() || npu < 0 || npu >= t.num_npus())
        throw Error(fmt::format("tenet_ranks in the metadata names '{}', not an NPU of the topology (0..{})", item,
                                t.num_npus() - 1),
                    {et_path(prefix, 0)});
      a.collective.ranks.push_back(npu);
    }
  } else {
    for (int r = 0; r < p; ++r) a.collective.ranks.push_back(r);
  }
  if (static_cast<int>(a.collective.ranks.size()) != p)
    throw Error(fmt::format("the metadata names {} ranks but there are {} files", a.collective.ranks.size(), p), {prefix});
  if (auto units = meta_string(meta, "tenet_pair_units")) {  // All-to-Allv: P x P units, row-major
    std::vector<int32_t> matrix;
    std::stringstream in(*units);
    std::string item;
    while (std::getline(in, item, ',')) {
      int32_t u = -1;
      const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), u);
      if (ec != std::errc() || end != item.data() + item.size() || u < 0)
        throw Error(fmt::format("tenet_pair_units in the metadata holds '{}', not a count of units", item), {et_path(prefix, 0)});
      matrix.push_back(u);
    }
    if (a.collective.kind != synth::CollectiveKind::AllToAll)
      throw Error(fmt::format("tenet_pair_units in the metadata of a {}: a traffic matrix is for all-to-all",
                              synth::to_string(a.collective.kind)), {et_path(prefix, 0)});
    try {
      a.collective.set_pair_units(std::move(matrix));
    } catch (const Error& e) {
      throw Error(fmt::format("tenet_pair_units in the metadata: {}", e.message()), {et_path(prefix, 0)});
    }
  }
  a.collective.validate(t);

  // Transfers in the order the sends carry (tenet_transfer), each from its pair.
  Pairing pairing = pair_up(files, prefix);
  struct Item {
    int64_t order;
    Pairing::End send, recv;
  };
  std::vector<Item> items;
  for (auto& [s, rv] : pairing.pairs) {
    const Node& n = files[s.rank].nodes[s.index];
    auto order = int_attr(n, "tenet_transfer");
    auto chunk = int_attr(n, "tenet_chunk");
    if (!order || !chunk)
      throw Error(fmt::format("{}: node {} carries no tenet_transfer/tenet_chunk attribute", et_path(prefix, s.rank), n.id()),
                  {prefix});
    items.push_back({*order, s, rv});
  }
  std::sort(items.begin(), items.end(), [](const Item& x, const Item& y) { return x.order < y.order; });
  // Node -> transfer, to turn node dependencies into transfer dependencies.
  std::vector<std::unordered_map<uint64_t, TransferId>> owner(p);
  for (size_t i = 0; i < items.size(); ++i) {
    owner[items[i].send.rank][files[items[i].send.rank].nodes[items[i].send.index].id()] = static_cast<TransferId>(i);
    owner[items[i].recv.rank][files[items[i].recv.rank].nodes[items[i].recv.index].id()] = static_cast<TransferId>(i);
  }
  for (int r = 0; r < p; ++r)  // reductions belong to the transfer whose receive they follow
    for (const Node& n : files[r].nodes)
      if (n.type() == ChakraProtoMsg::COMP_NODE && n.data_deps_size() == 1)
        if (auto it = owner[r].find(n.data_deps(0)); it != owner[r].end()) owner[r][n.id()] = it->second;
  topo::Router router(t);
  std::vector<TransferId> deps;
  // Routes: Tenet's own (tenet_route) when the file was made for this topology; otherwise the
  // equal-cost route of a pair (parallel links, spines) that has carried the least so far (busiest
  // link, then total), so that the load spreads.
  const bool same_topology = a.topology_fingerprint == t.fingerprint();
  std::map<std::pair<NodeId, NodeId>, std::vector<topo::Route>> spread;  // pair -> its equal-cost routes
  std::vector<int64_t> carried(static_cast<size_t>(t.num_links()), 0);  // messages per link so far
  size_t from_file = 0, spread_out = 0;
  auto file_route = [&](const Node& s, NodeId src, NodeId dst) -> std::vector<LinkId> {
    const auto text = same_topology ? string_attr(s, "tenet_route") : std::nullopt;
    if (!text || text->empty()) return {};
    std::vector<LinkId> route;
    std::stringstream in(*text);
    for (std::string item; std::getline(in, item, ',');) {
      LinkId l = -1;
      const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), l);
      if (ec != std::errc() || end != item.data() + item.size() || l < 0 || l >= t.num_links()) return {};
      route.push_back(l);
    }
    // It must lead from src to dst, link to link.
    NodeId at = src;
    for (LinkId l : route) {
      if (t.link(l).src != at) return {};
      at = t.link(l).dst;
    }
    return at == dst ? route : std::vector<LinkId>{};
  };
  for (size_t i = 0; i < items.size(); ++i) {
    const Node& s = files[items[i].send.rank].nodes[items[i].send.index];
    const NodeId src = a.collective.ranks[items[i].send.rank], dst = a.collective.ranks[items[i].recv.rank];
    std::vector<LinkId> route = file_route(s, src, dst);
    if (!route.empty()) {
      ++from_file;
    } else {
      auto& routes = spread[{src, dst}];
      if (routes.empty()) routes = router.equal_cost_routes(src, dst);
      if (routes.empty())
        throw Error(fmt::format("{}: node {}: ranks {} and {} are not joined by a link or a route through switches or "
                                "router NPUs in this topology",
                                et_path(prefix, items[i].send.rank), s.id(), items[i].send.rank, items[i].recv.rank),
                    {prefix});
      // The busiest link, then the total (the links all routes share tie on the first).
      auto load = [&](const topo::Route& r) {
        int64_t most = 0, sum = 0;
        for (LinkId l : r.links) {
          most = std::max(most, carried[static_cast<size_t>(l)]);
          sum += carried[static_cast<size_t>(l)];
        }
        return std::pair(most, sum);
      };
      route = std::min_element(routes.begin(), routes.end(),
                               [&](const topo::Route& x, const topo::Route& y) { return load(x) < load(y); })
                  ->links;
      for (LinkId l : route) ++carried[static_cast<size_t>(l)];
      ++spread_out;
    }
    deps.clear();
    const auto& mine = owner[items[i].send.rank];
    for (uint64_t d : s.data_deps())
      if (auto it = mine.find(d); it != mine.end() && it->second < static_cast<TransferId>(i)) deps.push_back(it->second);
    // A control dependency on an earlier send over the same first link only orders the two, which
    // the IR's list order already does (a sender's port serves its transfers in list order); others are kept.
    for (uint64_t d : s.ctrl_deps())
      if (auto it = mine.find(d); it != mine.end() && it->second < static_cast<TransferId>(i)) {
        const Transfer& prev = a[it->second];
        const bool same_link = prev.src == src && !a.route(it->second).empty() && a.route(it->second)[0] == route[0];
        if (!same_link) deps.push_back(it->second);
      }
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    a.add(static_cast<ChunkId>(*int_attr(s, "tenet_chunk")), src, dst, route,
          int_attr(s, "tenet_op").value_or(0) ? Op::Reduce : Op::Copy, deps, -1, -1,
          static_cast<Bandwidth>(int_attr(s, "tenet_rate").value_or(0)),
          static_cast<uint16_t>(std::clamp<int64_t>(int_attr(s, "tenet_channel").value_or(0), 0, 65535)));
  }
  a.method = spread_out == 0 ? "routes from the file (tenet_route)"
             : from_file == 0
                 ? "routes chosen on import: of each pair's equal-cost routes, the least loaded so far (the file names none "
                   "for this topology)"
                 : fmt::format("routes from the file for {} messages, chosen on import for {}", from_file, spread_out);
  return a;
}

}  // namespace tenet::chakra
