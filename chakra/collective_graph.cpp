// Export: an algorithm as a collective graph, one ET per rank (CollectiveGraphPlan). The checks are
// in collective_graph_check.cpp, the import in collective_graph_read.cpp.
#include "chakra/collective_graph.hpp"

#include <fmt/compile.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>

#include "chakra/collective_graph_detail.hpp"
#include "synth/cost/protocol_view.hpp"
#include "synth/cost/timing.hpp"
#include "topo/error.hpp"
#include "topo/output_folder.hpp"

namespace tenet::chakra {
namespace {

using synth::Algorithm;
using synth::ChunkId;
using synth::Collective;
using synth::Op;
using synth::Transfer;
using synth::TransferId;
using topo::LinkId;

using detail::kMaxTag;

void add_string(ChakraProtoMsg::GlobalMetadata& m, const std::string& name,
                const std::string& value) {
  set_string(m.add_attr(), name, value);
}
void add_int(ChakraProtoMsg::GlobalMetadata& m, const std::string& name, int64_t value) {
  auto* a = m.add_attr();
  a->set_name(name);
  a->set_int64_val(value);
}

}  // namespace

double reduction_micros(Bytes bytes, Bandwidth reduce_bandwidth) {
  return static_cast<double>(bytes) * 1e6 / static_cast<double>(reduce_bandwidth);
}

LinkWaits parse_link_waits(std::string_view name) {
  if (name == "bytes") return LinkWaits::Bytes;
  if (name == "queue") return LinkWaits::Queue;
  throw Error(fmt::format("unknown link-wait encoding '{}' (bytes, queue)", name));
}

CollectiveGraphPlan::CollectiveGraphPlan(const Algorithm& a, const topo::Topology& t,
                                         const GraphOptions& options)
    : a_(a), options_(options) {
  const Collective& c = a.collective;
  const int p = c.num_ranks();
  rank_of_.assign(static_cast<size_t>(t.num_nodes()), -1);
  for (int r = 0; r < p; ++r) rank_of_[c.ranks[r]] = r;
  if (static_cast<int64_t>(a.size()) >= kMaxTag)
    throw Error(
        fmt::format("{} transfers need more tags than ASTRA-sim allows (500,000,000)", a.size()));

  // Which export the files belong to: a digest of the algorithm (the same for a re-export of the
  // same one), so that a folder mixing ranks of two exports (a killed run, another algorithm
  // written over part of it) is refused by the check and the import.
  uint64_t digest = 1469598103934665603ULL;  // FNV-1a
  auto mix = [&](int64_t v) {
    for (int i = 0; i < 8; ++i)
      digest = (digest ^ static_cast<uint64_t>((v >> (8 * i)) & 0xff)) * 1099511628211ULL;
  };
  mix(p), mix(c.chunks_per_npu), mix(a.chunk_bytes), mix(static_cast<int64_t>(a.size()));
  if (c.all_reduce_chunks > 0) mix(c.all_reduce_chunks);
  for (synth::TransferId id = 0; id < static_cast<synth::TransferId>(a.size()); ++id) {
    const synth::Transfer& x = a[id];
    mix(x.src), mix(x.dst), mix(x.chunk), mix(x.start), mix(x.end);
    if (x.count != 1) mix(x.count);
  }
  set_id_ = fmt::format("{:016x}", digest);

  const size_t n = a.size();
  send_id_.resize(n), recv_id_.resize(n), size_.resize(n);
  for (TransferId id = 0; id < static_cast<TransferId>(n); ++id) size_[id] = a.bytes(id);
  dep_begin_.assign(n + 1, 0);
  std::vector<uint32_t> next_id(static_cast<size_t>(p), 0);  // per rank: the next node id
  std::vector<size_t> items_per_rank(static_cast<size_t>(p) + 1, 0);
  // Flat table (a 1024-NPU All-Gather has a million transfers): the last arrival of each chunk at
  // each rank, -1 for none, and before each arrival the one it followed there: a send reads its
  // chunk as every earlier arrival left it (the IR's implicit data dependency; an All-Reduce's
  // owner sends a chunk on after every reduction into it), so it depends on all of them.
  const size_t chunks = static_cast<size_t>(c.num_chunks());
  // (A transfer of several chunks follows an arrival before it for each chunk it carries.)
  const synth::CarriedChunks places(a);
  std::vector<TransferId> last_arrival(static_cast<size_t>(p) * chunks, -1),
      earlier_arrival(places.size(), -1);
  auto key = [&](int r, ChunkId ch) {
    return static_cast<size_t>(r) * chunks + static_cast<size_t>(ch);
  };
  auto earlier = [&](TransferId e, ChunkId ch) { return earlier_arrival[places.index(e, ch)]; };
  // Calls f(e) for every arrival at rank r of a chunk transfer `id` reads there.
  auto for_each_read = [&](TransferId id, int r, auto&& f) {
    const Transfer& x = a[id];
    if (x.from_input) return;
    for (ChunkId ch = x.chunk; ch < x.chunk + x.count; ++ch)
      for (TransferId e = last_arrival[key(r, ch)]; e >= 0; e = earlier(e, ch)) f(e);
  };
  // For LinkWaits::Bytes: Tenet's arrival of every transfer, and when its data is usable at the
  // destination (after the reduction's COMP node, when there is one): a send's wait is its
  // arrival less when its dependencies were met less what the message itself takes.
  const bool pad = options.link_waits == LinkWaits::Bytes;
  std::vector<Time> end, usable;
  std::optional<synth::ProtocolView> view;  // the coster's topology: under a's protocol
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
    view.emplace(t, a);
    coster.emplace(view->topology(), a);
  }
  if (comp())
    comp_micros_ =
        static_cast<uint64_t>(std::ceil(reduction_micros(a.chunk_bytes, a.reduce_bandwidth)));
  std::vector<uint32_t> data;
  for (TransferId id = 0; id < static_cast<TransferId>(n); ++id) {
    const Transfer& x = a[id];
    const int src = rank_of_.at(x.src), dst = rank_of_.at(x.dst);
    if (src < 0 || dst < 0)
      throw Error(fmt::format(
          "transfer {} goes {} -> {}, and {} is not a rank: a collective graph has nodes for "
          "ranks only (relays outside the communicator and in-network reduction cannot be "
          "expressed)",
          id, t.node(x.src).name, t.node(x.dst).name, t.node(src < 0 ? x.src : x.dst).name));
    // The send depends on the arrival that brought its chunk (none when it sends its rank's input)
    // and on its dependencies at this rank.
    data.clear();
    for_each_read(id, src, [&](TransferId e) { data.push_back(done_id(e)); });
    for (TransferId d : a.deps(id)) {
      if (rank_of_[a[d].dst] == src)
        data.push_back(done_id(d));
      else if (rank_of_[a[d].src] == src)
        data.push_back(send_id_[d]);
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
      for_each_read(id, src, [&](TransferId e) { ready = std::max(ready, usable[e]); });
      for (TransferId d : a.deps(id)) {
        if (rank_of_[a[d].dst] == src)
          ready = std::max(ready, usable[d]);
        else if (rank_of_[a[d].src] == src)
          ready = std::max(ready, end[d]);
      }
      const synth::RouteCost cost = (*coster)(a.route(id));
      const Time wait =
          end[id] - ready - cost.latency - transfer_time(a.bytes(id), cost.bottleneck);
      if (wait > 0)
        size_[id] +=
            static_cast<Bytes>(static_cast<Int128>(wait) * cost.bottleneck / 1'000'000'000'000);
      if (comp() && x.op == Op::Reduce)
        usable[id] = end[id] + static_cast<Time>(comp_micros_) * 1'000'000;
    }
    for (ChunkId ch = x.chunk; ch < x.chunk + x.count; ++ch) {
      earlier_arrival[places.index(id, ch)] = last_arrival[key(dst, ch)];
      last_arrival[key(dst, ch)] = id;
    }
  }
  // Per rank, its transfers in the order their nodes were numbered: 2 id (send) or 2 id + 1
  // (receive).
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
  if (c.all_reduce_chunks > 0)
    add_int(m, "tenet_chunks", c.all_reduce_chunks);  // All-Reduce: C chunks in all
  // All-to-Allv: the P x P unit matrix, in rank 0's file only (the import reads rank 0's metadata).
  if (c.uneven() && r == 0)
    add_string(m, "tenet_pair_units", fmt::format("{}", fmt::join(c.pair_units, ",")));
  add_int(m, "tenet_root", c.root);
  add_int(m, "tenet_chunk_bytes", a_.chunk_bytes);
  add_string(m, "tenet_link_model", std::string(synth::to_string(a_.link_model)));
  if (a_.reduce_bandwidth > 0) add_int(m, "tenet_reduce_bandwidth", a_.reduce_bandwidth);
  if (a_.serial_channels) add_int(m, "tenet_serial_channels", 1);
  if (a_.step_costs) add_int(m, "tenet_step_costs", 1);
  if (!a_.protocol.empty()) add_string(m, "tenet_protocol", a_.protocol);
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
  void attr(std::string_view name, std::string_view value) {
    set_string(n.add_attr(), name, value);
  }
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
      if (x.count == 1)
        fmt::format_to(std::back_inserter(name), FMT_COMPILE("send chunk {} to {}"), x.chunk, dst);
      else
        fmt::format_to(std::back_inserter(name), FMT_COMPILE("send chunks {}..{} to {}"), x.chunk,
                       x.chunk + x.count - 1, dst);
      n.start(next_id++, {name.data(), name.size()}, ChakraProtoMsg::COMM_SEND_NODE);
      for (size_t d = dep_begin_[id]; d < dep_begin_[id + 1]; ++d) n.data_dep(deps_[d]);
      n.attr("comm_dst", static_cast<int64_t>(dst));
      n.attr("comm_tag", tag);
      n.attr("tenet_transfer", static_cast<int64_t>(id));
      n.attr("tenet_chunk", static_cast<int64_t>(x.chunk));
      if (x.count != 1) n.attr("tenet_count", static_cast<int64_t>(x.count));
      if (x.op == Op::Reduce) n.attr("tenet_op", int64_t{1});    // absent: a copy
      if (x.from_input) n.attr("tenet_from_input", int64_t{1});  // absent: the rank's copy
      if (const Bandwidth rate = a_.rate(id); rate > 0)
        n.attr("tenet_rate", static_cast<int64_t>(rate));
      if (x.channel > 0) n.attr("tenet_channel", static_cast<int64_t>(x.channel));
      // The route, so that importing on the same topology gives back the same links (and lanes).
      route.clear();
      for (LinkId l : a_.route(id)) {
        if (route.size()) route.push_back(',');
        fmt::format_to(std::back_inserter(route), FMT_COMPILE("{}"), l);
      }
      n.attr("tenet_route", std::string_view(route.data(), route.size()));
      if (size_[id] != a_.bytes(id))
        n.attr("tenet_wait_bytes", static_cast<int64_t>(size_[id] - a_.bytes(id)));
      n.attr("comm_size", static_cast<int64_t>(size_[id]));
      n.finish();
    } else {
      if (x.count == 1)
        fmt::format_to(std::back_inserter(name), FMT_COMPILE("recv chunk {} from {}"), x.chunk,
                       src);
      else
        fmt::format_to(std::back_inserter(name), FMT_COMPILE("recv chunks {}..{} from {}"), x.chunk,
                       x.chunk + x.count - 1, src);
      const uint64_t recv_id = next_id++;
      n.start(recv_id, {name.data(), name.size()}, ChakraProtoMsg::COMM_RECV_NODE);
      n.attr("comm_src", static_cast<int64_t>(src));
      n.attr("comm_size", static_cast<int64_t>(size_[id]));
      n.attr("comm_tag", tag);  // the send carries the transfer's identity; a receive its tag only
      n.finish();
      if (comp() && x.op == Op::Reduce) {  // at 0 a reduction takes no time: no node
        name.clear();
        fmt::format_to(std::back_inserter(name), FMT_COMPILE("reduce chunk {}"), x.chunk);
        if (x.count != 1)
          fmt::format_to(std::back_inserter(name), FMT_COMPILE("..{}"), x.chunk + x.count - 1);
        n.start(next_id++, {name.data(), name.size()}, ChakraProtoMsg::COMP_NODE);
        n.data_dep(recv_id);
        n.duration_micros(comp_micros_);
        n.attr("num_ops", static_cast<int64_t>(a_.bytes(id) / 4));
        n.attr("tensor_size", static_cast<int64_t>(a_.bytes(id)));
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

NodeGraph CollectiveGraphPlan::node_graph() const {
  // Nodes in transfer order (a send, its receive, the reduction's COMP node): the emulation meets
  // them roughly in that order, so it walks memory forwards instead of jumping between ranks.
  const int p = num_ranks();
  const size_t n = a_.size();
  NodeGraph g;
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
  auto place = [&](NodeGraph::Node node) {
    global[local_begin[node.rank] + node.id] = g.nodes.size();
    g.nodes.push_back(node);
  };
  for (TransferId id = 0; id < static_cast<TransferId>(n); ++id) {
    const Transfer& x = a_[id];
    const int src = rank_of_[x.src], dst = rank_of_[x.dst];
    const int64_t tag = id + 1;
    // Its dependencies are nodes of earlier transfers at the sender, placed already.
    for (size_t d = dep_begin_[id]; d < dep_begin_[id + 1]; ++d)
      g.deps.push_back(global[local_begin[src] + deps_[d]]);
    place({ChakraProtoMsg::COMM_SEND_NODE, src, dst, static_cast<int64_t>(size_[id]), tag, 0,
           send_id_[id]});
    g.dep_begin.push_back(g.deps.size());
    place({ChakraProtoMsg::COMM_RECV_NODE, dst, src, static_cast<int64_t>(size_[id]), tag, 0,
           recv_id_[id]});
    g.dep_begin.push_back(g.deps.size());
    if (comp() && x.op == Op::Reduce) {
      g.deps.push_back(g.nodes.size() - 1);  // after the receive
      place({ChakraProtoMsg::COMP_NODE, dst, -1, 0, 0, comp_micros_, recv_id_[id] + 1});
      g.dep_begin.push_back(g.deps.size());
    }
  }
  return g;
}

std::vector<EtFile> to_collective_graph(const Algorithm& a, const topo::Topology& t,
                                        const GraphOptions& options) {
  const CollectiveGraphPlan plan(a, t, options);
  std::vector<EtFile> files;
  files.reserve(static_cast<size_t>(plan.num_ranks()));
  for (int r = 0; r < plan.num_ranks(); ++r) files.push_back(plan.rank(r));
  return files;
}

std::vector<std::string> write_collective_graph(const Algorithm& a, const topo::Topology& t,
                                                const std::string& dir, const std::string& stem,
                                                const GraphOptions& options) {
  return write_collective_graph(to_collective_graph(a, t, options), dir, stem);
}

std::vector<std::string> write_collective_graph(const std::vector<EtFile>& files,
                                                const std::string& dir, const std::string& stem) {
  topo::OutputFolder out(dir);
  stage_collective_graph(files, out, "", stem);
  return out.commit();
}

void stage_collective_graph(const std::vector<EtFile>& files, topo::OutputFolder& out,
                            const std::string& subdir, const std::string& stem) {
  stage_et_set(
      files, out,
      (std::filesystem::path(subdir) / stem).string());  // ranks of an earlier, larger export go
}

void stage_collective_graph(const CollectiveGraphPlan& plan, topo::OutputFolder& out,
                            const std::string& subdir, const std::string& stem) {
  stage_et_set(
      plan.num_ranks(), [&](int r) { return plan.rank_bytes(r); }, out,
      (std::filesystem::path(subdir) / stem).string());
}

}  // namespace tenet::chakra
