// A progress bar on stderr, shown only when stderr is a terminal and the run has taken over a
// second; erased when done.
#pragma once

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

namespace tenet::cli {

class ProgressBar {
 public:
  explicit ProgressBar(std::string what) : what_(std::move(what)), tty_(::isatty(STDERR_FILENO)), begin_(std::chrono::steady_clock::now()) {}
  ~ProgressBar() {
    if (drawn_) fmt::print(stderr, "\r{:70}\r", "");
  }
  void operator()(double fraction) {
    if (!tty_) return;
    auto elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin_).count();
    if (elapsed < 1.0) return;
    const int width = 40, done = static_cast<int>(fraction * width);
    fmt::print(stderr, "\r{} [{}{}] {:3.0f}%  {:.1f} s", what_, std::string(done, '#'),
               std::string(width - done, '.'), 100 * fraction, elapsed);
    drawn_ = true;
  }

 private:
  std::string what_;
  bool tty_, drawn_ = false;
  std::chrono::steady_clock::time_point begin_;
};

}  // namespace tenet::cli
