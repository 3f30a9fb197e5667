// When a synthesis must answer: a time limit (`--time-limit`), or an interruption (SIGINT,
// SIGTERM) that asks for the best answer so far.
//
// Model: the searches (the chunk-count searches, the portfolio's methods, the plans' doublings)
// check it between steps, never inside one: a step that has begun ends, and what it made counts.
// Before a step they expect to take `expected` seconds (each chunk count costs about twice the
// last, and at least kSearchSecondsPerTransfer a transfer), they ask whether it would end after
// the limit; the first count of a search always runs,
// so that there is an answer. A search that skips a step because of it says so (`stopped`), and
// its result is then not the full search's: the cache does not keep it.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>

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
      : at_(Clock::now() +
            std::chrono::duration_cast<Clock::duration>(
                std::chrono::duration<double>(std::max(0.0, seconds - std::max(0.0, reserve))))),
        limited_(true) {}

  // Whether a step expected to take `expected` seconds from now would end past the limit, or the
  // run was interrupted. Records that a search stopped there when it would.
  bool reached(double expected = 0) const {
    const bool over = interrupted_.load(std::memory_order_relaxed) ||
                      (limited_ && Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                      std::chrono::duration<double>(expected)) >
                                       at_);
    if (over) stopped_.store(true, std::memory_order_relaxed);
    return over;
  }
  // Ends the searches at their next check (async-signal-safe: one lock-free store).
  void interrupt() { interrupted_.store(true, std::memory_order_relaxed); }

  bool limited() const { return limited_; }
  bool interrupted() const { return interrupted_.load(std::memory_order_relaxed); }
  // Whether some search skipped a step because of it.
  bool stopped() const { return stopped_.load(std::memory_order_relaxed); }

 private:
  Clock::time_point at_ = Clock::time_point::max();
  bool limited_ = false;
  std::atomic<bool> interrupted_{false};
  mutable std::atomic<bool> stopped_{false};
};

// Seconds since `begin`.
inline double seconds_since(Deadline::Clock::time_point begin) {
  return std::chrono::duration<double>(Deadline::Clock::now() - begin).count();
}

}  // namespace tenet::synth
