// Writing MSCCL-XML (synth/formats/msccl_xml.hpp): the runtimes' limits, the collectives' names and
// buffer layouts, the thread blocks each rank runs, and the XML.
#include <fmt/format.h>
#include <pugixml.hpp>

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "synth/formats/msccl_xml.hpp"
#include "synth/formats/msccl_xml_detail.hpp"
#include "topo/error.hpp"

namespace tenet::synth {
namespace {

using detail::kMaxChannels;
using detail::Slot;

constexpr int kMaxBlocksPerChannel = 32;
// Thread-block steps and thread blocks per GPU each runtime accepts (executor: its default build's
// MSCCL_MAX_NUM_STEPS; legacy: MSCCL_MAX_NUM_STEPS 256, 108 * 2 thread blocks).
struct RuntimeLimits {
  int steps, blocks;
};
RuntimeLimits limits_of(MscclRuntime r) {
  return r == MscclRuntime::Legacy ? RuntimeLimits{256, 216} : RuntimeLimits{64, 1024};
}

std::string_view coll_name(CollectiveKind k, MscclRuntime runtime) {
  switch (k) {
    case CollectiveKind::AllReduce:
      return "allreduce";
    case CollectiveKind::AllGather:
      return "allgather";
    case CollectiveKind::ReduceScatter:
      return runtime == MscclRuntime::Legacy ? "reduce_scatter" : "reducescatter";
    case CollectiveKind::AllToAll:
      return "alltoall";
    default:
      return "";
  }
}

// Where chunk c lives at rank r: the layout of the MSCCL buffers for each collective.
class Layout {
 public:
  explicit Layout(const Collective& c)
      : c_(c), p_(c.num_ranks()), k_(c.chunks_per_npu), scratch_(p_) {}
  Slot at(int r, ChunkId ch) {
    switch (c_.kind) {
      case CollectiveKind::AllReduce:
      case CollectiveKind::ReduceScatter:
        return {'i', ch};
      case CollectiveKind::AllGather:
        return c_.origin(ch) == r && !back_[r].contains(ch) ? Slot{'i', ch % k_} : Slot{'o', ch};
      case CollectiveKind::AllToAll: {
        const int s = ch / k_ / p_, d = (ch / k_) % p_, j = ch % k_;
        if (r == s) return {'i', d * k_ + j};
        if (r == d) return {'o', s * k_ + j};
        auto [it, added] = scratch_[r].emplace(ch, static_cast<int>(scratch_[r].size()));
        return {'s', it->second};
      }
      default:
        return {};
    }
  }
  int scratch(int r) const { return static_cast<int>(scratch_[r].size()); }
  // Chunks ch .. ch + count - 1 arrive at rank r. An All-Gather's own chunk relayed back through
  // its rank lands in the output slot, where copy_own_chunks put it and messages read it: from then
  // on it lives there alone (one copy per rank, as the IR has it). Returns the input slots so left
  // behind, which the arrival must follow every read of (as a write of them would).
  std::vector<Slot> arrive(int r, ChunkId ch, int count) {
    std::vector<Slot> left;
    if (c_.kind != CollectiveKind::AllGather) return left;
    for (ChunkId x = ch; x < ch + count; ++x)
      if (c_.origin(x) == r && back_[r].insert(x).second) left.push_back({'i', x % k_});
    return left;
  }
  // Where chunks ch .. ch + count - 1 live at rank r as one run of slots (what a step of cnt count
  // reads or writes), or nothing where they do not lie side by side. An All-Gather's run lies in
  // the output buffer, where a rank's own chunks were copied first (copy_own_chunks), so that a
  // run may hold them among the others.
  std::optional<Slot> run_at(int r, ChunkId ch, int count) {
    auto slot = [&](ChunkId x) {
      return c_.kind == CollectiveKind::AllGather ? Slot{'o', x} : at(r, x);
    };
    const Slot first = count == 1 ? at(r, ch) : slot(ch);
    for (int j = 1; j < count; ++j)
      if (const Slot s = slot(ch + j); s.buf != first.buf || s.off != first.off + j)
        return std::nullopt;
    return first;
  }

