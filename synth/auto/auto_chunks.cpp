// synthesize_auto_chunks (synth/synthesizer.hpp): the flat chunk search (chunk_search.hpp), and the
// composition per level (composed_search.hpp) in its place on clusters of servers too large for it,
// or beside it where it ends short of the bound.
#include <utility>
#include <variant>

#include "synth/auto/chunk_search.hpp"
#include "synth/auto/composed_search.hpp"
#include "synth/auto/portfolio.hpp"
#include "synth/auto/size_history.hpp"
#include "synth/groups/composed.hpp"
#include "synth/memo.hpp"
#include "synth/plans/full_rate_drain.hpp"
#include "synth/synthesizer.hpp"
#include "synth/tuning.hpp"

namespace tenet::synth {

using namespace detail;

ChunkingResult synthesize_auto_chunks(const topo::Topology& t, Collective c, Bytes total_bytes,
                                      const SynthOptions& o, int max_chunks_per_npu) {
  Made<ChunkingResult> r =
      try_synthesize_auto_chunks(t, std::move(c), total_bytes, o, max_chunks_per_npu);
  if (const NotMade* why = std::get_if<NotMade>(&r)) throw NotApplicable(why->why);
  return std::move(std::get<ChunkingResult>(r));
}

namespace {

Made<ChunkingResult> searched(const topo::Topology& t, Collective c, Bytes total_bytes,
                              const SynthOptions& o, int max_chunks_per_npu) {
  if (!o.memo) {  // the search's own, for as long as it lasts
    SynthMemo memo;
    SynthOptions with = o;
    with.memo = &memo;
    return searched(t, std::move(c), total_bytes, with, max_chunks_per_npu);
  }
  const bool servers = composed_servers(t, c).has_value();
  if (o.method == SynthMethod::Composed ||
      (o.method == SynthMethod::Auto && servers && flat_out_of_reach(c)))
    return composed_auto_chunks(t, c, total_bytes, o, max_chunks_per_npu);  // says why where none
  Made<ChunkingResult> flat = flat_auto_chunks(t, c, total_bytes, o, max_chunks_per_npu);
  if (std::holds_alternative<NotMade>(flat)) return flat;
  ChunkingResult& best = std::get<ChunkingResult>(flat);
  // Where the flat search ends short of the bound (a cluster too large for more than one chunk
  // per NPU), the composition may do better.
  // (Not where it lost by far at a size near this one: PortfolioOptions::across_sizes.)
  const bool learn = learns_across_sizes(o);
  const Way composition = Way::of(SynthMethod::Composed);
  if (o.method == SynthMethod::Auto && servers && c.all_reduce_chunks == 0 &&
      !within_bound(t, best.algorithm, kComposeAbove, bounds_of(o)) &&
      !(o.deadline && o.deadline->reached()) &&
      !(learn && o.memo->sizes.loses(t, c, total_bytes, composition))) {
    Made<ChunkingResult> made_composed =
        composed_auto_chunks(t, c, total_bytes, o, max_chunks_per_npu, best.algorithm.claimed_time);
    if (ChunkingResult* composed = made(made_composed)) {
      const Time composed_time = composed->algorithm.claimed_time;
      best.tried.insert(best.tried.end(), composed->tried.begin(), composed->tried.end());
      if (composed_time < best.algorithm.claimed_time) {
        best.algorithm = std::move(composed->algorithm);
        best.chunks_per_npu = composed->chunks_per_npu;
      }
      if (learn)
        o.memo->sizes.record(t, c, total_bytes, {{composition, composed_time}},
                             best.algorithm.claimed_time);
    }
  }
  return flat;
}

}  // namespace

Made<ChunkingResult> try_synthesize_auto_chunks(const topo::Topology& t, Collective c,
                                                Bytes total_bytes, const SynthOptions& o,
                                                int max_chunks_per_npu) {
  Made<ChunkingResult> r = searched(t, std::move(c), total_bytes, o, max_chunks_per_npu);
  // The answer's drain at full rate, once, on whatever way won (each try a timing of it).
  if (ChunkingResult* best = made(r); best && o.portfolio.full_rate_drain)
    drain_at_full_rate(t, best->algorithm, o.deadline);
  return r;
}

}  // namespace tenet::synth
