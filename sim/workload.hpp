// Workload generators: Chakra ET training iterations of a model description, data x tensor x
// pipeline parallel.
//
// Ranks are laid out tensor-parallel innermost: rank = t + TP * (p + PP * d) for tensor index t,
// pipeline stage p and data-parallel replica d. The layers split into PP contiguous stages. Each
// micro-batch runs forward through a stage's layers (compute divided by TP, then an All-Reduce of
// the layer's activations over the TP group), is sent to the next stage, and later runs backward
// the same way in reverse, sending activation gradients back; a receive is posted after the
// compute before it (a rank's communication counts from then). GPipe runs every forward, then every
// backward; 1F1B runs PP - p - 1 forwards, then alternates one forward and one backward. After a
// layer's last backward, its gradients (parameters / TP) are All-Reduced over the DP group. Compute
// nodes carry num_ops and tensor_size (the simulator's roofline turns them into time);
// collectives carry their group in `tenet_ranks`. With TP = PP = 1 this is plain data parallelism:
// each layer's gradient All-Reduce overlaps the backward of the layers before it.
#pragma once

#include <string>
#include <vector>

#include "chakra/et.hpp"
#include "synth/ir/collective.hpp"
#include "topo/units.hpp"

namespace tenet::sim {

struct Layer {
  std::string name;
  Bytes parameters = 0;      // gradient bytes to All-Reduce
  double forward_flops = 0;  // per replica per iteration
  double backward_flops = 0;
  Bytes activations = 0;  // the layer's output per replica per iteration
  // Bytes each rank sends every other rank in an All-to-All after this layer's forward (and
  // before its backward), e.g. embedding lookups; 0 for none.
  Bytes all_to_all = 0;
  // How uneven that All-to-All is: empty for even, else a generator of synth/traffic.hpp (zipf:S,
  // hot:K) that Tenet's simulator deals each rank's bytes by (the collective's `tenet_traffic`
  // attribute; ASTRA-sim, which has no All-to-Allv, runs it even).
  std::string traffic = {};
  // Forward FLOPs run again just before the layer's backward (activation recomputation, with the
  // forward's tensor-parallel All-Reduce); 0: none.
  double recompute_flops = 0;
  // Bytes the layer's memory-bound (elementwise) kernels move in its forward, per replica and
  // iteration: `elementwise_bytes` divides over the tensor-parallel ranks, `replicated_bytes` each
  // of them moves whole. A COMP node of their own after the matmuls, with no operations (the
  // roofline's memory term); the backward moves twice as much, a recomputation as much again.
  Bytes elementwise_bytes = 0, replicated_bytes = 0;
};

struct Model {
  std::string name;
  std::vector<Layer> layers;
  // Pipeline boundaries go scattered over the tensor-parallel ranks (Megatron-LM's scatter/gather,
  // sim/gpt_model.hpp): each sends 1/TP of the boundary and the receiving stage All-Gathers it.
  // false: every tensor-parallel rank sends the whole boundary.
  bool scatter_boundaries = false;
};

// "resnet50" (25.6 M parameters in fp32, batch 64 per replica, grouped in 5 stages), "gpt3-175b"
// (96 transformer layers of 1.8 G fp16 parameters, 2048 tokens per replica), "transformer-1t"
// (128 layers of 7.9 G parameters), "dlrm" (MLPs plus embedding tables exchanged by All-to-All)
// and "moe-gpt" (24 layers of width 2048 whose feed-forward is a top-2 mixture of experts: every
// layer's dispatch and combine ride one All-to-All over every rank after its forward and one
// before its backward, skewed as Zipf(1.2); DeepSpeed-MoE's GPT 1.3B base). Approximate: published
// parameter counts and the 2/4 FLOPs-per-parameter-per-token rule, not a profile.
const std::vector<std::string>& model_presets();
// Whether `name` is a preset: one of model_presets(), or a Megatron-LM GPT of the user's shape
// ("gpt:layers=24,hidden=2304,heads=24", sim/gpt_model.hpp; throws tenet::Error for a malformed
// one).
bool is_model_preset(const std::string& name);

// A preset's per-replica work: `batch` samples (images, sequences, queries) per data-parallel
// replica and iteration, of `sequence` tokens each (transformers only). 0: the preset's own
// (resnet50 64, dlrm 2048, transformers 1 sequence of 2048 tokens per micro-batch).
struct BatchShape {
  int64_t batch = 0;
  int64_t sequence = 0;
};
// The shape `preset` runs with for `asked` (defaults filled in) in `microbatches` micro-batches of
// whole samples; throws tenet::Error for a sequence length on a model without sequences, values
// out of [1, 2^24], or a batch that does not split into the micro-batches (naming a batch that
// does).
BatchShape batch_shape(const std::string& preset, BatchShape asked, int microbatches = 1);
// "batch 64 per replica x 8 replicas = 512 images per iteration (micro-batch 16)".
// `shape` as batch_shape fills it in for `microbatches`.
std::string describe_batch(const std::string& preset, BatchShape shape, int dp, int microbatches);

Model model_preset(const std::string& name, BatchShape shape = {});

enum class PipelineSchedule { GPipe, OneFOneB };

struct Parallelism {
  int dp = 1, tp = 1, pp = 1;
  int microbatches = 1;
  PipelineSchedule schedule = PipelineSchedule::OneFOneB;
  // Only the first data-parallel replica's files (ranks 0 .. TP x PP - 1), its data-parallel
  // collectives still naming every replica's rank: what SimConfig::workload_ranks simulates.
  bool first_replica_only = false;
  int ranks() const { return dp * tp * pp; }
  // The ranks that get a file.
  int files() const { return first_replica_only ? tp * pp : ranks(); }
};

// "gpipe" or "1f1b"; throws tenet::Error naming both otherwise.
PipelineSchedule parse_schedule(const std::string& name);
// Tensor and pipeline degrees as given, data parallel over what is left of `npus`; throws
// tenet::Error when `npus` does not split into TP x PP groups.
Parallelism layout(int npus, int tp, int pp, int microbatches, PipelineSchedule schedule);

// Throws tenet::Error when PP exceeds the layers or a count is below 1.
std::vector<chakra::EtFile> training_iteration(const Model& m, const Parallelism& par);
// One collective on every rank, as ASTRA-sim's microbenchmark workloads are: a single COMM_COLL
// node per rank (comm_type, comm_size in Chakra's convention: each rank's input, `size` / ranks for
// All-Gather and Gather, `size` for the others; is_cpu_op false, root for the rooted collectives),
// usable by `tenet sim` and ASTRA-sim alike. `size` is in NCCL's convention (the All-Gather's
// output); throws tenet::Error when an All-Gather or Gather of `size` does not split over `ranks`.
std::vector<chakra::EtFile> collective_microbenchmark(synth::CollectiveKind kind, Bytes size,
                                                      int ranks, int root = 0);

// A preset's training iteration laid out over `npus` NPUs (layout, batch_shape, model_preset,
// training_iteration), and its name as `tenet sim` prints it: "resnet50 (dp 16 x tp 1 x pp 1, 1
// micro-batch, 1f1b; batch 64 per replica ...)".
struct PresetIteration {
  std::vector<chakra::EtFile> files;
  std::string name;
};
// `first_replica_only`: Parallelism::first_replica_only.
PresetIteration preset_iteration(const std::string& preset, int npus, int tp, int pp,
                                 int microbatches, const std::string& schedule,
                                 BatchShape asked = {}, bool first_replica_only = false);

inline std::vector<chakra::EtFile> data_parallel(const Model& m, int ranks) {
  return training_iteration(m, Parallelism{ranks, 1, 1, 1, PipelineSchedule::OneFOneB});
}

}  // namespace tenet::sim
