#include "synth/producers.hpp"

#include <fmt/format.h>

#include <optional>
#include <string>
#include <utility>

#include "synth/cache/algorithm_cache.hpp"

namespace tenet::synth {

namespace {

// Whether the synthesis is kept in options.cache: when there is one and nobody watches its steps.
bool cached(std::string_view name, const SynthOptions& options) {
  return name == "tenet" && options.cache && !options.pipelines.on_variant;
}

// Whether the searches ran whole: none stopped at options.deadline (then the result is not what
// the key names, and the cache does not keep it).
bool complete(const SynthOptions& options) {
  return !(options.deadline && options.deadline->stopped());
}

}  // namespace

Algorithm make_algorithm(std::string_view name, const topo::Topology& t, const Collective& c,
                         Bytes chunk_bytes, const SynthOptions& options) {
  if (cached(name, options)) {
    const std::string key = cache_key(name, t, c, chunk_bytes, false, 0, options);
    if (std::optional<ChunkingResult> hit = options.cache->load(
            key, t, c, {chunk_bytes, false, options.link_model, options.reduce_bandwidth}))
      return std::move(hit->algorithm);
    Algorithm a = synthesize(t, c, chunk_bytes, options);
    if (complete(options)) options.cache->store(key, a, c.chunks_per_npu);
    return a;
  }
  if (name == "tenet") return synthesize(t, c, chunk_bytes, options);
  return make_baseline(parse_baseline(name), t, c, chunk_bytes, options.link_model,
                       options.reduce_bandwidth, options.time_baselines);
}

ChunkingResult make_algorithm_auto_chunks(std::string_view name, const topo::Topology& t,
                                          const Collective& c, Bytes total_bytes,
                                          const SynthOptions& options, int max_chunks_per_npu) {
  if (cached(name, options)) {
    const std::string key = cache_key(name, t, c, total_bytes, true, max_chunks_per_npu, options);
    if (std::optional<ChunkingResult> hit = options.cache->load(
            key, t, c, {total_bytes, true, options.link_model, options.reduce_bandwidth}))
      return std::move(*hit);
    ChunkingResult r = synthesize_auto_chunks(t, c, total_bytes, options, max_chunks_per_npu);
    if (complete(options)) options.cache->store(key, r.algorithm, r.chunks_per_npu, r.tried);
    return r;
  }
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
