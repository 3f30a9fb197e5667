// What got worse against an earlier results.csv: collective times, verdicts, build times.
#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <map>
#include <system_error>

#include "bench/harness.hpp"
#include "bench/report_common.hpp"
#include "topo/error.hpp"

namespace tenet::bench {

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
      out.worse.push_back(fmt::format(
          "{}: slower collective: {} -> {} (+{:.2f}%)", what, format_time(old_time),
          format_time(r.time),
          100.0 * static_cast<double>(r.time - old_time) / static_cast<double>(old_time)));
    // (A row read from the algorithm cache was not built: its build time says nothing.)
    if (!r.from_cache && r.build_seconds > old_build * (1 + speed_tolerance) &&
        r.build_seconds > old_build + 0.05)
      out.slower_builds.push_back(fmt::format("{}: slower to build: {:.3f} s -> {:.3f} s", what,
                                              old_build, r.build_seconds));
  }
  return out;
}

}  // namespace tenet::bench
