#include <fmt/format.h>

#include <csignal>
#include <cstdlib>

#include "cli/commands.hpp"
#include "synth/auto/deadline.hpp"
#include "topo/units.hpp"

namespace tenet::cli {

namespace {

// The deadline SIGINT and SIGTERM interrupt (one per process: the verb's).
synth::Deadline* interruptible = nullptr;

extern "C" void on_interrupt(int sig) {
  if (interruptible) interruptible->interrupt();
  std::signal(sig, SIG_DFL);  // a second one ends the process at once
}

}  // namespace

void add_time_limit_flag(CLI::App* cmd, std::string& limit) {
  cmd->add_option(
         "--time-limit", limit,
         "Answer within about this long: seconds (5) or a time with a unit (500ms, 30s). "
         "The searches stop before a step that would end past it (synth keeps back the "
         "time to verify and write its answer) and the best verified algorithm found by "
         "then is the answer; the output says so. The first chunk count always runs, except "
         "where halving-doubling or Bruck was made first (a first count of over 2^18 "
         "transfers): that count is given up midway at the limit. "
         "SIGINT or SIGTERM (Ctrl-C) does the same at once; a second one ends the process")
      ->type_name("T");
}

std::string describe_stop(const std::string& limit) {
  return limit.empty() ? "interrupted" : fmt::format("at --time-limit {}", limit);
}

TimeLimit::TimeLimit(const std::string& limit, double reserve) {
  std::unique_ptr<synth::Deadline>& d = deadline_;
  if (limit.empty()) {
    d = std::make_unique<synth::Deadline>();
  } else {
    char* end = nullptr;
    double seconds = std::strtod(limit.c_str(), &end);
    if (end == limit.c_str() || *end != '\0') {
      try {
        seconds = static_cast<double>(parse_time(limit)) / static_cast<double>(kPicosPerSecond);
      } catch (const Error& e) {
        throw Error(fmt::format("--time-limit '{}': {}", limit, e.message()));
      }
    }
    if (!(seconds > 0) || seconds > 86400)
      throw Error(
          fmt::format("--time-limit '{}': expected a time above 0 and at most a day, e.g. "
                      "5 or 500ms",
                      limit));
    d = std::make_unique<synth::Deadline>(seconds, reserve);
  }
  interruptible = d.get();
  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
}

TimeLimit::~TimeLimit() {
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  interruptible = nullptr;
}

}  // namespace tenet::cli
