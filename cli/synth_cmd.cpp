// tenet synth --topo <file|spec> --coll <collective> --size <bytes> [...] -o <dir>
#include <fmt/format.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "cli/commands.hpp"
#include "bench/table.hpp"
#include "cli/formats.hpp"
#include "cli/progress.hpp"
#include "synth/algorithm_json.hpp"
#include "synth/producers.hpp"
#include "synth/verify.hpp"
#include "topo/io.hpp"

namespace tenet::cli {
namespace {

struct SynthArgs {
  std::string topology, collective = "all-reduce", size = "256MiB", chunks = "auto", output = "out", channels;
  std::string priority = "scarce", link_model = "pipelined", algo = "tenet", reduce_bw = "0", method = "auto";
  std::vector<std::string> emit{"json"};
  uint64_t seed = 1;
  int restarts = 1, root = 0;
};

// --chunks-per-npu: a whole number in [1, 4096], or auto (then `when_auto`).
int parse_chunks(const std::string& text, int when_auto) {
  if (text == "auto") return when_auto;
  int k = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), k);
  if (ec != std::errc() || end != text.data() + text.size())
    throw Error(fmt::format("--chunks-per-npu must be a whole number or auto, not '{}'", text));
  if (k < 1 || k > 4096) throw Error("--chunks-per-npu must lie in [1, 4096]");
  return k;
}

synth::SynthOptions options_from(const SynthArgs& args) {
  synth::SynthOptions o;
  o.seed = args.seed;
  o.restarts = args.restarts;
  o.priority = synth::parse_chunk_priority(args.priority);
  o.link_model = synth::parse_link_model(args.link_model);
  o.method = synth::parse_synth_method(args.method);
  return o;
}

// One producer's result, for the comparison table.
struct Row {
  std::string name;
  std::optional<synth::Algorithm> algorithm;
  std::optional<synth::Report> report;
  std::string not_applicable;
  double seconds = 0;
};

void compare_all(const SynthArgs& args);

