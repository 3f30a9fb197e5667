// The topology an algorithm is timed on, given the runtime protocol it runs (topo::Protocol,
// Algorithm::protocol): the topology under that protocol, where every link carries data at its
// protocol's share of its bandwidth and pays its protocol's per-step cost. Every consumer that
// times an algorithm (timing, the verifier, the simulator's replay, the exporters) times it there.
#pragma once

#include <optional>

#include "synth/ir/algorithm.hpp"
#include "topo/topology.hpp"

namespace tenet::synth {

// Whether `t` is what `a` is timed on: `a` runs no protocol, or `t` is under the one it runs.
inline bool timed_on(const topo::Topology& t, const Algorithm& a) {
  return a.protocol.empty() || (t.applied() && t.applied()->name == a.protocol);
}

// `t` itself where timed_on(t, a); else `t` under the protocol `a` runs, which `t` must list.
// Throws tenet::Error naming the protocol and the topology when `t` lists no such protocol (an
// algorithm made for another system) or is under another one.
class ProtocolView {
 public:
  ProtocolView(const topo::Topology& t, const Algorithm& a);
  const topo::Topology& topology() const { return under_ ? *under_ : *t_; }

 private:
  const topo::Topology* t_;
  std::optional<topo::Topology> under_;
};

// `a` as the links of `t` carry it, where it runs a protocol `t` lists: chunks of the bytes on the
// wire (chunk_bytes / p.bandwidth, rounded up), rates the same share faster (a transfer still
// takes its time), reductions at the rate that keeps their time, and no protocol. Timed on
// wire_topology(t, a), it takes the time `a` takes. Null where `a` runs no protocol. For the
// simulator and ASTRA-sim, whose networks carry bytes at the links' bandwidths. Throws as
// ProtocolView.
std::optional<Algorithm> on_the_wire(const topo::Topology& t, const Algorithm& a);
// `t` as it carries on_the_wire(t, a): every link at its bandwidth, with its step and its
// switches' reduction as the protocol `a` runs has them (Topology::under at a full share).
topo::Topology wire_topology(const topo::Topology& t, const Algorithm& a);

// Marks `a`, made on `t` under protocol `p` (t.under(p)), as running `p` on `t`.
void mark_protocol(Algorithm& a, const topo::Topology& t, const topo::Protocol& p);

}  // namespace tenet::synth
