#include "synth/producers.hpp"

#include <fmt/format.h>

namespace tenet::synth {

Algorithm make_algorithm(std::string_view name, const topo::Topology& t, const Collective& c,
                         Bytes chunk_bytes, const SynthOptions& options) {
  if (name == "tenet") return synthesize(t, c, chunk_bytes, options);
  return make_baseline(parse_baseline(name), t, c, chunk_bytes, options.link_model,
                       options.reduce_bandwidth, options.time_baselines);
}

ChunkingResult make_algorithm_auto_chunks(std::string_view name, const topo::Topology& t,
                                          const Collective& c, Bytes total_bytes,
                                          const SynthOptions& options, int max_chunks_per_npu) {
  if (name == "tenet")
    return synthesize_auto_chunks(t, c, total_bytes, options, max_chunks_per_npu);
  const BaselineSpec spec = parse_baseline(name);
  return best_chunking(
      c, total_bytes, max_chunks_per_npu,
      [&](const Collective& cc, Bytes chunk) {
        return make_baseline(spec, t, cc, chunk, options.link_model, options.reduce_bandwidth);
      },
      1, nullptr, options.portfolio.chunk_transfers, -1, min_chunk_of(t));
}

std::string with_channels(std::string_view name, std::string_view channels) {
  if (channels.empty() || name == "tenet" || name.find(':') != std::string_view::npos)
    return std::string(name);
  if (!has_channels(parse_baseline(name).kind)) return std::string(name);
  return fmt::format("{}:{}", name, channels);
}

std::vector<std::string> algorithm_names(CollectiveKind kind) {
  std::vector<std::string> out{"tenet"};
  for (BaselineKind b : all_baselines())
    if (supports(b, kind)) out.push_back(BaselineSpec{b, {}}.name());
  return out;
}

}  // namespace tenet::synth
