// MSCCL-XML, the algorithm format of the MSCCL runtime, as msccl-tools writes it and the MSCCL
// runtimes' parsers (microsoft/msccl, Azure/msccl-executor-nccl) read it.
//
// Export (All-Reduce in place, All-Gather and Reduce-Scatter out of place, All-to-All): per rank,
// a thread block per send peer and channel, one per receive peer and channel, and one for local
// copies; the k-th send from a to b on a channel meets the k-th receive on b from a there. A pair
// moves to a new channel when a thread block would pass 64 steps, with at most 32 thread blocks
// per channel and 32 channels; an algorithm beyond that is refused with the reason, never written
// half-valid. Every step waits for the previous step that touched the same buffer slot (the data
// dependency, and no slot is overwritten before it is read); further dependencies become nop
// steps. The file has no XML declaration (both runtimes' hand-written tokenizers reject
// `<?xml ...?>`) and all ten <algo> attributes either runtime requires; `coll` and the step and
// thread-block limits follow the runtime asked for (executor: reducescatter, 64 steps per thread
// block; legacy: reduce_scatter, 256 steps, 216 thread blocks).
//
// Import reads XML from Tenet or other generators (msccl-tools): attributes only one runtime needs
// are optional (a warning names the runtime), reduce_scatter and reducescatter both name
// Reduce-Scatter, in-place buffers are one buffer, steps with cnt > 1 expand into chunks, sends
// and receives pair up per (peer, channel) in order, compound steps (rcs, rrs, rrcs) receive and
// send on, a local reduction ('re') makes the transfer that brought its source reduce into the
// GPU's copy, and which chunk each message carries follows the data from the initial buffers
// through the steps (scratch included). Routes come from the topology.
//
// The import also runs the program as the runtime would, on buffers of the sizes each <gpu>
// declares, and reports what makes it incorrect there (MscclImport::problems; `tenet verify` says
// INCORRECT): an access past a buffer's size; two accesses of a slot, one a write, that nothing
// orders (thread blocks run concurrently; only a thread block's own order, depid/deps and a send
// before its receive order steps); a read of a slot that holds nothing; a reduction of two
// different chunks, or one counting a rank twice (a message carries the chunk and the ranks whose
// contributions it sums); and output slots that end holding another chunk or an incomplete sum.
// A receive into the wrong offset delivers the chunk to the GPU (the IR alone would be content)
// but leaves the output wrong.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "synth/ir/algorithm.hpp"
#include "synth/ir/import_problem.hpp"
#include "topo/topology.hpp"

namespace tenet::synth {

enum class MscclRuntime { Executor, Legacy };  // Azure/msccl-executor-nccl, microsoft/msccl
MscclRuntime parse_msccl_runtime(std::string_view name);  // "executor" or "legacy"

struct MscclOptions {
  // Simple, LL or LL128; empty: the protocol the algorithm runs (Algorithm::protocol) where it is
  // one of these, else Simple.
  std::string protocol;
  std::string name;  // the <algo> name; default: the algorithm's name
  MscclRuntime runtime = MscclRuntime::Executor;
  // The sizes (bytes per call) the runtime may pick this algorithm for: [min_bytes, max_bytes]
  // (the legacy runtime reads max_bytes as exclusive, and never picks an algorithm with 0).
  int64_t min_bytes = 0, max_bytes = int64_t{1} << 40;
};

struct MscclImport {
  Algorithm algorithm;
  std::vector<std::string> warnings;  // attributes a runtime would want, ...
  // What makes the program incorrect in the runtime, each naming its GPU, thread block and step.
  std::vector<ImportProblem> problems;
};

// Throws tenet::Error when the collective is not supported, an endpoint is not a rank, or the
// runtime's limits would be exceeded. import_msccl_xml throws tenet::Error for a file that is not
// a program (malformed, unpaired sends, a cycle) and reports an incorrect program's problems.
std::string to_msccl_xml(const Algorithm& a, const MscclOptions& options = {});
MscclImport import_msccl_xml(std::string_view text, const topo::Topology& t,
                             const std::string& file = "<string>");
// import_msccl_xml's algorithm; throws tenet::Error when the program has problems.
Algorithm parse_msccl_xml(std::string_view text, const topo::Topology& t,
                          const std::string& file = "<string>");

}  // namespace tenet::synth
