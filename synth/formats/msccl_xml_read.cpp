// Reading MSCCL-XML (synth/formats/msccl_xml.hpp). The import runs in phases over one Import
// (msccl_xml_import.hpp): the <algo> attributes, the chunks, Tenet's notes, the buffers' initial
// contents, the steps, their execution order, the runtime's checks (bounds, order, contents), a
// replay of that order that follows the data and makes the transfers, the final order, and the
// one-copy check.
#include <fmt/format.h>
#include <pugixml.hpp>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <limits>
#include <map>
#include <numeric>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "synth/formats/msccl_xml.hpp"
#include "synth/formats/msccl_xml_detail.hpp"
#include "synth/formats/msccl_xml_import.hpp"
#include "topo/error.hpp"
#include "topo/limits.hpp"
#include "topo/routing.hpp"

namespace tenet::synth {
namespace detail {

int Import::line_of(ptrdiff_t offset) const {
  if (newlines_.empty()) {
    for (size_t i = 0; i < buffer.size(); ++i)
      if (buffer[i] == '\n') newlines_.push_back(i);
    newlines_.push_back(buffer.size());  // none: not counted again
  }
  const size_t at = static_cast<size_t>(std::max<ptrdiff_t>(offset, 0));
  return static_cast<int>(
      1 + (std::lower_bound(newlines_.begin(), newlines_.end() - 1, at) - newlines_.begin()));
}

Error Import::fail(const pugi::xml_node& n, const std::string& what) const {
  return Error(what, {file, line_of(n.offset_debug())});
}

int Import::attr_int(const pugi::xml_node& n, const char* name) const {
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
}

Slot Import::canon(int gpu, Slot s) const {
  if (!in_place) return s;
  switch (a.collective.kind) {
    case CollectiveKind::AllReduce:
      return s.buf == 'o' ? Slot{'i', s.off} : s;
    case CollectiveKind::AllGather:
      return s.buf == 'i' ? Slot{'o', gpu * k + s.off} : s;
    case CollectiveKind::ReduceScatter:
      return s.buf == 'o' ? Slot{'i', gpu * k + s.off} : s;
    default:
      return s;
  }
}

void Import::problem(ImportProblemKind kind, const XmlStep& x, const std::string& what) {
  result.problems.push_back({kind, x.gpu, x.tb, x.s,
                             fmt::format("gpu {} tb {} step {} {} (line {})", x.gpu, x.tb, x.s,
                                         what, line_of(static_cast<ptrdiff_t>(x.line)))});
}

std::optional<StepType> parse_step_type(std::string_view name) {
  static const std::pair<std::string_view, StepType> kNames[] = {
      {"s", StepType::Send},
      {"r", StepType::Recv},
      {"rcs", StepType::RecvCopySend},
      {"rrs", StepType::RecvReduceSend},
      {"rrc", StepType::RecvReduceCopy},
      {"rrcs", StepType::RecvReduceCopySend},
      {"cpy", StepType::Copy},
      {"re", StepType::Reduce},
      {"nop", StepType::Nop}};
  for (const auto& [n, type] : kNames)
    if (n == name) return type;
  return std::nullopt;
}

StepEffect effect_of(StepType t) {
  switch (t) {
    case StepType::Send:
      return {.sends = true, .reads_src = true};
    case StepType::Recv:
      return {.receives = true, .writes_dst = true};
    case StepType::RecvCopySend:
      return {.receives = true, .sends = true, .writes_dst = true};
    case StepType::RecvReduceSend:
      return {.receives = true, .sends = true, .reduces = true, .reads_src = true};
    case StepType::RecvReduceCopy:
      return {.receives = true, .reduces = true, .reads_src = true, .writes_dst = true};
    case StepType::RecvReduceCopySend:
      return {
          .receives = true, .sends = true, .reduces = true, .reads_src = true, .writes_dst = true};
    case StepType::Copy:
      return {.reads_src = true, .writes_dst = true};
    case StepType::Reduce:
      return {.reduces = true, .reads_src = true, .reads_dst = true, .writes_dst = true};
    case StepType::Nop:
      return {};
  }
  return {};
}

}  // namespace detail

namespace {

using detail::BufferSizes;
using detail::effect_of;
using detail::Import;
using detail::kMaxChannels;
using detail::Slot;
using detail::StepType;
using detail::XmlStep;

constexpr ChunkId kGarbage = -1;  // a slot's content when it was copied from a slot never written

void parse_document(Import& in) {
  const pugi::xml_parse_result parsed = in.doc.load_buffer(
      in.buffer.data(), in.buffer.size(), pugi::parse_default | pugi::parse_comments);
  if (!parsed)
    throw Error(fmt::format("not valid XML: {}", parsed.description()),
                {in.file, in.line_of(parsed.offset)});
  in.algo = in.doc.child("algo");
  if (!in.algo) throw Error("not MSCCL-XML: no <algo> element", {in.file});
}

void parse_attributes(Import& in) {
  const pugi::xml_node algo = in.algo;
  // What each runtime requires (msccl-tools writes some only): warnings, not errors.
  for (const char* legacy : {"name", "proto", "inplace"})
    if (!algo.attribute(legacy))
      in.result.warnings.push_back(fmt::format(
          "<algo> lacks {}: the legacy runtime (microsoft/msccl) would not load this file",
          legacy));
  for (const char* executor : {"proto", "minBytes", "maxBytes", "outofplace"})
    if (!algo.attribute(executor))
      in.result.warnings.push_back(fmt::format(
          "<algo> lacks {}: the executor runtime (msccl-executor-nccl) would not load this file",
          executor));
  in.in_place = algo.attribute("inplace") && in.attr_int(algo, "inplace") != 0;
  in.p = in.attr_int(algo, "ngpus");
  in.per_loop = in.attr_int(algo, "nchunksperloop");
  const int p = in.p;
  const topo::Topology& t = in.t;
  if (p < 2) throw in.fail(algo, "ngpus must be at least 2");
  if (p > t.num_npus())
    throw in.fail(algo, fmt::format("ngpus is {}, but the topology has {} NPUs", p, t.num_npus()));
  const std::string coll = algo.attribute("coll").value();
  Algorithm& a = in.a;
  a.name = algo.attribute("name").value();
  if (coll == "allreduce")
    a.collective.kind = CollectiveKind::AllReduce;
  else if (coll == "allgather")
    a.collective.kind = CollectiveKind::AllGather;
  else if (coll == "reducescatter" || coll == "reduce_scatter")
    a.collective.kind = CollectiveKind::ReduceScatter;
  else if (coll == "alltoall")
    a.collective.kind = CollectiveKind::AllToAll;
  else
    throw in.fail(algo, fmt::format("coll='{}' cannot be imported (allreduce, allgather, "
                                    "reducescatter or reduce_scatter, alltoall)",
                                    coll));
  if (in.in_place && a.collective.kind == CollectiveKind::AllToAll)
    throw in.fail(
        algo,
        "an in-place All-to-All cannot be imported (its output overwrites input still to be sent)");
}

// GPUs x chunks per loop past which a program is not imported.
constexpr int64_t kMaxCheckedSlots = int64_t{1} << 28;
// ... and past which one whose GPUs each hold their whole buffer at the start (every collective but
// All-Gather: buffer_slots keeps an entry, some 64 bytes, per GPU and slot) is not: 1 GiB.
constexpr int64_t kMaxHeldSlots = int64_t{1} << 24;

// All-Reduce chunks belong to no rank, so MSCCL's may number fewer than the GPUs, or not a multiple
// of them (msccl-tools' allreduce_a100_ncv4: 2 chunks on 4 GPUs; Tenet's own one-shot: one): the
// IR's All-Reduce is then cut into that many chunks in all (Collective::all_reduce_chunks).
void split_chunks(Import& in) {
  const pugi::xml_node algo = in.algo;
  const int p = in.p, per_loop = in.per_loop;
  Collective& c = in.a.collective;
  if (per_loop < 1)
    throw in.fail(algo, fmt::format("nchunksperloop {} must be at least 1", per_loop));
  const bool in_all = c.kind == CollectiveKind::AllReduce && per_loop % p != 0;
  if (!in_all && per_loop % p != 0)
    throw in.fail(algo,
                  fmt::format("nchunksperloop {} is not a multiple of ngpus {}", per_loop, p));
  if (per_loop / p > topo::kMaxChunksPerNpuOfAlgorithm)
    throw in.fail(algo,
                  fmt::format("nchunksperloop {} makes {} chunks per NPU, over Tenet's limit of {}",
                              per_loop, per_loop / p, topo::kMaxChunksPerNpuOfAlgorithm));
  // The import checks every GPU's output slots against every chunk of the loop: that work, and the
  // contents it tracks, grow with GPUs x chunks, whatever the file's size.
  if (static_cast<int64_t>(p) * per_loop > kMaxCheckedSlots)
    throw in.fail(algo,
                  fmt::format("{} GPUs x nchunksperloop {} = {} output slots to check, "
                              "over Tenet's limit of {}",
                              p, per_loop, static_cast<int64_t>(p) * per_loop, kMaxCheckedSlots));
  if (c.kind != CollectiveKind::AllGather && static_cast<int64_t>(p) * per_loop > kMaxHeldSlots)
    throw in.fail(algo,
                  fmt::format("{} GPUs x nchunksperloop {} = {} buffer slots held at the start, "
                              "over Tenet's limit of {} ({})",
                              p, per_loop, static_cast<int64_t>(p) * per_loop, kMaxHeldSlots,
                              to_string(c.kind)));
  for (int r = 0; r < p; ++r) c.ranks.push_back(r);
  c.chunks_per_npu = in_all ? 1 : per_loop / p;
  if (in_all) c.all_reduce_chunks = per_loop;
  in.k = c.chunks_per_npu;
}

// MSCCL-XML carries no size (the runtime picks it per call) nor a global order; Tenet's exports
// leave both in a comment.
void read_metadata(Import& in) {
  Algorithm& a = in.a;
  a.chunk_bytes = 1 << 20;
  a.step_costs = in.t.charges_steps();  // a runtime's program pays what its runtime pays per step
  // ... and runs its protocol where the topology describes it (topo::Protocol).
  if (const std::string proto = in.algo.attribute("proto").value(); in.t.protocol(proto))
    a.protocol = proto;
  for (pugi::xml_node n = in.doc.first_child(); n; n = n.next_sibling()) {
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
          throw in.fail(
              n, fmt::format(
                     "Tenet's note says chunk_bytes={}, which is not a positive whole number", v));
        a.chunk_bytes = bytes;
      }
      if (word == "lanes:")
        for (std::string ref; note >> ref && ref != ";";) {
          int g = 0, tb = 0, st = 0, lane = 0;
          if (std::sscanf(ref.c_str(), "%d.%d.%d=%d", &g, &tb, &st, &lane) == 4)
            in.tenet_lane[{g, tb, st}] = lane;
        }
      if (word == "order:") {
        int64_t position = 0;
        for (std::string ref; note >> ref; ++position) {
          int g = 0, tb = 0, st = 0;
          if (std::sscanf(ref.c_str(), "%d.%d.%d", &g, &tb, &st) == 3)
            in.tenet_order[{g, tb, st}] = position;
        }
      }
    }
  }
  a.topology_name = in.t.name();
}

