// What got worse against an earlier results.csv (collective times, verdicts, build times) and
// simulations.csv (iteration times, simulations that no longer run).
#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <map>
#include <string>
#include <system_error>
#include <tuple>

#include "bench/harness.hpp"
#include "bench/report_common.hpp"
#include "topo/error.hpp"

namespace tenet::bench {

namespace {

// "+76.93 ns, +0.003 %": how much longer `now` is than `old` (> 0).
std::string longer_by(Time old, Time now) {
  return fmt::format("+{}, +{:.3g} %", format_time(now - old),
                     100.0 * static_cast<double>(now - old) / static_cast<double>(old));
}

// The iteration time of row `line` of an earlier simulations.csv, or an error naming the line.
Time old_iteration(const OldResults& old, size_t line, const std::string& old_file) {
  const std::string& text = old.cell(line, "iteration_ps");
  Time time = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), time);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || time <= 0)
    throw Error(fmt::format("iteration_ps '{}' must be a whole number of picoseconds, above 0 and "
                            "at most 2^63 - 1",
                            text),
                Location(old_file, static_cast<int>(line + 1)));
  return time;
}

bool old_ok(const OldResults& old, size_t line) {
  // An unknown status in the old file is not ok.
  return parse_result_status(old.cell(line, "status")) == ResultStatus::Ok;
}

}  // namespace

Regressions regressions(std::string_view old_csv, const std::string& old_file,
                        const std::vector<Result>& results, double speed_tolerance) {
  const OldResults old = read_old_results(old_csv, old_file);
  const auto& rows = old.rows;
  std::map<std::string, const Result*> now;
  const auto& key = row_key;
  for (const Result& r : results)
    now[key(r.topology, synth::to_string(r.collective), std::to_string(r.size), r.chunks_label(),
            r.algorithm)] = &r;
  Regressions out;
  for (size_t line = 1; line < rows.size(); ++line) {
    auto cell = [&](const char* c) -> const std::string& { return old.cell(line, c); };
    auto it = now.find(key(cell("topology"), cell("collective"), cell("size_bytes"),
                           cell("chunks_per_npu"), cell("algorithm")));
    if (it == now.end()) continue;  // not in this run's suite
    const Result& r = *it->second;
    const std::string what = fmt::format("{} on {}", r.algorithm, case_key(r));
    // An unknown status in the old file is not ok.
    const bool was_ok = parse_result_status(cell("status")) == ResultStatus::Ok;
    if (was_ok && !r.ok()) {
      out.worse.push_back(
          fmt::format("{}: was ok, now {} ({})", what, to_string(r.status), r.note));
      continue;
    }
    if (!was_ok || !r.ok()) continue;
    const Location where(old_file, static_cast<int>(line + 1));
    // The whole cell, or an error naming it (stoll would read "1e308" as 1 and "-5" as -5).
    const std::string& time_text = cell("time_ps");
    Time old_time = 0;
    const auto [end, ec] =
        std::from_chars(time_text.data(), time_text.data() + time_text.size(), old_time);
    if (time_text.empty() || ec != std::errc() || end != time_text.data() + time_text.size() ||
        old_time <= 0)
      throw Error(fmt::format("time_ps '{}' must be a whole number of picoseconds, above 0 and at "
                              "most 2^63 - 1",
                              time_text),
                  where);
    const std::string& build_text = cell("build_s");
    double old_build = 0;
    const auto [build_end, build_ec] =
        std::from_chars(build_text.data(), build_text.data() + build_text.size(), old_build);
    if (build_text.empty() || build_ec != std::errc() ||
        build_end != build_text.data() + build_text.size() || !std::isfinite(old_build))
      throw Error(fmt::format("build_s '{}' must be a number of seconds", build_text), where);
    if (r.time > old_time)
      out.worse.push_back(fmt::format("{}: slower collective: {} -> {} ({})", what,
                                      format_time(old_time), format_time(r.time),
                                      longer_by(old_time, r.time)));
    // (A row read from the algorithm cache was not built: its build time says nothing.)
    if (!r.from_cache && r.build_seconds > old_build * (1 + speed_tolerance) &&
        r.build_seconds > old_build + 0.05)
      out.slower_builds.push_back(fmt::format("{}: slower to build: {:.3f} s -> {:.3f} s", what,
                                              old_build, r.build_seconds));
  }
  return out;
}

void check_old_simulations(std::string_view old_csv, const std::string& old_file) {
  const OldResults old = read_old_simulations(old_csv, old_file);
  for (size_t line = 1; line < old.rows.size(); ++line)
    if (old_ok(old, line)) old_iteration(old, line, old_file);
}

std::vector<std::string> sim_regressions(std::string_view old_csv, const std::string& old_file,
                                         const std::vector<SimRun>& runs) {
  const OldResults old = read_old_simulations(old_csv, old_file);
  using Key = std::tuple<std::string, std::string, std::string, std::string>;
  auto key = [](std::string_view topology, std::string_view workload, std::string_view network,
                std::string_view algorithm) { return Key(topology, workload, network, algorithm); };
  std::map<Key, const SimRun*> now;
  for (const SimRun& r : runs)
    now[key(r.topology, r.workload, sim::to_string(r.network), r.algorithm)] = &r;
  std::vector<std::string> worse;
  for (size_t line = 1; line < old.rows.size(); ++line) {
    auto cell = [&](const char* c) -> const std::string& { return old.cell(line, c); };
    auto it = now.find(key(cell("topology"), cell("workload"), cell("network"), cell("algorithm")));
    if (it == now.end()) continue;  // not in this run's suite
    const SimRun& r = *it->second;
    const std::string what = fmt::format("{} on {} ({} network, {})", r.workload, r.topology,
                                         sim::to_string(r.network), r.algorithm);
    const bool was_ok = old_ok(old, line);
    if (was_ok && !r.ok()) {
      worse.push_back(fmt::format("{}: was ok, now {} ({})", what, to_string(r.status), r.note));
      continue;
    }
    if (!was_ok || !r.ok()) continue;
    const Time old_time = old_iteration(old, line, old_file);
    if (r.iteration > old_time)
      worse.push_back(fmt::format("{}: slower iteration: {} -> {} ({})", what,
                                  format_time(old_time), format_time(r.iteration),
                                  longer_by(old_time, r.iteration)));
  }
  return worse;
}

}  // namespace tenet::bench
