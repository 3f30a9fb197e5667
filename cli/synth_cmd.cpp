// tenet synth --topo <file|spec> --coll <collective> --size <bytes> [...] -o <dir>
#include <fmt/format.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "cli/commands.hpp"
#include "cli/formats.hpp"
#include "cli/halves_print.hpp"
#include "cli/progress.hpp"
#include "cli/synth_args.hpp"
#include "cli/synth_print.hpp"
#include "cli/synth_rows.hpp"
#include "cli/synth_target.hpp"
#include "synth/baselines/baselines.hpp"
#include "synth/baselines/ring_channels.hpp"
#include "synth/cache/algorithm_cache.hpp"
#include "synth/formats/algorithm_json.hpp"
#include "synth/ir/traffic.hpp"
#include "synth/memo.hpp"
#include "synth/producers.hpp"
#include "synth/synthesizer.hpp"
#include "synth/tuning.hpp"
#include "synth/verify/verify.hpp"
#include "topo/io.hpp"
#include "topo/limits.hpp"
#include "topo/output_folder.hpp"

namespace tenet::cli {
namespace {

// --restarts: each restart is a whole synthesis, run on all cores; past this a run has no end a
// user would wait for.
constexpr int kMaxRestarts = 1024;

// Seconds to verify and write an answer to `c` (at one chunk per NPU under -k auto, where the
// search starts): what --time-limit keeps back from the searches.
double finish_reserve(synth::Collective c, bool auto_chunks) {
  if (auto_chunks) c.chunks_per_npu = 1;
  return static_cast<double>(synth::transfer_estimate(c)) * synth::kFinishSecondsPerTransfer;
}

// All-to-Allv: the traffic --traffic, --skew or --hot-experts give, or nothing.
std::optional<synth::Traffic> traffic_of(const SynthArgs& args, const synth::Collective& c) {
  const int given = !args.traffic.empty() + !args.skew.empty() + (args.hot_experts != 0);
  if (given == 0) return std::nullopt;
  if (given > 1) throw Error("--traffic, --skew and --hot-experts each give the traffic: pick one");
  if (c.kind != synth::CollectiveKind::AllToAll)
    throw Error(fmt::format(
        "--traffic, --skew and --hot-experts are for -c all-to-all (uneven: all-to-allv), not {}",
        synth::to_string(c.kind)));
  if (!args.min_size.empty() || !args.max_size.empty())
    throw Error("an all-to-allv's sizes come from its traffic: no size sweep (-b/-e)");
  if (!args.traffic.empty()) {
    if (args.size_given) throw Error("--traffic gives every pair's bytes: drop -s/--size");
    return synth::read_traffic(args.traffic, c.num_ranks());
  }
  const Bytes per_rank = parse_bytes(args.size);
  if (!args.skew.empty()) {
    if (!args.skew.starts_with("zipf:"))
      throw Error(fmt::format("--skew '{}': expected zipf:S, e.g. zipf:1.2", args.skew));
    return synth::generate_traffic(args.skew, c.num_ranks(), per_rank, args.seed);
  }
  return synth::generate_traffic(fmt::format("hot:{}", args.hot_experts), c.num_ranks(), per_rank,
                                 args.seed);
}

synth::SynthOptions options_from(const SynthArgs& args) {
  synth::SynthOptions o;
  o.seed = args.seed;
  o.restarts = args.restarts;
  o.matcher.priority = synth::parse_chunk_priority(args.priority);
  o.link_model = synth::parse_link_model(args.link_model);
  o.method = synth::parse_synth_method(args.method);
  o.portfolio.team_relay = o.portfolio.borrow_servers = !args.no_borrow;
  return o;
}

// The sizes to run: --size, or the sweep -b .. -e by factor -f (nccl-tests' flags).
std::vector<Bytes> sizes_of(const SynthArgs& args) {
  auto at_least_one = [](const char* flag, const std::string& text) {
    const Bytes b = parse_bytes(text);
    if (b < 1) throw Error(fmt::format("{} must be at least 1 byte", flag));
    return b;
  };
  if (args.min_size.empty() && args.max_size.empty()) return {at_least_one("--size", args.size)};
  if (args.min_size.empty() || args.max_size.empty())
    throw Error(
        "a size sweep needs both -b/--min-size and -e/--max-size (e.g. -b 1MiB -e 1GiB -f 2)");
  const Bytes lo = at_least_one("--min-size", args.min_size),
              hi = at_least_one("--max-size", args.max_size);
  if (hi < lo)
    throw Error(
        fmt::format("--max-size {} is below --min-size {}", format_bytes(hi), format_bytes(lo)));
  if (args.step_factor < 2) throw Error("--step-factor must be a whole number of at least 2");
  std::vector<Bytes> out;
  for (Bytes b = lo; b <= hi; b *= args.step_factor) {
    out.push_back(b);
    if (out.size() > 64)
      throw Error("the size sweep has over 64 sizes: raise --step-factor or narrow the range");
    if (b > hi / args.step_factor) break;
  }
  return out;
}

// `size` is the row's size as printed; the producers get `unit` (All-to-Allv: a unit's bytes; else
// the size itself).
SynthRow build_row(const SynthArgs& args, const std::string& name, const topo::Topology& t,
                   synth::Collective c, Bytes size, const synth::SynthOptions& o, Bytes unit = -1) {
  SynthRow row;
  row.name = name;
  row.size = size;
  if (unit < 0) unit = size;
  const auto begin = std::chrono::steady_clock::now();
  const int64_t hits_before = o.cache ? o.cache->hits() : 0;
  try {
    if (args.chunks != "auto")
      c.chunks_per_npu = parse_chunks(args.chunks, 1, topo::kMaxChunksPerNpuOfAlgorithm);
    // Composed per level (an All-Reduce over servers: --method composed, or auto where flat
    // synthesis is out of reach), the buffer is G*k chunks in all.
    if (name == "tenet") c = synth::as_synthesized(t, c, o);
    const int64_t transfers =
        synth::transfer_estimate(c);  // -k auto: at 1 chunk per NPU, the fewest
    topo::check_memory(static_cast<uint64_t>(transfers) * synth::kSynthBytesPerTransfer,
                       fmt::format("{} for {} (about {} transfers)", name, c.describe(), transfers),
                       "synthesize for fewer ranks (--ranks), or fewer chunks per NPU (-k)");
    if (args.target != "tenet") {
      TargetPick pick = pick_for_target(args.target, args.msccl, args.chakra, t, c, unit, o);
      row.algorithm = std::move(pick.algorithm);
      row.target_note = std::move(pick.note);
    } else if (args.chunks == "auto") {
      synth::ChunkingResult r = synth::make_algorithm_auto_chunks(name, t, c, unit, o);
      row.algorithm = std::move(r.algorithm);
      row.tried = std::move(r.tried);
    } else {
      row.algorithm = synth::make_algorithm(name, t, c, c.chunk_bytes_for(unit), o);
    }
    row.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    row.from_cache = o.cache && o.cache->hits() > hits_before;
    row.stopped_early = o.deadline && o.deadline->stopped();
    // Made here and timed by the model (or read from the cache, which checked that): its
    // schedule is verified, its model time is the one it claims and is not derived again. A
    // runtime target's pick carries the time it reads back as: checked against the model.
    row.report = synth::verify(
        t, *row.algorithm,
        {.max_reported = 5, .bounds = synth::bounds_of(o), .model_time = args.target != "tenet"});
    row.halves = halves_beyond(t, *row.algorithm, row.report->bound, synth::bounds_of(o));
    if (args.algo == "tenet" && args.method == "auto")
      row.left_out = synth::baselines_left_out_for_size(t, row.algorithm->collective);
  } catch (const synth::NotApplicable& e) {
    if (args.algo != "all") throw;  // asked for by name: an error
    row.not_applicable = e.message();
  }
  return row;
}

// A chunk is at least a byte: a count that cuts a size (`sizes`: each size, or an All-to-Allv's
// unit) finer is refused, not rounded up (which would time, and bound, a larger collective).
// -k auto starts at one chunk per NPU.
void refuse_fine_cuts(const SynthArgs& args, const synth::Collective& c,
                      const std::vector<Bytes>& sizes) {
  synth::Collective cut = c;
  if (args.chunks == "auto") cut.chunks_per_npu = 1;
  for (Bytes size : sizes) {
    try {
      (void)cut.whole_chunk_bytes_for(size);
    } catch (const Error& e) {
      throw Error(fmt::format(
          "{}: {}",
          args.chunks == "auto" ? (c.uneven() ? "--traffic" : "--size") : "-k " + args.chunks,
          e.message()));
    }
  }
}

// Several rows (--algo all, a size sweep): each algorithm's file, the plots where asked, and the
// table; nothing written where one is incorrect.
void write_rows(const SynthArgs& args, const topo::Topology& t, const synth::Collective& c,
                const std::vector<Bytes>& sizes, const std::vector<std::string>& names,
                const std::vector<SynthRow>& rows, bool all_correct) {
  std::optional<topo::OutputFolder> folder;
  if (all_correct) folder.emplace(args.output);
  std::optional<bench::Plotted> plotted;
  if (args.plot && folder) {
    folder->replace_tree_at_commit("plots");
    plotted = plot_rows(args.topology, t, c, args.chunks == "auto" ? 0 : c.chunks_per_npu, sizes,
                        names, rows, folder->staging_dir());
  }
  std::vector<std::string> files;
  for (const SynthRow& r : rows) {
    std::string file = r.name;
    std::replace(file.begin(), file.end(), ':', '_');
    std::replace(file.begin(), file.end(), ',', '_');
    if (sizes.size() > 1) file += "-" + canonical_bytes(r.size);
    file += ".json";
    files.push_back(r.algorithm && folder ? folder->final_path(file) : "");
    if (r.algorithm && folder) synth::save_algorithm(*r.algorithm, folder->stage(file));
  }
  if (folder) folder->commit();
  print_rows(args, t, c, rows, files);
  if (plotted) {
    // Beside --json or --csv, stdout is for machines: the lines go to stderr.
    std::FILE* to = args.json || args.csv ? stderr : stdout;
    fmt::print(to, "plots        {}{}\n", folder->final_path("plots"),
               plotted->rendered() ? " (SVG)" : "");
    say_plotted(*plotted, folder->final_path("plots"), to);
  }
}

void run_synth(const SynthArgs& args) {
  const topo::Topology t = load_topology(args.topology, args.step_costs);
  synth::Collective c = synth::Collective::over_all(t, synth::parse_collective(args.collective));
  if (!args.ranks.empty()) c.ranks = synth::parse_ranks(args.ranks, t.num_npus());
  c.root = args.root;
  std::vector<Bytes> sizes = sizes_of(args);
  if (args.chunks != "auto")
    c.chunks_per_npu = parse_chunks(args.chunks, 1, topo::kMaxChunksPerNpuOfAlgorithm);
  c.validate(t);
  Bytes unit = -1;  // All-to-Allv: the bytes of a unit
  std::string padding_note;
  if (std::optional<synth::Traffic> traffic = traffic_of(args, c)) {
    const synth::TrafficUnits u =
        synth::to_units(*traffic, synth::default_max_units(c.num_ranks()));
    c.set_pair_units(u.units);
    c.validate(t);
    unit = u.unit_bytes;
    sizes = {traffic->most_sent()};
    if (u.padding > 0)
      padding_note = fmt::format(
          "the traffic is carried in units of {}: rounding every pair up to whole units adds {} "
          "({:.2f} % of {})",
          format_bytes(u.unit_bytes), format_bytes(u.padding),
          100.0 * static_cast<double>(u.padding) / static_cast<double>(traffic->total()),
          format_bytes(traffic->total()));
  }
  refuse_fine_cuts(args, c, unit < 0 ? sizes : std::vector<Bytes>{unit});
  if (args.json && args.csv) throw Error("--json and --csv: pick one");
  const exporting::ExportOptions export_opts =
      export_options(args.chakra, args.msccl);  // bad flags fail before the work
  const std::vector<std::string> names =
      args.algo == "all" ? synth::algorithm_names(c.kind) : std::vector<std::string>{args.algo};
  const bool one = names.size() == 1 && sizes.size() == 1;
  std::vector<std::string> formats{"json"};
  for (const std::string& f : args.emit)
    if (!f.empty() && f != "json") formats.push_back(f);
  if (args.target != "tenet" && args.target != "msccl" && args.target != "astra-sim")
    throw Error(fmt::format("--target: '{}' is none of tenet, msccl and astra-sim", args.target));
  if (args.target != "tenet") {
    if (args.algo != "tenet" || args.chunks != "auto" || sizes.size() != 1)
      throw Error(fmt::format(
          "--target {} searches every producer and chunk count for one size: use it with "
          "--algo tenet, -k auto and one --size",
          args.target));
    const std::string format = args.target == "msccl" ? "msccl-xml" : "astra-sim";
    if (std::find(formats.begin(), formats.end(), format) == formats.end())
      formats.push_back(format);
  }
  if (one && args.plot)
    throw Error(
        "--plot draws a size sweep (-b/-e) or a comparison (--algo all); one algorithm at one size "
        "has nothing to draw");
  if (!one && formats.size() > 1)
    throw Error(
        "--emit exports one algorithm: drop --algo all or the size sweep, or export a row's file "
        "with `tenet export`");
  synth::SynthOptions o = options_from(args);
  o.reduce_bandwidth = export_opts.reduce_bandwidth.value_or(0);
  const std::unique_ptr<synth::AlgorithmCache> cache = open_cache(args.cache);
  o.cache = cache.get();
  // The limit covers the whole command: the searches leave time to verify and write an answer as
  // large as their first count's.
  const TimeLimit deadline(args.time_limit, finish_reserve(c, args.chunks == "auto"));
  o.deadline = deadline.get();
  synth::SynthMemo memo;  // every row's flow plans and bounds, and their reports'
  o.memo = &memo;

  std::vector<SynthRow> rows;
  {
    ProgressBar bar("synthesizing");
    const size_t total = sizes.size() * names.size();
    for (Bytes size : sizes)
      for (const std::string& base : names) {
        const size_t done = rows.size();
        o.progress = [&](double f) {
          bar((static_cast<double>(done) + f) / static_cast<double>(total));
        };
        rows.push_back(
            build_row(args, synth::with_channels(base, args.channels), t, c, size, o, unit));
        bar(static_cast<double>(rows.size()) / static_cast<double>(total));
      }
  }

  bool all_correct = true;
  for (const SynthRow& r : rows)
    if (r.report && !r.report->correct()) all_correct = false;
  // A run that fails writes nothing: its output folder keeps what it held (whole or absent).
  if (one) {
    exporting::Exported exported;
    if (all_correct)
      exported =
          exporting::export_algorithm(*rows[0].algorithm, t, formats, args.output, export_opts);
    else
      for (const std::string& f : formats)
        exported.skipped.emplace_back(f, "the algorithm is INCORRECT (see below)");
    if (args.csv)
      print_rows(args, t, c, rows, exported.written);
    else {
      if (!padding_note.empty()) exported.warnings.push_back(padding_note);
      print_one(args, t, rows[0], exported);
    }
  } else {
    write_rows(args, t, c, sizes, names, rows, all_correct);
    if (!padding_note.empty()) fmt::print(stderr, "warning: {}\n", padding_note);
  }
  if (!all_correct) {
    for (const SynthRow& r : rows)
      if (r.report)
        for (const synth::Violation& v : r.report->violations)
          fmt::print(stderr, "  {} [{}] {}\n", r.name, synth::to_string(v.kind), v.message);
    verb_exit_code() = 1;  // an internal failure: a producer built something wrong
  }
}

// synth's options that state the problem: the topology, the collective and its group, the sizes,
// the chunks and the traffic.
void add_problem_options(CLI::App* cmd, SynthArgs& args) {
  cmd->add_option("-t,--topo", args.topology, "Topology file or generator spec")->required();
  cmd->add_option(
         "-c,--coll", args.collective,
         "all-gather, reduce-scatter, all-reduce, broadcast, reduce, gather, scatter, all-to-all")
      ->capture_default_str();
  cmd->add_option("-s,--size", args.size,
                  "Collective size with a unit (NCCL's convention: the buffer for all-reduce, the "
                  "output per "
                  "rank for all-gather, ...; with --skew or --hot-experts what each rank sends)")
      ->capture_default_str()
      ->each([&args](const std::string&) { args.size_given = true; });
  cmd->add_option("--traffic", args.traffic,
                  "All-to-Allv: a file of the bytes each rank sends each other rank (CSV: one row "
                  "per source\n"
                  "rank, one entry per destination; or JSON {\"bytes\": [[...]]}); plain numbers "
                  "are bytes,\n"
                  "sizes like 4MiB work too; the diagonal is 0. Replaces -s.")
      ->check(CLI::ExistingFile);
  cmd->add_option(
      "--skew", args.skew,
      "All-to-Allv from a mixture-of-experts layer: zipf:S deals each rank's -s bytes (in 4096\n"
      "tokens) to experts whose popularity falls as 1/rank^S, in an order --seed picks");
  cmd->add_option("--hot-experts", args.hot_experts,
                  "All-to-Allv: K experts (chosen by --seed) draw half of every rank's -s bytes, "
                  "the rest the other half")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("-b,--min-size", args.min_size,
                  "Size sweep as nccl-tests runs it: from this size to --max-size, multiplying by "
                  "--step-factor;\n"
                  "a row per size (and per algorithm with --algo all) with time, algbw and busbw");
  cmd->add_option("-e,--max-size", args.max_size, "Size sweep: the largest size");
  cmd->add_option("-f,--step-factor", args.step_factor, "Size sweep: the factor between sizes")
      ->capture_default_str();
  cmd->add_option("-k,--chunks-per-npu", args.chunks,
                  "Chunks per NPU, or auto: try 1, 2, 4, ... and keep the fastest (stops when "
                  "doubling stops\n"
                  "helping twice, at 64 (Broadcast and Reduce: 64 x the ranks, their chunks being "
                  "the root's alone), or past "
                  "about 8M transfers; past the last count the flow plan's pipelines, the server "
                  "plan and a matcher\n"
                  "that was fastest there go on doubling alone while it pays; the output lists "
                  "every count tried)")
      ->capture_default_str();
  cmd->add_option("--channels", args.channels,
                  "Channels of ring, bidir-ring and tree (NCCL's): a count, or auto (default): as "
                  "many as the\n"
                  "topology feeds (one per NIC/rail across servers, one per set of disjoint links "
                  "otherwise).\n"
                  "ring:1 is the single ring; a name like ring:4 sets its own")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            try {  // the rule of a name's own count (ring:N)
              if (text != "auto") (void)synth::parse_baseline("ring:" + text);
              return "";
            } catch (const Error&) {
              return fmt::format("must be auto or a whole number from 1 to {}, not '{}'",
                                 synth::kMaxChannels, text);
            }
          },
          "auto|1-32"));
  cmd->add_option("--root", args.root,
                  "Root rank of broadcast, reduce, gather, scatter (an index into --ranks)")
      ->capture_default_str();
  cmd->add_option(
      "--ranks", args.ranks,
      "A process group: the NPUs that take part, e.g. 0-7 (a server), 0-1023:8 (one NPU per "
      "server,\n"
      "a rail), 0,8,16 or 0-3,8-11; the lower bound is the group's. Default: every NPU");
  cmd->add_flag(
      "--no-borrow", args.no_borrow,
      "A group does not borrow idle NPUs: its members' server mates and their NICs (a group of "
      "one\n"
      "NPU per server), or the next server through its NICs (a group inside one server). "
      "Borrowing\n"
      "reaches the group's bound alone; in training the other NPUs run their own groups (the\n"
      "simulator never borrows another server)");
}

