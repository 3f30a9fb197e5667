#include "synth/timing.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "topo/error.hpp"

namespace tenet::synth {

RouteCost route_cost(const topo::Topology& t, std::span<const LinkId> route, Bytes bytes,
                     LinkModel model) {
  if (route.empty()) throw Error("a transfer's route is empty");
  RouteCost c;
  c.bottleneck = std::numeric_limits<Bandwidth>::max();
  for (LinkId l : route) {
    if (l < 0 || l >= t.num_links())
      throw Error(fmt::format("link {} does not exist (the topology has {} links)", l, t.num_links()));
    c.bottleneck = std::min(c.bottleneck, t.link(l).bandwidth);
    c.latency += t.link(l).latency;
  }
  const Time serialization = transfer_time(bytes, c.bottleneck);
  c.duration = serialization + c.latency;
  c.occupancy = model == LinkModel::Pipelined ? serialization : c.duration;
  return c;
}

TimingResult compute_times(const topo::Topology& t, const Algorithm& a, std::span<Time> starts,
                           std::span<Time> ends) {
  const int64_t chunks = a.collective.num_chunks();
  const size_t n = a.size();
  TimingResult result;
  result.link_busy.assign(t.num_links(), 0);
  std::vector<Time> link_free(t.num_links(), 0);
  // When each (node, chunk) last received data, for the implicit data dependency.
  std::vector<Time> ready(static_cast<size_t>(t.num_nodes()) * chunks, 0);
  for (TransferId id = 0; id < static_cast<TransferId>(n); ++id) {
    const Transfer& x = a[id];
    auto where = [&] { return fmt::format("transfer {}: ", id); };
    if (x.chunk < 0 || x.chunk >= chunks)
      throw Error(where() + fmt::format("chunk {} out of range (0..{})", x.chunk, chunks - 1));
    if (x.src < 0 || x.src >= t.num_nodes() || x.dst < 0 || x.dst >= t.num_nodes())
      throw Error(where() + "source or destination is not a node of the topology");
    Time start = ready[static_cast<size_t>(x.src) * chunks + x.chunk];
    for (TransferId d : a.deps(id)) {
      if (d < 0 || d >= id)
        throw Error(where() + fmt::format("depends on transfer {}, which is not listed before it", d));
      start = std::max(start, ends[d]);
    }
    RouteCost cost;
    try {
      cost = route_cost(t, a.route(id), a.chunk_bytes, a.link_model);
    } catch (const Error& e) {
      throw Error(where() + e.message());
    }
    for (LinkId l : a.route(id)) start = std::max(start, link_free[l]);
    const Time end = start + cost.duration;
    for (LinkId l : a.route(id)) {
      link_free[l] = start + cost.occupancy;
      result.link_busy[l] += cost.occupancy;
    }
    Time& r = ready[static_cast<size_t>(x.dst) * chunks + x.chunk];
    r = std::max(r, end);
    starts[id] = start;
    ends[id] = end;
    result.collective_time = std::max(result.collective_time, end);
  }
  return result;
}

TimingResult time(const topo::Topology& t, Algorithm& a) {
  std::vector<Time> starts(a.size()), ends(a.size());
  TimingResult result = compute_times(t, a, starts, ends);
  for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id)
    a.set_times(id, starts[id], ends[id]);
  a.claimed_time = result.collective_time;
  return result;
}

}  // namespace tenet::synth
