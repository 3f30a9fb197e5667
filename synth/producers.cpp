#include "synth/producers.hpp"

namespace tenet::synth {

Algorithm make_algorithm(std::string_view name, const topo::Topology& t, const Collective& c, Bytes chunk_bytes,
                         const SynthOptions& options) {
  if (name == "tenet") return synthesize(t, c, chunk_bytes, options);
  return make_baseline(parse_baseline(name), t, c, chunk_bytes, options.link_model);
}

std::vector<std::string> algorithm_names(CollectiveKind kind) {
  std::vector<std::string> out{"tenet"};
  for (BaselineKind b : all_baselines())
    if (supports(b, kind)) out.push_back(BaselineSpec{b, {}}.name());
  return out;
}

}  // namespace tenet::synth