// What each buffer slot of each GPU holds at the start.
void buffer_slots(Import& in) {
  const int p = in.p, k = in.k;
  in.holds.resize(p);
  for (int r = 0; r < p; ++r)
    for (int off = 0; off < in.per_loop; ++off) {
      switch (in.a.collective.kind) {
        case CollectiveKind::AllGather:
          if (off < k) in.holds[r][in.canon(r, {'i', off})] = r * k + off;
          break;
        case CollectiveKind::AllToAll:
          in.holds[r][{'i', off}] = (r * p + off / k) * k + off % k;
          break;
        default:
          in.holds[r][{'i', off}] = off;
      }
    }
}

// The steps of one thread block of gpu `id`.
void read_block_steps(Import& in, const pugi::xml_node& tb, int id, int tid, int send, int recv) {
  for (pugi::xml_node st : tb.children("step")) {
    const std::string name = st.attribute("type").value();
    const std::optional<StepType> type = detail::parse_step_type(name);
    if (!type)
      throw in.fail(
          st,
          fmt::format("unknown step type '{}' (s, r, rcs, rrs, rrc, rrcs, cpy, re, nop)", name));
    XmlStep x{id, tid, in.attr_int(st, "s"), *type, {}, {}, 0, 0, 0, 0};
    x.line = st.offset_debug();
    auto buf = [&](const char* attr) {
      const std::string v = st.attribute(attr).value();
      if (v != "i" && v != "o" && v != "s")
        throw in.fail(st, fmt::format("{}='{}' is not i, o or s", attr, v));
      return v[0];
    };
    if (x.type != StepType::Nop) {
      x.src = {buf("srcbuf"), in.attr_int(st, "srcoff")};
      x.dst = {buf("dstbuf"), in.attr_int(st, "dstoff")};
      x.cnt = in.attr_int(st, "cnt");
      if (x.cnt < 1) throw in.fail(st, fmt::format("cnt {} must be at least 1", x.cnt));
      if (x.cnt >= detail::kMaxCount)
        throw in.fail(st, fmt::format("cnt {}: both runtimes load counts below {} only "
                                      "(MSCCL_MAX_COUNT)",
                                      x.cnt, detail::kMaxCount));
      // Slots are whole numbers: an offset whose range passes the largest is past any buffer a
      // <gpu> can declare, and not a slot at all.
      for (const Slot& at : {x.src, x.dst})
        if (int64_t{at.off} + x.cnt > std::numeric_limits<int>::max())
          throw in.fail(st, fmt::format("offset {} with cnt {} is past any buffer", at.off, x.cnt));
    }
    x.depid = in.attr_int(st, "depid");
    x.deps = in.attr_int(st, "deps");
    if (effect_of(x.type).sends && send < 0)
      throw in.fail(st, fmt::format("a '{}' step in a thread block with no send peer", name));
    if (effect_of(x.type).receives && recv < 0)
      throw in.fail(st, fmt::format("a '{}' step in a thread block with no receive peer", name));
    in.step_at[{id, tid, x.s}] = in.steps.size();
    in.steps.push_back(std::move(x));
  }
}

