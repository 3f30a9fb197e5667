#include "synth/msccl_xml.hpp"

#include <fmt/format.h>
#include <pugixml.hpp>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <limits>
#include <map>
#include <numeric>
#include <sstream>
#include <unordered_map>

#include "topo/limits.hpp"
#include "topo/error.hpp"
#include "topo/routing.hpp"

namespace tenet::synth {
namespace {

constexpr int kMaxBlocksPerChannel = 32, kMaxChannels = 32;
constexpr ChunkId kGarbage = -1;  // a slot's content when it was copied from a slot never written
// Thread-block steps and thread blocks per GPU each runtime accepts (executor: its default build's
// MSCCL_MAX_NUM_STEPS; legacy: MSCCL_MAX_NUM_STEPS 256, 108 * 2 thread blocks).
struct RuntimeLimits {
  int steps, blocks;
};
RuntimeLimits limits_of(MscclRuntime r) { return r == MscclRuntime::Legacy ? RuntimeLimits{256, 216} : RuntimeLimits{64, 1024}; }

struct Slot {
  char buf = 'i';  // 'i' input, 'o' output, 's' scratch
  int off = 0;
  bool operator<(const Slot& o) const { return buf != o.buf ? buf < o.buf : off < o.off; }
};

std::string_view coll_name(CollectiveKind k, MscclRuntime runtime) {
  switch (k) {
    case CollectiveKind::AllReduce: return "allreduce";
    case CollectiveKind::AllGather: return "allgather";
    case CollectiveKind::ReduceScatter: return runtime == MscclRuntime::Legacy ? "reduce_scatter" : "reducescatter";
    case CollectiveKind::AllToAll: return "alltoall";
    default: return "";
  }
}

// Where chunk c lives at rank r: the layout of the MSCCL buffers for each collective.
class Layout {
 public:
  explicit Layout(const Collective& c) : c_(c), p_(c.num_ranks()), k_(c.chunks_per_npu), scratch_(p_) {}
  Slot at(int r, ChunkId ch) {
    switch (c_.kind) {
      case CollectiveKind::AllReduce:
      case CollectiveKind::ReduceScatter: return {'i', ch};
      case CollectiveKind::AllGather: return c_.origin(ch) == r ? Slot{'i', ch % k_} : Slot{'o', ch};
      case CollectiveKind::AllToAll: {
        const int s = ch / k_ / p_, d = (ch / k_) % p_, j = ch % k_;
        if (r == s) return {'i', d * k_ + j};
        if (r == d) return {'o', s * k_ + j};
        auto [it, added] = scratch_[r].emplace(ch, static_cast<int>(scratch_[r].size()));
        return {'s', it->second};
      }
      default: return {};
    }
  }
  int scratch(int r) const { return static_cast<int>(scratch_[r].size()); }

