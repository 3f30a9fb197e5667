#include "sim/collective_engine.hpp"

#include <algorithm>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "synth/cost/protocol_view.hpp"
#include "topo/error.hpp"

namespace tenet::sim {

using synth::TransferId;

Time EndpointModel::after_arrival(Bytes bytes, bool reduced) const {
  Time t = delay;
  if (reduced && reduce_memory_bandwidth > 0)
    t += 3 * transfer_time(bytes, reduce_memory_bandwidth);
  return t;
}

// What both kinds of run share; Run<Source> below is the one implementation.
class CollectiveRun::Replay {
 public:
  virtual ~Replay() = default;
  virtual void start() = 0;
  virtual bool done() const = 0;
};

namespace {

// A transfer's per-step cost: its route's largest (synth::RouteCost::step).
Time step_of(const topo::Topology& t, std::span<const topo::LinkId> route) {
  Time step = 0;
  for (topo::LinkId l : route) step = std::max(step, t.link(l).step);
  return step;
}

}  // namespace

struct ReplayList::Parts {
  Parts(const topo::Topology& t, const synth::Algorithm& a)
      : t(t),
        wire(synth::on_the_wire(t, a)),
        stepped(wire ? std::optional<topo::Topology>(synth::wire_topology(t, a)) : std::nullopt),
        list(wire ? *wire : a),
        graph(list),
        queues(t, list) {}
  const topo::Topology& t;
  std::optional<synth::Algorithm> wire;
  std::optional<topo::Topology> stepped;  // t with its steps under the algorithm's protocol
  const synth::Algorithm& list;           // what the links carry: `wire`, or the algorithm
  synth::ArrivalGraph graph;
  synth::TransferQueues queues;
};

ReplayList::ReplayList(const topo::Topology& t, const synth::Algorithm& a)
    : parts_(std::make_unique<Parts>(t, a)) {}
ReplayList::~ReplayList() = default;

namespace {

// An algorithm's list: its arrival graph counts each transfer's dependencies off. One that runs a
// protocol is replayed as the links carry it (synth::on_the_wire). Its list is shared
// (ReplayList), or its own where made from the algorithm.
class ListSource {
 public:
  using Queues = synth::TransferQueues;
  ListSource(const topo::Topology& t, const synth::Algorithm& a)
      : own_(std::make_unique<ReplayList>(t, a)), p_(own_->parts()), waiting_(p_.graph.waits()) {}
  ListSource(const topo::Topology&, const ReplayList& list)
      : p_(list.parts()), waiting_(p_.graph.waits()) {}
  const Queues& queues() const { return p_.queues; }
  bool hold() const { return p_.list.link_model == synth::LinkModel::Hold; }
  size_t size() const { return p_.list.size(); }
  Bytes chunk_bytes() const { return p_.list.chunk_bytes; }
  Time reduction_time() const { return p_.list.reduction_time(); }
  template <typename F>
  void first(F&& f) const {
    for (TransferId id = 0; id < static_cast<TransferId>(p_.list.size()); ++id)
      if (waiting_[id] == 0) f(id);
  }
  template <typename F>
  void arrived(TransferId id, F&& f) {
    p_.graph.arrived(id, waiting_, f);
  }
  Message message(TransferId id, bool& reduced) const {
    const synth::Algorithm& a = p_.list;
    const synth::Transfer& x = a[id];
    reduced = x.op == synth::Op::Reduce;
    const Time step = a.step_costs ? step_of(p_.stepped ? *p_.stepped : p_.t, a.route(id)) : 0;
    return Message{x.src, x.dst, a.bytes(id), a.route(id), a.rate(id), step};
  }