// A <gpu>'s buffer sizes in chunks (i_chunks, o_chunks, s_chunks: both runtimes require them).
BufferSizes read_sizes(const Import& in, const pugi::xml_node& gpu) {
  BufferSizes sizes;
  for (auto [name, size] :
       {std::pair{"i_chunks", &sizes.input}, std::pair{"o_chunks", &sizes.output},
        std::pair{"s_chunks", &sizes.scratch}}) {
    *size = in.attr_int(gpu, name);
    if (*size < 0) throw in.fail(gpu, fmt::format("{}={} is negative", name, *size));
  }
  return sizes;
}

// The GPUs, their thread blocks and the blocks' steps.
void read_steps(Import& in) {
  const int p = in.p;
  std::vector<char> seen_gpu(p, 0);
  in.sizes.assign(p, {});
  for (pugi::xml_node gpu : in.algo.children("gpu")) {
    const int id = in.attr_int(gpu, "id");
    if (id < 0 || id >= p) throw in.fail(gpu, fmt::format("gpu id {} is outside 0..{}", id, p - 1));
    if (seen_gpu[id]++) throw in.fail(gpu, fmt::format("gpu {} appears twice", id));
    in.sizes[id] = read_sizes(in, gpu);
    for (pugi::xml_node tb : gpu.children("tb")) {
      const int tid = in.attr_int(tb, "id"), send = in.attr_int(tb, "send"),
                recv = in.attr_int(tb, "recv");
      const int chan = in.attr_int(tb, "chan");
      if (chan < 0 || chan >= kMaxChannels)
        throw in.fail(tb, fmt::format("chan {} is outside 0..{}", chan, kMaxChannels - 1));
      if (send == id || recv == id) throw in.fail(tb, "a thread block's peer is its own GPU");
      if (send >= p || recv >= p)
        throw in.fail(tb, "a thread block's peer is not a GPU of the algorithm");
      if (in.peers.count({id, tid}))
        throw in.fail(tb, fmt::format("tb id {} appears twice on gpu {}", tid, id));
      in.peers[{id, tid}] = {send, recv, chan};
      read_block_steps(in, tb, id, tid, send, recv);
    }
  }
}

