// Recorded Chakra traces (PyTorch runs through Chakra's trace linker and converter), made ready to
// run the way ASTRA-sim runs them, with a summary of what they held and what was left out.
//
// What a converted trace looks like, and what Tenet does with it:
// - ctrl_deps name a node's parent in PyTorch's operator tree (Chakra's converter:
//   src/converter/pytorch_converter.py, convert_json_to_protobuf_node), not an order to wait for;
//   the order is in data_deps. ASTRA-sim's feeder resolves data dependencies only, so for such a
//   trace Tenet drops ctrl_deps too (DepsMode::Auto; --deps all keeps them). Tenet's own workloads
//   and collective graphs order by both, and keep both.
// - The converter prunes nodes it deems dangling after it wrote their children's ctrl_deps, so a
//   dependency can name a node that is not in the file. Such a dependency is dropped and counted
//   (ASTRA-sim's feeder never finds a parent for it either).
// - Process groups: a COMM node's `pg_name` names a group in the METADATA node's table (the
//   `inputs.values` of PyTorch's process-group node: [{"pg_name": "1", "ranks": [0, 2]}, ...], an
//   empty rank list for every rank), or in an ASTRA-sim communicator-group file ({"1": [0, 2]});
//   "" and "0" are the default group of every rank. Tenet writes the members into `tenet_ranks`.
// - replicate N runs a one-rank trace as N data-parallel ranks: every rank runs the recorded graph
//   and every collective spans the N replicas (the recording's own groups are reported, not used).
// - A COMM node marked `is_cpu_op` is PyTorch's host-side c10d operator (c10d::allreduce_), which
//   launches the NCCL kernel node that carries comm_type and comm_size: it becomes a CPU operator
//   of its recorded duration.
// CPU operators (`is_cpu_op`), GPU kernels and communication run on separate streams of a rank;
// see sim/system.hpp.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "chakra/et.hpp"

namespace tenet::sim {

enum class DepsMode {
  Auto,  // Data for a trace from Chakra's PyTorch converter, All otherwise
  All,   // data and control dependencies order nodes
  Data,  // data dependencies only (ASTRA-sim's feeder)
};
// "auto", "all" or "data"; throws tenet::Error naming them otherwise.
DepsMode parse_deps_mode(const std::string& name);

struct TraceOptions {
  DepsMode deps = DepsMode::Auto;
  int replicate = 0;  // run a one-rank trace as this many ranks; 0: the ranks as recorded
  // Process group name -> ranks, from an ASTRA-sim communicator-group file; the trace's own
  // process-group table takes precedence (as in ASTRA-sim).
  std::map<std::string, std::vector<int>> groups;
};

struct TraceSummary {
  int ranks_recorded = 0;         // rank files read
  int ranks = 0;                  // ranks simulated
  bool from_pytorch = false;      // written by Chakra's PyTorch converter
  DepsMode deps = DepsMode::All;  // the mode used
  int64_t nodes = 0;
  std::map<std::string, int64_t> node_types;  // "COMP_NODE" -> count, over every rank
  int64_t cpu_ops = 0;                        // COMP (and host-side COMM) nodes with is_cpu_op
  int64_t gpu_kernels = 0;                    // other COMP nodes
  int gpu_streams = 0;  // distinct `stream` values of GPU kernels (they run one at a time)
  std::map<std::string, int64_t> collectives;      // "all-reduce" -> count
  std::map<std::string, std::vector<int>> groups;  // process groups the collectives used
  int64_t ctrl_deps_dropped = 0;    // control dependencies not followed (DepsMode::Data)
  int64_t absent_deps_dropped = 0;  // dependencies on nodes that are not in their rank's file
  // One sentence per thing the simulation leaves out or reads differently from the recording.
  std::vector<std::string> notes;
};

// Rewrites `w` in place as described above; throws tenet::Error naming the rank and node for a
// process group it cannot resolve, or for --replicate on a trace of more than one rank.
TraceSummary prepare_trace(std::vector<chakra::EtFile>& w, const TraceOptions& options,
                           const std::string& name);

// Reads an ASTRA-sim communicator-group file: {"<group id>": [ranks...], ...}.
std::map<std::string, std::vector<int>> read_comm_groups(const std::string& path);

// Multi-line text of `s` for the CLI ("trace           ..." lines).
std::string describe(const TraceSummary& s);

}  // namespace tenet::sim
