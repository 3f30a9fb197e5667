// When a synthesis must answer: a time limit (`--time-limit`), or an interruption (SIGINT,
// SIGTERM) that asks for the best answer so far.
//
// Model: the searches (the chunk-count searches, the portfolio's methods, the plans' doublings)
// check it between steps: a step that has begun ends, and what it made counts. Before a step they
// expect to take `expected` seconds (each chunk count costs about twice the last, and at least
// kSearchSecondsPerTransfer a transfer), they ask whether it would end after the limit; the first
// count of a search always runs, so that there is an answer, except where the search holds a
// quicker answer already (GiveUp: that count is given up midway at the limit). A search that skips
// or gives up a step because of it says so (`stopped`), and its result is then not the full
// search's: the cache does not keep it.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>

namespace tenet::synth {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  // No limit: only an interruption ends the searches early.
  Deadline() = default;
  // `seconds` from now, of which the last `reserve` are kept for what follows the searches
  // (verifying and writing the answer): the searches see the limit that much earlier, and at
  // once where the reserve is the whole limit or more (their first chunk count still runs).
  explicit Deadline(double seconds, double reserve = 0)
      : limit_(Clock::now() + after(std::max(0.0, seconds))),
        at_(limit_ - after(std::min(std::max(0.0, seconds), std::max(0.0, reserve)))),
        limited_(true) {}

  // Whether a step expected to take `expected` seconds from now would end past the limit, or the
  // run was interrupted. Records that a search stopped there when it would.
  bool reached(double expected = 0) const {
    const bool over = interrupted_.load(std::memory_order_relaxed) ||
                      (limited_ && Clock::now() + after(expected) > at_);
    if (over) stopped_.store(true, std::memory_order_relaxed);
    return over;
  }
  // The limit itself (no reserve kept back); Clock::time_point::max() where there is none.
  Clock::time_point limit() const { return limit_; }
  // Records that a search stopped a step short because of it.
  void note_stopped() const { stopped_.store(true, std::memory_order_relaxed); }
  // Ends the searches at their next check (async-signal-safe: one lock-free store).
  void interrupt() { interrupted_.store(true, std::memory_order_relaxed); }

  bool limited() const { return limited_; }
  bool interrupted() const { return interrupted_.load(std::memory_order_relaxed); }
  // Whether some search skipped a step because of it.
  bool stopped() const { return stopped_.load(std::memory_order_relaxed); }

  static Clock::duration after(double seconds) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  }

 private:
  Clock::time_point limit_ = Clock::time_point::max();
  Clock::time_point at_ = Clock::time_point::max();
  bool limited_ = false;
  std::atomic<bool> interrupted_{false};
  mutable std::atomic<bool> stopped_{false};
};

// What a step given up midway throws (GiveUp::point); the search that gave its options a GiveUp
// catches it and answers the quicker answer it holds.
struct GivenUp : std::exception {
  const char* what() const noexcept override {
    return "a search step was given up at the time limit (a quicker answer is in hand)";
  }
};

// A step that may be given up midway: the search holds a quicker answer already (made first), so
// its long step (a first chunk count of millions of transfers) need not end. Its options carry
// this (SynthOptions::give_up); the step's long loops call point() now and then (the matchers every
// hundredth of their deliveries and every kGiveUpMatches sends, the server plan per source, a plan
// before each half and before joining them), which throws GivenUp once the deadline's limit, less
// `reserve` (what verifying and writing the quicker answer take), has passed, or the run was
// interrupted.
class GiveUp {
 public:
  GiveUp(const Deadline& deadline, double reserve)
      : deadline_(deadline),
        at_(deadline.limit() == Deadline::Clock::time_point::max()
                ? deadline.limit()
                : deadline.limit() - Deadline::after(std::max(0.0, reserve))) {}

  bool due() const { return deadline_.interrupted() || Deadline::Clock::now() > at_; }
  void point() const {
    if (!due()) return;
    deadline_.note_stopped();
    throw GivenUp();
  }

 private:
  const Deadline& deadline_;
  Deadline::Clock::time_point at_;
};

// Calls `give_up->point()` where there is one.
inline void give_up_point(const GiveUp* give_up) {
  if (give_up) give_up->point();
}

// Seconds since `begin`.
inline double seconds_since(Deadline::Clock::time_point begin) {
  return std::chrono::duration<double>(Deadline::Clock::now() - begin).count();
}

}  // namespace tenet::synth
