// plots/: gnuplot data files and plots.gp (time and busbw versus size, per collective speed-up
// bars and percent of the lower bound), rendered to SVG when gnuplot is installed.
//
// Names (topologies', algorithms') reach gnuplot only inside single-quoted string literals of
// plots.gp (gp_string), in which gnuplot expands nothing (no backquote command substitution, no @
// macros, no backslash escapes), and as double-quoted strings of the data files, which gnuplot
// reads as data. gnuplot runs without a shell, in plots/.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <filesystem>
#include <functional>
#include <iterator>
#include <map>
#include <set>

#include "bench/harness.hpp"
#include "bench/report_common.hpp"
#include "topo/io.hpp"
#include "topo/quoting.hpp"

extern char** environ;

namespace tenet::bench {

namespace {

// A file-name-safe form of `s`; names over 80 characters keep their first 64 and a hash of the
// whole (file systems refuse names over 255 bytes, and plot names add to the topology's).
std::string slug(std::string s) {
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '.') ch = '_';
  if (s.size() > 80) s = fmt::format("{}-{:016x}", s.substr(0, 64), std::hash<std::string>{}(s));
  return s;
}

// `text` as a gnuplot string expression that means that text only: single-quoted pieces, in which
// gnuplot expands nothing (no backquotes, no @ macros, no backslash escapes), on one line (a line
// break would end the command; topo::one_line). Each ' of `text` joins two pieces as ."'". :
// gnuplot's scanner reads '' in a single-quoted string as a quote only after another character
// and not twice in a row, so the pieces hold no quote.
std::string gp_string(std::string_view text) {
  const std::string line = topo::one_line(text);
  if (line.find('\'') == std::string::npos) return "'" + line + "'";
  std::string out = "('";
  for (char ch : line) out += ch == '\'' ? std::string_view("'.\"'\".'") : std::string_view(&ch, 1);
  return out + "')";
}

// `text` as a string field of a gnuplot data file: double-quoted, on one line. gnuplot's data
// fields have no escapes, so a " in `text` is written as '.
std::string data_field(std::string_view text) {
  std::string out = topo::one_line(text);
  std::replace(out.begin(), out.end(), '"', '\'');
  return "\"" + out + "\"";
}

// Each algorithm's style, the same in every plot (its place in algorithm_order): a colour, and
// on line charts a marker and a dash pattern of its own, so that lines that coincide (ring and
// bidir-ring on a ring) stay told apart in print.
class Styles {
 public:
  explicit Styles(const Suite& suite) : order_(algorithm_order(suite)) {}
  const std::vector<std::string>& order() const { return order_; }
  std::string colour(const std::string& algorithm) const {
    static constexpr const char* kPalette[] = {"#d62728", "#1f77b4", "#2ca02c", "#ff7f0e",
                                               "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                                               "#bcbd22", "#17becf", "#393b79", "#637939"};
    return kPalette[place(algorithm) % std::size(kPalette)];
  }
  // gnuplot point types, one per palette colour: filled circle, open square, filled triangle, open
  // diamond, filled square, open circle, filled diamond, open triangle, filled and open inverted
  // triangles, star, cross.
  int point(const std::string& algorithm) const {
    static constexpr int kPoints[] = {7, 4, 9, 12, 5, 6, 13, 8, 11, 10, 3, 2};
    return kPoints[place(algorithm) % std::size(kPoints)];
  }
  // gnuplot dash types: solid, then dash-dot, dotted, dash-dot-dot, long dashes (2, short dashes,
  // is the lower bound's).
  int dash(const std::string& algorithm) const {
    static constexpr int kDashes[] = {1, 4, 3, 5, 6};
    return kDashes[place(algorithm) % std::size(kDashes)];
  }

 private:
  size_t place(const std::string& algorithm) const {
    return static_cast<size_t>(std::find(order_.begin(), order_.end(), algorithm) - order_.begin());
  }
  std::vector<std::string> order_;
};

// The head of plots.gp; each plot appends its own lines.
constexpr const char* kScriptHead =
    "# Renders the benchmark's plots: gnuplot plots.gp (in this folder).\n"
    "set terminal svg size 900,520 dynamic enhanced font 'sans,11' background rgb 'white'\n"
    "set datafile missing '?'\n"
    "set grid\n";

// What the plots are written with: the suite, the styles, the folder and the gnuplot script
// being appended to.
struct Plotter {
  const Suite& suite;
  const Styles styles;
  const std::filesystem::path plots;
  std::string gp;
};

// A clustered bar chart: a group per topology, a bar per column (coloured as everywhere), each the
// geometric mean of its values, written above it in `value_format` (gnuplot's sprintf); writes
// <name>.dat and appends the plot to the gnuplot script.
void bar_chart(Plotter& p, const std::string& name, const std::string& title,
               const std::string& ylabel, const std::string& yrange,
               const std::vector<std::string>& columns, const Samples& values,
               const std::string& value_format, const std::string& comment = "") {
  // No bars at all (no case ran both tenet and a baseline): gnuplot refuses an empty plot.
  bool any = false;
  for (const SuiteTopology& topo : p.suite.topologies)
    for (const std::string& c : columns) any = any || mean_of(values, topo.label, c).has_value();
  if (!any) return;
  std::string data = comment.empty() ? "" : "# " + comment + "\n";
  data += "topology";
  for (const std::string& c : columns) data += fmt::format(" {}", data_field(c));
  data += "\n";
  for (const SuiteTopology& topo : p.suite.topologies) {
    data += data_field(display_name(topo));
    for (const std::string& c : columns) {
      const auto mean = mean_of(values, topo.label, c);
      data += mean ? fmt::format(" {:.4f}", *mean) : " ?";
    }
    data += "\n";
  }
  topo::write_file_atomically((p.plots / (name + ".dat")).string(), data);
  p.gp += fmt::format(
      "\nset output {}\nset title {} noenhanced\nset style data histograms\n"
      "set style histogram clustered gap 1\nset style fill solid 0.8 border -1\n"
      "set xtics rotate by -30 noenhanced\n"
      "set xlabel ''\nset ylabel {}\nset yrange {}\nset key outside right noenhanced\nplot ",
      gp_string(name + ".svg"), gp_string(title), gp_string(ylabel), yrange);
  for (size_t i = 0; i < columns.size(); ++i)
    p.gp += fmt::format("{}{} using {}:xtic(1) lc rgb {} title columnheader({})",
                        i ? ", \\\n     " : "", gp_string(name + ".dat"), i + 2,
                        gp_string(p.styles.colour(columns[i])), i + 2);
  // Each bar's value above it: in a clustered histogram (gap 1) group g's bar i of n is centred
  // at g + (i - (n - 1) / 2) / (n + 1); the labels count the header line as row 0, the
  // histograms (columnheader) do not.
  const double n = static_cast<double>(columns.size());
  for (size_t i = 0; i < columns.size(); ++i)
    p.gp += fmt::format(
        ", \\\n     {} using ($0 - 1 + {:.6g}):{}:(sprintf({}, column({}))) with labels offset "
        "0,0.6 font ',8' notitle",
        gp_string(name + ".dat"), (static_cast<double>(i) - (n - 1) / 2) / (n + 1), i + 2,
        gp_string(value_format), i + 2);
  p.gp += "\nset yrange [*:*]\nset xtics norotate autofreq\n";
}

// gnuplot's x tics at the suite's sizes, written as people write them ("1 MiB", not 1x10^6), and
// the x range fitted to them (a third of a factor of two of room each side on the log scale;
// gnuplot's own reaches out to whole decades, which left a third of the chart empty).
std::string size_tics(const Suite& suite) {
  std::vector<std::string> tics;
  for (Bytes b : suite.sizes) tics.push_back(fmt::format("{} {}", gp_string(format_bytes(b)), b));
  if (suite.sizes.empty()) return "set xtics autofreq\n";
  const auto [lo, hi] = std::minmax_element(suite.sizes.begin(), suite.sizes.end());
  return fmt::format("set xtics ({})\nset xrange [{:.6g}:{:.6g}]\n", fmt::join(tics, ", "),
                     static_cast<double>(*lo) / 1.26, static_cast<double>(*hi) * 1.26);
}

// One line chart over sizes: column 2 of `name`.dat is the bound (dashed black), then one
// column per algorithm in its colour.
void size_chart(Plotter& p, const std::string& name, const std::string& output,
                const std::string& title, const std::string& ylabel, bool log_y,
                const std::string& bound_title, const std::vector<std::string>& algs) {
  p.gp += fmt::format(
      "\nset output {}\nset title {} noenhanced\n{}\nset xlabel 'size'\n"
      "set ylabel {}\nset key {} noenhanced\n{}",
      gp_string(output + ".svg"), gp_string(title),
      log_y ? "set logscale xy" : "set logscale x\nset yrange [0:*]", gp_string(ylabel),
      log_y ? "left top" : "right bottom", size_tics(p.suite));
  p.gp += fmt::format("plot {} using 1:2 with lines dt 2 lw 2 lc rgb '#000000' title {}",
                      gp_string(name + ".dat"), gp_string(bound_title));
  for (size_t i = 0; i < algs.size(); ++i)
    p.gp += fmt::format(
        ", \\\n     {} using 1:{} with linespoints pt {} ps 1.2 dt {} lw 2 lc rgb {} title {}",
        gp_string(name + ".dat"), i + 3, p.styles.point(algs[i]), p.styles.dash(algs[i]),
        gp_string(p.styles.colour(algs[i])), gp_string(algs[i]));
  p.gp += "\nunset logscale\nset xrange [*:*]\nset yrange [*:*]\nset xtics autofreq\n";
}

// Per topology label, the start of its plots' file names: its display name, made unique.
std::map<std::string, std::string> file_names(const Suite& suite) {
  std::map<std::string, std::string> file_of;  // label -> slug
  std::set<std::string> used;
  for (const SuiteTopology& topo : suite.topologies) {
    std::string base = slug(display_name(topo)), name = base;
    for (int i = 2; used.count(name); ++i) name = fmt::format("{}-{}", base, i);
    used.insert(name);
    file_of[topo.label] = name;
  }
  return file_of;
}

// Time and busbw versus size for one topology, collective and chunk count: a line per algorithm
// and the lower bound. Nothing when no algorithm ran there.
void size_charts(Plotter& p, const std::vector<Result>& results, const SuiteTopology& topo,
                 const std::string& file, synth::CollectiveKind k, int chunks) {
  std::vector<std::string> algs;
  std::map<Bytes, std::map<std::string, const Result*>> points;
  std::map<Bytes, Time> bound;
  for (const Result& r : results) {
    if (r.topology != topo.label || r.collective != k || !r.ok() || r.chunks != chunks) continue;
    points[r.size][r.algorithm] = &r;
    if (!bound.count(r.size) || r.algorithm == "tenet") bound[r.size] = r.bound;
  }
  for (const std::string& a : p.styles.order())
    for (const auto& [size, by_alg] : points)
      if (by_alg.count(a) && std::find(algs.begin(), algs.end(), a) == algs.end())
        algs.push_back(a);
  if (algs.empty()) return;
  const int ranks = topo.num_ranks();
  const double factor = synth::bus_bandwidth_factor(k, ranks);
  const std::string chunk_label = chunks == 0 ? "auto" : std::to_string(chunks);
  const std::string name = fmt::format("{}-{}-k{}", file, synth::to_string(k), chunk_label);
  std::string time_data = "size_bytes \"lower bound\"", busbw_data = "size_bytes \"bound\"";
  for (const std::string& a : algs) {
    time_data += fmt::format(" {}", data_field(a));   // not " " + a temporary: GCC 12's
    busbw_data += fmt::format(" {}", data_field(a));  // -Wrestrict misfires on it
  }
  time_data += "\n";
  busbw_data += "\n";
  for (const auto& [size, by_alg] : points) {
    const double bound_s = static_cast<double>(bound[size]) / static_cast<double>(kPicosPerSecond);
    time_data += fmt::format("{} {:.6g}", size, static_cast<double>(bound[size]) / 1e6);
    busbw_data += fmt::format(
        "{} {:.6g}", size, bound_s > 0 ? static_cast<double>(size) / bound_s * factor / 1e9 : 0.0);
    for (const std::string& a : algs) {
      auto it = by_alg.find(a);
      time_data += it != by_alg.end()
                       ? fmt::format(" {:.6g}", static_cast<double>(it->second->time) / 1e6)
                       : " ?";
      busbw_data += it != by_alg.end() ? fmt::format(" {:.6g}", it->second->busbw / 1e9) : " ?";
    }
    time_data += "\n";
    busbw_data += "\n";
  }
  topo::write_file_atomically((p.plots / (name + ".dat")).string(), time_data);
  topo::write_file_atomically((p.plots / (name + "-busbw.dat")).string(), busbw_data);
  const std::string what = fmt::format("{}: {} ({} chunk{} per NPU)", display_name(topo),
                                       synth::to_string(k), chunk_label, chunks == 1 ? "" : "s");
  size_chart(p, name, "time-" + name, what, "collective time (us)", true, "lower bound", algs);
  size_chart(p, name + "-busbw", "busbw-" + name, what + ", bus bandwidth", "busbw (GB/s)", false,
             "bus bandwidth at the lower bound", algs);
}

// Percent of the lower bound for one collective: on each topology, only the cases that every
// algorithm shown for it ran, so that the bars compare the same work.
void bound_chart(Plotter& p, const std::vector<Result>& results, synth::CollectiveKind k) {
  Samples pct;
  std::vector<std::string> shown;
  size_t compared = 0;
  for (const SuiteTopology& topo : p.suite.topologies) {
    // algorithm -> case -> result
    std::map<std::string, std::map<std::string, const Result*>> by_alg;
    std::set<std::string> cases;
    for (const Result& r : results)
      if (r.topology == topo.label && r.collective == k && r.ok() && r.time > 0) {
        by_alg[r.algorithm][case_key(r)] = &r;
        cases.insert(case_key(r));
      }
    std::set<std::string> common = cases;
    for (const auto& [alg, by_case] : by_alg)
      for (auto it = common.begin(); it != common.end();)
        it = by_case.count(*it) ? std::next(it) : common.erase(it);
    compared += common.size();
    for (const auto& [alg, by_case] : by_alg)
      for (const std::string& c : common) {
        const Result& r = *by_case.at(c);
        pct[topo.label][alg].push_back(100.0 * static_cast<double>(r.bound) /
                                       static_cast<double>(r.time));
      }
  }
  for (const std::string& a : p.styles.order())
    for (const auto& [topology, by_alg] : pct)
      if (by_alg.count(a) && std::find(shown.begin(), shown.end(), a) == shown.end())
        shown.push_back(a);
  bar_chart(p, fmt::format("bound-{}", synth::to_string(k)),
            fmt::format("{}: percent of the lower bound (geometric mean over common cases)",
                        synth::to_string(k)),
            "lower bound / time (%)", "[0:105]", shown, pct, "%.0f",
            fmt::format("{} cases in all, each run by every algorithm of its topology", compared));
}

// The file actions of gnuplot's process: in `dir`, stdin and stderr on /dev/null.
class SpawnActions {
 public:
  explicit SpawnActions(const std::filesystem::path& dir) {
    posix_spawn_file_actions_init(&actions_);
    ok_ = posix_spawn_file_actions_addchdir_np(&actions_, dir.c_str()) == 0 &&
          posix_spawn_file_actions_addopen(&actions_, 0, "/dev/null", O_RDONLY, 0) == 0 &&
          posix_spawn_file_actions_addopen(&actions_, 2, "/dev/null", O_WRONLY, 0) == 0;
  }
  ~SpawnActions() { posix_spawn_file_actions_destroy(&actions_); }
  SpawnActions(const SpawnActions&) = delete;
  SpawnActions& operator=(const SpawnActions&) = delete;
  bool ok() const { return ok_; }
  const posix_spawn_file_actions_t* get() const { return &actions_; }