// Execution order: within a thread block by s, after each step's dependency, and a receive after
// the send it pairs with (the k-th send a->b on a channel with the k-th receive b<-a there).
void order_steps(Import& in) {
  const std::vector<XmlStep>& steps = in.steps;
  const std::string& file = in.file;
  const size_t n = steps.size();
  std::vector<std::vector<size_t>> after(n);
  std::vector<int> indegree(n, 0);
  in.before.assign(n, {});
  auto edge = [&](size_t from, size_t to) {
    after[from].push_back(to);
    in.before[to].push_back(from);
    ++indegree[to];
  };
  std::map<std::tuple<int, int, int>, std::vector<size_t>>& sends = in.sends;
  std::map<std::tuple<int, int, int>, std::vector<size_t>> recvs;  // (from, to, chan)
  std::map<std::tuple<int, int>, std::vector<size_t>> by_block;
  for (size_t i = 0; i < n; ++i) by_block[{steps[i].gpu, steps[i].tb}].push_back(i);
  for (auto& [blk, list] : by_block) {
    std::sort(list.begin(), list.end(),
              [&](size_t x, size_t y) { return steps[x].s < steps[y].s; });
    for (size_t j = 1; j < list.size(); ++j) edge(list[j - 1], list[j]);
    const auto [send, recv, ch] = in.peers[blk];
    for (size_t i : list) {
      const XmlStep& x = steps[i];
      if (effect_of(x.type).sends) sends[{x.gpu, send, ch}].push_back(i);
      if (effect_of(x.type).receives) recvs[{recv, x.gpu, ch}].push_back(i);
    }
  }
  for (size_t i = 0; i < n; ++i)
    if (steps[i].depid >= 0) {
      auto it = in.step_at.find({steps[i].gpu, steps[i].depid, steps[i].deps});
      if (it == in.step_at.end())
        throw Error(
            fmt::format(
                "step {} of tb {} on gpu {} depends on step {} of tb {}, which does not exist",
                steps[i].s, steps[i].tb, steps[i].gpu, steps[i].deps, steps[i].depid),
            {file, in.line_of(static_cast<ptrdiff_t>(steps[i].line))});
      edge(it->second, i);
    }
  // The k-th send a->b on a channel pairs with the k-th receive there. A send without its receive
  // never lands; a receive without its send (or of another cnt) never completes, and neither does
  // what waits on it: the program is well formed, but wrong (Unpaired, NeverReady).
  std::vector<char> blocked(n, 0);
  for (auto& [key, list] : sends) {
    auto it = recvs.find(key);
    const size_t have = it == recvs.end() ? 0 : it->second.size();
    if (have < list.size())
      in.problem(ImportProblemKind::Unpaired, steps[list[have]],
                 fmt::format("is send {} of {} from gpu {} to gpu {} on channel {}, which receives "
                             "{} times: the message never lands",
                             have + 1, list.size(), std::get<0>(key), std::get<1>(key),
                             std::get<2>(key), have));
    for (size_t j = 0; j < std::min(have, list.size()); ++j) {
      const size_t recv = it->second[j];
      if (steps[list[j]].cnt != steps[recv].cnt) {
        in.problem(ImportProblemKind::Unpaired, steps[recv],
                   fmt::format("receives cnt {} but gpu {} tb {} step {} sends cnt {}: the "
                               "runtime pairs them, and they disagree",
                               steps[recv].cnt, steps[list[j]].gpu, steps[list[j]].tb,
                               steps[list[j]].s, steps[list[j]].cnt));
        blocked[recv] = 1;
        continue;
      }
      in.partner[recv] = list[j];
      edge(list[j], recv);
    }
  }
  for (auto& [key, list] : recvs) {
    auto it = sends.find(key);
    const size_t have = it == sends.end() ? 0 : it->second.size();
    if (have < list.size())
      in.problem(ImportProblemKind::Unpaired, steps[list[have]],
                 fmt::format("is receive {} of {} from gpu {} on channel {}, which sends there {} "
                             "times: it never completes",
                             have + 1, list.size(), std::get<0>(key), std::get<2>(key), have));
    for (size_t j = have; j < list.size(); ++j) blocked[list[j]] = 1;
  }
  std::vector<size_t>& order = in.order;
  for (size_t i = 0; i < n; ++i)
    if (indegree[i] == 0 && !blocked[i]) order.push_back(i);
  for (size_t q = 0; q < order.size(); ++q)
    for (size_t j : after[order[q]])
      if (--indegree[j] == 0 && !blocked[j]) order.push_back(j);
  if (order.size() < n) {
    std::vector<char> runs(n, 0);
    for (size_t i : order) runs[i] = 1;
    size_t first = n, stuck = 0;  // the steps that never run, the unpaired receives aside
    for (size_t i = n; i-- > 0;)
      if (!runs[i] && !blocked[i]) {
        first = i;
        ++stuck;
      }
    if (stuck > 0)
      in.problem(ImportProblemKind::NeverReady, steps[first],
                 fmt::format("never runs, nor {} other step{}: the steps' order (a thread "
                             "block's own, depid/deps, a receive after its send) waits on a "
                             "receive that never completes or forms a cycle: the runtime would "
                             "hang",
                             stuck - 1, stuck == 2 ? "" : "s"));
  }
  in.position.assign(n, n);  // a step that never runs: after every one that does
  for (size_t q = 0; q < order.size(); ++q) in.position[order[q]] = q;
}