 private:
  const Collective& c_;
  int p_, k_;
  std::vector<std::map<ChunkId, int>> scratch_;
  std::vector<std::set<ChunkId>> back_ = std::vector<std::set<ChunkId>>(p_);  // (arrive)
};

struct Step {
  std::string type;
  Slot src, dst;
  int depid = -1, deps = -1;
  bool hasdep = false;
  int cnt = 1;  // the slots it reads and writes from src and dst on (a transfer's chunks)
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
  std::map<Slot, StepRef> written;                 // the last step that wrote each slot
  std::map<Slot, std::vector<StepRef>> read;       // the steps that read it since
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
      return per_channel[chan] < kMaxBlocksPerChannel &&
             static_cast<int>(blocks.size()) < limits.blocks && steps <= limits.steps;
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
    auto it = std::lower_bound(clock.begin(), clock.end(),
                               std::pair(tb, std::numeric_limits<int>::min()));
    return it != clock.end() && it->first == tb ? it->second : -1;
  }
  static void merge(Clock& into, const Clock& other) {
    Clock out;
    out.reserve(into.size() + other.size());
    size_t i = 0, j = 0;
    while (i < into.size() || j < other.size()) {
      if (j == other.size() || (i < into.size() && into[i].first < other[j].first))
        out.push_back(into[i++]);
      else if (i == into.size() || other[j].first < into[i].first)
        out.push_back(other[j++]);
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
    return static_cast<int>(
        std::max<size_t>(1, pruned(it == index.end() ? -1 : it->second, deps).size()));
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
    if (auto it = read.find(s); it != read.end())
      out.insert(out.end(), it->second.begin(), it->second.end());
    return out;
  }
  void did_read(const Slot& s, StepRef r) { read[s].push_back(r); }
  void did_write(const Slot& s, StepRef r) {
    written[s] = r;
    read[s].clear();
  }
};

// What the export refuses outright: an empty size range, another collective, an all-to-allv.
void check_exportable(const Collective& c, std::string_view coll, const MscclOptions& options) {
  if (options.min_bytes < 0 || options.max_bytes <= options.min_bytes)
    throw Error(fmt::format("MSCCL-XML size range [{}, {}] is empty", options.min_bytes,
                            options.max_bytes));
  if (coll.empty())
    throw Error(fmt::format(
        "MSCCL-XML export supports all-reduce, all-gather, reduce-scatter and all-to-all, not {}",
        to_string(c.kind)));
  if (c.uneven())  // the runtime's alltoall cuts every rank's buffer into P equal blocks
    throw Error(
        "MSCCL-XML cannot express an all-to-allv (uneven traffic): the MSCCL runtime's alltoall "
        "gives every pair an equal block of the buffer; export it as Chakra or JSON");
}

// The state of one export: the algorithm, its ranks' thread blocks, and each transfer's steps.
struct Export {
  Export(const Algorithm& alg, RuntimeLimits runtime_limits)
      : a(alg),
        c(alg.collective),
        limits(runtime_limits),
        p(c.num_ranks()),
        k(c.chunks_per_npu),
        layout(c),
        gpus(p),
        send_step(a.size()),
        recv_step(a.size()) {
    for (int r = 0; r < p; ++r) {
      if (c.ranks[r] >= static_cast<int>(rank_of.size())) rank_of.resize(c.ranks[r] + 1, -1);
      rank_of[c.ranks[r]] = r;
    }
    for (Gpu& g : gpus) g.limits = limits;
  }
  // The rank of node v, or -1.
  int rank(NodeId v) const { return v < static_cast<int>(rank_of.size()) ? rank_of[v] : -1; }

