// plots.gp against hostile names: a topology or algorithm name reaches gnuplot only inside
// single-quoted string literals, in which gnuplot expands nothing, so no name runs a command.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/harness.hpp"
#include "bench/report_common.hpp"
#include "tests/topo/test_util.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"
#include "topo/limits.hpp"
#include "topo/quoting.hpp"

namespace tenet::bench {
namespace {

namespace fs = std::filesystem;
using topo::testing::TempDir;

// Names that run `touch PWNED` (in gnuplot's folder) if gnuplot reads them as anything but text.
// No '/' or '.', so that they are the topologies' display names (report_common.hpp).
const std::vector<std::string> kHostile = {
    "tick`touch PWNED`",
    "dq\"; system(\"touch PWNED\"); x=\"",
    "sq'; system('touch PWNED'); x='",
    "sub$(touch PWNED)",
    "nl\nsystem(\"touch PWNED\")\n",
    "raw\xff\xfe`touch PWNED`",
    "macro @PWNED ending in \\",
    "'lead''`touch PWNED`'''",
    "hash # x'' ''`touch PWNED`",
};

// plots.gp as gnuplot's scanner reads it (gnuplot 5.4 src/scanner.c): the text outside
// single-quoted strings, where it substitutes backquotes (commands, comments and double-quoted
// strings, in which a ' is text), and the strings, joined where plots.gp joins them with ."'".
// (the value of each). In a single-quoted string, '' after another character is a quote; any
// other ' ends it.
struct GnuplotScan {
  std::string outside;
  std::vector<std::string> strings;
  std::string error;  // a string left open at the end of its line
};

// From `i`, at a " or a #, the end of the double-quoted string (its \ escapes skipped) or the
// comment there, copied to `outside`.
size_t skip_outside(const std::string& script, size_t i, std::string& outside) {
  const char close = script[i] == '"' ? '"' : '\n';
  outside += script[i];
  for (++i; i < script.size() && script[i] != close; ++i) {
    if (close == '"' && script[i] == '\\' && i + 1 < script.size()) outside += script[i++];
    outside += script[i];
  }
  if (i < script.size()) outside += script[i];
  return i;
}

// From `i`, just past an opening ', the string's value into `value`; returns the closing quote's
// index, or npos when the line ends first.
size_t single_quoted(const std::string& script, size_t i, std::string& value) {
  for (; i < script.size() && script[i] != '\n'; ++i) {
    if (script[i] == '\'') return i;
    value += script[i];
    if (i + 2 < script.size() && script[i + 1] == '\'' && script[i + 2] == '\'') {
      value += '\'';
      i += 2;
    }
  }
  return std::string::npos;
}

GnuplotScan scan_gnuplot(const std::string& script) {
  static const std::string kJoin = ".\"'\".";
  GnuplotScan s;
  size_t joined_at = std::string::npos;  // `outside`'s size where a join may follow the last string
  for (size_t i = 0; i < script.size(); ++i) {
    if (script[i] == '"' || script[i] == '#') {
      i = skip_outside(script, i, s.outside);
    } else if (script[i] != '\'') {
      s.outside += script[i];
    } else {
      std::string value;
      i = single_quoted(script, i + 1, value);
      if (i == std::string::npos) {
        s.error = "a string runs past its line: '" + value;
        return s;
      }
      if (joined_at != std::string::npos && s.outside.substr(joined_at) == kJoin) {
        s.outside.resize(joined_at);
        s.strings.back() += "'" + value;
      } else {
        s.strings.push_back(value);
      }
      joined_at = s.outside.size();
    }
  }
  return s;
}

// A suite of topologies and algorithms under hostile names, and a result for each case.
struct HostileRun {
  Suite suite;
  std::vector<Result> results;
};

HostileRun hostile_run() {
  HostileRun run;
  Suite& s = run.suite;
  s.name = "hostile";
  s.collectives = {synth::CollectiveKind::AllReduce};
  s.sizes = {Bytes{1} << 20, Bytes{16} << 20};
  s.chunks = {1};
  s.algorithms = {"tenet"};
  for (const std::string& name : kHostile) {
    s.topologies.push_back({name, topo::generate("ring:4"), {}});
    s.algorithms.push_back("alg " + name);
  }
  for (const SuiteTopology& t : s.topologies)
    for (Bytes size : s.sizes)
      for (size_t a = 0; a < s.algorithms.size(); ++a) {
        Result r;
        r.topology = t.label;
        r.npus = 4;
        r.collective = synth::CollectiveKind::AllReduce;
        r.size = size;
        r.algorithm = s.algorithms[a];
        r.status = ResultStatus::Ok;
        r.bound = 1'000'000;
        r.time = r.bound + static_cast<Time>(a) * 100'000;
        r.busbw = 1e10;
        run.results.push_back(r);
      }
  return run;
}

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  for (size_t start = 0; start <= dirs.size();) {
    const size_t end = std::min(dirs.find(':', start), dirs.size());
    const fs::path candidate = fs::path(dirs.substr(start, end - start)) / program;
    if (end > start && ::access(candidate.c_str(), X_OK) == 0) return true;
    start = end + 1;
  }
  return false;
}

std::vector<std::string> files_named(const fs::path& dir, const std::string& name) {
  std::vector<std::string> found;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().filename() == name) found.push_back(e.path().string());
  return found;
}