// The replay's own state: where the data came from, and how messages find their links.
struct Replay {
  explicit Replay(Import& import)
      : in(import), router(import.t), writer(import.p), position_of(import.position) {
    for (const auto& [key, list] : in.sends)
      pair_channels[{std::get<0>(key), std::get<1>(key)}].push_back(std::get<2>(key));
  }

  Import& in;
  topo::Router router;
  std::map<size_t, std::vector<ChunkId>> carried;  // sending step -> chunks it carried
  // step -> transfers it sent or received
  std::map<size_t, std::vector<TransferId>> step_transfers;
  // the transfers that last wrote each slot
  std::vector<std::map<Slot, std::vector<TransferId>>> writer;
  const std::vector<size_t>& position_of;  // step -> its position in `order`
  // Which of parallel links a message takes: Tenet's note says; otherwise the pair's channels are
  // dealt over its links in order (msccl-tools puts each link's traffic on its own channel).
  // (from, to) -> channels used, sorted
  std::map<std::pair<int, int>, std::vector<int>> pair_channels;
};

int lane_for(Replay& r, const XmlStep& send_step, int to) {
  const Import& in = r.in;
  if (auto it = in.tenet_lane.find({send_step.gpu, send_step.tb, send_step.s});
      it != in.tenet_lane.end())
    return it->second;
  if (!in.tenet_order.empty()) return 0;  // Tenet's file: no note means the first lane
  const auto& chans = r.pair_channels[{send_step.gpu, to}];
  const int chan = std::get<2>(in.peers.at({send_step.gpu, send_step.tb}));
  return static_cast<int>(std::lower_bound(chans.begin(), chans.end(), chan) - chans.begin());
}