 private:
  posix_spawn_file_actions_t actions_;
  bool ok_ = false;
};

// Runs `gnuplot plots.gp` in `dir`, found on the PATH and started directly (no shell reads the
// folder's path), its errors discarded. Whether it was found and exited 0.
Plotted run_gnuplot(const std::filesystem::path& dir) {
  using Outcome = Plotted::Outcome;
  const SpawnActions actions(dir);
  if (!actions.ok()) return {Outcome::Failed, 127};
  char gnuplot[] = "gnuplot", script[] = "plots.gp";
  char* argv[] = {gnuplot, script, nullptr};
  pid_t pid = 0;
  if (const int e = posix_spawnp(&pid, "gnuplot", actions.get(), nullptr, argv, environ); e != 0)
    return {e == ENOENT ? Outcome::NoGnuplot : Outcome::Failed, 127};
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return {Outcome::Failed, 127};
  if (WIFSIGNALED(status)) return {Outcome::Failed, 128 + WTERMSIG(status)};
  // posix_spawnp may start a child that then finds no gnuplot: exit 127, as a shell's.
  if (WEXITSTATUS(status) == 127) return {Outcome::NoGnuplot, 127};
  return {WEXITSTATUS(status) == 0 ? Outcome::Rendered : Outcome::Failed, WEXITSTATUS(status)};
}

}  // namespace

Plotted write_plots(const Suite& suite, const std::vector<Result>& results,
                    const std::string& dir) {
  const std::filesystem::path plots = std::filesystem::path(dir) / "plots";
  topo::make_directories(plots.string());
  Plotter p{suite, Styles(suite), plots, kScriptHead};
  // File names from the topologies' display names, made unique.
  const std::map<std::string, std::string> file_of = file_names(suite);
  for (const SuiteTopology& topo : suite.topologies)
    for (synth::CollectiveKind k : suite.collectives)
      for (int chunks : suite.chunks)
        size_charts(p, results, topo, file_of.at(topo.label), k, chunks);
  // Per collective (a mean over several would weigh a baseline by the collectives it has): speed-up
  // bars, the geometric mean per topology and baseline over the cases both ran; and percent of the
  // lower bound.
  for (synth::CollectiveKind k : suite.collectives) {
    std::vector<Result> of_k;
    std::copy_if(results.begin(), results.end(), std::back_inserter(of_k),
                 [k](const Result& r) { return r.collective == k; });
    const SpeedUps su = speed_ups(suite, of_k);
    bar_chart(
        p, fmt::format("speedup-{}", synth::to_string(k)),
        fmt::format("{}: tenet's geometric-mean speed-up over each baseline", synth::to_string(k)),
        "speed-up of tenet (x)", "[0:*]", su.baselines, su.per_topology, "%.2f");
    bound_chart(p, results, k);
  }
  topo::write_file_atomically((p.plots / "plots.gp").string(), p.gp);
  return run_gnuplot(p.plots);
}

}  // namespace tenet::bench