  const Algorithm& a;
  const Collective& c;
  const RuntimeLimits limits;
  const int p, k;
  std::vector<int> rank_of;  // node -> rank, or -1
  Layout layout;
  std::vector<Gpu> gpus;
  std::vector<StepRef> send_step, recv_step;  // per transfer (its last step, where several)
  // A transfer of more chunks than a step moves: its send steps, in order.
  std::map<TransferId, std::vector<StepRef>> pieces;
  // Parallel links between a pair (DGX-1's doubled NVLinks) are lanes: the transfers on each get
  // their own channel, hence their own thread blocks, so that the runtime runs them side by side.
  // pair -> first links used, sorted
  std::map<std::pair<NodeId, NodeId>, std::vector<LinkId>> lanes;
  int ir_channels = 1;
  // Inputs kept in scratch slots before anything is reduced into their own (save_inputs):
  // (rank, chunk) -> its slot; and how many each rank keeps.
  std::map<std::pair<int, ChunkId>, Slot> saved;
  std::vector<int> saved_per_rank = std::vector<int>(static_cast<size_t>(p), 0);
};

// A local copy at rank r, on the first channel with room for it.
void local_copy(Export& e, int r, Slot from, Slot to) {
  Gpu& g = e.gpus[r];
  std::vector<StepRef> deps = g.before_read(from), more = g.before_write(to);
  deps.insert(deps.end(), more.begin(), more.end());
  int chan = 0;
  while (!g.room(-1, -1, chan, g.needed(-1, -1, chan, deps))) {
    if (++chan == kMaxChannels)
      throw Error("MSCCL-XML: local copies exceed the runtime's thread block limits");
  }
  const int tb = g.block(-1, -1, chan);
  StepRef ref = g.append(tb, {"cpy", from, to}, deps);
  g.did_read(from, ref);
  g.did_write(to, ref);
}

// Local copies into the output buffer: own chunks first (All-Gather), chunks to oneself
// (All-to-All).
void copy_own_chunks(Export& e) {
  const int p = e.p, k = e.k;
  if (e.c.kind == CollectiveKind::AllGather)
    for (int r = 0; r < p; ++r)
      for (int j = 0; j < k; ++j) local_copy(e, r, {'i', j}, {'o', r * k + j});
  if (e.c.kind == CollectiveKind::AllToAll)
    for (int r = 0; r < p; ++r)
      for (int j = 0; j < k; ++j) local_copy(e, r, {'i', r * k + j}, {'o', r * k + j});
}

// A transfer that sends its source's input (Transfer::from_input) reads the slot the chunk lives in
// until something arrives there: All-Reduce and Reduce-Scatter reduce into their input buffer in
// place. Where the IR lists an arrival of the chunk at that rank before such a send, the rank first
// copies its input to a scratch slot of its own (an out-of-place input) and sends it from there.
// (The other collectives never write an input slot.)
void save_inputs(Export& e) {
  const Algorithm& a = e.a;
  std::set<std::pair<int, ChunkId>> arrived;
  for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id) {
    const Transfer& x = a[id];
    const int from = e.rank(x.src), to = e.rank(x.dst);
    if (from < 0 || to < 0) continue;  // place_transfers says why it cannot be written
    for (ChunkId ch = x.chunk; ch < x.chunk + x.count; ++ch)
      if (x.from_input && arrived.count({from, ch}) && !e.saved.count({from, ch}) &&
          (e.c.kind == CollectiveKind::AllReduce || e.c.kind == CollectiveKind::ReduceScatter)) {
        const Slot keep{'s', e.saved_per_rank[from]++};
        local_copy(e, from, e.layout.at(from, ch), keep);
        e.saved[{from, ch}] = keep;
      }
    for (ChunkId ch = x.chunk; ch < x.chunk + x.count; ++ch) arrived.insert({to, ch});
  }
}

// The IR's channels, and the lanes of each pair joined by a direct link.
void find_lanes(Export& e) {
  const Algorithm& a = e.a;
  for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id) {
    e.ir_channels = std::max(e.ir_channels, a[id].channel + 1);
    if (a.route(id).size() == 1) e.lanes[{a[id].src, a[id].dst}].push_back(a.route(id)[0]);
  }
  for (auto& [pair, links] : e.lanes) {
    std::sort(links.begin(), links.end());
    links.erase(std::unique(links.begin(), links.end()), links.end());
  }
}

int lane_of(Export& e, TransferId id) {
  const Algorithm& a = e.a;
  if (a.route(id).size() != 1) return 0;
  const auto& links = e.lanes[{a[id].src, a[id].dst}];
  return static_cast<int>(std::lower_bound(links.begin(), links.end(), a.route(id)[0]) -
                          links.begin());
}

