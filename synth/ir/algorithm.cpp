#include "synth/ir/algorithm.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "topo/error.hpp"

namespace tenet::synth {

std::string_view to_string(Op op) { return op == Op::Copy ? "copy" : "reduce"; }
std::string_view to_string(LinkModel m) { return m == LinkModel::Pipelined ? "pipelined" : "hold"; }

LinkModel parse_link_model(std::string_view name) {
  if (name == "pipelined") return LinkModel::Pipelined;
  if (name == "hold") return LinkModel::Hold;
  throw Error(fmt::format("unknown link model '{}' (pipelined or hold)", name));
}

TransferId Algorithm::add(ChunkId chunk, NodeId src, NodeId dst, std::span<const LinkId> route,
                          Op op, std::span<const TransferId> deps, Time start, Time end,
                          Bandwidth rate, uint16_t channel, bool from_input, uint16_t count) {
  static_assert(sizeof(LinkId) == sizeof(int32_t) && sizeof(TransferId) == sizeof(int32_t));
  if (transfers_.size() >= static_cast<size_t>(std::numeric_limits<TransferId>::max()) ||
      pool_.size() + route.size() + deps.size() > std::numeric_limits<uint32_t>::max())
    throw Error("algorithm too large (over 2^31 transfers or 2^32 route links and dependencies)");
  if (route.size() > std::numeric_limits<uint16_t>::max())
    throw Error(fmt::format("a route of {} links (at most {})", route.size(),
                            std::numeric_limits<uint16_t>::max()));
  Transfer t;
  t.chunk = chunk;
  t.src = src;
  t.dst = dst;
  t.op = op;
  t.start = start;
  t.end = end;
  t.channel = channel;
  t.from_input = from_input;
  t.count = count;
  t.pool_begin = static_cast<uint32_t>(pool_.size());
  t.route_size = static_cast<uint16_t>(route.size());
  pool_.insert(pool_.end(), route.begin(), route.end());
  pool_.insert(pool_.end(), deps.begin(), deps.end());
  if (!rates_.empty() || rate != 0) {
    rates_.resize(transfers_.size(), 0);
    rates_.push_back(rate);
  }
  transfers_.push_back(t);
  return static_cast<TransferId>(transfers_.size() - 1);
}

Algorithm empty_algorithm(std::string name, const topo::Topology& t, const Collective& c,
                          Bytes chunk_bytes, LinkModel model) {
  Algorithm a;
  a.name = std::move(name);
  a.collective = c;
  a.topology_fingerprint = t.fingerprint();
  a.topology_name = t.name();
  a.chunk_bytes = chunk_bytes;
  a.link_model = model;
  a.step_costs = t.charges_steps();
  return a;
}

TransferSpec Algorithm::spec(TransferId id) const {
  const Transfer& t = transfers_[id];
  auto r = route(id);
  auto d = deps(id);
  return {t.chunk, t.src, t.dst,    t.op,      {r.begin(), r.end()}, {d.begin(), d.end()},
          t.start, t.end, rate(id), t.channel, t.from_input,         t.count};
}

bool Algorithm::has_messages() const {
  return std::any_of(transfers_.begin(), transfers_.end(),
                     [](const Transfer& t) { return t.count != 1; });
}

bool Algorithm::sends_input() const {
  return std::any_of(transfers_.begin(), transfers_.end(),
                     [](const Transfer& t) { return t.from_input; });
}

bool Algorithm::has_rates() const {
  return std::any_of(rates_.begin(), rates_.end(), [](Bandwidth r) { return r != 0; });
}

void Algorithm::set_rate(TransferId id, Bandwidth rate) {
  if (rates_.empty() && rate == 0) return;
  rates_.resize(transfers_.size(), 0);
  rates_[id] = rate;
}

void Algorithm::rename(std::span<const NodeId> nodes, std::span<const LinkId> links) {
  for (Transfer& t : transfers_) {
    t.src = nodes[static_cast<size_t>(t.src)];
    t.dst = nodes[static_cast<size_t>(t.dst)];
  }
  for (const Transfer& t : transfers_)
    for (uint32_t i = t.pool_begin; i < t.pool_begin + t.route_size; ++i)
      pool_[i] = links[static_cast<size_t>(pool_[i])];
}

void Algorithm::clear_times() {
  for (Transfer& t : transfers_) t.start = t.end = -1;
  claimed_time = -1;
}

void Algorithm::reserve(size_t transfers, size_t route_links, size_t deps) {
  transfers_.reserve(transfers);
  pool_.reserve(route_links + deps);
}

bool Algorithm::fully_timed() const {
  return std::all_of(transfers_.begin(), transfers_.end(),
                     [](const Transfer& t) { return t.start >= 0 && t.end >= 0; });
}

Time Algorithm::makespan() const {
  Time m = 0;
  const Time reduction = reduction_time();
  for (TransferId id = 0; id < static_cast<TransferId>(transfers_.size()); ++id)
    m = std::max(m, usable_at(id, transfers_[id].end, reduction));
  return m;
}

Algorithm with_transfers(const Algorithm& a, const std::vector<TransferSpec>& specs) {
  Algorithm out;
  out.name = a.name;
  out.method = a.method;
  out.provenance = a.provenance;
  out.collective = a.collective;
  out.topology_fingerprint = a.topology_fingerprint;
  out.topology_name = a.topology_name;
  out.chunk_bytes = a.chunk_bytes;
  out.link_model = a.link_model;
  out.claimed_time = a.claimed_time;
  out.reduce_bandwidth = a.reduce_bandwidth;
  out.serial_channels = a.serial_channels;
  out.step_costs = a.step_costs;
  out.protocol = a.protocol;
  for (const TransferSpec& s : specs) out.add(s);
  return out;
}

CarriedChunks::CarriedChunks(const Algorithm& a) : a_(a) {
  if (!a.has_messages()) return;
  base_.assign(a.size() + 1, 0);
  for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id)
    base_[static_cast<size_t>(id) + 1] = base_[static_cast<size_t>(id)] + a[id].count;
}

Algorithm split_messages(const Algorithm& a) {
  if (!a.has_messages()) return a;
  Algorithm out = with_transfers(a, {});
  out.claimed_time = -1;
  std::vector<TransferId> last(a.size());
  std::vector<TransferId> deps;
  for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id) {
    const Transfer& x = a[id];
    deps.clear();
    for (TransferId d : a.deps(id)) deps.push_back(last[d]);
    for (ChunkId c = x.chunk; c < x.chunk + x.count; ++c)
      last[id] = out.add(c, x.src, x.dst, a.route(id), x.op, deps, -1, -1, a.rate(id), x.channel,
                         x.from_input);
  }
  return out;
}

}  // namespace tenet::synth