std::vector<LinkId> route(const Replay& r, NodeId u, NodeId v, int lane) {
  const topo::Topology& t = r.in.t;
  std::vector<LinkId> direct;
  for (LinkId l : t.out_links(u))
    if (t.link(l).dst == v) direct.push_back(l);
  if (!direct.empty())
    return std::vector<LinkId>{direct[static_cast<size_t>(lane) % direct.size()]};
  auto found = r.router.route(u, v);
  if (!found)
    throw Error(
        fmt::format(
            "gpus {} and {} are not joined by a link or a route through switches or router NPUs", u,
            v),
        {r.in.file});
  return found->links;
}

// The chunk in slot s + j of x's GPU when x reads it (kGarbage for a slot never written: the
// runtime checks, check_contents, report that read).
ChunkId content(const Import& in, const XmlStep& x, Slot s, int j) {
  auto it = in.holds[x.gpu].find(in.canon(x.gpu, {s.buf, s.off + j}));
  return it == in.holds[x.gpu].end() ? kGarbage : it->second;
}

void replay_copy(Import& in, const XmlStep& x) {
  for (int j = 0; j < x.cnt; ++j)
    in.holds[x.gpu][in.canon(x.gpu, {x.dst.buf, x.dst.off + j})] = content(in, x, x.src, j);
}

// A local reduction of the same chunk: in the IR, the transfer that brought the source slot's data
// reduces into the GPU's copy (one copy of a chunk per node). A reduction of different chunks is
// reported by check_contents and changes nothing here.
void replay_reduce(Replay& r, size_t i) {
  Import& in = r.in;
  const XmlStep& x = in.steps[i];
  for (int j = 0; j < x.cnt; ++j) {
    const ChunkId from = content(in, x, x.src, j), into = content(in, x, x.dst, j);
    if (from == kGarbage || into == kGarbage) {
      in.holds[x.gpu][in.canon(x.gpu, {x.dst.buf, x.dst.off + j})] = kGarbage;
      continue;
    }
    if (from != into) continue;
    if (auto w = r.writer[x.gpu].find(in.canon(x.gpu, {x.src.buf, x.src.off + j}));
        w != r.writer[x.gpu].end())
      for (TransferId id : w->second) {
        in.reduced_later.emplace_back(id, r.position_of[i]);
        in.reduced_chunks.emplace(id, from);
      }
  }
}

// The send step's own dependencies (its depid/deps and the nops just before it in its thread
// block), as transfers: what those steps received or sent.
std::vector<TransferId> explicit_deps(const Replay& r, size_t send) {
  const Import& in = r.in;
  std::vector<TransferId> out;
  const XmlStep& sx = in.steps[send];
  auto depend = [&](const XmlStep& st) {
    if (st.depid < 0) return;
    auto it = in.step_at.find({st.gpu, st.depid, st.deps});
    if (it == in.step_at.end()) return;
    auto t = r.step_transfers.find(it->second);
    if (t != r.step_transfers.end()) out.insert(out.end(), t->second.begin(), t->second.end());
  };
  depend(sx);
  for (int before = sx.s - 1; before >= 0; --before) {
    auto it = in.step_at.find({sx.gpu, sx.tb, before});
    if (it == in.step_at.end() || in.steps[it->second].type != StepType::Nop) break;
    depend(in.steps[it->second]);
  }
  return out;
}