// Each transfer becomes a send step at its source and a receive step at its destination.
void place_transfers(Export& e) {
  const Algorithm& a = e.a;
  std::vector<Gpu>& gpus = e.gpus;
  // (src rank, dst rank, IR channel) -> current channel: the IR's channels become MSCCL's, and a
  // channel whose thread blocks are full moves on to the next.
  std::map<std::tuple<int, int, int>, int> channel;
  for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id) {
    const Transfer& x = a[id];
    const int from = e.rank(x.src), to = e.rank(x.dst);
    if (from < 0 || to < 0)
      throw Error(fmt::format(
          "transfer {} involves node {}, which is not a rank: MSCCL-XML has GPUs of the "
          "communicator only",
          id, from < 0 ? x.src : x.dst));
    const int cnt = x.count;
    std::optional<Slot> run = e.layout.run_at(from, x.chunk, cnt);
    const std::vector<Slot> left = e.layout.arrive(to, x.chunk, cnt);
    const std::optional<Slot> into = e.layout.run_at(to, x.chunk, cnt);
    // A run of inputs kept aside is read from there (save_inputs keeps a transfer's in order): all
    // of its chunks, side by side, or none.
    if (x.from_input) {
      int kept = 0;
      for (int j = 0; j < cnt; ++j) kept += e.saved.count({from, x.chunk + j}) ? 1 : 0;
      if (kept > 0 && kept < cnt) run.reset();
      if (kept == cnt) run = e.saved.at({from, x.chunk});
      for (int j = 1; j < cnt && kept == cnt && run; ++j)
        if (auto next = e.saved.find({from, x.chunk + j}); next == e.saved.end() ||
                                                           next->second.buf != run->buf ||
                                                           next->second.off != run->off + j)
          run.reset();
    }
    if (!run || !into)
      throw Error(fmt::format(
          "MSCCL-XML: transfer {} carries chunks {}..{}, which do not lie side by side in rank "
          "{}'s buffers; a step moves a contiguous run of slots (cnt)",
          id, x.chunk, x.chunk + cnt - 1, !run ? from : to));
    const Slot src = *run, dst = *into;
    // The receiver reduces into its own slots of the chunks.
    const Slot operand = x.op == Op::Reduce ? dst : src;
    std::vector<StepRef> send_deps, recv_deps;
    for (int j = 0; j < cnt; ++j) {
      const std::vector<StepRef> r = gpus[from].before_read({src.buf, src.off + j}),
                                 w = gpus[to].before_write({dst.buf, dst.off + j});
      send_deps.insert(send_deps.end(), r.begin(), r.end());
      recv_deps.insert(recv_deps.end(), w.begin(), w.end());
    }
    for (const Slot& s : left) {
      const std::vector<StepRef> w = gpus[to].before_write(s);
      recv_deps.insert(recv_deps.end(), w.begin(), w.end());
    }
    for (TransferId d : a.deps(id)) {
      if (e.rank(a[d].dst) == from) send_deps.push_back(e.recv_step[d]);
      if (e.rank(a[d].src) == from) send_deps.push_back(e.send_step[d]);
    }
    // Both runtimes move fewer than kMaxCount slots a step: a larger message is several steps.
    const int per_step = detail::kMaxCount - 1, pieces = (cnt + per_step - 1) / per_step;
    const int lane = lane_of(e, id), first = x.channel + lane * e.ir_channels;
    int& chan = channel.try_emplace({from, to, first}, std::min<int>(first, kMaxChannels - 1))
                    .first->second;
    while (
        !gpus[from].room(to, -1, chan, gpus[from].needed(to, -1, chan, send_deps) + pieces - 1) ||
        !gpus[to].room(-1, from, chan, gpus[to].needed(-1, from, chan, recv_deps) + pieces - 1))
      if (++chan == kMaxChannels)
        throw Error(fmt::format(
            "MSCCL-XML: the algorithm needs more than {} channels of {} thread blocks of {} steps "
            "(rank {} to rank {}); the runtime would not load it",
            kMaxChannels, kMaxBlocksPerChannel, e.limits.steps, from, to));
    const int stb = gpus[from].block(to, -1, chan), rtb = gpus[to].block(-1, from, chan);
    for (int at = 0; at < cnt; at += per_step) {
      auto moved = [&](Slot s) { return Slot{s.buf, s.off + at}; };
      Step send{"s", moved(src), moved(dst)},
          receive{x.op == Op::Reduce ? "rrc" : "r", moved(operand), moved(dst)};
      send.cnt = receive.cnt = std::min(per_step, cnt - at);
      // The first step waits for what the transfer waits for; the others follow it in its blocks.
      e.send_step[id] = gpus[from].append(stb, send, at == 0 ? send_deps : std::vector<StepRef>{});
      e.recv_step[id] = gpus[to].append(rtb, receive, at == 0 ? recv_deps : std::vector<StepRef>{});
      if (pieces > 1) e.pieces[id].push_back(e.send_step[id]);
      for (int j = at; j < at + send.cnt; ++j) {
        gpus[from].did_read({src.buf, src.off + j}, e.send_step[id]);
        gpus[to].did_write({dst.buf, dst.off + j}, e.recv_step[id]);
      }
    }
  }
}

