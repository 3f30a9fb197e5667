// tenet: synthesize, verify, export and simulate collective communication algorithms.
// Exit codes: 0 success, 1 internal failure, 2 bad input (file, flag, spec).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <new>
#include <string>
#include <string_view>

#include "cli/commands.hpp"
#include "cli/suggest_args.hpp"
#include "topo/error.hpp"

namespace {

// An error message as printed: one that echoes a huge input (a 100,000-character flag value) keeps
// its start and end, not a screenful of it.
std::string shortened(std::string_view message) {
  constexpr size_t kHead = 1000, kTail = 200;
  if (message.size() <= kHead + kTail + 100) return std::string(message);
  return fmt::format("{} [... {} characters ...] {}", message.substr(0, kHead),
                     message.size() - kHead - kTail, message.substr(message.size() - kTail));
}

}  // namespace

int main(int argc, char** argv) {
  // A file-size limit (ulimit -f) fails the write that passes it (EFBIG), which Tenet reports and
  // cleans up after, instead of killing the process mid-write.
  std::signal(SIGXFSZ, SIG_IGN);
  CLI::App app{
      "Tenet: topology-aware collective communication algorithms.\n"
      "Reads any topology (a file or a generator spec such as torus2d:8x8), synthesizes,\n"
      "verifies, exports and simulates collectives. Every verb has --help.",
      "tenet"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "tenet 0.1.0");
  tenet::cli::add_topo_commands(app);
  tenet::cli::add_synth_command(app);
  tenet::cli::add_verify_command(app);
  tenet::cli::add_export_commands(app);
  tenet::cli::add_sim_commands(app);
  tenet::cli::add_bench_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    const std::vector<std::string> hints = tenet::cli::argument_hints(app, argc, argv);
    for (const std::string& h : hints) fmt::print(stderr, "error: {}\n", h);
    if (hints.empty()) app.exit(e);
    return 2;
  } catch (const tenet::Error& e) {
    std::fflush(stdout);
    fmt::print(stderr, "error: {}\n", shortened(e.what()));
    return 2;
  } catch (const std::filesystem::filesystem_error& e) {
    // A path the user gave that the system refused (not a folder, too long, no permission).
    std::fflush(stdout);
    fmt::print(stderr, "error: {}\n", shortened(e.what()));
    return 2;
  } catch (const std::bad_alloc&) {
    // What the up-front estimates (topo::check_memory) did not foresee.
    std::fflush(stdout);
    fmt::print(stderr,
               "error: out of memory: the run needs more than this machine has (fewer ranks or "
               "chunks per NPU "
               "need less)\n");
    return 2;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    fmt::print(stderr, "internal error: {} (please report it with the command that caused it)\n",
               shortened(e.what()));
    return 1;
  }
  return tenet::cli::verb_exit_code();
}