 private:
  std::unique_ptr<ReplayList> own_;  // where made from the algorithm
  const ReplayList::Parts& p_;
  std::vector<int32_t> waiting_;  // arrivals each transfer still waits for
};

// A ring plan: each transfer waits for one arrival, which names it (RingPlan::user).
class PlanSource {
 public:
  using Queues = synth::RingPlan;
  PlanSource(const topo::Topology& t, const synth::RingPlan& plan) : t_(t), plan_(plan) {}
  const Queues& queues() const { return plan_; }
  bool hold() const { return plan_.link_model() == synth::LinkModel::Hold; }
  size_t size() const { return static_cast<size_t>(plan_.size()); }
  Bytes chunk_bytes() const { return plan_.chunk_bytes(); }
  Time reduction_time() const { return plan_.reduction_time(); }
  template <typename F>
  void first(F&& f) const {
    plan_.first_sends(f);
  }
  template <typename F>
  void arrived(TransferId id, F&& f) const {
    if (const TransferId u = plan_.user(id); u >= 0) f(u);
  }
  Message message(TransferId id, bool& reduced) const {
    const synth::RingPlan::Send x = plan_.send(id);
    reduced = x.op == synth::Op::Reduce;
    return Message{x.src,   x.dst,  plan_.chunk_bytes(),
                   x.route, x.rate, plan_.step_costs() ? step_of(t_, x.route) : 0};
  }

 private:
  const topo::Topology& t_;
  const synth::RingPlan& plan_;
};

template <typename Source>
class Run final : public CollectiveRun::Replay {
 public:
  template <typename Made>
  Run(const Made& made, Network& net, EventQueue& events, std::function<void()> on_done,
      EndpointModel endpoints)
      : net_(net),
        events_(events),
        on_done_(std::move(on_done)),
        endpoints_(endpoints),
        source_(net.topology(), made),
        reduction_(source_.reduction_time()),
        admission_(net.topology(), source_.queues(), source_.hold(), net.shares_links()),
        remaining_(source_.size()) {}

  void start() override {
    if (remaining_ == 0) {
      events_.schedule_after(0, on_done_);
      return;
    }
    auto begin = [this] {
      source_.first([this](TransferId id) { ready(id); });
      changed();
    };
    if (endpoints_.delay > 0)
      events_.schedule_after(endpoints_.delay, begin);
    else
      begin();
  }
  bool done() const override { return remaining_ == 0; }

 private:
  // Admission may now admit something: decide at the end of the instant.
  void changed() {
    if (deciding_) return;
    deciding_ = true;
    events_.at_end_of_instant([this] {
      deciding_ = false;
      admission_.admit([this](TransferId id) { issue(id); });
    });
  }

  // Transfer `id` has its dependencies: with endpoints, it joins the message of the transfers
  // between the same two NPUs that became ready at this instant.
  void ready(TransferId id) {
    if (endpoints_.active()) {
      bool reduced = false;
      const Message m = source_.message(id, reduced);
      if (events_.now() != open_at_) {
        open_.clear();
        open_at_ = events_.now();
      }
      const auto [it, fresh] = open_.try_emplace({m.src, m.dst}, -1);
      if (fresh) {  // a message slot: one a delivered message left, or a new one
        if (free_.empty()) {
          it->second = static_cast<int32_t>(messages_.size());
          messages_.emplace_back();
        } else {
          it->second = free_.back();
          free_.pop_back();
        }
      }
      EndpointMessage& message = messages_[it->second];
      message.ends = it->first;
      ++message.pending;
      message.bytes += m.bytes;
      message.reduced = message.reduced || reduced;
      if (message_of_.size() <= static_cast<size_t>(id)) message_of_.resize(source_.size(), -1);
      message_of_[id] = it->second;
    }
    admission_.dependencies_met(id);
  }

  void issue(TransferId id) {
    bool reduced = false;
    const Message m = source_.message(id, reduced);
    net_.send(
        m,
        [this, id] {
          admission_.released(id);
          changed();
        },
        [this, id, reduced] {
          if (endpoints_.active()) {
            delivered(id, reduced);
            return;
          }
          // Usable after the reduction, if any (Algorithm::reduce_bandwidth: of its last chunk).
          if (reduced && reduction_ > 0)
            events_.schedule_after(reduction_, [this, id] { arrived(id); });
          else
            arrived(id);
        });
  }