// Reduce-Scatter: each rank's block, reduced, into its output.
void copy_reduced_blocks(Export& e) {
  const int p = e.p, k = e.k;
  if (e.c.kind == CollectiveKind::ReduceScatter)
    for (int r = 0; r < p; ++r)
      for (int j = 0; j < k; ++j) local_copy(e, r, {'i', r * k + j}, {'o', j});
}

// Both runtimes store at most 4095 XML nodes per rank: the <algo>, every <gpu>, and this rank's
// thread blocks and steps (microsoft/msccl src/graph/xml.h MAX_NODES, and the executor's copy).
void check_node_limit(const Export& e) {
  for (int r = 0; r < e.p; ++r) {
    size_t nodes = 1 + static_cast<size_t>(e.p) + e.gpus[r].blocks.size();
    for (const Block& b : e.gpus[r].blocks) nodes += b.steps.size();
    if (nodes > 4095)
      throw Error(fmt::format(
          "MSCCL-XML: rank {} needs {} XML nodes (its thread blocks and steps, every <gpu>); both "
          "runtimes load at most 4095 per rank: export with fewer chunks per NPU",
          r, nodes));
  }
}

// The <algo> element with its ten attributes.
pugi::xml_node append_algo(pugi::xml_document& doc, const Export& e, std::string_view coll,
                           const MscclOptions& options) {
  const Collective& c = e.c;
  int channels = 1;
  for (const Gpu& g : e.gpus)
    for (const Block& b : g.blocks) channels = std::max(channels, b.chan + 1);
  pugi::xml_node algo = doc.append_child("algo");
  algo.append_attribute("name") = (options.name.empty() ? e.a.name : options.name).c_str();
  const bool runs_msccl_protocol =
      e.a.protocol == "Simple" || e.a.protocol == "LL" || e.a.protocol == "LL128";
  const std::string proto = !options.protocol.empty() ? options.protocol
                            : runs_msccl_protocol     ? e.a.protocol
                                                      : std::string("Simple");
  algo.append_attribute("proto") = proto.c_str();
  algo.append_attribute("nchannels") = channels;
  const int per_loop = c.kind == CollectiveKind::AllReduce ? c.num_chunks() : e.p * e.k;
  algo.append_attribute("nchunksperloop") = per_loop;
  algo.append_attribute("ngpus") = e.p;
  algo.append_attribute("coll") = std::string(coll).c_str();
  const bool in_place = c.kind == CollectiveKind::AllReduce;
  algo.append_attribute("inplace") = in_place ? 1 : 0;
  algo.append_attribute("outofplace") = in_place ? 0 : 1;
  algo.append_attribute("minBytes") = static_cast<long long>(options.min_bytes);
  algo.append_attribute("maxBytes") = static_cast<long long>(options.max_bytes);
  return algo;
}

// A <tb> element and its steps.
void append_block(pugi::xml_node gpu, int id, const Block& blk) {
  pugi::xml_node tb = gpu.append_child("tb");
  tb.append_attribute("id") = id;
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
    step.append_attribute("cnt") = st.type == "nop" ? 0 : st.cnt;
    step.append_attribute("depid") = st.depid;
    step.append_attribute("deps") = st.deps;
    step.append_attribute("hasdep") = st.hasdep ? 1 : 0;
  }
}

