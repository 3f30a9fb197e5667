#include "cli/synth_target.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <utility>
#include <variant>

#include "astra/target.hpp"
#include "synth/auto/runtime_target.hpp"
#include "topo/error.hpp"

namespace tenet::cli {
namespace {

// The `target` line: how many candidates `runs`, which was picked (`picked`), and those left out
// with their reasons after `left_out`.
std::string note(const std::string& runtime, const std::string& runs,
                 const synth::RuntimeChoice& choice, const std::string& picked,
                 const std::string& left_out) {
  return fmt::format("{}: {} of {} candidates {}; picked {}{}", runtime, choice.candidates,
                     choice.candidates + choice.left_out.size(), runs, picked,
                     choice.left_out.empty()
                         ? ""
                         : fmt::format("; {}: {}", left_out, fmt::join(choice.left_out, "; ")));
}

}  // namespace

void add_target_flag(CLI::App* cmd, std::string& target) {
  cmd->add_option(
         "--target", target,
         "tenet (default): the fastest schedule in Tenet's model; msccl: the fastest the MSCCL\n"
         "runtime can run (--msccl-runtime): every candidate (the synthesizer at its chosen chunk\n"
         "count and each smaller power of two, every baseline at its best) written as MSCCL-XML\n"
         "and read back as the runtime runs it, the fastest kept; the XML is written too, and a\n"
         "`target` line says which candidate won and which the runtime's limits left out;\n"
         "astra-sim: the fastest ASTRA-sim runs (--astra-network): the same candidates, each\n"
         "timed as its bundle runs in ASTRA-sim (its analytical network, or ns-3's estimate), the\n"
         "fastest kept and its astra-sim folder written")
      ->capture_default_str();
}

TargetPick pick_for_target(const std::string& target, const MscclFlags& msccl,
                           const ChakraFlags& chakra, const topo::Topology& t,
                           const synth::Collective& c, Bytes total_bytes,
                           const synth::SynthOptions& options) {
  const bool to_msccl = target == "msccl";
  synth::Made<synth::RuntimeChoice> made;
  if (to_msccl) {
    made = synth::best_for_msccl(t, c, total_bytes, options, msccl_options(msccl));
  } else {
    const exporting::ExportOptions exported = export_options(chakra, msccl);
    astra::AstraBundleOptions bundle;
    bundle.graph = exported.chakra;
    bundle.network = exported.astra_network;
    made = astra::best_for_astra_sim(t, c, total_bytes, options, bundle);
  }
  if (const synth::NotMade* why = std::get_if<synth::NotMade>(&made))
    throw Error(fmt::format("--target {}: {}", target, why->why));
  synth::RuntimeChoice& choice = std::get<synth::RuntimeChoice>(made);
  std::string line =
      to_msccl
          ? note(fmt::format("msccl ({} runtime)", msccl.runtime),
                 "read back as the runtime runs them", choice,
                 fmt::format("{} ({} as Tenet scheduled it)", choice.from,
                             format_time(choice.schedule_time)),
                 "over the runtime's limits")
          : note("astra-sim", "timed as ASTRA-sim runs them", choice,
                 fmt::format("{}: {} in ASTRA-sim, {} as Tenet scheduled it", choice.from,
                             format_time(choice.runtime_time), format_time(choice.schedule_time)),
                 "ASTRA-sim cannot run");
  return {std::move(choice.algorithm), std::move(line)};
}

std::string target_hint(const std::string& target, const std::string& format) {
  if (target != "tenet") return "";
  if (format == "msccl-xml")
    return "; --target msccl writes the fastest algorithm the MSCCL runtime can run";
  if (format == "astra-sim")
    return "; --target astra-sim writes the fastest algorithm ASTRA-sim can run";
  return "";
}

}  // namespace tenet::cli
