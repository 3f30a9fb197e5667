#include "synth/synthesizer.hpp"

#include <fmt/format.h>

#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "synth/auto/portfolio.hpp"
#include "synth/groups/composed.hpp"
#include "synth/groups/composed_synthesis.hpp"
#include "synth/groups/group_map.hpp"
#include "synth/groups/relay_synthesis.hpp"
#include "synth/memo.hpp"
#include "synth/plans/pipeline_calibration.hpp"
#include "topo/error.hpp"
#include "topo/parallel.hpp"

namespace tenet::synth {

using namespace detail;

int64_t transfer_estimate(const Collective& c) {
  if (one_destination(c.kind)) return c.num_chunks();  // relays add their hops
  return c.num_chunks() * static_cast<int64_t>(c.num_ranks() - 1) *
         (c.kind == CollectiveKind::AllReduce ? 2 : 1);
}

Collective composed_collective(const topo::Topology& t, Collective c) {
  if (c.all_reduce_chunks > 0) return c;
  if (const auto servers = composed_servers(t, c)) {
    c.all_reduce_chunks = static_cast<int>(servers->front().size()) * c.chunks_per_npu;
    c.chunks_per_npu = 1;
  }
  return c;
}

namespace detail {
bool flat_out_of_reach(Collective c) {
  c.chunks_per_npu = 1;
  c.all_reduce_chunks = 0;
  return transfer_estimate(c) > kFlatTransferCap;
}
}  // namespace detail

Collective as_synthesized(const topo::Topology& t, const Collective& c, const SynthOptions& o) {
  if (c.kind != CollectiveKind::AllReduce) return c;
  if (o.method == SynthMethod::Composed || (o.method == SynthMethod::Auto && flat_out_of_reach(c)))
    return composed_collective(t, c);
  return c;
}

std::string_view to_string(SynthMethod m) {
  switch (m) {
    case SynthMethod::Auto:
      return "auto";
    case SynthMethod::Matcher:
      return "matcher";
    case SynthMethod::PlanMatcher:
      return "plan-matcher";
    case SynthMethod::PlanPipeline:
      return "plan-pipeline";
    case SynthMethod::ServerPlan:
      return "server-plan";
    case SynthMethod::Composed:
      return "composed";
    case SynthMethod::Symmetric:
      return "symmetric";
  }
  return "?";
}

SynthMethod parse_synth_method(std::string_view name) {
  for (SynthMethod m : {SynthMethod::Auto, SynthMethod::Matcher, SynthMethod::PlanMatcher,
                        SynthMethod::PlanPipeline, SynthMethod::ServerPlan, SynthMethod::Composed,
                        SynthMethod::Symmetric})
    if (to_string(m) == name) return m;
  throw Error(
      fmt::format("unknown method '{}' (auto, matcher, plan-matcher, plan-pipeline, server-plan, "
                  "composed or symmetric)",
                  name));
}

std::string_view to_string(ChunkPriority p) {
  switch (p) {
    case ChunkPriority::Scarce:
      return "scarce";
    case ChunkPriority::Rarest:
      return "rarest";
    case ChunkPriority::Random:
      return "random";
    case ChunkPriority::Lowest:
      return "lowest";
  }
  return "?";
}

ChunkPriority parse_chunk_priority(std::string_view name) {
  for (ChunkPriority p :
       {ChunkPriority::Scarce, ChunkPriority::Rarest, ChunkPriority::Random, ChunkPriority::Lowest})
    if (to_string(p) == name) return p;
  throw Error(fmt::format("unknown chunk priority '{}' (scarce, rarest, random or lowest)", name));
}

namespace {

// What one seed reports to the caller while it runs (the portfolio's plans and matcher runs, the
// pipeline variants' times, floors and timings, the pipelines' calibration, whether its answer
// claims a floor or a prediction), kept apart while the seeds run at once: the caller's are not
// shared between threads.
struct SeedReports {
  std::vector<std::tuple<SynthMethod, Time, bool>> plans;
  std::vector<std::pair<MatcherRun, Time>> matchers;
  std::vector<std::pair<int, Time>> variants, floors, timed;
  std::optional<PipelineCalibration> calibration;
  bool floored = false, predicted = false;

