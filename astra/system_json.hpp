// ASTRA-sim's system configuration (`system.json`, astra-sim/system/Sys.cc and
// astraccl/CollectiveImplLookup.cc upstream) read as Tenet simulator settings, so a study set up
// for ASTRA-sim runs in `tenet sim --system system.json` as it is, and then with synthesized
// collectives by one flag (--coll all-reduce=tenet).
//
// What each key becomes:
//   <coll>-implementation   one entry per network dimension: ring / oneRing -> ring:1 (a single
//                           ring, as ASTRA-sim runs it), direct[N] / oneDirect[N] -> direct,
//                           halvingDoubling / oneHalvingDoubling -> rhd, doubleBinaryTree -> dbt;
//                           several dimensions -> hierarchical:<ring|direct|rhd per dimension>.
//                           All-to-All: ring (store and forward) or direct (pairwise); direct for
//                           anything else, with a note.
//   <coll>-implementation-custom  [prefix]: that Chakra collective graph, as an algorithm file.
//   preferred-dataset-splits      pieces each native collective runs as, one after another, each
//   active-chunks-per-dimension   with one chunk per NPU, this many at once
//   (SimConfig::dataset_splits). roofline-enabled, peak-perf   the roofline's peak (TFLOP/s) when
//   enabled. local-mem-bw                  memory bandwidth (GB/s) of the roofline and MEM nodes,
//   and of
//                                 the reductions of collectives (three passes per reduced chunk).
//   endpoint-delay                ns each message of a collective spends at each endpoint
//   (ASTRA-sim's
//                                 default when absent: 10 ns); see sim::EndpointModel.
// Every rank runs one send or collective at a time (ASTRA-sim's hardware resource model) unless
// --in-flight says otherwise. Keys Tenet does not model (scheduling-policy,
// collective-optimization, ...) and unknown keys are named in notes,
// never dropped silently.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <optional>

#include "sim/system.hpp"
#include "synth/ir/collective.hpp"
#include "topo/units.hpp"

namespace tenet::astra {

// ASTRA-sim's endpoint-delay when system.json does not set it (astra-sim/system/Sys.cc, Sys::Sys).
inline constexpr Time kAstraDefaultEndpointDelay = 10'000;  // 10 ns in ps

struct AstraSystem {
  std::map<synth::CollectiveKind, std::string> algorithms;  // Tenet producer per collective
  // preferred-dataset-splits and active-chunks-per-dimension, for the kinds that run natively.
  std::map<synth::CollectiveKind, sim::SimConfig::Splits> dataset_splits;
  double peak_flops = 0;           // FLOP/s; 0: not given
  bool roofline = false;           // roofline-enabled (sim::SimConfig::roofline)
  Bandwidth memory_bandwidth = 0;  // B/s; 0: not given
  // endpoint-delay, and local-mem-bw for reductions.
  sim::EndpointModel endpoints{kAstraDefaultEndpointDelay, 0};
  std::vector<std::string> notes;  // what is read differently from ASTRA-sim, or not at all
};

// ASTRA-sim's remote-memory configuration (its analytical remote-memory backend): memory-type
// NO_MEMORY_EXPANSION (nothing: MEM nodes use local memory), PER_NPU_MEMORY_EXPANSION,
// PER_NODE_MEMORY_EXPANSION (num-npus-per-node NPUs share one) or MEMORY_POOL (one for all);
// remote-mem-latency in ns, remote-mem-bw in GB/s. Other keys are named in `notes`.
struct AstraRemoteMemory {
  std::optional<sim::RemoteMemory> memory;
  std::vector<std::string> notes;
};
AstraRemoteMemory read_astra_remote_memory(const std::string& path);

// Throws tenet::Error naming the file and key for malformed JSON, a value of the wrong type, or an
// implementation name ASTRA-sim would not accept either.
AstraSystem read_astra_system(const std::string& path);

// ASTRA-sim's settings merged into `cfg`, under what it holds already (the command line's): a
// collective keeps an algorithm `cfg` names and takes `sys`'s otherwise; the dataset splits apply
// to the collectives left running ASTRA-sim's native algorithm; the roofline's peak and memory
// bandwidth replace `cfg`'s when `sys` gives them, and COMP nodes without a duration take 1 ns
// unless it enables the roofline (as ASTRA-sim runs them); the endpoint model is `sys`'s. Unless
// `keep_in_flight` (cfg.max_in_flight was chosen), every rank runs one send or collective at a
// time, as ASTRA-sim does (max_in_flight 1). Returns the notes to show: `sys.notes`, then the one
// on operations in flight when it was set here.
std::vector<std::string> apply_astra_system(const AstraSystem& sys, sim::SimConfig& cfg,
                                            bool keep_in_flight);

// `mem`'s remote memory into `cfg` (none for NO_MEMORY_EXPANSION). Returns its notes.
std::vector<std::string> apply_astra_remote_memory(const AstraRemoteMemory& mem,
                                                   sim::SimConfig& cfg);

}  // namespace tenet::astra
