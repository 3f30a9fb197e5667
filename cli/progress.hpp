// A progress bar on stderr when stderr is a terminal and the run has taken over a second
// (TENET_PROGRESS_AFTER=<seconds> changes that; the tests use 0). `done()` (or the destructor)
// erases it: call it before printing results, so that no output line starts after the bar's last
// frame. When stderr is not a terminal (a log, a CI job), a line every kLineEvery seconds instead,
// from then on: "synthesizing: 42 % after 10.0 s".
#pragma once

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace tenet::cli {

class ProgressBar {
 public:
  explicit ProgressBar(std::string what)
      : what_(std::move(what)),
        tty_(::isatty(STDERR_FILENO)),
        begin_(std::chrono::steady_clock::now()) {
    if (const char* after = std::getenv("TENET_PROGRESS_AFTER")) after_ = std::atof(after);
  }
  ~ProgressBar() { done(); }
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  void done() {
    if (drawn_) fmt::print(stderr, "\r{}\r", std::string(width_, ' '));
    std::fflush(stderr);
    drawn_ = false;
    finished_ = true;
  }
  void operator()(double fraction) {
    if (finished_) return;
    auto elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin_).count();
    if (!tty_) {
      if (elapsed < lines_at_) return;
      fmt::print(stderr, "{}: {:.0f} % after {:.1f} s\n", what_, 100 * fraction, elapsed);
      std::fflush(stderr);
      while (lines_at_ <= elapsed) lines_at_ += kLineEvery;
      return;
    }
    if (elapsed < after_) return;
    // Redraw when the percentage moves or a quarter second has passed, not on every call.
    const int percent = static_cast<int>(100 * fraction);
    if (drawn_ && percent == percent_ && elapsed < drawn_at_ + 0.25) return;
    percent_ = percent;
    drawn_at_ = elapsed;
    const int width = 40, done = static_cast<int>(fraction * width);
    const std::string frame =
        fmt::format("{} [{}{}] {:3.0f}%  {:.1f} s", what_, std::string(done, '#'),
                    std::string(width - done, '.'), 100 * fraction, elapsed);
    width_ = std::max(width_, frame.size());
    fmt::print(stderr, "\r{}", frame);
    std::fflush(stderr);
    drawn_ = true;
  }

 private:
  static constexpr double kLineEvery = 5;
  std::string what_;
  double lines_at_ = kLineEvery;  // when the next line is due (not a terminal)
  bool tty_, drawn_ = false, finished_ = false;
  size_t width_ = 0;
  double after_ = 1.0, drawn_at_ = 0;
  int percent_ = -1;
  std::chrono::steady_clock::time_point begin_;
};

}  // namespace tenet::cli