void run_synth(const SynthArgs& args) {
  if (args.algo == "all") return compare_all(args);
  const topo::Topology t = topo::load(args.topology);
  synth::Collective c = synth::Collective::over_all(t, synth::parse_collective(args.collective));
  c.root = args.root;
  const Bytes size = parse_bytes(args.size);
  if (size < 1) throw Error("--size must be at least 1 byte");
  synth::SynthOptions o = options_from(args);
  ProgressBar bar("synthesizing");
  o.progress = [&](double f) { bar(f); };

  const auto begin = std::chrono::steady_clock::now();
  synth::Algorithm a;
  std::string chunk_note;
  const std::string algo = synth::with_channels(args.algo, args.channels);
  if (args.chunks == "auto") {
    synth::ChunkingResult r = synth::make_algorithm_auto_chunks(algo, t, c, size, o);
    a = std::move(r.algorithm);
    std::string tried;
    for (auto [k, time] : r.tried) tried += fmt::format("{}{}: {}", tried.empty() ? "" : ", ", k, format_time(time));
    chunk_note = fmt::format(" (auto; tried {})", tried);
  } else {
    c.chunks_per_npu = parse_chunks(args.chunks, 1);
    a = synth::make_algorithm(algo, t, c, c.chunk_bytes_for(size), o);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();

  const synth::Report r = synth::verify(t, a, {.max_reported = 5});
  std::vector<std::string> formats{"json"};
  for (const std::string& f : args.emit)
    if (!f.empty() && f != "json") formats.push_back(f);
  const std::vector<std::string> written = export_algorithm(a, t, formats, args.output, parse_reduce_bandwidth(args.reduce_bw));
  const std::string path = written.front();

  const double algbw = static_cast<double>(size) / (static_cast<double>(r.collective_time) / kPicosPerSecond);
  const double busbw = algbw * synth::bus_bandwidth_factor(c.kind, c.num_ranks());
  fmt::print("topology        {} ({} NPUs, {} switches, {} links)\n", t.name(), t.num_npus(), t.num_switches(),
             t.num_links());
  fmt::print("collective      {} of {}, {} chunks of {}{}\n", synth::to_string(c.kind), format_bytes(size),
             a.collective.num_chunks(), format_bytes(a.chunk_bytes), chunk_note);
  fmt::print("collective time {}  ({} link model)\n", format_time(r.collective_time), synth::to_string(a.link_model));
  fmt::print("lower bound     {}  ({} {} + {} latency)\n", format_time(r.bound.total), r.bound.label,
             format_time(r.bound.bandwidth), format_time(r.bound.min_link_latency));
  fmt::print("ratio           {:.4f}\n", r.ratio());
  fmt::print("algbw / busbw   {} / {}\n", format_bandwidth(static_cast<Bandwidth>(algbw)),
             format_bandwidth(static_cast<Bandwidth>(busbw)));
  fmt::print("transfers       {}\n", a.size());
  if (args.algo == "tenet")
    fmt::print("synthesis       {:.3f} s (seed {}, {} restart{}, {} priority; method: {})\n", seconds, args.seed,
               args.restarts, args.restarts == 1 ? "" : "s", args.priority, a.method);
  else
    fmt::print("algorithm       {} (built in {:.3f} s)\n", a.name, seconds);
  fmt::print("verified        {}\n", r.correct() ? "correct" : fmt::format("INCORRECT ({} violations)", r.violation_count));
  fmt::print("wrote           {}\n", path);
  for (size_t i = 1; i < written.size(); ++i) fmt::print("                {}\n", written[i]);
  if (!r.correct()) {
    for (const synth::Violation& v : r.violations) fmt::print(stderr, "  [{}] {}\n", synth::to_string(v.kind), v.message);
    verb_exit_code() = 1;  // an internal failure: the synthesizer produced something wrong
  }
}

void compare_all(const SynthArgs& args) {
  const topo::Topology t = topo::load(args.topology);
  synth::Collective c = synth::Collective::over_all(t, synth::parse_collective(args.collective));
  c.root = args.root;
  const Bytes size = parse_bytes(args.size);
  if (size < 1) throw Error("--size must be at least 1 byte");
  const bool auto_chunks = args.chunks == "auto";
  const int k = parse_chunks(args.chunks, 1);
  c.chunks_per_npu = k;
  c.validate(t);
  const synth::SynthOptions o = options_from(args);
  const Bytes chunk = c.chunk_bytes_for(size);

  std::vector<Row> rows;
  for (const std::string& base : synth::algorithm_names(c.kind)) {
    const std::string name = synth::with_channels(base, args.channels);
    Row row{name, {}, {}, {}, 0};
    const auto begin = std::chrono::steady_clock::now();
    try {
      if (auto_chunks)
        row.algorithm = synth::make_algorithm_auto_chunks(name, t, c, size, o).algorithm;
      else
        row.algorithm = synth::make_algorithm(name, t, c, chunk, o);
      row.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
      row.report = synth::verify(t, *row.algorithm, {.max_reported = 3});
    } catch (const synth::NotApplicable& e) {
      row.not_applicable = e.message();
    }
    rows.push_back(std::move(row));
  }

  std::filesystem::create_directories(args.output);
  const Time tenet_time = rows[0].report ? rows[0].report->collective_time : 0;
  bench::Table table({"algorithm", "time", "ratio to bound", "busbw", "tenet speed-up", "verified", "chunks/NPU", "transfers"});
  std::vector<std::string> notes;
  for (const Row& r : rows) {
    if (!r.algorithm) {
      notes.push_back(fmt::format("{}: does not apply: {}", r.name, r.not_applicable));
      continue;
    }
    const synth::Report& rep = *r.report;
    const double algbw = static_cast<double>(size) / (static_cast<double>(rep.collective_time) / kPicosPerSecond);
    const double busbw = algbw * synth::bus_bandwidth_factor(c.kind, c.num_ranks());
    table.add_row({r.name, format_time(rep.collective_time), fmt::format("{:.4f}", rep.ratio()),
                   format_bandwidth(static_cast<Bandwidth>(busbw)),
                   fmt::format("{:.3f}x", static_cast<double>(rep.collective_time) / std::max<Time>(1, tenet_time)),
                   rep.correct() ? "correct" : fmt::format("INCORRECT ({})", rep.violation_count),
                   std::to_string(r.algorithm->collective.chunks_per_npu), std::to_string(r.algorithm->size())});
    std::string file = r.name;
    std::replace(file.begin(), file.end(), ':', '_');
    std::replace(file.begin(), file.end(), ',', '_');
    synth::save_algorithm(*r.algorithm, (std::filesystem::path(args.output) / (file + ".json")).string());
    if (!rep.correct()) verb_exit_code() = 1;
  }
  if (auto_chunks)
    fmt::print("{} of {} on {} ({} NPUs), chunks per NPU picked per algorithm (auto), {} links\n",
               synth::to_string(c.kind), format_bytes(size), t.name(), t.num_npus(), args.link_model);
  else
    fmt::print("{} of {} on {} ({} NPUs), {} chunks of {} per NPU, {} links\n", synth::to_string(c.kind),
               format_bytes(size), t.name(), t.num_npus(), k, format_bytes(chunk), args.link_model);
  if (rows[0].report)
    fmt::print("lower bound {} ({})\n\n", format_time(rows[0].report->bound.total), rows[0].report->bound.label);
  fmt::print("{}", table.markdown());
  for (const std::string& n : notes) fmt::print("{}\n", n);
  fmt::print("wrote one <algorithm>.json per row to {}\n", args.output);
}

}  // namespace

