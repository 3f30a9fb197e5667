// Replays an Algorithm on a simulated network, admitting transfers by the rule of
// synth/cost/link_admission.hpp (the one synth::time follows): a transfer is issued when its
// dependencies and every earlier-listed arrival of its chunk at its source have arrived, the
// transfer listed before it from the same sender port has been issued, and every link of its route
// has its rate to spare (issued, unreleased transfers hold theirs); at each instant, eligible
// transfers go in list order. A reduced chunk counts as arrived once reduced
// (Algorithm::reduce_bandwidth). On the analytical network this is exactly the timing model, so an
// algorithm replays in its synthesized time; on a congested network the same admission holds and
// the network decides the times.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "sim/network.hpp"
#include "synth/cost/link_admission.hpp"
#include "synth/ir/algorithm.hpp"
#include "synth/ir/ring_plan.hpp"

namespace tenet::sim {

// What the endpoints add to a collective, as ASTRA-sim's system layer charges it (off by default:
// then a collective replays in exactly its synthesized time). ASTRA-sim hands every message of a
// native collective between the NPU and its memory bus, `endpoint-delay` ns each way
// (astra-sim/system/MemBus.cc, send_from_NPU_to_MA / send_from_MA_to_NPU), and a message that is
// reduced is read twice and written once at `local-mem-bw` (astra-sim/system/PacketBundle.cc,
// PacketBundle::call). A native collective's step moves one message between two NPUs (the
// chunks Tenet's algorithm moves between them in that step), which arrives whole. In a dependency
// graph that is: the first sends leave `delay` after the collective starts; the transfers between
// two NPUs that become ready at one instant are one message, whose transfers are usable when the
// last of them has arrived, `delay` later (plus three passes of the message's bytes over
// `reduce_memory_bandwidth` when it is reduced); and the collective ends `delay` after its last
// arrival.
struct EndpointModel {
  Time delay = 0;
  Bandwidth reduce_memory_bandwidth = 0;  // B/s; 0: reductions are free
  bool active() const { return delay > 0 || reduce_memory_bandwidth > 0; }
  // When the data of an arrival of `bytes` is usable, after it arrived.
  Time after_arrival(Bytes bytes, bool reduced) const;
};

// What every replay of one algorithm on one network reads and none changes: its list as the links
// carry it (synth::on_the_wire under a protocol), its arrival graph and its queues. A workload
// calls a collective many times with one algorithm: its runs share one (made per call, MoE's
// 48 All-to-Alls of 1.46 M transfers on mesh2d:8x8 built a graph of 4.7 s each). It reads `a` and
// `t` (the network's topology) while it lasts.
class ReplayList {
 public:
  ReplayList(const topo::Topology& t, const synth::Algorithm& a);
  ~ReplayList();
  ReplayList(const ReplayList&) = delete;
  ReplayList& operator=(const ReplayList&) = delete;

  struct Parts;  // what the replay reads (collective_engine.cpp)
  const Parts& parts() const { return *parts_; }

 private:
  std::unique_ptr<Parts> parts_;
};

class CollectiveRun {
 public:
  // `on_done` runs when the last transfer has arrived (right away for an empty algorithm), or
  // `endpoints.delay` later.
  // Throws tenet::Error when a transfer's route or rate cannot be replayed on the network's
  // topology.
  CollectiveRun(const synth::Algorithm& a, Network& net, EventQueue& events,
                std::function<void()> on_done, EndpointModel endpoints = {});
  // The same from its list made for this network's topology, which must outlive the run.
  CollectiveRun(const ReplayList& list, Network& net, EventQueue& events,
                std::function<void()> on_done, EndpointModel endpoints = {});
  // A ring plan's transfers computed as they go (synth/ir/ring_plan.hpp): the same replay as its
  // materialized algorithm's, in memory for its members, not its transfers. `plan` must outlive
  // the run.
  CollectiveRun(const synth::RingPlan& plan, Network& net, EventQueue& events,
                std::function<void()> on_done, EndpointModel endpoints = {});
  ~CollectiveRun();
  void start();
  bool done() const;

  class Replay;  // what both kinds of run share: issuing, arrivals, the end

 private:
  std::unique_ptr<Replay> replay_;
};

// Replays `a` (or `plan`) alone on a fresh network of the given kind and returns the time its last
// transfer arrived. Throws tenet::Error when the network deadlocks (see Network::check_drained).
Time replay(const topo::Topology& t, const synth::Algorithm& a, NetworkKind kind,
            const PacketConfig& packet = {});
Time replay(const topo::Topology& t, const synth::RingPlan& plan, NetworkKind kind,
            const PacketConfig& packet = {});

}  // namespace tenet::sim
