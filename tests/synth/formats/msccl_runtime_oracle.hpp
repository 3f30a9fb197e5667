// An independent model of what the MSCCL runtime orders, for tests: it says whether a mutant of a
// program still runs race-free, so that a test counts as killed only the mutants that are wrong,
// and checks that the others are accepted. Brute force (a transitive closure), for small programs.
//
// The runtime (Azure/msccl-executor-nccl src/device/msccl_kernel.cu, mscclRunInterpreter; the same
// in microsoft/msccl src/collectives/device/msccl_interpreter.h): thread blocks of a GPU run
// concurrently; a step follows the previous step of its thread block and its depid/deps step, and
// a receive follows its matching send (the k-th send a->b on a channel with the k-th receive of
// b from a there). Each step type touches its own GPU's slots as RuntimeEffect says.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tenet::synth::testing {

// Which of its own GPU's slots a step type reads and writes (the runtime's prims calls).
struct RuntimeEffect {
  bool receives = false, sends = false, reads_src = false, reads_dst = false, writes_dst = false;
};
RuntimeEffect runtime_effect(const std::string& type);

struct OracleStep {
  int gpu, tb, s;
  std::string type;
  char srcbuf, dstbuf;
  int srcoff, dstoff, cnt, depid, deps;
};

class MscclOracle {
 public:
  explicit MscclOracle(const std::string& xml);

  const std::vector<OracleStep>& steps() const { return steps_; }
  // Step index of (gpu, tb, s), or -1.
  int find(int gpu, int tb, int s) const;
  // Whether the runtime completes step a before step b starts.
  bool ordered(size_t a, size_t b) const;
  // Whether a writes a slot b reads (both on one GPU).
  bool feeds(size_t a, size_t b) const;
  // Every pair of steps of a GPU that access a slot, one of them writing it, with nothing ordering
  // them, as "gpu g: tb t step s / tb t' step s' on i[3]".
  std::vector<std::string> races() const;

 private:
  struct Access {
    size_t step;
    char buf;
    int off;
    bool write;
  };
  std::vector<Access> accesses_of(size_t i) const;

  std::vector<OracleStep> steps_;
  bool in_place_ = false;
  std::string coll_;
  int k_ = 1;                                 // chunks per GPU (All-Gather, Reduce-Scatter)
  std::vector<std::vector<uint64_t>> reach_;  // per step, the steps ordered before it (bits)
};

}  // namespace tenet::synth::testing