  // `o` reporting here instead of to its caller.
  void redirect(const SynthOptions& caller, SynthOptions& o) {
    if (caller.portfolio.on_plan)
      o.portfolio.on_plan = [this](SynthMethod m, Time time, bool p) {
        plans.emplace_back(m, time, p);
      };
    if (caller.portfolio.on_matcher)
      o.portfolio.on_matcher = [this](MatcherRun run, Time time) {
        matchers.emplace_back(run, time);
      };
    if (caller.pipelines.on_variant)
      o.pipelines.on_variant = [this](int v, Time time) { variants.emplace_back(v, time); };
    if (caller.pipelines.on_floor)
      o.pipelines.on_floor = [this](int v, Time floor) { floors.emplace_back(v, floor); };
    if (caller.pipelines.on_timed)
      o.pipelines.on_timed = [this](int v, Time time) { timed.emplace_back(v, time); };
    if (caller.pipelines.calibration) {
      calibration = *caller.pipelines.calibration;
      o.pipelines.calibration = &*calibration;
    }
    if (caller.floored) o.floored = &floored;
    if (caller.predicted) o.predicted = &predicted;
  }
  // Hands them on to the caller, in the order they came.
  void replay(const SynthOptions& caller) const {
    for (const auto& [m, time, p] : plans) caller.portfolio.on_plan(m, time, p);
    for (const auto& [run, time] : matchers) caller.portfolio.on_matcher(run, time);
    for (const auto& [v, time] : variants) caller.pipelines.on_variant(v, time);
    for (const auto& [v, floor] : floors) caller.pipelines.on_floor(v, floor);
    for (const auto& [v, time] : timed) caller.pipelines.on_timed(v, time);
    if (calibration) *caller.pipelines.calibration = *calibration;
    if (caller.floored && floored) *caller.floored = true;
    if (caller.predicted && predicted) *caller.predicted = true;
  }
};

// Seeds seed, seed+1, ... on all cores, the fastest kept, and only its reports handed on (as one
// run of it would have made them).
Made<Algorithm> synthesize_restarts(const topo::Topology& t, const Collective& c, Bytes chunk_bytes,
                                    const SynthOptions& o) {
  // Seeds seed .. seed+K-1 on all cores; the fastest wins, ties to the lowest seed.
  const int k = o.restarts;
  std::vector<std::optional<Made<Algorithm>>> results(k);
  std::vector<SeedReports> reports(k);
  parallel_for(k, cores(), [&](int i) {
    SynthOptions mine = o;
    mine.seed = o.seed + static_cast<uint64_t>(i);
    mine.progress = nullptr;
    reports[i].redirect(o, mine);
    results[i] = synthesize_once(t, c, chunk_bytes, mine);
  });
  // A seed that made nothing says why (the first, by seed).
  for (std::optional<Made<Algorithm>>& r : results)
    if (std::holds_alternative<NotMade>(*r)) return std::move(*r);
  auto time_of = [&](int i) { return std::get<Algorithm>(*results[i]).claimed_time; };
  int best = 0;
  for (int i = 1; i < k; ++i)
    if (time_of(i) < time_of(best)) best = i;
  reports[best].replay(o);
  if (o.progress) o.progress(1.0);
  return std::move(*results[best]);
}

}  // namespace

Algorithm synthesize(const topo::Topology& t, const Collective& c, Bytes chunk_bytes,
                     const SynthOptions& o) {
  Made<Algorithm> a = try_synthesize(t, c, chunk_bytes, o);
  if (const NotMade* why = std::get_if<NotMade>(&a)) throw NotApplicable(why->why);
  return std::move(std::get<Algorithm>(a));
}

Made<Algorithm> try_synthesize(const topo::Topology& t, const Collective& c, Bytes chunk_bytes,
                               const SynthOptions& o) {
  if (!o.memo) {  // the run's own, for as long as it lasts
    SynthMemo memo;
    SynthOptions with = o;
    with.memo = &memo;
    return try_synthesize(t, c, chunk_bytes, with);
  }
  c.validate(t);
  if (chunk_bytes < 1) throw Error("chunk size must be at least 1 byte");
  if (o.restarts < 1) throw Error("restarts must be at least 1");
  if (o.method == SynthMethod::Composed || c.all_reduce_chunks > 0)
    return synthesize_composed(t, c, chunk_bytes, o);
  // A group with idle server mates: the team relay first; near the bound it is the answer (the
  // matcher's work for a large group grows with the whole cluster).
  std::optional<Algorithm> relayed;
  if (o.method == SynthMethod::Auto && o.portfolio.team_relay && c.num_ranks() < t.num_npus()) {
    relayed = relay_synthesize(t, c, chunk_bytes, o);
    if (relayed && relay_enough(t, *relayed, bounds_of(o))) return std::move(*relayed);
  }
  // A group in a much larger cluster works in its part of it (synth/groups/group_map.hpp).
  if (const std::optional<GroupPart> part = group_part(t, c)) {
    SynthOptions inner = o;
    inner.portfolio.team_relay = false;  // the part has no idle mates
    Made<Algorithm> in_part = try_synthesize(part->topology, part->collective, chunk_bytes, inner);
    if (std::holds_alternative<NotMade>(in_part)) return in_part;
    Algorithm best = part->lift(std::move(std::get<Algorithm>(in_part)), t, c.ranks);
    if (relayed && relayed->claimed_time < best.claimed_time) best = std::move(*relayed);
    return best;
  }
  Made<Algorithm> made_here = o.restarts == 1 ? synthesize_once(t, c, chunk_bytes, o)
                                              : synthesize_restarts(t, c, chunk_bytes, o);
  if (std::holds_alternative<NotMade>(made_here)) return made_here;
  Algorithm best = std::move(std::get<Algorithm>(made_here));
  if (relayed && relayed->claimed_time < best.claimed_time) best = std::move(*relayed);
  if (o.method == SynthMethod::Auto && o.portfolio.baselines &&
      portfolio_worth_it(t, c, chunk_bytes, best, bounds_of(o)))
    for_each_baseline(t, c, [&](const BaselineSpec& spec) {
      ChunkMade m = baseline_to_beat(spec, t, c, chunk_bytes, o, best.claimed_time);
      if (Algorithm* a = std::get_if<Algorithm>(&m)) keep_if_faster(best, std::move(*a), spec);
    });
  return best;
}

}  // namespace tenet::synth
