// What an importer of another tool's program (MSCCL-XML, Chakra collective graphs) found wrong in
// it: the file is well formed and loads, but the program it describes would not compute its
// collective in the runtime that runs it. Each names the place (rank, and for MSCCL-XML the
// thread block and step; for Chakra the node id) and says why; `tenet verify` reports each as a
// violation (synth::add_import_problems), so the program is INCORRECT rather than a bad input.
#pragma once

#include <cstdint>
#include <string>

namespace tenet::synth {

enum class ImportProblemKind : uint8_t {
  SlotWrong,       // an output slot ends holding another chunk, an incomplete reduction or nothing;
                   // a step reads a slot that holds no data at that point
  ReduceMismatch,  // a reduction combines two different chunks (a partial sum lands in the wrong
                   // chunk)
  DoubleCount,     // a reduction counts some rank's contribution twice
  Unordered,       // an access not ordered after a conflicting one: thread blocks of a GPU racing
                   // on a slot, a send not waiting for the receive that brought its data
  OutOfBounds,     // a buffer access past the size the GPU declares for that buffer
  Unpaired,    // a send no receive matches, or a receive no send matches (a Chakra graph's peers,
               // tags and sizes; an MSCCL channel's k-th send and receive, and their cnt): the
               // message never lands
  NeverReady,  // a node or step whose dependencies never all complete (one on a node not in its
               // file, a cycle through dependencies and pairings, or an unpaired receive before
               // it): the runtime hangs
};

struct ImportProblem {
  ImportProblemKind kind;
  int rank = -1;      // the GPU (rank of the communicator)
  int block = -1;     // MSCCL-XML: the thread block; -1 otherwise
  int64_t step = -1;  // MSCCL-XML: the step within its thread block; Chakra: the node id
  std::string message;
};

}  // namespace tenet::synth
