#include "sim/event_queue.hpp"

#include <fmt/format.h>

#include "topo/error.hpp"

namespace tenet::sim {

void EventQueue::schedule(Time at, Action action) {
  if (at < now_)
    throw Error(fmt::format("event scheduled at {} ps, before the current time {} ps", at, now_));
  heap_.push(Event{at, seq_++, std::move(action)});
}

bool EventQueue::step() {
  if (heap_.empty()) return false;
  // priority_queue::top is const; the action is moved out through a copy of the event handle.
  Event e = std::move(const_cast<Event&>(heap_.top()));
  heap_.pop();
  now_ = e.at;
  ++executed_;
  e.action();
  return true;
}

Time EventQueue::run(Time until) {
  while (!heap_.empty() && heap_.top().at <= until) step();
  return now_;
}

}  // namespace tenet::sim