void add_synth_command(CLI::App& app) {
  static SynthArgs args;
  CLI::App* cmd = app.add_subcommand(
      "synth",
      "Synthesize a topology-aware collective algorithm with the TEN link-chunk matcher, verify it,\n"
      "and write it to <output>/algorithm.json");
  cmd->add_option("-t,--topo", args.topology, "Topology file or generator spec")->required();
  cmd->add_option("-c,--coll", args.collective,
                  "all-gather, reduce-scatter, all-reduce, broadcast, reduce, gather, scatter, all-to-all")
      ->capture_default_str();
  cmd->add_option("-s,--size", args.size,
                  "Collective size with a unit (NCCL's convention: the buffer for all-reduce, the output per "
                  "rank for all-gather, ...)")
      ->capture_default_str();
  cmd->add_option("-k,--chunks-per-npu", args.chunks,
                  "Chunks per NPU, or auto: try 1, 2, 4, ... and keep the fastest (stops when doubling stops\n"
                  "helping twice, at 64, or past about 8M transfers)")
      ->capture_default_str();
  cmd->add_option("--channels", args.channels,
                  "Channels of ring, bidir-ring and tree (NCCL's): a count, or auto (default): as many as the\n"
                  "topology feeds (one per NIC/rail across servers, one per set of disjoint links otherwise).\n"
                  "ring:1 is the single ring; a name like ring:4 sets its own");
  cmd->add_option("--root", args.root, "Root rank of broadcast, reduce, gather, scatter")->capture_default_str();
  cmd->add_option("--seed", args.seed, "Seed for the tie-breaks (runs are reproducible)")->capture_default_str();
  cmd->add_option("--restarts", args.restarts, "Run this many seeds on all cores and keep the fastest")
      ->capture_default_str();
  cmd->add_option("--priority", args.priority, "Which chunk a link carries: scarce, rarest, random or lowest")
      ->capture_default_str();
  cmd->add_option("--link-model", args.link_model, "pipelined (default) or hold (the public TACOS code's)")
      ->capture_default_str();
  cmd->add_option("--method", args.method,
                  "How the synthesizer builds the schedule: auto (every way that applies and every baseline,\n"
                  "the fastest kept: never slower than any baseline), matcher (the link-chunk matcher alone),\n"
                  "plan-matcher (the matcher routing chunks along the flow plan's trees), plan-pipeline (the\n"
                  "flow plan's trees as pipelines at their fluid rates); the output says which one won")
      ->capture_default_str();
  cmd->add_option("-a,--algo", args.algo,
                  "tenet (the synthesizer), ring[:N], bidir-ring[:N], direct, rhd, dbt, tree[:N], bruck,\n"
                  "hierarchical[:ring,direct,...], nvls, or all: every applicable one, compared in a table")
      ->capture_default_str();
  cmd->add_option("-o,--output", args.output, "Output folder")->capture_default_str();
  cmd->add_option("--emit", args.emit,
                  "Formats to write besides algorithm.json: chakra, msccl-xml (comma-separated)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--reduce-bw", args.reduce_bw, "Reduction bandwidth for Chakra COMP nodes; 0: no time")
      ->capture_default_str();
  cmd->callback([] { run_synth(args); });
}

}  // namespace tenet::cli