// synth's options that steer the search and pick the algorithm.
void add_search_options(CLI::App* cmd, SynthArgs& args) {
  cmd->add_option("--seed", args.seed, "Seed for the tie-breaks (runs are reproducible)")
      ->capture_default_str()
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {  // strtoull would wrap "-1" silently
            uint64_t v = 0;
            const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
            return ec == std::errc() && end == text.data() + text.size()
                       ? ""
                       : fmt::format("must be a whole number from 0 to 2^64-1, not '{}'", text);
          },
          "0-2^64-1"));
  cmd->add_option("--restarts", args.restarts,
                  fmt::format("Run this many seeds on all cores and keep the fastest (1 to {}: "
                              "each is a whole synthesis)",
                              kMaxRestarts))
      ->capture_default_str()
      ->check(CLI::Range(1, kMaxRestarts));
  cmd->add_option(
         "--priority", args.priority,
         "Which chunk a link carries: scarce (the one the destination's other in-links could\n"
         "bring least, then the rarest; on mixed speeds, the one it brings furthest ahead),\n"
         "rarest, random (seeded: a random one among the scarcest at every match, as TACOS\n"
         "picks; auto also tries it on mixed speeds) or lowest")
      ->capture_default_str();
  add_step_costs_flag(cmd, args.step_costs);
  add_cache_flags(cmd, args.cache);
  add_time_limit_flag(cmd, args.time_limit);
  add_target_flag(cmd, args.target);
  cmd->add_option("--link-model", args.link_model,
                  "pipelined (default) or hold (the public TACOS code's)")
      ->capture_default_str();
  cmd->add_option(
         "--method", args.method,
         "How the synthesizer builds the schedule: auto (every way that applies and every\n"
         "baseline, the fastest kept: never slower than any baseline; on large fabrics the plain\n"
         "matcher only where its work is affordable, and the output says when it was left out),\n"
         "matcher (the link-chunk matcher alone, whatever it costs; an All-Reduce where\n"
         "Reduce-Scatter then All-Gather cannot come near the bound, as on a mesh, also in waves\n"
         "of one chunk per NPU, each wave's All-Gather beside the next one's Reduce-Scatter),\n"
         "plan-matcher (the matcher routing chunks along the flow plan's trees), plan-pipeline\n"
         "(the flow plan's trees as pipelines at their fluid rates), server-plan (on clusters of\n"
         "servers: each chunk crosses the scale-out network once per server on its rail, then\n"
         "spreads over the server's NVSwitch, every way at its share of the links; where switches\n"
         "join NPUs that form no servers, flat: each chunk from its root straight to every other\n"
         "NPU at its share, or over pods where the links out of groups of switches would hold "
         "that\n"
         "back (a dragonfly's groups, an oversubscribed leaf-spine's leaves): each chunk to each\n"
         "other pod once, then inside it), composed (an All-Reduce over every NPU of a cluster of\n"
         "servers, per level: Reduce-Scatter in each server, All-Reduce across servers GPU by "
         "GPU,\n"
         "All-Gather in each server; -k counts the chunks per NPU inside a server, G*k in all;\n"
         "auto composes where flat synthesis is out of reach, as on 32,768 NPUs), symmetric (on a\n"
         "topology that looks the same from every NPU, a torus, ring, hypercube or servers on\n"
         "rails: rank 0's schedule on the links out of one NPU, moved to every NPU; All-Gather,\n"
         "Reduce-Scatter, All-Reduce, All-to-All; auto tries it first and keeps it at the bound);\n"
         "the output says which one won")
      ->capture_default_str();
  cmd->add_option(
         "-a,--algo", args.algo,
         "tenet (the synthesizer), ring[:N], bidir-ring[:N], direct, rhd, dbt, tree[:N], bruck,\n"
         "hierarchical[:ring,direct,...], nvls, oneshot, blink (Blink's packed spanning trees), "
         "or\n"
         "all: every applicable one, compared in a table")
      ->capture_default_str();
}

}  // namespace

