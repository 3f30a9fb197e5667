#include "sim/workload.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "topo/error.hpp"

namespace tenet::sim {

const std::vector<std::string>& model_presets() {
  static const std::vector<std::string> names{"resnet50", "gpt3-175b"};
  return names;
}

Model model_preset(const std::string& name) {
  Model m{name, {}};
  if (name == "resnet50") {
    // 25.6 M parameters (fp32), ~4.1 GFLOP per image forward, batch 64; backward twice forward.
    const double forward = 4.1e9 * 64;
    const struct {
      const char* stage;
      double params_m, share;
    } stages[] = {{"conv1+layer1", 0.22, 0.20}, {"layer2", 1.22, 0.25}, {"layer3", 7.10, 0.35},
                  {"layer4", 14.96, 0.18}, {"fc", 2.05, 0.02}};
    for (const auto& s : stages)
      m.layers.push_back({s.stage, static_cast<Bytes>(s.params_m * 1e6 * 4), forward * s.share, 2 * forward * s.share,
                          static_cast<Bytes>(64 * 4e6 * s.share)});
    return m;
  }
  if (name == "gpt3-175b") {
    // 96 layers of 12 * 12288^2 parameters in fp16; 2048 tokens per rank; 2 FLOPs per parameter
    // per token forward, 4 backward.
    const double params = 12.0 * 12288 * 12288, tokens = 2048;
    for (int l = 0; l < 96; ++l)
      m.layers.push_back({fmt::format("layer{}", l), static_cast<Bytes>(params * 2), 2 * params * tokens,
                          4 * params * tokens, static_cast<Bytes>(tokens * 12288 * 2 * 16)});
    return m;
  }
  throw Error(fmt::format("unknown model '{}' (known: {})", name, fmt::join(model_presets(), ", ")));
}

std::vector<chakra::EtFile> data_parallel(const Model& m, int ranks) {
  if (ranks < 1) throw Error("a workload needs at least one rank");
  if (m.layers.empty()) throw Error(fmt::format("model '{}' has no layers", m.name));
  std::vector<chakra::EtFile> files(ranks);
  for (int r = 0; r < ranks; ++r) {
    auto& f = files[r];
    f.metadata.set_version("0.0.4");
    auto node = [&](ChakraProtoMsg::NodeType type, const std::string& name) -> chakra::Node& {
      chakra::Node& n = f.nodes.emplace_back();
      n.set_id(f.nodes.size() - 1);
      n.set_type(type);
      n.set_name(name);
      return n;
    };
    int64_t previous = -1;
    auto compute = [&](const std::string& name, double flops, Bytes bytes) {
      chakra::Node& n = node(ChakraProtoMsg::COMP_NODE, name);
      chakra::set_uint(n, "num_ops", static_cast<uint64_t>(flops));
      chakra::set_uint(n, "tensor_size", static_cast<uint64_t>(bytes));
      if (previous >= 0) n.add_ctrl_deps(static_cast<uint64_t>(previous));
      previous = static_cast<int64_t>(n.id());
      return n.id();
    };
    for (const Layer& l : m.layers) compute("fwd " + l.name, l.forward_flops, l.activations);
    for (auto it = m.layers.rbegin(); it != m.layers.rend(); ++it) {
      const uint64_t bwd = compute("bwd " + it->name, it->backward_flops, it->activations);
      if (ranks < 2) continue;
      chakra::Node& ar = node(ChakraProtoMsg::COMM_COLL_NODE, "all-reduce " + it->name);
      ar.add_data_deps(bwd);
      chakra::set_uint(ar, "comm_type", ChakraProtoMsg::ALL_REDUCE);
      chakra::set_uint(ar, "comm_size", static_cast<uint64_t>(it->parameters));
    }
  }
  return files;
}

}  // namespace tenet::sim
