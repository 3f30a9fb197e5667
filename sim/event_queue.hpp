// The simulator's clock: a discrete-event queue on integer picoseconds. Events at the same time
// run in the order they were scheduled, so every run of the same inputs is bit-identical.
//
// Events scheduled the same delay ahead are scheduled in time order, and simulations use few
// distinct delays (a message's serialization, plus latency): each of the first kFifos distinct
// delays gets a FIFO, which costs O(1); other events go to a binary heap. The next event is the
// earliest (time, schedule order) among the FIFOs' fronts and the heap's top.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <queue>
#include <vector>

#include "topo/error.hpp"
#include "topo/units.hpp"

namespace tenet::sim {

class EventQueue {
 public:
  using Action = std::function<void()>;

  Time now() const { return now_; }
  bool empty() const { return pending_ == 0 && deferred_.empty(); }
  size_t pending() const { return pending_; }
  uint64_t executed() const { return executed_; }

  // Runs `action` at absolute time `at` (>= now()). Throws tenet::Error when `at` is in the past.
  void schedule(Time at, Action action);
  // Runs `action` once every event of the current instant has run (including those scheduled for
  // it meanwhile), before time advances: for decisions that must see the whole instant.
  void at_end_of_instant(Action action) { deferred_.push_back(std::move(action)); }
  // Throws tenet::Error when now() + delay would pass 2^63 ps (106 days of simulated time).
  void schedule_after(Time delay, Action action) {
    if (delay > std::numeric_limits<Time>::max() - now_)
      throw Error(
          "simulated time would pass 2^63 ps (106 days): an event is too far in the future");
    schedule(now_ + delay, std::move(action));
  }

  // Runs the earliest event; false when none is left.
  bool step();
  // Runs events until none is left or the next one lies beyond `until`. Returns the final time.
  Time run(Time until = INT64_MAX);

 private:
  struct Event {
    Time at;
    uint64_t seq;
    Action action;
  };
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      return a.at != b.at ? a.at > b.at : a.seq > b.seq;
    }
  };
  static constexpr size_t kFifos = 16;
  // A growable ring buffer: std::deque's 512-byte blocks hold ten events and would allocate
  // all the time.
  class Fifo {
   public:
    explicit Fifo(Time delay) : delay(delay) {}
    Time delay;
    bool empty() const { return size_ == 0; }
    Event& front() { return slots_[head_]; }
    const Event& front() const { return slots_[head_]; }
    void push_back(Event e);
    void pop_front() {
      head_ = (head_ + 1) & (slots_.size() - 1);
      --size_;
    }

   private:
    std::vector<Event> slots_;  // a power of two in size
    size_t head_ = 0, size_ = 0;
  };
  // Where the next event is: a FIFO's index, or kFifos for the heap; nothing when empty.
  size_t next_source() const;

  // Runs the actions deferred to the end of the current instant; false when there are none.
  bool run_deferred();

  std::vector<Action> deferred_, running_;
  std::priority_queue<Event, std::vector<Event>, Later> heap_;
  std::vector<Fifo> fifos_;
  size_t pending_ = 0;
  Time now_ = 0;
  uint64_t seq_ = 0;
  uint64_t executed_ = 0;
};

}  // namespace tenet::sim