TEST(Plots, HostileNamesAreOnlyTextInPlotsGp) {
  const HostileRun run = hostile_run();
  for (const SuiteTopology& t : run.suite.topologies) ASSERT_EQ(display_name(t), t.label);
  TempDir tmp;
  const bool rendered = write_plots(run.suite, run.results, tmp.file("out")).rendered();
  const std::string gp = topo::read_file(tmp.file("out/plots/plots.gp"));
  const GnuplotScan scan = scan_gnuplot(gp);
  ASSERT_EQ(scan.error, "") << gp;
  // Outside the strings: no backquote, and nothing of any name.
  EXPECT_EQ(scan.outside.find('`'), std::string::npos) << scan.outside;
  EXPECT_EQ(scan.outside.find("PWNED"), std::string::npos) << scan.outside;
  EXPECT_EQ(scan.outside.find("system"), std::string::npos) << scan.outside;
  // Inside them: each name, on one line and as UTF-8, in a title and as an algorithm's key entry.
  EXPECT_TRUE(topo::valid_utf8(gp));
  for (const std::string& name : kHostile) {
    const std::string shown = topo::one_line(name);
    bool in_title = false, as_key = false;
    for (const std::string& l : scan.strings) {
      in_title = in_title || l.rfind(shown + ": all-reduce", 0) == 0;
      as_key = as_key || l == "alg " + shown;
    }
    EXPECT_TRUE(in_title) << shown;
    EXPECT_TRUE(as_key) << shown;
  }
  // Data files: one line per row, whatever the names.
  const std::string bars = topo::read_file(tmp.file("out/plots/bound-all-reduce.dat"));
  EXPECT_EQ(std::count(bars.begin(), bars.end(), '\n'),
            2 + static_cast<std::ptrdiff_t>(kHostile.size()))
      << bars;
  if (!on_path("gnuplot")) GTEST_SKIP() << "gnuplot is not installed: plots.gp not run";
  // gnuplot reads the script whole (it exits 0) and runs nothing from it.
  EXPECT_TRUE(rendered);
  EXPECT_TRUE(fs::exists(tmp.file("out/plots/speedup-all-reduce.svg")));
  EXPECT_EQ(files_named(tmp.file(""), "PWNED"), std::vector<std::string>{});
}

// gnuplot runs without a shell: a folder whose name a shell would run is only a path.
TEST(Plots, GnuplotRunsInAnyFolderWithoutAShell) {
  if (!on_path("gnuplot")) GTEST_SKIP() << "gnuplot is not installed";
  TempDir tmp;
  const std::string dir = tmp.file("it's $(touch PWNED) `touch PWNED`\nx");
  const HostileRun run = hostile_run();
  EXPECT_TRUE(write_plots(run.suite, run.results, dir).rendered());
  EXPECT_TRUE(fs::exists(fs::path(dir) / "plots" / "speedup-all-reduce.svg"));
  EXPECT_EQ(files_named(tmp.file(""), "PWNED"), std::vector<std::string>{});
}

}  // namespace
}  // namespace tenet::bench
