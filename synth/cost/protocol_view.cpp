#include "synth/cost/protocol_view.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "topo/error.hpp"

namespace tenet::synth {

ProtocolView::ProtocolView(const topo::Topology& t, const Algorithm& a) : t_(&t) {
  if (timed_on(t, a)) return;
  if (t.applied())
    throw Error(fmt::format("the algorithm runs protocol '{}', but topology '{}' is under '{}'",
                            a.protocol, t.name(), t.applied()->name));
  const topo::Protocol* p = t.protocol(a.protocol);
  if (!p) {
    std::vector<std::string> names;
    for (const topo::Protocol& q : t.protocols()) names.push_back("'" + q.name + "'");
    throw Error(
        fmt::format("the algorithm runs protocol '{}', which topology '{}' does not describe ({})",
                    a.protocol, t.name(),
                    names.empty() ? std::string("it lists no protocols")
                                  : fmt::format("it lists {}", fmt::join(names, ", "))));
  }
  under_ = t.under(*p);
}

std::optional<Algorithm> on_the_wire(const topo::Topology& t, const Algorithm& a) {
  if (a.protocol.empty()) return std::nullopt;
  const ProtocolView view(t, a);  // throws for a protocol `t` does not list
  const topo::Protocol& p = *view.topology().applied();
  std::optional<Algorithm> w(a);
  w->protocol.clear();
  w->chunk_bytes = p.on_the_wire(a.chunk_bytes);
  if (a.reduce_bandwidth > 0 && a.chunk_bytes > 0)
    w->reduce_bandwidth = static_cast<Bandwidth>(static_cast<Int128>(a.reduce_bandwidth) *
                                                 w->chunk_bytes / a.chunk_bytes);
  if (a.has_rates())
    for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id)
      if (const Bandwidth r = a.rate(id); r > 0) {
        Bandwidth narrowest = std::numeric_limits<Bandwidth>::max();
        for (LinkId l : a.route(id)) narrowest = std::min(narrowest, t.link(l).bandwidth);
        w->set_rate(id, std::min(narrowest, p.on_the_wire(r)));
      }
  return w;
}

topo::Topology wire_topology(const topo::Topology& t, const Algorithm& a) {
  const ProtocolView view(t, a);  // throws for a protocol `t` does not list
  if (!view.topology().applied()) return t;
  topo::Protocol full = *view.topology().applied();
  full.bandwidth = 1.0;
  return t.under(full);
}

void mark_protocol(Algorithm& a, const topo::Topology& t, const topo::Protocol& p) {
  a.protocol = p.name;
  a.topology_fingerprint = t.fingerprint();
}

}  // namespace tenet::synth
