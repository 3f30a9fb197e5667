// `tenet synth --target msccl|astra-sim`: the fastest algorithm that runtime runs rather than the
// fastest in Tenet's model, and the line that says what was picked and what the runtime cannot
// hold.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "cli/formats.hpp"
#include "synth/synthesizer.hpp"
#include "topo/topology.hpp"

namespace tenet::cli {

// --target: tenet (the default), msccl or astra-sim.
void add_target_flag(CLI::App* cmd, std::string& target);

struct TargetPick {
  synth::Algorithm algorithm;
  std::string note;  // the `target` line
};

// `target` is "msccl" (synth::best_for_msccl) or "astra-sim" (astra::best_for_astra_sim), with
// the runtime and network the MSCCL and Chakra flags name. Throws tenet::Error, prefixed with the
// flag, when the runtime runs no candidate.
TargetPick pick_for_target(const std::string& target, const MscclFlags& msccl,
                           const ChakraFlags& chakra, const topo::Topology& t,
                           const synth::Collective& c, Bytes total_bytes,
                           const synth::SynthOptions& options);

// What to do where `format` could not be written: "; --target msccl writes ..." for a runtime's
// format when `target` is tenet; else empty.
std::string target_hint(const std::string& target, const std::string& format);

}  // namespace tenet::cli
