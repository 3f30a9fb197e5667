// Megatron-LM's GPT as its authors count it (Narayanan et al., "Efficient Large-Scale Language
// Model Training on GPU Clusters Using Megatron-LM", SC'21; arXiv 2104.04473): `layers`
// transformer layers of width h with `heads` attention heads, a vocabulary of V, sequences of s
// tokens, fp16 weights and activations, every layer's activations recomputed in the backward pass.
//
// Per layer and sequence:
// - matmul FLOPs, forward: 24 s h^2 (QKV 6, the projection 2, the MLP 16) + 4 s^2 h (scores and
//   their product with V); the backward pass twice that, and the recomputation once more; the
//   logits 2 s h V forward and 4 s h V backward (not recomputed). Their sum over a batch of B is
//   the paper's eq. (3), 96 B s l h^2 (1 + s / 6h + V / 16lh), which `megatron_flops` computes.
// - elementwise kernels (layer norms, softmax, dropout, GeLU, residual adds), memory-bound: each
//   activation the layer keeps for its backward is written once and read once in the forward
//   (Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models", 2022,
//   eq. (2): s h (10 + 24/t + 5 a s / h t) bytes per layer at tensor parallelism t, of which 10 s h
//   every tensor-parallel rank keeps whole); the backward twice that traffic.
// - tensor parallelism (§2.3): the attention block and the MLP block each end their forward with
//   an All-Reduce of the block's output (2 s h bytes) over the tensor-parallel group, and begin
//   their backward with one of its gradient; the recomputation repeats the forward's.
// - pipeline boundaries go scattered (§4.1): each tensor-parallel rank sends 1/t of the boundary
//   over its own link, and the receiving stage All-Gathers it over its NVLink.
// A layer here is one block (attention or MLP), so a model of l layers has 2l; the embedding's
// V h parameters are All-Reduced with the first block's gradients.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "sim/system.hpp"
#include "sim/workload.hpp"

namespace tenet::sim {

struct GptShape {
  int layers = 0;
  int64_t hidden = 0;
  int heads = 0;
  int64_t vocab = 51200;
};

// "gpt:layers=24,hidden=2304,heads=24" (and optionally ",vocab=51200"): nothing when `spec` does
// not begin with "gpt:"; throws tenet::Error naming the key for a malformed one (an unknown or
// missing key, a value that is not a positive integer, a width the heads do not divide).
std::optional<GptShape> parse_gpt_spec(const std::string& spec);

// The model for `batch` sequences of `sequence` tokens per replica and iteration.
Model gpt_model(const std::string& name, const GptShape& g, int64_t batch, int64_t sequence);

// The paper's eq. (3): the FLOPs of one iteration over a global batch of `batch` sequences.
double megatron_flops(const GptShape& g, double batch, double sequence);

// The shares of the peak FLOP/s and of the memory bandwidth a workload's matmuls and elementwise
// kernels run at unless given (SimConfig::compute_efficiency, memory_efficiency). A gpt: model's
// are Megatron-LM's on A100s, calibrated on the 1.7B and 1T rows of the paper's Table 1 (the
// other rows as predicted: docs/simulation.md); every other workload's are 1, the peak and the
// whole bandwidth, as ASTRA-sim's roofline.
struct KernelEfficiency {
  double matmul = 1, memory = 1;
};
inline constexpr KernelEfficiency kMegatronA100{0.689, 0.784};
KernelEfficiency default_efficiency(const std::string& workload);
// Sets `config`'s compute and memory efficiency: `matmul` and `memory` where given (over 0), the
// workload's defaults otherwise (as tenet sim, the API and the bench take them).
void set_efficiency(SimConfig& config, const std::string& workload, double matmul = 0,
                    double memory = 0);

}  // namespace tenet::sim
