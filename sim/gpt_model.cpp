#include "sim/gpt_model.hpp"

#include <fmt/format.h>

#include <charconv>
#include <map>
#include <sstream>
#include <string_view>

#include "topo/error.hpp"

namespace tenet::sim {

namespace {
constexpr std::string_view kPrefix = "gpt:";
bool is_gpt_spec(const std::string& spec) { return spec.rfind(kPrefix, 0) == 0; }
}  // namespace

std::optional<GptShape> parse_gpt_spec(const std::string& spec) {
  if (!is_gpt_spec(spec)) return std::nullopt;
  const std::string usage = "give gpt:layers=L,hidden=H,heads=A[,vocab=V]";
  std::map<std::string, int64_t> values;
  std::stringstream in(spec.substr(kPrefix.size()));
  for (std::string item; std::getline(in, item, ',');) {
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq);
    if (key != "layers" && key != "hidden" && key != "heads" && key != "vocab")
      throw Error(fmt::format("model '{}': unknown key '{}' ({})", spec, key, usage));
    if (values.count(key)) throw Error(fmt::format("model '{}': '{}' given twice", spec, key));
    int64_t v = 0;
    const std::string text = eq == std::string::npos ? "" : item.substr(eq + 1);
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v < 1 ||
        v > (int64_t{1} << 24))
      throw Error(fmt::format("model '{}': {} must be a whole number in [1, 2^24], not '{}'", spec,
                              key, text));
    values[key] = v;
  }
  for (const char* key : {"layers", "hidden", "heads"})
    if (!values.count(key)) throw Error(fmt::format("model '{}': no {} ({})", spec, key, usage));
  GptShape g;
  g.layers = static_cast<int>(values["layers"]);
  g.hidden = values["hidden"];
  g.heads = static_cast<int>(values["heads"]);
  if (values.count("vocab")) g.vocab = values["vocab"];
  if (g.hidden % g.heads != 0)
    throw Error(
        fmt::format("model '{}': {} heads do not divide the width {}", spec, g.heads, g.hidden));
  return g;
}

Model gpt_model(const std::string& name, const GptShape& g, int64_t batch, int64_t sequence) {
  const double h = static_cast<double>(g.hidden), s = static_cast<double>(sequence),
               a = static_cast<double>(g.heads), v = static_cast<double>(g.vocab);
  const double tokens = static_cast<double>(batch) * s;
  auto bytes = [&](double count) { return static_cast<Bytes>(count); };
  Model m{name, {}};
  m.scatter_boundaries = true;
  // Korthikanti et al.'s kept activations per token (x h bytes): 10 whole on every tensor-parallel
  // rank, 24 divided over them, and 5 a s / h of attention scores divided over them; the
  // attention block keeps 5 whole, 10 divided and the scores, the MLP block 5 whole and 14
  // divided. Written and read once each in the forward: twice the bytes.
  for (int l = 0; l < g.layers; ++l) {
    Layer attention{fmt::format("layer{}.attention", l),
                    bytes(4 * h * h * 2),
                    2 * 4 * h * h * tokens + 4 * s * h * tokens,
                    0,
                    bytes(tokens * h * 2),
                    0};
    attention.backward_flops = 2 * attention.forward_flops;
    attention.recompute_flops = attention.forward_flops;
    attention.replicated_bytes = bytes(2 * 5 * tokens * h);
    attention.elementwise_bytes = bytes(2 * (10 * tokens * h + 5 * a * s * tokens));
    Layer mlp{fmt::format("layer{}.mlp", l), bytes(8 * h * h * 2),
              2 * 8 * h * h * tokens,        0,
              bytes(tokens * h * 2),         0};
    mlp.backward_flops = 2 * mlp.forward_flops;
    mlp.recompute_flops = mlp.forward_flops;
    mlp.replicated_bytes = bytes(2 * 5 * tokens * h);
    mlp.elementwise_bytes = bytes(2 * 14 * tokens * h);
    m.layers.push_back(std::move(attention));
    m.layers.push_back(std::move(mlp));
  }
  // The word embedding's gradients, All-Reduced with the first block's; the logits (tied to it)
  // on the last stage, neither recomputed.
  m.layers.front().parameters += bytes(v * h * 2);
  m.layers.back().forward_flops += 2 * h * v * tokens;
  m.layers.back().backward_flops += 4 * h * v * tokens;
  return m;
}

double megatron_flops(const GptShape& g, double batch, double sequence) {
  const double l = g.layers, h = static_cast<double>(g.hidden), v = static_cast<double>(g.vocab);
  return 96 * batch * sequence * l * h * h * (1 + sequence / (6 * h) + v / (16 * l * h));
}

KernelEfficiency default_efficiency(const std::string& workload) {
  return is_gpt_spec(workload) ? kMegatronA100 : KernelEfficiency{};
}

void set_efficiency(SimConfig& config, const std::string& workload, double matmul, double memory) {
  const KernelEfficiency defaults = default_efficiency(workload);
  config.compute_efficiency = matmul > 0 ? matmul : defaults.matmul;
  config.memory_efficiency = memory > 0 ? memory : defaults.memory;
}

}  // namespace tenet::sim
