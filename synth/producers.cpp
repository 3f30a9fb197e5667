#include "synth/producers.hpp"

#include <fmt/format.h>

#include <optional>
#include <string>
#include <utility>

#include "synth/cache/algorithm_cache.hpp"
#include "synth/cost/protocol_view.hpp"
#include "synth/cost/timing.hpp"
#include "synth/memo.hpp"

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

Algorithm& algorithm_of(Algorithm& a) { return a; }
Algorithm& algorithm_of(ChunkingResult& r) { return r.algorithm; }

// `make(t)` where `t` lists no protocols or charges no steps (protocols differ in their steps and
// their share of the links; without steps the full share always wins); else `make` on `t` under
// every protocol `name` may run, the fastest kept and marked as running its protocol (the first
// listed among equals). Throws NotApplicable when no protocol made one, with the last reason.
template <typename Result, typename Make>
Result fastest_protocol(std::string_view name, const topo::Topology& t, const Make& make) {
  if (t.protocols().empty() || !t.charges_steps() || t.applied()) return make(t);
  std::optional<Result> best;
  Time best_time = 0;
  std::string why = fmt::format("'{}' runs none of the protocols of topology '{}'", name, t.name());
  for (const topo::Protocol& p : t.protocols()) {
    if (p.excludes_producer(name)) continue;
    const topo::Topology under = t.under(p);
    try {
      Result r = make(under);
      Algorithm& a = algorithm_of(r);
      const Time time = collective_time(under, a);
      mark_protocol(a, t, p);
      if (!best || time < best_time) {
        best = std::move(r);
        best_time = time;
      }
    } catch (const NotApplicable& e) {
      why = e.message();
    }
  }
  if (!best) throw NotApplicable(why);
  return std::move(*best);
}

Algorithm make_on(std::string_view name, const topo::Topology& t, const Collective& c,
                  Bytes chunk_bytes, const SynthOptions& options);
ChunkingResult make_auto_on(std::string_view name, const topo::Topology& t, const Collective& c,
                            Bytes total_bytes, const SynthOptions& options, int max_chunks_per_npu);

}  // namespace

Algorithm make_algorithm(std::string_view name, const topo::Topology& t, const Collective& c,
                         Bytes chunk_bytes, const SynthOptions& options) {
  return fastest_protocol<Algorithm>(
      name, t, [&](const topo::Topology& u) { return make_on(name, u, c, chunk_bytes, options); });
}

ChunkingResult make_algorithm_auto_chunks(std::string_view name, const topo::Topology& t,
                                          const Collective& c, Bytes total_bytes,
                                          const SynthOptions& options, int max_chunks_per_npu) {
  return fastest_protocol<ChunkingResult>(name, t, [&](const topo::Topology& u) {
    return make_auto_on(name, u, c, total_bytes, options, max_chunks_per_npu);
  });
}

namespace {

Algorithm make_on(std::string_view name, const topo::Topology& t, const Collective& c,
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
                       options.reduce_bandwidth, options.time_baselines, baselines_of(options));
}

ChunkingResult make_auto_on(std::string_view name, const topo::Topology& t, const Collective& c,
                            Bytes total_bytes, const SynthOptions& options,
                            int max_chunks_per_npu) {
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
        return make_baseline(spec, t, cc, chunk, options.link_model, options.reduce_bandwidth, true,
                             baselines_of(options));
      },
      1, nullptr, options.portfolio.chunk_transfers, -1, min_chunk_of(t));
}

}  // namespace

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
