// The best algorithm a runtime can run (`tenet synth --target msccl`): Tenet's search finds the
// fastest schedule in its own model, which the MSCCL runtime may be unable to hold (too many
// channels, thread blocks or steps) or may run slower (its thread blocks take their steps in
// program order). Here every candidate (the synthesizer at the chunk count it picked and at each
// smaller power of two, and every baseline at its own best count) is written as MSCCL-XML and read
// back as the runtime runs it (synth::import_msccl_xml); the fastest program read back wins, and
// the candidates the runtime cannot hold are listed with the limit that left them out.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "synth/formats/msccl_xml.hpp"
#include "synth/ir/outcome.hpp"
#include "synth/synthesizer.hpp"

namespace tenet::synth {

struct RuntimeChoice {
  // MSCCL: the program as the runtime runs it (imported back, timed); ASTRA-sim
  // (astra/target.hpp): the candidate as Tenet scheduled it, which ASTRA-sim runs as its Chakra
  // graph.
  Algorithm algorithm;
  std::string from;        // the candidate it came from: "tenet at 4 chunks per NPU", ...
  Time schedule_time = 0;  // that candidate's time as Tenet scheduled it
  Time runtime_time = 0;   // what the runtime takes (MSCCL: as read back; ASTRA-sim: its report)
  // Candidates the runtime cannot hold, each with the limit that left it out.
  std::vector<std::string> left_out;
  size_t candidates = 0;  // programs written and read back
};

// Every candidate a runtime target weighs, each offered with where it came from ("tenet at 4
// chunks per NPU", "ring at 1 chunk per NPU"): the synthesizer at the count its search picked, then
// at each smaller power of two (fewer chunks make fewer steps, which runtimes' limits and program
// order favour), then every baseline that applies at its own best count. Made without in-network
// collectives (a runtime's program holds ranks only), each holds for `t` as it is.
void for_each_runtime_candidate(
    const topo::Topology& t, const Collective& c, Bytes total_bytes, const SynthOptions& options,
    int max_chunks_per_npu, const std::function<void(const Algorithm&, const std::string&)>& offer);

// NotMade when no candidate can be written for the runtime (every one over its limits: why for
// the first). Rooted collectives MSCCL-XML cannot express (Broadcast, ...) are NotMade too.
Made<RuntimeChoice> best_for_msccl(const topo::Topology& t, const Collective& c, Bytes total_bytes,
                                   const SynthOptions& options, const MscclOptions& msccl,
                                   int max_chunks_per_npu = 64);

}  // namespace tenet::synth