void add_synth_command(CLI::App& app) {
  static SynthArgs args;
  CLI::App* cmd = app.add_subcommand(
      "synth",
      "Synthesize a topology-aware collective algorithm with the TEN link-chunk matcher (or build "
      "a\n"
      "baseline), verify it, and write it to <output>/algorithm.json. With --algo all, every "
      "applicable\n"
      "algorithm in a table (<output>/<algorithm>.json each); with -b/-e, a size sweep.");
  add_problem_options(cmd, args);
  add_search_options(cmd, args);
  cmd->add_option("-o,--output", args.output, "Output folder")->capture_default_str();
  cmd->add_flag("--json", args.json,
                "Print the summary as JSON (with --algo all or a size sweep: the table's rows)");
  cmd->add_flag("--csv", args.csv, "Print the result rows as CSV (one per algorithm and size)");
  cmd->add_flag("--plot", args.plot,
                "With a size sweep (-b/-e) or --algo all: also draw <output>/plots/ as `tenet "
                "bench` does\n"
                "(gnuplot SVGs: time and bus bandwidth over size per algorithm, tenet's speed-up "
                "over each\n"
                "baseline, percent of the lower bound)");
  cmd->add_option(
         "--emit", args.emit,
         "Formats to write besides algorithm.json: chakra, msccl-xml, astra-sim (comma-separated)")
      ->delimiter(',')
      ->capture_default_str();
  add_chakra_flags(cmd, args.chakra);
  add_msccl_flags(cmd, args.msccl);
  cmd->callback([] { run_synth(args); });
}

}  // namespace tenet::cli
