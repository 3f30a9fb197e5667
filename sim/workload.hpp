// Workload generators: Chakra ET training iterations of a model description.
//
// Data parallel (this version): every rank runs the whole model; forward through the layers,
// backward in reverse, and after each layer's backward an All-Reduce of its gradients (so the
// All-Reduce of layer L overlaps the backward of the layers before it). Compute nodes carry
// num_ops and tensor_size (the simulator's roofline turns them into time).
// Tensor, pipeline and hybrid parallelism are not generated yet.
#pragma once

#include <string>
#include <vector>

#include "chakra/et.hpp"
#include "topo/units.hpp"

namespace tenet::sim {

struct Layer {
  std::string name;
  Bytes parameters = 0;       // gradient bytes to All-Reduce
  double forward_flops = 0;   // per rank per iteration
  double backward_flops = 0;
  Bytes activations = 0;      // bytes a compute step touches
};

struct Model {
  std::string name;
  std::vector<Layer> layers;
};

// "resnet50" (25.6 M parameters in fp32, batch 64 per rank, grouped in 5 stages) and "gpt3-175b"
// (96 transformer layers of 1.8 G fp16 parameters, 2048 tokens per rank). Approximate: they
// carry the published parameter counts and the 2/4 FLOPs-per-parameter-per-token rule, not a
// profile.
const std::vector<std::string>& model_presets();
Model model_preset(const std::string& name);

std::vector<chakra::EtFile> data_parallel(const Model& m, int ranks);

}  // namespace tenet::sim