 private:
  const Collective& c_;
  int p_, k_;
  std::vector<std::map<ChunkId, int>> scratch_;
};

struct Step {
  std::string type;
  Slot src, dst;
  int depid = -1, deps = -1;
  bool hasdep = false;
};
struct Block {
  int send = -1, recv = -1, chan = 0;
  std::vector<Step> steps;
  // Per step, a sparse vector clock: (thread block, its latest step known to have completed when
  // this step completes), sorted by block; the block itself appears with this step.
  std::vector<std::vector<std::pair<int, int>>> clocks;
};
struct StepRef {
  int tb, s;
};

// The thread blocks of one rank.
struct Gpu {
  std::vector<Block> blocks;
  std::map<std::tuple<int, int, int>, int> index;  // (send peer, recv peer, channel) -> block
  std::map<Slot, StepRef> written;                  // the last step that wrote each slot
  std::map<Slot, std::vector<StepRef>> read;         // the steps that read it since
  std::vector<int> per_channel = std::vector<int>(kMaxChannels, 0);
  RuntimeLimits limits{64, 1024};
  int block(int send, int recv, int chan) {
    auto [it, added] = index.emplace(std::tuple(send, recv, chan), static_cast<int>(blocks.size()));
    if (added) {
      blocks.push_back({send, recv, chan, {}, {}});
      ++per_channel[chan];
    }
    return it->second;
  }
  bool room(int send, int recv, int chan, int steps) const {
    auto it = index.find(std::tuple(send, recv, chan));
    if (it == index.end())
      return per_channel[chan] < kMaxBlocksPerChannel && static_cast<int>(blocks.size()) < limits.blocks && steps <= limits.steps;
    return static_cast<int>(blocks[it->second].steps.size()) + steps <= limits.steps;
  }
  // The dependencies a step of block `tb` (-1: a block still to be made) must state: a thread
  // block runs its steps in order, so its own earlier steps, all but the latest step of each
  // other block, and steps no later than one an earlier step of this block already waited for
  // are implied. (Every dependency past the first costs a nop step, and the runtimes load at most
  // 4095 XML nodes per rank.)
  using Clock = std::vector<std::pair<int, int>>;
  // A clock keeps at most this many blocks (those of the latest steps): forgetting one only
  // prunes less, and it bounds the memory of exports with a thousand thread blocks per GPU.
  static constexpr size_t kClockEntries = 32;
  static int at(const Clock& clock, int tb) {
    auto it = std::lower_bound(clock.begin(), clock.end(), std::pair(tb, std::numeric_limits<int>::min()));
    return it != clock.end() && it->first == tb ? it->second : -1;
  }
  static void merge(Clock& into, const Clock& other) {
    Clock out;
    out.reserve(into.size() + other.size());
    size_t i = 0, j = 0;
    while (i < into.size() || j < other.size()) {
      if (j == other.size() || (i < into.size() && into[i].first < other[j].first)) out.push_back(into[i++]);
      else if (i == into.size() || other[j].first < into[i].first) out.push_back(other[j++]);
      else {
        out.emplace_back(into[i].first, std::max(into[i].second, other[j].second));
        ++i;
        ++j;
      }
    }
    if (out.size() > kClockEntries) {  // keep the blocks with the latest steps
      std::nth_element(out.begin(), out.begin() + kClockEntries, out.end(),
                       [](const auto& x, const auto& y) { return x.second > y.second; });
      out.resize(kClockEntries);
      std::sort(out.begin(), out.end());
    }
    into = std::move(out);
  }
  static void set(Clock& clock, int tb, int s) { merge(clock, Clock{{tb, s}}); }
  const Clock& clock_of(StepRef r) const { return blocks[r.tb].clocks[r.s]; }
  std::vector<StepRef> pruned(int tb, std::vector<StepRef> deps) const {
    std::map<int, int> latest;
    for (const StepRef& d : deps)
      if (d.tb != tb) latest[d.tb] = std::max(latest.count(d.tb) ? latest[d.tb] : -1, d.s);
    static const Clock kNone;
    const Clock& known = tb >= 0 && !blocks[tb].clocks.empty() ? blocks[tb].clocks.back() : kNone;
    std::vector<StepRef> out;
    for (auto [other, s] : latest) {
      bool implied = at(known, other) >= s;  // an earlier step of this block waited for it
      for (auto [by, by_s] : latest)         // another dependency completes after it
        if (!implied && by != other) implied = at(clock_of({by, by_s}), other) >= s;
      if (!implied) out.push_back({other, s});
    }
    return out;
  }
  int needed(int send, int recv, int chan, const std::vector<StepRef>& deps) const {
    auto it = index.find(std::tuple(send, recv, chan));
    return static_cast<int>(std::max<size_t>(1, pruned(it == index.end() ? -1 : it->second, deps).size()));
  }
  // Appends a step to block `tb` that waits for `deps` (other blocks' steps): the first as the
  // step's own dependency, the rest as nops.
  StepRef append(int tb, Step step, std::vector<StepRef> deps) {
    deps = pruned(tb, std::move(deps));
    Clock clock = blocks[tb].clocks.empty() ? Clock() : blocks[tb].clocks.back();
    for (const StepRef& d : deps) merge(clock, clock_of(d));
    for (size_t i = 1; i < deps.size(); ++i) {
      set(clock, tb, static_cast<int>(blocks[tb].steps.size()));
      blocks[tb].clocks.push_back(clock);
      blocks[deps[i].tb].steps[deps[i].s].hasdep = true;
      blocks[tb].steps.push_back({"nop", {}, {}, deps[i].tb, deps[i].s, false});
    }
    if (!deps.empty()) {
      blocks[deps[0].tb].steps[deps[0].s].hasdep = true;
      step.depid = deps[0].tb;
      step.deps = deps[0].s;
    }
    set(clock, tb, static_cast<int>(blocks[tb].steps.size()));
    blocks[tb].clocks.push_back(std::move(clock));
    blocks[tb].steps.push_back(std::move(step));
    return {tb, static_cast<int>(blocks[tb].steps.size()) - 1};
  }
  // Reading a slot waits for its last write; writing it waits for that and for the reads since.
  std::vector<StepRef> before_read(const Slot& s) const {
    std::vector<StepRef> out;
    if (auto it = written.find(s); it != written.end()) out.push_back(it->second);
    return out;
  }
  std::vector<StepRef> before_write(const Slot& s) const {
    std::vector<StepRef> out = before_read(s);
    if (auto it = read.find(s); it != read.end()) out.insert(out.end(), it->second.begin(), it->second.end());
    return out;
  }
  void did_read(const Slot& s, StepRef r) { read[s].push_back(r); }
  void did_write(const Slot& s, StepRef r) {
    written[s] = r;
    read[s].clear();
  }
};

}  // namespace

std::string to_msccl_xml(const Algorithm& a, const MscclOptions& options) {
  const Collective& c = a.collective;
  const std::string_view coll = coll_name(c.kind, options.runtime);
  const RuntimeLimits limits = limits_of(options.runtime);
  if (options.min_bytes < 0 || options.max_bytes <= options.min_bytes)
    throw Error(fmt::format("MSCCL-XML size range [{}, {}] is empty", options.min_bytes, options.max_bytes));
  if (coll.empty())
    throw Error(fmt::format("MSCCL-XML export supports all-reduce, all-gather, reduce-scatter and all-to-all, not {}",
                            to_string(c.kind)));
  if (c.uneven())  // the runtime's alltoall cuts every rank's buffer into P equal blocks
    throw Error("MSCCL-XML cannot express an all-to-allv (uneven traffic): the MSCCL runtime's alltoall gives every "
                "pair an equal block of the buffer; export it as Chakra or JSON");
  const int p = c.num_ranks(), k = c.chunks_per_npu;
  std::vector<int> rank_of;
  for (int r = 0; r < p; ++r) {
    if (c.ranks[r] >= static_cast<int>(rank_of.size())) rank_of.resize(c.ranks[r] + 1, -1);
    rank_of[c.ranks[r]] = r;
  }
  auto rank = [&](NodeId v) { return v < static_cast<int>(rank_of.size()) ? rank_of[v] : -1; };
  Layout layout(c);
  std::vector<Gpu> gpus(p);
  for (Gpu& g : gpus) g.limits = limits;
  // Local copies into the output buffer: own chunks first (All-Gather), chunks to oneself
  // (All-to-All).
  auto local_copy = [&](int r, Slot from, Slot to) {
    Gpu& g = gpus[r];
    std::vector<StepRef> deps = g.before_read(from), more = g.before_write(to);
    deps.insert(deps.end(), more.begin(), more.end());
    int chan = 0;
    while (!g.room(-1, -1, chan, g.needed(-1, -1, chan, deps))) {
      if (++chan == kMaxChannels) throw Error("MSCCL-XML: local copies exceed the runtime's thread block limits");
    }
    const int tb = g.block(-1, -1, chan);
    StepRef ref = g.append(tb, {"cpy", from, to}, deps);
    g.did_read(from, ref);
    g.did_write(to, ref);
  };
  if (c.kind == CollectiveKind::AllGather)
    for (int r = 0; r < p; ++r)
      for (int j = 0; j < k; ++j) local_copy(r, {'i', j}, {'o', r * k + j});
  if (c.kind == CollectiveKind::AllToAll)
    for (int r = 0; r < p; ++r)
      for (int j = 0; j < k; ++j) local_copy(r, {'i', r * k + j}, {'o', r * k + j});

  // (src rank, dst rank, IR channel) -> current channel: the IR's channels become MSCCL's, and a
  // channel whose thread blocks are full moves on to the next.
  std::map<std::tuple<int, int, int>, int> channel;
  std::vector<StepRef> send_step(a.size()), recv_step(a.size());
  // Parallel links between a pair (DGX-1's doubled NVLinks) are lanes: the transfers on each get
  // their own channel, hence their own thread blocks, so that the runtime runs them side by side.
  std::map<std::pair<NodeId, NodeId>, std::vector<LinkId>> lanes;  // pair -> first links used, sorted
  int ir_channels = 1;
  for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id) {
    ir_channels = std::max(ir_channels, a[id].channel + 1);
    if (a.route(id).size() == 1) lanes[{a[id].src, a[id].dst}].push_back(a.route(id)[0]);
  }
  for (auto& [pair, links] : lanes) {
    std::sort(links.begin(), links.end());
    links.erase(std::unique(links.begin(), links.end()), links.end());
  }
  auto lane_of = [&](TransferId id) -> int {
    if (a.route(id).size() != 1) return 0;
    const auto& links = lanes[{a[id].src, a[id].dst}];
    return static_cast<int>(std::lower_bound(links.begin(), links.end(), a.route(id)[0]) - links.begin());
  };
  for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id) {
    const Transfer& x = a[id];
    const int from = rank(x.src), to = rank(x.dst);
    if (from < 0 || to < 0)
      throw Error(fmt::format("transfer {} involves node {}, which is not a rank: MSCCL-XML has GPUs of the "
                              "communicator only",
                              id, from < 0 ? x.src : x.dst));
    const Slot src = layout.at(from, x.chunk), dst = layout.at(to, x.chunk);
    std::vector<StepRef> send_deps = gpus[from].before_read(src), recv_deps = gpus[to].before_write(dst);
    for (TransferId d : a.deps(id)) {
      if (rank(a[d].dst) == from) send_deps.push_back(recv_step[d]);
      if (rank(a[d].src) == from) send_deps.push_back(send_step[d]);
    }
    const int lane = lane_of(id), first = x.channel + lane * ir_channels;
    int& chan = channel.try_emplace({from, to, first}, std::min<int>(first, kMaxChannels - 1)).first->second;
    while (!gpus[from].room(to, -1, chan, gpus[from].needed(to, -1, chan, send_deps)) ||
           !gpus[to].room(-1, from, chan, gpus[to].needed(-1, from, chan, recv_deps)))
      if (++chan == kMaxChannels)
        throw Error(fmt::format("MSCCL-XML: the algorithm needs more than {} channels of {} thread blocks of {} steps "
                                "(rank {} to rank {}); the runtime would not load it",
                                kMaxChannels, kMaxBlocksPerChannel, limits.steps, from, to));
    const int stb = gpus[from].block(to, -1, chan), rtb = gpus[to].block(-1, from, chan);
    send_step[id] = gpus[from].append(stb, {"s", src, dst}, send_deps);
    gpus[from].did_read(src, send_step[id]);
    recv_step[id] = gpus[to].append(rtb, {x.op == Op::Reduce ? "rrc" : "r", src, dst}, recv_deps);
    gpus[to].did_write(dst, recv_step[id]);
  }
  if (c.kind == CollectiveKind::ReduceScatter)  // each rank's block, reduced, into its output
    for (int r = 0; r < p; ++r)
      for (int j = 0; j < k; ++j) local_copy(r, {'i', r * k + j}, {'o', j});

  int channels = 1;
  for (const Gpu& g : gpus)
    for (const Block& b : g.blocks) channels = std::max(channels, b.chan + 1);
  // Both runtimes store at most 4095 XML nodes per rank: the <algo>, every <gpu>, and this rank's
  // thread blocks and steps (microsoft/msccl src/graph/xml.h MAX_NODES, and the executor's copy).
  for (int r = 0; r < p; ++r) {
    size_t nodes = 1 + static_cast<size_t>(p) + gpus[r].blocks.size();
    for (const Block& b : gpus[r].blocks) nodes += b.steps.size();
    if (nodes > 4095)
      throw Error(fmt::format("MSCCL-XML: rank {} needs {} XML nodes (its thread blocks and steps, every <gpu>); both "
                              "runtimes load at most 4095 per rank: export with fewer chunks per NPU",
                              r, nodes));
  }
  pugi::xml_document doc;
  pugi::xml_node algo = doc.append_child("algo");
  algo.append_attribute("name") = (options.name.empty() ? a.name : options.name).c_str();
  algo.append_attribute("proto") = options.protocol.c_str();
  algo.append_attribute("nchannels") = channels;
  const int per_loop = c.kind == CollectiveKind::AllReduce ? c.num_chunks() : p * k;
  algo.append_attribute("nchunksperloop") = per_loop;
  algo.append_attribute("ngpus") = p;
  algo.append_attribute("coll") = std::string(coll).c_str();
  const bool in_place = c.kind == CollectiveKind::AllReduce;
  algo.append_attribute("inplace") = in_place ? 1 : 0;
  algo.append_attribute("outofplace") = in_place ? 0 : 1;
  algo.append_attribute("minBytes") = static_cast<long long>(options.min_bytes);
  algo.append_attribute("maxBytes") = static_cast<long long>(options.max_bytes);
  for (int r = 0; r < p; ++r) {
    pugi::xml_node gpu = algo.append_child("gpu");
    gpu.append_attribute("id") = r;
    const int in = c.kind == CollectiveKind::AllGather ? k : p * k;
    const int out = c.kind == CollectiveKind::AllReduce ? 0 : c.kind == CollectiveKind::ReduceScatter ? k : p * k;
    gpu.append_attribute("i_chunks") = in;
    gpu.append_attribute("o_chunks") = out;
    gpu.append_attribute("s_chunks") = layout.scratch(r);
    for (size_t b = 0; b < gpus[r].blocks.size(); ++b) {
      const Block& blk = gpus[r].blocks[b];
      pugi::xml_node tb = gpu.append_child("tb");
      tb.append_attribute("id") = static_cast<int>(b);
      tb.append_attribute("send") = blk.send;
      tb.append_attribute("recv") = blk.recv;
      tb.append_attribute("chan") = blk.chan;
      for (size_t s = 0; s < blk.steps.size(); ++s) {
        const Step& st = blk.steps[s];
        pugi::xml_node step = tb.append_child("step");
        step.append_attribute("s") = static_cast<int>(s);
        step.append_attribute("type") = st.type.c_str();
        step.append_attribute("srcbuf") = std::string(1, st.src.buf).c_str();
        step.append_attribute("srcoff") = st.src.off;
        step.append_attribute("dstbuf") = std::string(1, st.dst.buf).c_str();
        step.append_attribute("dstoff") = st.dst.off;
        step.append_attribute("cnt") = st.type == "nop" ? 0 : 1;
        step.append_attribute("depid") = st.depid;
        step.append_attribute("deps") = st.deps;
        step.append_attribute("hasdep") = st.hasdep ? 1 : 0;
      }
    }
  }
  // Tenet's own notes, in a comment the runtime ignores: the chunk size, and the global order of
  // the transfers (gpu.tb.s of each send step), so that importing gives back the same schedule.
  std::string order;
  order.reserve(a.size() * 8);
  for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id)
    order += fmt::format("{}{}.{}.{}", id ? " " : "", rank(a[id].src), send_step[id].tb, send_step[id].s);
  // The lane (which of parallel links) of each transfer that has a choice, by send step.
  std::string lane_note;
  for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id)
    if (const int lane = lane_of(id); lane > 0)
      lane_note += fmt::format(" {}.{}.{}={}", rank(a[id].src), send_step[id].tb, send_step[id].s, lane);
  doc.prepend_child(pugi::node_comment).set_value(
      fmt::format(" tenet chunk_bytes={}{} order: {} ", a.chunk_bytes, lane_note.empty() ? "" : " lanes:" + lane_note + " ;",
                  order)
          .c_str());
  std::ostringstream out;
  // No `<?xml ...?>` declaration: both runtimes' tokenizers stop at it ("expected >, got '?'").
  doc.save(out, "  ", pugi::format_default | pugi::format_no_declaration);
  return out.str();
}

