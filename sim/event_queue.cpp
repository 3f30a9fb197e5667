#include "sim/event_queue.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "topo/error.hpp"

namespace tenet::sim {

void EventQueue::Fifo::push_back(Event e) {
  if (size_ == slots_.size()) {
    std::vector<Event> grown(std::max<size_t>(64, slots_.size() * 2));
    for (size_t i = 0; i < size_; ++i)
      grown[i] = std::move(slots_[(head_ + i) & (slots_.size() - 1)]);
    slots_ = std::move(grown);
    head_ = 0;
  }
  slots_[(head_ + size_) & (slots_.size() - 1)] = std::move(e);
  ++size_;
}

void EventQueue::schedule(Time at, Action action) {
  if (at < now_)
    throw Error(fmt::format("event scheduled at {} ps, before the current time {} ps", at, now_));
  ++pending_;
  const Time delay = at - now_;
  for (Fifo& f : fifos_)
    if (f.delay == delay) {
      f.push_back(Event{at, seq_++, std::move(action)});
      return;
    }
  if (fifos_.size() < kFifos) {
    fifos_.emplace_back(delay);
    fifos_.back().push_back(Event{at, seq_++, std::move(action)});
    return;
  }
  heap_.push(Event{at, seq_++, std::move(action)});
}

size_t EventQueue::next_source() const {
  size_t best = heap_.empty() ? kFifos + 1 : kFifos;
  const Event* e = heap_.empty() ? nullptr : &heap_.top();
  for (size_t i = 0; i < fifos_.size(); ++i) {
    if (fifos_[i].empty()) continue;
    const Event& f = fifos_[i].front();
    if (!e || Later()(*e, f)) {
      e = &f;
      best = i;
    }
  }
  return best;
}

bool EventQueue::run_deferred() {
  if (deferred_.empty()) return false;
  running_.swap(deferred_);
  for (Action& a : running_) {
    ++executed_;
    a();
  }
  running_.clear();
  return true;
}

bool EventQueue::step() {
  const size_t from = next_source();
  // The instant is over when the next event lies later (or there is none).
  if (!deferred_.empty() &&
      (from > kFifos || (from == kFifos ? heap_.top().at : fifos_[from].front().at) > now_))
    return run_deferred();
  if (from > kFifos) return false;
  Event e;
  if (from == kFifos) {
    // priority_queue::top is const; the action is moved out before the pop.
    e = std::move(const_cast<Event&>(heap_.top()));
    heap_.pop();
  } else {
    e = std::move(fifos_[from].front());
    fifos_[from].pop_front();
  }
  --pending_;
  now_ = e.at;
  ++executed_;
  e.action();
  return true;
}

Time EventQueue::run(Time until) {
  for (;;) {
    const size_t from = next_source();
    if (from > kFifos) {
      if (!run_deferred()) break;
      continue;
    }
    const Time at = from == kFifos ? heap_.top().at : fifos_[from].front().at;
    if (at > now_ && run_deferred()) continue;
    if (at > until) break;
    step();
  }
  return now_;
}

}  // namespace tenet::sim