// The <gpu> element of rank r: its buffer sizes and thread blocks.
void append_gpu(pugi::xml_node algo, const Export& e, int r) {
  const Collective& c = e.c;
  const int p = e.p, k = e.k;
  pugi::xml_node gpu = algo.append_child("gpu");
  gpu.append_attribute("id") = r;
  // Every buffer is nchunksperloop chunks, an All-Gather's input and a Reduce-Scatter's output a
  // rank's share of them (the legacy loader checks: microsoft/msccl src/graph/topo.cc:886); an
  // All-Reduce cut into C chunks in all has C.
  const int in = c.kind == CollectiveKind::AllGather   ? k
                 : c.kind == CollectiveKind::AllReduce ? c.num_chunks()
                                                       : p * k;
  const int out = c.kind == CollectiveKind::AllReduce       ? 0
                  : c.kind == CollectiveKind::ReduceScatter ? k
                                                            : p * k;
  gpu.append_attribute("i_chunks") = in;
  gpu.append_attribute("o_chunks") = out;
  gpu.append_attribute("s_chunks") = e.layout.scratch(r) + e.saved_per_rank[r];
  for (size_t b = 0; b < e.gpus[r].blocks.size(); ++b)
    append_block(gpu, static_cast<int>(b), e.gpus[r].blocks[b]);
}

// Tenet's own notes, in a comment the runtime ignores: the chunk size, and the global order of
// the transfers (gpu.tb.s of each send step), so that importing gives back the same schedule.
std::string tenet_note(Export& e) {
  const Algorithm& a = e.a;
  std::string order;
  order.reserve(a.size() * 8);
  // A transfer's send steps: its one, or each of a larger message's (they read back as a
  // transfer each, in this order).
  auto steps_of = [&](TransferId id) {
    auto it = e.pieces.find(id);
    return it != e.pieces.end() ? it->second : std::vector<StepRef>{e.send_step[id]};
  };
  for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id)
    for (const StepRef& step : steps_of(id))
      order +=
          fmt::format("{}{}.{}.{}", order.empty() ? "" : " ", e.rank(a[id].src), step.tb, step.s);
  // The lane (which of parallel links) of each transfer that has a choice, by send step.
  std::string lane_note;
  for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id)
    if (const int lane = lane_of(e, id); lane > 0)
      for (const StepRef& step : steps_of(id))
        lane_note += fmt::format(" {}.{}.{}={}", e.rank(a[id].src), step.tb, step.s, lane);
  return fmt::format(" tenet chunk_bytes={}{} order: {} ", a.chunk_bytes,
                     lane_note.empty() ? "" : " lanes:" + lane_note + " ;", order);
}

}  // namespace

MscclRuntime parse_msccl_runtime(std::string_view name) {
  if (name == "executor") return MscclRuntime::Executor;
  if (name == "legacy") return MscclRuntime::Legacy;
  throw Error(fmt::format(
      "unknown MSCCL runtime '{}' (executor: Azure/msccl-executor-nccl; legacy: microsoft/msccl)",
      name));
}

std::string to_msccl_xml(const Algorithm& a, const MscclOptions& options) {
  const std::string_view coll = coll_name(a.collective.kind, options.runtime);
  check_exportable(a.collective, coll, options);
  Export e(a, limits_of(options.runtime));
  copy_own_chunks(e);
  save_inputs(e);
  find_lanes(e);
  place_transfers(e);
  copy_reduced_blocks(e);
  check_node_limit(e);
  pugi::xml_document doc;
  pugi::xml_node algo = append_algo(doc, e, coll, options);
  for (int r = 0; r < e.p; ++r) append_gpu(algo, e, r);
  doc.prepend_child(pugi::node_comment).set_value(tenet_note(e).c_str());
  std::ostringstream out;
  // No `<?xml ...?>` declaration: both runtimes' tokenizers stop at it ("expected >, got '?'").
  doc.save(out, "  ", pugi::format_default | pugi::format_no_declaration);
  return out.str();
}

}  // namespace tenet::synth
