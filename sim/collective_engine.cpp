#include "sim/collective_engine.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "topo/error.hpp"

namespace tenet::sim {

using synth::TransferId;

Time EndpointModel::after_arrival(Bytes bytes, bool reduced) const {
  Time t = delay;
  if (reduced && reduce_memory_bandwidth > 0) t += 3 * transfer_time(bytes, reduce_memory_bandwidth);
  return t;
}

CollectiveRun::CollectiveRun(const synth::Algorithm& a, Network& net, EventQueue& events, std::function<void()> on_done,
                             EndpointModel endpoints)
    : a_(a),
      net_(net),
      events_(events),
      on_done_(std::move(on_done)),
      endpoints_(endpoints),
      reduction_(a.reduction_time()),
      graph_(a),
      admission_(net.topology(), a) {
  remaining_ = a.size();
  waiting_ = graph_.waits();
}

Time replay(const topo::Topology& t, const synth::Algorithm& a, NetworkKind kind, const PacketConfig& packet) {
  EventQueue events;
  auto net = make_network(kind, t, events, packet);
  Time finish = 0;
  CollectiveRun run(a, *net, events, [&] { finish = events.now(); });
  run.start();
  events.run();
  net->check_drained();
  if (!run.done()) throw Error("the algorithm's replay stopped before its last transfer arrived");
  return finish;
}

void CollectiveRun::start() {
  if (remaining_ == 0) {
    events_.schedule_after(0, on_done_);
    return;
  }
  if (endpoints_.delay > 0) {
    events_.schedule_after(endpoints_.delay, [this] {
      for (TransferId id = 0; id < static_cast<TransferId>(a_.size()); ++id)
        if (waiting_[id] == 0) admission_.dependencies_met(id);
      changed();
    });
    return;
  }
  for (TransferId id = 0; id < static_cast<TransferId>(a_.size()); ++id)
    if (waiting_[id] == 0) admission_.dependencies_met(id);
  changed();
}


void CollectiveRun::changed() {
  if (deciding_) return;
  deciding_ = true;
  events_.at_end_of_instant([this] {
    deciding_ = false;
    admission_.admit([this](TransferId id) { issue(id); });
  });
}

void CollectiveRun::issue(TransferId id) {
  const synth::Transfer& x = a_[id];
  net_.send(
      Message{x.src, x.dst, a_.chunk_bytes, a_.route(id), x.rate},
      [this, id] {
        admission_.released(id);
        changed();
      },
      [this, id] {
        // Usable after the reduction, if any (Algorithm::reduce_bandwidth), and what the endpoints add.
        const bool reduced = a_[id].op == synth::Op::Reduce;
        const Time after = (reduced ? reduction_ : 0) +
                           (endpoints_.active() ? endpoints_.after_arrival(a_.chunk_bytes, reduced) : 0);
        if (after > 0)
          events_.schedule_after(after, [this, id] { arrived(id); });
        else
          arrived(id);
      });
}

void CollectiveRun::arrived(TransferId id) {
  bool ready = false;
  graph_.arrived(id, waiting_, [&](TransferId u) {
    admission_.dependencies_met(u);
    ready = true;
  });
  if (ready) changed();
  if (--remaining_ == 0) on_done_();
}

}  // namespace tenet::sim