// Receiving step i: from the GPU of the send it pairs with, a transfer per run of its slots that
// carry consecutive chunks sent alike (all or none the sender's input): one message of cnt slots
// is one transfer of cnt chunks where they are consecutive, as Tenet exports it.
void replay_receive(Replay& r, size_t i) {
  Import& in = r.in;
  const std::vector<XmlStep>& steps = in.steps;
  const XmlStep& x = steps[i];
  const int recv = std::get<1>(in.peers[{x.gpu, x.tb}]);
  const size_t from = in.partner.at(i);
  const bool reduce = effect_of(x.type).reduces;
  const std::vector<TransferId> explicit_deps_of_send = explicit_deps(r, from);
  const Slot sent = steps[from].type == StepType::Send ? steps[from].src : steps[from].dst;
  const std::vector<ChunkId>& carried = r.carried.at(from);
  // A send of the GPU's input alone reads no arrival (Transfer::from_input).
  auto input = [&](int j) { return in.input_sent.count({from, j}) > 0; };
  const int chan = std::get<2>(in.peers.at({steps[from].gpu, steps[from].tb}));
  for (int j = 0; j < x.cnt;) {
    const ChunkId ch = carried[j];
    if (ch == kGarbage) {  // reported where it was read; no transfer in the IR
      in.holds[x.gpu][in.canon(x.gpu, {x.dst.buf, x.dst.off + j})] = kGarbage;
      r.writer[x.gpu].erase(in.canon(x.gpu, {x.dst.buf, x.dst.off + j}));
      ++j;
      continue;
    }
    int count = 1;
    while (j + count < x.cnt && count < kMaxChunksPerTransfer && carried[j + count] == ch + count &&
           input(j + count) == input(j))
      ++count;
    std::vector<TransferId> deps = explicit_deps_of_send;
    for (int k = j; k < j + count && !input(j); ++k) {
      const Slot src_slot = in.canon(steps[from].gpu, {sent.buf, sent.off + k});
      if (auto w = r.writer[steps[from].gpu].find(src_slot); w != r.writer[steps[from].gpu].end())
        deps.insert(deps.end(), w->second.begin(), w->second.end());
    }
    // In the IR the receiving node keeps what arrives (rrs too, which MSCCL passes on without
    // storing; the chunk's identity is the same).
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    const TransferId id =
        in.a.add(ch, recv, x.gpu, route(r, recv, x.gpu, lane_for(r, steps[from], x.gpu)),
                 reduce ? Op::Reduce : Op::Copy, deps, -1, -1, 0, static_cast<uint16_t>(chan),
                 input(j), static_cast<uint16_t>(count));
    in.send_of.emplace_back(steps[from].gpu, steps[from].tb, steps[from].s);
    in.send_position.push_back(r.position_of[from]);
    in.land_position.push_back(r.position_of[i]);
    r.step_transfers[i].push_back(id);
    r.step_transfers[from].push_back(id);
    for (int k = j; k < j + count; ++k) {
      const Slot to = in.canon(x.gpu, {x.dst.buf, x.dst.off + k});
      in.holds[x.gpu][to] = ch + (k - j);
      r.writer[x.gpu][to] = {id};
    }
    j += count;
  }
}

// Run in that order, following which chunk each slot holds.
void replay(Import& in) {
  Replay r(in);
  for (size_t i : in.order) {
    const XmlStep& x = in.steps[i];
    if (x.type == StepType::Copy) {
      replay_copy(in, x);
      continue;
    }
    if (x.type == StepType::Reduce) {
      replay_reduce(r, i);
      continue;
    }
    if (x.type == StepType::Nop) continue;
    const bool receives = effect_of(x.type).receives;
    if (receives) replay_receive(r, i);
    if (effect_of(x.type).sends) {
      std::vector<ChunkId> chunks;
      for (int j = 0; j < x.cnt; ++j)
        chunks.push_back(receives ? r.carried.at(in.partner.at(i))[j] : content(in, x, x.src, j));
      r.carried[i] = std::move(chunks);
    }
  }
}

// The final order: the exporter's when Tenet's note names every transfer's send step (so that
// importing gives back the same schedule), else the order of import. Returns the final position ->
// transfer of import.
std::vector<TransferId> final_order(Import& in) {
  Algorithm& a = in.a;
  for (auto [id, re_position] : in.reduced_later) in.land_position[id] = re_position;
  std::vector<TransferId> order_of(a.size());  // final position -> transfer
  std::iota(order_of.begin(), order_of.end(), TransferId{0});
  bool reorder = !in.tenet_order.empty();
  std::vector<int64_t> exporter_position(reorder ? a.size() : 0);
  for (TransferId id = 0; reorder && id < static_cast<TransferId>(a.size()); ++id) {
    auto it = in.tenet_order.find(in.send_of[id]);
    reorder = it != in.tenet_order.end();
    if (reorder) exporter_position[id] = it->second;
  }
  if (reorder)
    std::stable_sort(order_of.begin(), order_of.end(), [&](TransferId x, TransferId y) {
      return exporter_position[x] < exporter_position[y];
    });
  if (reorder || !in.reduced_later.empty()) {
    std::vector<TransferId> position(a.size());
    for (size_t k = 0; k < order_of.size(); ++k) position[order_of[k]] = static_cast<TransferId>(k);
    std::vector<char> reduced(a.size(), 0);
    for (auto [id, re_position] : in.reduced_later) reduced[id] = 1;
    // A dependency that now points forward came from a slot written twice with the same chunk (a
    // relay that also keeps it): the earlier arrival, which the IR's implicit data dependency
    // covers, is the one that matters.
    std::vector<TransferSpec> specs;
    for (TransferId id : order_of) {
      TransferSpec spec = a.spec(id);
      if (reduced[id]) spec.op = Op::Reduce;
      for (TransferId& d : spec.deps) d = position[d];
      std::erase_if(spec.deps,
                    [&](TransferId d) { return d >= static_cast<TransferId>(specs.size()); });
      specs.push_back(std::move(spec));
    }
    a = with_transfers(a, specs);
  }
  return order_of;
}