  // With endpoints: transfer `id` is at its destination; its message is usable once all of it is,
  // after what the endpoints add for the whole message (EndpointModel::after_arrival).
  void delivered(TransferId id, bool reduced) {
    const int32_t slot = message_of_[id];
    EndpointMessage& message = messages_[slot];
    message.arrived.push_back(id);
    if (--message.pending > 0) return;
    const Time after =
        (reduced ? reduction_ : 0) + endpoints_.after_arrival(message.bytes, message.reduced);
    events_.schedule_after(after, [this, members = std::move(message.arrived)] {
      for (TransferId u : members) arrived(u);
    });
    // Delivered at the instant it was made (nothing to move): later ready ones start another.
    if (const auto open = open_.find(message.ends);
        open_at_ == events_.now() && open != open_.end() && open->second == slot)
      open_.erase(open);
    message = EndpointMessage{};
    free_.push_back(slot);
  }

  void arrived(TransferId id) {
    bool ready_now = false;
    source_.arrived(id, [&](TransferId u) {
      ready(u);
      ready_now = true;
    });
    if (ready_now) changed();
    if (--remaining_ == 0) on_done_();
  }

  Network& net_;
  EventQueue& events_;
  std::function<void()> on_done_;
  EndpointModel endpoints_;
  Source source_;
  Time reduction_;  // how long a reduction takes at its destination (Algorithm::reduce_bandwidth)
  synth::BasicLinkAdmission<typename Source::Queues> admission_;
  bool deciding_ = false;  // an admission is scheduled for the end of this instant
  size_t remaining_ = 0;
  // With endpoints, the messages ASTRA-sim's native collectives send (see ready()).
  struct EndpointMessage {
    std::pair<topo::NodeId, topo::NodeId> ends;
    int pending = 0;  // its transfers not yet arrived
    Bytes bytes = 0;
    bool reduced = false;
    std::vector<TransferId> arrived;
  };
  std::vector<EndpointMessage> messages_;  // slots, reused once delivered (free_)
  std::vector<int32_t> free_;
  std::vector<int32_t> message_of_;                                // per transfer, its message
  std::map<std::pair<topo::NodeId, topo::NodeId>, int32_t> open_;  // made at open_at_, by ends
  Time open_at_ = -1;
};

template <typename Made>
Time replay_alone(const topo::Topology& t, const Made& made, NetworkKind kind,
                  const PacketConfig& packet) {
  EventQueue events;
  auto net = make_network(kind, t, events, packet);
  Time finish = 0;
  CollectiveRun run(made, *net, events, [&] { finish = events.now(); });
  run.start();
  events.run();
  net->check_drained();
  if (!run.done()) throw Error("the algorithm's replay stopped before its last transfer arrived");
  return finish;
}

}  // namespace

CollectiveRun::CollectiveRun(const synth::Algorithm& a, Network& net, EventQueue& events,
                             std::function<void()> on_done, EndpointModel endpoints)
    : replay_(std::make_unique<Run<ListSource>>(a, net, events, std::move(on_done), endpoints)) {}

CollectiveRun::CollectiveRun(const ReplayList& list, Network& net, EventQueue& events,
                             std::function<void()> on_done, EndpointModel endpoints)
    : replay_(std::make_unique<Run<ListSource>>(list, net, events, std::move(on_done), endpoints)) {
}

CollectiveRun::CollectiveRun(const synth::RingPlan& plan, Network& net, EventQueue& events,
                             std::function<void()> on_done, EndpointModel endpoints)
    : replay_(std::make_unique<Run<PlanSource>>(plan, net, events, std::move(on_done), endpoints)) {
}

CollectiveRun::~CollectiveRun() = default;
void CollectiveRun::start() { replay_->start(); }
bool CollectiveRun::done() const { return replay_->done(); }

Time replay(const topo::Topology& t, const synth::Algorithm& a, NetworkKind kind,
            const PacketConfig& packet) {
  return replay_alone(t, a, kind, packet);
}
Time replay(const topo::Topology& t, const synth::RingPlan& plan, NetworkKind kind,
            const PacketConfig& packet) {
  return replay_alone(t, plan, kind, packet);
}

}  // namespace tenet::sim