namespace {

struct XmlStep {
  int gpu, tb, s;
  std::string type;
  Slot src, dst;
  int cnt;
  int depid, deps;
  size_t line;
};

}  // namespace

MscclRuntime parse_msccl_runtime(std::string_view name) {
  if (name == "executor") return MscclRuntime::Executor;
  if (name == "legacy") return MscclRuntime::Legacy;
  throw Error(fmt::format("unknown MSCCL runtime '{}' (executor: Azure/msccl-executor-nccl; legacy: microsoft/msccl)", name));
}

Algorithm parse_msccl_xml(std::string_view text, const topo::Topology& t, const std::string& file) {
  MscclImport in = import_msccl_xml(text, t, file);
  if (!in.buffer_problems.empty())
    throw Error(fmt::format("its buffers end wrong ({} problem{}; `tenet verify` lists them): {}", in.buffer_problems.size(),
                            in.buffer_problems.size() == 1 ? "" : "s", in.buffer_problems.front()),
                {file});
  return std::move(in.algorithm);
}

MscclImport import_msccl_xml(std::string_view text, const topo::Topology& t, const std::string& file) {
  MscclImport result;
  std::vector<std::string>& warnings = result.warnings;
  pugi::xml_document doc;
  const std::string buffer(text);
  auto line_of = [&](ptrdiff_t offset) {
    return static_cast<int>(1 + std::count(buffer.begin(), buffer.begin() + std::min<ptrdiff_t>(offset, buffer.size()), '\n'));
  };
  const pugi::xml_parse_result parsed =
      doc.load_buffer(buffer.data(), buffer.size(), pugi::parse_default | pugi::parse_comments);
  if (!parsed)
    throw Error(fmt::format("not valid XML: {}", parsed.description()), {file, line_of(parsed.offset)});
  const pugi::xml_node algo = doc.child("algo");
  if (!algo) throw Error("not MSCCL-XML: no <algo> element", {file});
  auto fail = [&](const pugi::xml_node& n, const std::string& what) -> Error {
    return Error(what, {file, line_of(n.offset_debug())});
  };
  auto attr_int = [&](const pugi::xml_node& n, const char* name) {
    const pugi::xml_attribute at = n.attribute(name);
    if (!at) throw fail(n, fmt::format("<{}> lacks the attribute {}", n.name(), name));
    const std::string v = at.value();
    try {
      size_t used = 0;
      const int x = std::stoi(v, &used);
      if (used != v.size()) throw std::invalid_argument(v);
      return x;
    } catch (const std::exception&) {
      throw fail(n, fmt::format("<{}> attribute {}='{}' is not a whole number", n.name(), name, v));
    }
  };
  // What each runtime requires (msccl-tools writes some only): warnings, not errors.
  for (const char* legacy : {"name", "proto", "inplace"})
    if (!algo.attribute(legacy))
      warnings.push_back(fmt::format("<algo> lacks {}: the legacy runtime (microsoft/msccl) would not load this file", legacy));
  for (const char* executor : {"proto", "minBytes", "maxBytes", "outofplace"})
    if (!algo.attribute(executor))
      warnings.push_back(fmt::format("<algo> lacks {}: the executor runtime (msccl-executor-nccl) would not load this file",
                                     executor));
  const bool in_place = algo.attribute("inplace") && attr_int(algo, "inplace") != 0;
  const int p = attr_int(algo, "ngpus"), per_loop = attr_int(algo, "nchunksperloop");
  if (p < 2) throw fail(algo, "ngpus must be at least 2");
  if (p > t.num_npus()) throw fail(algo, fmt::format("ngpus is {}, but the topology has {} NPUs", p, t.num_npus()));
  const std::string coll = algo.attribute("coll").value();
  Algorithm a;
  a.name = algo.attribute("name").value();
  if (coll == "allreduce") a.collective.kind = CollectiveKind::AllReduce;
  else if (coll == "allgather") a.collective.kind = CollectiveKind::AllGather;
  else if (coll == "reducescatter" || coll == "reduce_scatter") a.collective.kind = CollectiveKind::ReduceScatter;
  else if (coll == "alltoall") a.collective.kind = CollectiveKind::AllToAll;
  else
    throw fail(algo, fmt::format("coll='{}' cannot be imported (allreduce, allgather, reducescatter or reduce_scatter, "
                                 "alltoall)",
                                 coll));
  if (in_place && a.collective.kind == CollectiveKind::AllToAll)
    throw fail(algo, "an in-place All-to-All cannot be imported (its output overwrites input still to be sent)");
  // All-Reduce chunks belong to no rank, so MSCCL's may number fewer than the GPUs (msccl-tools'
  // allreduce_a100_ncv4: 2 chunks on 4 GPUs); the IR wants a multiple of the ranks, so each XML
  // chunk becomes `split` IR chunks that travel together.
  int split = 1;
  if (per_loop < 1) throw fail(algo, fmt::format("nchunksperloop {} must be at least 1", per_loop));
  if (a.collective.kind == CollectiveKind::AllReduce) split = p / std::gcd(per_loop, p);
  else if (per_loop < p || per_loop % p != 0)
    throw fail(algo, fmt::format("nchunksperloop {} is not a multiple of ngpus {}", per_loop, p));
  if (static_cast<int64_t>(per_loop) * split / p > topo::kMaxChunksPerNpuOfAlgorithm)
    throw fail(algo, fmt::format("nchunksperloop {} makes {} chunks per NPU, over Tenet's limit of {}", per_loop,
                                 static_cast<int64_t>(per_loop) * split / p, topo::kMaxChunksPerNpuOfAlgorithm));
  const int k = per_loop * split / p;
  for (int r = 0; r < p; ++r) a.collective.ranks.push_back(r);
  a.collective.chunks_per_npu = k;
  // MSCCL-XML carries no size (the runtime picks it per call) nor a global order; Tenet's exports
  // leave both in a comment.
  a.chunk_bytes = 1 << 20;
  std::map<std::tuple<int, int, int>, int64_t> tenet_order;  // send step (gpu, tb, s) -> position
  std::map<std::tuple<int, int, int>, int> tenet_lane;       // send step (gpu, tb, s) -> lane, when not 0
  for (pugi::xml_node n = doc.first_child(); n; n = n.next_sibling()) {
    if (n.type() != pugi::node_comment) continue;
    std::istringstream note(n.value());
    std::string word;
    note >> word;
    if (word != "tenet") continue;
    while (note >> word) {
      if (word.rfind("chunk_bytes=", 0) == 0) {
        const std::string v = word.substr(12);
        int64_t bytes = 0;
        const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), bytes);
        if (ec != std::errc() || end != v.data() + v.size() || bytes < 1)
          throw fail(n, fmt::format("Tenet's note says chunk_bytes={}, which is not a positive whole number", v));
        a.chunk_bytes = bytes;
      }
      if (word == "lanes:")
        for (std::string ref; note >> ref && ref != ";";) {
          int g = 0, tb = 0, st = 0, lane = 0;
          if (std::sscanf(ref.c_str(), "%d.%d.%d=%d", &g, &tb, &st, &lane) == 4) tenet_lane[{g, tb, st}] = lane;
        }
      if (word == "order:") {
        int64_t position = 0;
        for (std::string ref; note >> ref; ++position) {
          int g = 0, tb = 0, st = 0;
          if (std::sscanf(ref.c_str(), "%d.%d.%d", &g, &tb, &st) == 3) tenet_order[{g, tb, st}] = position;
        }
      }
    }
  }
  a.topology_name = t.name();

  // In place, the input and output buffers are one: All-Reduce's output is its input, All-Gather's
  // input is its own block of the output, Reduce-Scatter's output is its own block of the input.
  // Every slot is named by its place in the buffer that holds the whole.
  auto canon = [&](int gpu, Slot s) -> Slot {
    if (!in_place) return s;
    switch (a.collective.kind) {
      case CollectiveKind::AllReduce: return s.buf == 'o' ? Slot{'i', s.off} : s;
      case CollectiveKind::AllGather: return s.buf == 'i' ? Slot{'o', gpu * k + s.off} : s;
      case CollectiveKind::ReduceScatter: return s.buf == 'o' ? Slot{'i', gpu * k + s.off} : s;
      default: return s;
    }
  };
  // Steps, and what each buffer slot of each GPU holds at the start.
  std::vector<XmlStep> steps;
  std::map<std::tuple<int, int>, std::tuple<int, int, int>> peers;  // (gpu, tb) -> (send, recv, chan)
  std::map<std::tuple<int, int, int>, size_t> step_at;        // (gpu, tb, s) -> index
  std::vector<std::map<Slot, ChunkId>> holds(p);
  for (int r = 0; r < p; ++r)
    for (int off = 0; off < per_loop; ++off) {
      switch (a.collective.kind) {
        case CollectiveKind::AllGather:
          if (off < k) holds[r][canon(r, {'i', off})] = r * k + off;
          break;
        case CollectiveKind::AllToAll: holds[r][{'i', off}] = (r * p + off / k) * k + off % k; break;
        default: holds[r][{'i', off}] = off;
      }
    }
  std::vector<char> seen_gpu(p, 0);
  for (pugi::xml_node gpu : algo.children("gpu")) {
    const int id = attr_int(gpu, "id");
    if (id < 0 || id >= p) throw fail(gpu, fmt::format("gpu id {} is outside 0..{}", id, p - 1));
    if (seen_gpu[id]++) throw fail(gpu, fmt::format("gpu {} appears twice", id));
    for (pugi::xml_node tb : gpu.children("tb")) {
      const int tid = attr_int(tb, "id"), send = attr_int(tb, "send"), recv = attr_int(tb, "recv");
      const int chan = attr_int(tb, "chan");
      if (chan < 0 || chan >= kMaxChannels) throw fail(tb, fmt::format("chan {} is outside 0..{}", chan, kMaxChannels - 1));
      if (send == id || recv == id) throw fail(tb, "a thread block's peer is its own GPU");
      if (send >= p || recv >= p) throw fail(tb, "a thread block's peer is not a GPU of the algorithm");
      if (peers.count({id, tid})) throw fail(tb, fmt::format("tb id {} appears twice on gpu {}", tid, id));
      peers[{id, tid}] = {send, recv, chan};
      for (pugi::xml_node st : tb.children("step")) {
        XmlStep x{id, tid, attr_int(st, "s"), st.attribute("type").value(), {}, {}, 0, 0, 0, 0};
        x.line = st.offset_debug();
        static const std::vector<std::string> known = {"s", "r", "rcs", "rrs", "rrc", "rrcs", "cpy", "re", "nop"};
        if (std::find(known.begin(), known.end(), x.type) == known.end())
          throw fail(st, fmt::format("unknown step type '{}' (s, r, rcs, rrs, rrc, rrcs, cpy, re, nop)", x.type));
        auto buf = [&](const char* name) {
          const std::string v = st.attribute(name).value();
          if (v != "i" && v != "o" && v != "s") throw fail(st, fmt::format("{}='{}' is not i, o or s", name, v));
          return v[0];
        };
        if (x.type != "nop") {
          x.src = {buf("srcbuf"), attr_int(st, "srcoff")};
          x.dst = {buf("dstbuf"), attr_int(st, "dstoff")};
          x.cnt = attr_int(st, "cnt");
          if (x.cnt < 1) throw fail(st, fmt::format("cnt {} must be at least 1", x.cnt));
        }
        x.depid = attr_int(st, "depid");
        x.deps = attr_int(st, "deps");
        const bool sends = x.type == "s" || x.type == "rcs" || x.type == "rrs" || x.type == "rrcs";
        const bool receives = x.type != "s" && x.type != "cpy" && x.type != "nop" && x.type != "re";
        if (sends && send < 0) throw fail(st, fmt::format("a '{}' step in a thread block with no send peer", x.type));
        if (receives && recv < 0) throw fail(st, fmt::format("a '{}' step in a thread block with no receive peer", x.type));
        step_at[{id, tid, x.s}] = steps.size();
        steps.push_back(std::move(x));
      }
    }
  }
  // Execution order: within a thread block by s, after each step's dependency, and a receive after
  // the send it pairs with (the k-th send a->b on a channel with the k-th receive b<-a there).
  const size_t n = steps.size();
  std::vector<std::vector<size_t>> after(n);
  std::vector<int> indegree(n, 0);
  auto edge = [&](size_t from, size_t to) {
    after[from].push_back(to);
    ++indegree[to];
  };
  std::map<std::tuple<int, int, int>, std::vector<size_t>> sends, recvs;  // (from, to, chan)
  std::map<std::tuple<int, int>, std::vector<size_t>> by_block;
  for (size_t i = 0; i < n; ++i) by_block[{steps[i].gpu, steps[i].tb}].push_back(i);
  for (auto& [blk, list] : by_block) {
    std::sort(list.begin(), list.end(), [&](size_t x, size_t y) { return steps[x].s < steps[y].s; });
    for (size_t j = 1; j < list.size(); ++j) edge(list[j - 1], list[j]);
    const auto [send, recv, ch] = peers[blk];
    for (size_t i : list) {
      const XmlStep& x = steps[i];
      if (x.type == "s" || x.type == "rcs" || x.type == "rrs" || x.type == "rrcs") sends[{x.gpu, send, ch}].push_back(i);
      if (x.type != "s" && x.type != "cpy" && x.type != "nop" && x.type != "re") recvs[{recv, x.gpu, ch}].push_back(i);
    }
  }
  for (size_t i = 0; i < n; ++i)
    if (steps[i].depid >= 0) {
      auto it = step_at.find({steps[i].gpu, steps[i].depid, steps[i].deps});
      if (it == step_at.end())
        throw Error(fmt::format("step {} of tb {} on gpu {} depends on step {} of tb {}, which does not exist", steps[i].s,
                                steps[i].tb, steps[i].gpu, steps[i].deps, steps[i].depid),
                    {file, line_of(static_cast<ptrdiff_t>(steps[i].line))});
      edge(it->second, i);
    }
  std::map<size_t, size_t> partner;  // receiving step -> sending step
  for (auto& [key, list] : sends) {
    auto it = recvs.find(key);
    const size_t have = it == recvs.end() ? 0 : it->second.size();
    if (have != list.size())
      throw Error(fmt::format("gpu {} sends {} times to gpu {} on channel {}, which receives {} times", std::get<0>(key),
                              list.size(), std::get<1>(key), std::get<2>(key), have),
                  {file});
    for (size_t j = 0; j < list.size(); ++j) {
      if (steps[list[j]].cnt != steps[it->second[j]].cnt)
        throw Error(fmt::format("gpu {} step {} sends cnt {} but gpu {} step {} receives cnt {}", steps[list[j]].gpu,
                                steps[list[j]].s, steps[list[j]].cnt, steps[it->second[j]].gpu, steps[it->second[j]].s,
                                steps[it->second[j]].cnt),
                    {file, line_of(static_cast<ptrdiff_t>(steps[it->second[j]].line))});
      partner[it->second[j]] = list[j];
      edge(list[j], it->second[j]);
    }
  }
  for (auto& [key, list] : recvs)
    if (!sends.count(key))
      throw Error(fmt::format("gpu {} receives from gpu {} on channel {}, which never sends there", std::get<1>(key),
                              std::get<0>(key), std::get<2>(key)),
                  {file});
  // Run in that order, following which chunk each slot holds.
  std::vector<size_t> order;
  for (size_t i = 0; i < n; ++i)
    if (indegree[i] == 0) order.push_back(i);
  for (size_t q = 0; q < order.size(); ++q)
    for (size_t j : after[order[q]])
      if (--indegree[j] == 0) order.push_back(j);
  if (order.size() < n) throw Error("the steps' dependencies and pairings form a cycle: the runtime would deadlock", {file});
  std::map<size_t, std::vector<ChunkId>> carried;  // sending step -> chunks it carried
  std::vector<std::tuple<int, int, int>> send_of;   // per transfer, its send step (gpu, tb, s)
  std::map<size_t, std::vector<TransferId>> step_transfers;  // step -> transfers it sent or received
  std::vector<std::map<Slot, std::vector<TransferId>>> writer(p);  // the transfers that last wrote each slot
  std::vector<std::map<Slot, std::pair<int, int>>> written_by(p);  // slot -> (tb, s) of its last write
  // Received, then reduced into the GPU's copy by a 're' step: (transfer, position of the 're').
  std::vector<std::pair<TransferId, size_t>> reduced_later;
  std::vector<size_t> send_position;  // per transfer, the position of its send step in `order`
  std::vector<size_t> land_position;  // per transfer, where its data takes effect: its receive (or a later re step)
  std::vector<size_t> position_of(n);
  for (size_t q = 0; q < order.size(); ++q) position_of[order[q]] = q;
  topo::Router router(t);
  // Which of parallel links a message takes: Tenet's note says; otherwise the pair's channels are
  // dealt over its links in order (msccl-tools puts each link's traffic on its own channel).
  std::map<std::pair<int, int>, std::vector<int>> pair_channels;  // (from, to) -> channels used, sorted
  for (const auto& [key, list] : sends) pair_channels[{std::get<0>(key), std::get<1>(key)}].push_back(std::get<2>(key));
  auto lane_for = [&](const XmlStep& send_step, int to) {
    if (auto it = tenet_lane.find({send_step.gpu, send_step.tb, send_step.s}); it != tenet_lane.end()) return it->second;
    if (!tenet_order.empty()) return 0;  // Tenet's file: no note means the first lane
    const auto& chans = pair_channels[{send_step.gpu, to}];
    const int chan = std::get<2>(peers.at({send_step.gpu, send_step.tb}));
    return static_cast<int>(std::lower_bound(chans.begin(), chans.end(), chan) - chans.begin());
  };
  auto route = [&](NodeId u, NodeId v, int lane) {
    std::vector<LinkId> direct;
    for (LinkId l : t.out_links(u))
      if (t.link(l).dst == v) direct.push_back(l);
    if (!direct.empty()) return std::vector<LinkId>{direct[static_cast<size_t>(lane) % direct.size()]};
    auto r = router.route(u, v);
    if (!r)
      throw Error(fmt::format("gpus {} and {} are not joined by a link or a route through switches or router NPUs", u, v),
                  {file});
    return r->links;
  };
  for (size_t i : order) {
    XmlStep& x = steps[i];
    const int recv = std::get<1>(peers[{x.gpu, x.tb}]);
    auto content = [&](Slot s, int j) -> ChunkId {
      auto it = holds[x.gpu].find(canon(x.gpu, {s.buf, s.off + j}));
      if (it == holds[x.gpu].end() || it->second == kGarbage) {
        // The runtime would move whatever the buffer holds: an incorrect program (exit 3 in
        // `tenet verify`), not an unreadable file. What it writes is garbage too.
        result.buffer_problems.push_back(fmt::format("gpu {} tb {} step {} reads {}[{}], which holds no data at that point "
                                                     "(line {})",
                                                     x.gpu, x.tb, x.s, s.buf, s.off + j, line_of(static_cast<ptrdiff_t>(x.line))));
        return kGarbage;
      }
      return it->second;
    };
    if (x.type == "cpy") {
      for (int j = 0; j < x.cnt; ++j) {
        const Slot to = canon(x.gpu, {x.dst.buf, x.dst.off + j});
        holds[x.gpu][to] = content(x.src, j);
        written_by[x.gpu][to] = {x.tb, x.s};
      }
      continue;
    }
    if (x.type == "re") {
      // A local reduction of the same chunk: in the IR, the transfer that brought the source
      // slot's data reduces into the GPU's copy (one copy of a chunk per node).
      for (int j = 0; j < x.cnt; ++j) {
        const ChunkId from = content(x.src, j), into = content(x.dst, j);
        if (from == kGarbage || into == kGarbage) {
          holds[x.gpu][canon(x.gpu, {x.dst.buf, x.dst.off + j})] = kGarbage;
          continue;
        }
        if (from != into)
          throw Error(fmt::format("gpu {} tb {} step {} reduces chunk {} ({}[{}]) into chunk {} ({}[{}]): different data",
                                  x.gpu, x.tb, x.s, from, x.src.buf, x.src.off + j, into, x.dst.buf, x.dst.off + j),
                      {file, line_of(static_cast<ptrdiff_t>(x.line))});
        if (auto w = writer[x.gpu].find(canon(x.gpu, {x.src.buf, x.src.off + j})); w != writer[x.gpu].end())
          for (TransferId id : w->second) reduced_later.emplace_back(id, position_of[i]);
        written_by[x.gpu][canon(x.gpu, {x.dst.buf, x.dst.off + j})] = {x.tb, x.s};
      }
      continue;
    }
    if (x.type == "nop") continue;
    const bool receives = x.type != "s";
    if (receives) {
      const size_t from = partner.at(i);
      const bool reduce = x.type == "rrs" || x.type == "rrc" || x.type == "rrcs";
      // The send step's own dependencies (its depid/deps and the nops just before it in its
      // thread block), as transfers: what those steps received or sent.
      std::vector<TransferId> explicit_deps;
      {
        const XmlStep& sx = steps[from];
        auto depend = [&](const XmlStep& st) {
          if (st.depid < 0) return;
          auto it = step_at.find({st.gpu, st.depid, st.deps});
          if (it == step_at.end()) return;
          auto t = step_transfers.find(it->second);
          if (t != step_transfers.end()) explicit_deps.insert(explicit_deps.end(), t->second.begin(), t->second.end());
        };
        depend(sx);
        for (int before = sx.s - 1; before >= 0; --before) {
          auto it = step_at.find({sx.gpu, sx.tb, before});
          if (it == step_at.end() || steps[it->second].type != "nop") break;
          depend(steps[it->second]);
        }
      }
      for (int j = 0; j < x.cnt; ++j) {
        const ChunkId ch = carried.at(from)[j];
        if (ch == kGarbage) {  // reported where it was read; no transfer in the IR
          holds[x.gpu][canon(x.gpu, {x.dst.buf, x.dst.off + j})] = kGarbage;
          writer[x.gpu].erase(canon(x.gpu, {x.dst.buf, x.dst.off + j}));
          continue;
        }
        std::vector<TransferId> deps = explicit_deps;
        const Slot src_slot = canon(steps[from].gpu, {steps[from].type == "s" ? steps[from].src.buf : steps[from].dst.buf,
                                                      (steps[from].type == "s" ? steps[from].src.off : steps[from].dst.off) + j});
        if (auto w = writer[steps[from].gpu].find(src_slot); w != writer[steps[from].gpu].end())
          deps.insert(deps.end(), w->second.begin(), w->second.end());
        // In the IR the receiving node keeps what arrives (rrs too, which MSCCL passes on without
        // storing; the chunk's identity is the same).
        std::sort(deps.begin(), deps.end());
        deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
        const int chan = std::get<2>(peers.at({steps[from].gpu, steps[from].tb}));
        const Slot to = canon(x.gpu, {x.dst.buf, x.dst.off + j});
        std::vector<TransferId> ids;
        for (int part = 0; part < split; ++part) {
          const TransferId id = a.add(ch * split + part, recv, x.gpu, route(recv, x.gpu, lane_for(steps[from], x.gpu)),
                                      reduce ? Op::Reduce : Op::Copy,
                                      deps, -1, -1, 0, static_cast<uint16_t>(chan));
          send_of.emplace_back(steps[from].gpu, steps[from].tb, steps[from].s);
          send_position.push_back(position_of[from]);
          land_position.push_back(position_of[i]);
          step_transfers[i].push_back(id);
          step_transfers[from].push_back(id);
          ids.push_back(id);
        }
        holds[x.gpu][to] = ch;
        writer[x.gpu][to] = std::move(ids);
        written_by[x.gpu][to] = {x.tb, x.s};
      }
    }
    if (x.type == "s" || x.type == "rcs" || x.type == "rrs" || x.type == "rrcs") {
      std::vector<ChunkId> chunks;
      for (int j = 0; j < x.cnt; ++j)
        chunks.push_back(x.type == "s" ? content(x.src, j) : receives ? carried.at(partner.at(i))[j] : content(x.dst, j));
      carried[i] = std::move(chunks);
    }
  }
  // The buffers, slot by slot, against the collective's postcondition: a receive into the wrong
  // offset delivers the chunk to the GPU but leaves the output wrong.
  for (int r = 0; r < p; ++r) {
    auto expect = [&](Slot s, ChunkId want) {
      const Slot at = canon(r, s);
      auto it = holds[r].find(at);
      std::string by;
      if (auto w = written_by[r].find(at); w != written_by[r].end())
        by = fmt::format(" (last written by tb {} step {})", w->second.first, w->second.second);
      if (it == holds[r].end() || it->second == kGarbage)
        result.buffer_problems.push_back(fmt::format("gpu {}: {}[{}] ends holding no data{}, not chunk {}", r, s.buf, s.off,
                                                     it == holds[r].end() ? "" : " (only what was never written)", want));
      else if (it->second != want)
        result.buffer_problems.push_back(
            fmt::format("gpu {}: {}[{}] ends holding chunk {}{}, not chunk {}", r, s.buf, s.off, it->second, by, want));
    };
    switch (a.collective.kind) {
      case CollectiveKind::AllReduce:
        for (int c = 0; c < per_loop; ++c) expect({in_place ? 'i' : 'o', c}, c);
        break;
      case CollectiveKind::AllGather:
        for (int c = 0; c < per_loop; ++c) expect({'o', c}, c);
        break;
      case CollectiveKind::ReduceScatter:
        for (int j = 0; j < k; ++j) expect({'o', j}, r * k + j);
        break;
      case CollectiveKind::AllToAll:
        for (int s = 0; s < p; ++s)
          for (int j = 0; j < k; ++j) expect({'o', s * k + j}, (s * p + r) * k + j);
        break;
      default: break;
    }
  }
  // In the IR a GPU holds one copy of a chunk, changed when data arrives, and a send carries the
  // copy as the transfers listed before it left it. That is the program's meaning only if every
  // send of a chunk from a GPU comes after exactly the arrivals (or 're' steps) that precede it in
  // the program: a GPU that sends its own contribution after the data to reduce with it has
  // arrived (an exchange in which both sides reduce) keeps two copies, which the IR cannot hold.
  auto check_one_copy = [&](const Algorithm& alg, const std::vector<size_t>& sent_at, const std::vector<size_t>& landed_at) {
    std::map<std::pair<NodeId, ChunkId>, std::vector<TransferId>> sent_from;
    for (TransferId id = 0; id < static_cast<TransferId>(alg.size()); ++id) sent_from[{alg[id].src, alg[id].chunk}].push_back(id);
    for (TransferId id = 0; id < static_cast<TransferId>(alg.size()); ++id)
      for (TransferId other : sent_from[{alg[id].dst, alg[id].chunk}])
        if ((other > id) != (sent_at[other] >= landed_at[id]))  // a compound step sends what it received
          throw Error(fmt::format("gpu {} sends chunk {} {} what gpu {} sent it takes effect, but Tenet's IR (one copy of "
                                  "a chunk per GPU, changed when data arrives) orders it the other way: this program "
                                  "keeps two copies of the chunk, which the IR cannot represent",
                                  alg[id].dst, alg[id].chunk, sent_at[other] >= landed_at[id] ? "after" : "before",
                                  alg[id].src),
                      {file});
  };
  for (auto [id, re_position] : reduced_later) land_position[id] = re_position;
  // The final order: the exporter's when Tenet's note names every transfer's send step (so that
  // importing gives back the same schedule), else the order of import.
  std::vector<TransferId> order_of(a.size());  // final position -> transfer
  std::iota(order_of.begin(), order_of.end(), TransferId{0});
  bool reorder = !tenet_order.empty();
  std::vector<int64_t> exporter_position(reorder ? a.size() : 0);
  for (TransferId id = 0; reorder && id < static_cast<TransferId>(a.size()); ++id) {
    auto it = tenet_order.find(send_of[id]);
    reorder = it != tenet_order.end();
    if (reorder) exporter_position[id] = it->second;
  }
  if (reorder)
    std::stable_sort(order_of.begin(), order_of.end(),
                     [&](TransferId x, TransferId y) { return exporter_position[x] < exporter_position[y]; });
  if (reorder || !reduced_later.empty()) {
    std::vector<TransferId> position(a.size());
    for (size_t k = 0; k < order_of.size(); ++k) position[order_of[k]] = static_cast<TransferId>(k);
    std::vector<char> reduced(a.size(), 0);
    for (auto [id, re_position] : reduced_later) reduced[id] = 1;
    // A dependency that now points forward came from a slot written twice with the same chunk (a
    // relay that also keeps it): the earlier arrival, which the IR's implicit data dependency
    // covers, is the one that matters.
    std::vector<TransferSpec> specs;
    for (TransferId id : order_of) {
      TransferSpec spec = a.spec(id);
      if (reduced[id]) spec.op = Op::Reduce;
      for (TransferId& d : spec.deps) d = position[d];
      std::erase_if(spec.deps, [&](TransferId d) { return d >= static_cast<TransferId>(specs.size()); });
      specs.push_back(std::move(spec));
    }
    a = with_transfers(a, specs);
  }
  std::vector<size_t> sent_at(order_of.size()), landed_at(order_of.size());
  for (size_t k = 0; k < order_of.size(); ++k) {
    sent_at[k] = send_position[order_of[k]];
    landed_at[k] = land_position[order_of[k]];
  }
  check_one_copy(a, sent_at, landed_at);
  result.algorithm = std::move(a);
  return result;
}

}  // namespace tenet::synth