// In the IR a transfer reduces all the chunks it carries or none: a step of several chunks whose
// data is then reduced into the GPU's own ('re') in part only cannot be held (checked for a
// correct program only: in a wrong one the parts are what its problems explain). Read before the
// transfers take their final order (ids of import).
std::optional<std::string> partial_reduction(const Import& in) {
  for (auto [id, re_position] : in.reduced_later) {
    const Transfer& x = in.a[id];
    const auto first = in.reduced_chunks.lower_bound({id, x.chunk});
    const auto last = in.reduced_chunks.lower_bound({id, x.chunk + x.count});
    if (std::distance(first, last) != x.count)
      return fmt::format(
          "gpu {} receives chunks {}..{} in one step and then reduces only some of "
          "them into its own ('re'): Tenet's IR reduces a message's chunks together",
          x.dst, x.chunk, x.chunk + x.count - 1);
  }
  return std::nullopt;
}

// In the IR a GPU holds one copy of a chunk, changed when data arrives, and a send carries the
// copy as the transfers listed before it left it (a send of its input alone excepted: it is
// Transfer::from_input, and reads no copy). That is the program's meaning only if every
// send of a chunk from a GPU comes after exactly the arrivals (or 're' steps) that precede it in
// the program: a GPU that sends its own contribution after the data to reduce with it has
// arrived (an exchange in which both sides reduce) keeps two copies, which the IR cannot hold.
void check_one_copy(const Import& in, const std::vector<TransferId>& order_of) {
  const Algorithm& alg = in.a;
  std::vector<size_t> sent_at(order_of.size()), landed_at(order_of.size());
  for (size_t k = 0; k < order_of.size(); ++k) {
    sent_at[k] = in.send_position[order_of[k]];
    landed_at[k] = in.land_position[order_of[k]];
  }
  std::map<std::pair<NodeId, ChunkId>, std::vector<TransferId>> sent_from;
  for (TransferId id = 0; id < static_cast<TransferId>(alg.size()); ++id)
    if (!alg[id].from_input)
      for (ChunkId c = alg[id].chunk; c < alg[id].chunk + alg[id].count; ++c)
        sent_from[{alg[id].src, c}].push_back(id);
  for (TransferId id = 0; id < static_cast<TransferId>(alg.size()); ++id)
    for (ChunkId c = alg[id].chunk; c < alg[id].chunk + alg[id].count; ++c)
      for (TransferId other : sent_from[{alg[id].dst, c}])
        if ((other > id) !=
            (sent_at[other] >= landed_at[id]))  // a compound step sends what it received
          throw Error(
              fmt::format("gpu {} sends chunk {} {} what gpu {} sent it takes effect, but "
                          "Tenet's IR (one copy of a chunk per GPU, changed when data "
                          "arrives) orders it the other way: this program keeps two "
                          "copies of the chunk, which the IR cannot represent",
                          alg[id].dst, c, sent_at[other] >= landed_at[id] ? "after" : "before",
                          alg[id].src),
              {in.file});
}

}  // namespace

Algorithm parse_msccl_xml(std::string_view text, const topo::Topology& t, const std::string& file) {
  MscclImport in = import_msccl_xml(text, t, file);
  if (!in.problems.empty())
    throw Error(fmt::format("the program is incorrect in the MSCCL runtime ({} problem{}; `tenet "
                            "verify` lists them): {}",
                            in.problems.size(), in.problems.size() == 1 ? "" : "s",
                            in.problems.front().message),
                {file});
  return std::move(in.algorithm);
}

MscclImport import_msccl_xml(std::string_view text, const topo::Topology& t,
                             const std::string& file) {
  Import in(text, t, file);
  parse_document(in);
  parse_attributes(in);
  split_chunks(in);
  read_metadata(in);
  buffer_slots(in);
  read_steps(in);
  order_steps(in);
  detail::check_bounds(in);
  detail::check_order(in);
  detail::check_contents(in);
  replay(in);
  const std::optional<std::string> partial = partial_reduction(in);
  const std::vector<TransferId> order_of = final_order(in);
  // Whether the IR can hold the program matters only for a correct one.
  if (in.result.problems.empty()) {
    if (partial) throw Error(*partial, {in.file});
    check_one_copy(in, order_of);
  }
  in.result.algorithm = std::move(in.a);
  return std::move(in.result);
}

}  // namespace tenet::synth
