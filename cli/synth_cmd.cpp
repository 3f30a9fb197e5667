// tenet synth --topo <file|spec> --coll <collective> --size <bytes> [...] -o <dir>
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "cli/commands.hpp"
#include "synth/algorithm_json.hpp"
#include "synth/synthesizer.hpp"
#include "synth/verify.hpp"
#include "topo/io.hpp"

namespace tenet::cli {
namespace {

struct SynthArgs {
  std::string topology, collective = "all-reduce", size = "256MiB", chunks = "1", output = "out";
  std::string priority = "scarce", link_model = "pipelined";
  uint64_t seed = 1;
  int restarts = 1, root = 0;
};

// A progress bar on stderr, only when it is a terminal and the run has taken over a second.
class ProgressBar {
 public:
  ProgressBar() : tty_(::isatty(STDERR_FILENO)), begin_(std::chrono::steady_clock::now()) {}
  ~ProgressBar() {
    if (drawn_) fmt::print(stderr, "\r{:60}\r", "");
  }
  void operator()(double fraction) {
    if (!tty_) return;
    auto elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin_).count();
    if (elapsed < 1.0) return;
    const int width = 40, done = static_cast<int>(fraction * width);
    fmt::print(stderr, "\rsynthesizing [{}{}] {:3.0f}%  {:.1f} s", std::string(done, '#'),
               std::string(width - done, '.'), 100 * fraction, elapsed);
    drawn_ = true;
  }

 private:
  bool tty_, drawn_ = false;
  std::chrono::steady_clock::time_point begin_;
};

void run_synth(const SynthArgs& args) {
  const topo::Topology t = topo::load(args.topology);
  synth::Collective c = synth::Collective::over_all(t, synth::parse_collective(args.collective));
  c.root = args.root;
  const Bytes size = parse_bytes(args.size);
  if (size < 1) throw Error("--size must be at least 1 byte");
  synth::SynthOptions o;
  o.seed = args.seed;
  o.restarts = args.restarts;
  o.priority = synth::parse_chunk_priority(args.priority);
  o.link_model = synth::parse_link_model(args.link_model);
  ProgressBar bar;
  o.progress = [&](double f) { bar(f); };

  const auto begin = std::chrono::steady_clock::now();
  synth::Algorithm a;
  std::string chunk_note;
  if (args.chunks == "auto") {
    synth::ChunkingResult r = synth::synthesize_auto_chunks(t, c, size, o);
    a = std::move(r.algorithm);
    std::string tried;
    for (auto [k, time] : r.tried) tried += fmt::format("{}{}: {}", tried.empty() ? "" : ", ", k, format_time(time));
    chunk_note = fmt::format(" (auto; tried {})", tried);
  } else {
    int k = 0;
    try {
      k = std::stoi(args.chunks);
    } catch (const std::exception&) {
      throw Error(fmt::format("--chunks-per-npu must be a whole number or auto, not '{}'", args.chunks));
    }
    if (k < 1 || k > 4096) throw Error("--chunks-per-npu must lie in [1, 4096]");
    c.chunks_per_npu = k;
    a = synth::synthesize(t, c, c.chunk_bytes_for(size), o);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();

  const synth::Report r = synth::verify(t, a, {.max_reported = 5});
  std::filesystem::create_directories(args.output);
  const std::string path = (std::filesystem::path(args.output) / "algorithm.json").string();
  synth::save_algorithm(a, path);

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
  fmt::print("synthesis       {:.3f} s (seed {}, {} restart{}, {} priority)\n", seconds, args.seed, args.restarts,
             args.restarts == 1 ? "" : "s", args.priority);
  fmt::print("verified        {}\n", r.correct() ? "correct" : fmt::format("INCORRECT ({} violations)", r.violation_count));
  fmt::print("wrote           {}\n", path);
  if (!r.correct()) {
    for (const synth::Violation& v : r.violations) fmt::print(stderr, "  [{}] {}\n", synth::to_string(v.kind), v.message);
    verb_exit_code() = 1;  // an internal failure: the synthesizer produced something wrong
  }
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
  cmd->add_option("-k,--chunks-per-npu", args.chunks, "Chunks per NPU, or auto to pick the fastest")
      ->capture_default_str();
  cmd->add_option("--root", args.root, "Root rank of broadcast, reduce, gather, scatter")->capture_default_str();
  cmd->add_option("--seed", args.seed, "Seed for the tie-breaks (runs are reproducible)")->capture_default_str();
  cmd->add_option("--restarts", args.restarts, "Run this many seeds on all cores and keep the fastest")
      ->capture_default_str();
  cmd->add_option("--priority", args.priority, "Which chunk a link carries: scarce, rarest, random or lowest")
      ->capture_default_str();
  cmd->add_option("--link-model", args.link_model, "pipelined (default) or hold (the public TACOS code's)")
      ->capture_default_str();
  cmd->add_option("-o,--output", args.output, "Output folder")->capture_default_str();
  cmd->callback([] { run_synth(args); });
}

}  // namespace tenet::cli
