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
//                           All-to-All runs Tenet's direct (pairwise) whatever is named.
//   <coll>-implementation-custom  [prefix]: that Chakra collective graph, as an algorithm file.
//   preferred-dataset-splits      chunks per NPU of those algorithms (-k).
//   roofline-enabled, peak-perf   the roofline's peak (TFLOP/s) when enabled.
//   local-mem-bw                  memory bandwidth (GB/s) of the roofline and MEM nodes.
// Every rank runs one send or collective at a time (ASTRA-sim's hardware resource model) unless
// --in-flight says otherwise. Keys Tenet does not model (endpoint-delay, scheduling-policy,
// active-chunks-per-dimension, collective-optimization, ...) and unknown keys are named in notes,
// never dropped silently.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <optional>

#include "sim/system.hpp"
#include "synth/collective.hpp"
#include "topo/units.hpp"

namespace tenet::sim {

struct AstraSystem {
  std::map<synth::CollectiveKind, std::string> algorithms;  // Tenet producer per collective
  int chunks_per_npu = 0;         // from preferred-dataset-splits; 0: not given
  double peak_flops = 0;          // FLOP/s; 0: not given
  Bandwidth memory_bandwidth = 0; // B/s; 0: not given
  std::vector<std::string> notes; // what is read differently from ASTRA-sim, or not at all
};

// ASTRA-sim's remote-memory configuration (its analytical remote-memory backend): memory-type
// NO_MEMORY_EXPANSION (nothing: MEM nodes use local memory), PER_NPU_MEMORY_EXPANSION,
// PER_NODE_MEMORY_EXPANSION (num-npus-per-node NPUs share one) or MEMORY_POOL (one for all);
// remote-mem-latency in ns, remote-mem-bw in GB/s. Other keys are named in `notes`.
struct AstraRemoteMemory {
  std::optional<RemoteMemory> memory;
  std::vector<std::string> notes;
};
AstraRemoteMemory read_astra_remote_memory(const std::string& path);

// Throws tenet::Error naming the file and key for malformed JSON, a value of the wrong type, or an
// implementation name ASTRA-sim would not accept either.
AstraSystem read_astra_system(const std::string& path);

}  // namespace tenet::sim
