// The flat chunk search (chunk_search.hpp): what `auto` makes at each chunk count over the whole
// topology, the relays first; the count search itself is count_search.cpp, the entry that puts the
// composition per level beside it auto_chunks.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "synth/auto/chunk_search.hpp"
#include "synth/auto/count_leave_outs.hpp"
#include "synth/auto/log_steps_answer.hpp"
#include "synth/auto/matcher_doubling.hpp"
#include "synth/auto/pipeline_doubling.hpp"
#include "synth/auto/portfolio.hpp"
#include "synth/auto/size_history.hpp"
#include "synth/bounds/lower_bound.hpp"
#include "synth/cost/timing.hpp"
#include "synth/groups/relay_synthesis.hpp"
#include "synth/groups/team_relay.hpp"
#include "synth/memo.hpp"
#include "synth/plans/all_reduce.hpp"
#include "synth/plans/pipeline_calibration.hpp"
#include "synth/plans/pipeline_variants.hpp"
#include "synth/plans/server_plan.hpp"
#include "synth/synthesizer.hpp"
#include "synth/tuning.hpp"
#include "topo/limits.hpp"
#include "topo/parallel.hpp"

namespace tenet::synth {

using namespace detail;

namespace {

// What a synthesis made, as the chunk search takes it.
ChunkMade as_chunk_made(Made<Algorithm> m) {
  if (Algorithm* a = made(m)) return std::move(*a);
  return std::get<NotMade>(std::move(m));
}

// The flat chunk search's parts (flat_auto_chunks), sharing its inputs.
class FlatSearch {
 public:
  FlatSearch(const topo::Topology& t, const Collective& c, Bytes total_bytes, const SynthOptions& o,
             int max_chunks_per_npu)
      : t_(t),
        o_(o),
        quiet_(o),
        total_bytes_(total_bytes),
        max_chunks_per_npu_(max_chunks_per_npu),
        budget_(o.portfolio.chunk_transfers),
        leave_outs_(t, o) {
    quiet_.progress = nullptr;
    quiet_.portfolio.baselines =
        false;  // each baseline gets its own chunk search (race_baselines), the one benchmarks run
    quiet_.pipelines.split = false;  // the pipelines' own doubling (double_plans) tries them
    quiet_.portfolio.rival_first = nullptr;  // (this search's own: run asks it)
    // (Each variant's made time against its prediction, over every count this search makes: its
    // own, not a caller's, whose collective may be another.)
    quiet_.pipelines.calibration = &calibration_;
    // Every search stops at the first count within kChunkSearchSlack of the bound (each doubling
    // costs twice the last). Routed collectives stop already within kRoutedEnough: every count
    // costs them two routings of every chunk (the matcher's and the flow ways), on mixed speeds
    // four.
    const bool routed = one_destination(c.kind);
    const bool in_network = std::any_of(t.nodes().begin(), t.nodes().end(),
                                        [](const topo::Node& v) { return v.can_reduce; });
    // (Within it of the lower bound itself too, whose per-step costs the thresholds' figure leaves
    // out. An All-Reduce in waves is no Reduce-Scatter then All-Gather: the bound alone ends it.)
    at_bound_ = [&t, routed, in_network, memo = bounds_of(o)](const Algorithm& a) {
      return (routed && within_bound(t, a, kRoutedEnough, memo)) ||
             (!in_network && a.provenance.waves == 0 &&
              within_bound(t, a, 1 + kChunkSearchSlack, memo)) ||
             within_valid_bound(t, a, 1 + kChunkSearchSlack, memo);
    };
  }
  FlatSearch(const FlatSearch&) = delete;  // quiet_ points into it (calibration_)
  FlatSearch& operator=(const FlatSearch&) = delete;

  Made<ChunkingResult> run(Collective c) {
    if (std::optional<ChunkingResult> relayed = relay_first(c)) return std::move(*relayed);
    if (std::optional<ChunkingResult> trees = trees_first(c)) return std::move(*trees);
    // Where the first count is large, the baselines of log P steps first: one within
    // kChunkSearchSlack of the bound is the answer, nothing else made (none could beat it by
    // more); else the quick answer in hand while the first count is made, which is given up for it
    // at the time limit (or an interruption) instead of running past it (GiveUp).
    std::optional<LogStepsAnswer> quick = log_steps_answer(t_, c, total_bytes_, o_, at_bound_);
    if (quick && quick->at_bound) return std::move(quick->result);
    std::optional<GiveUp> give_up;
    if (quick && o_.deadline) {
      // (Verifying a message costs per chunk it carries: halving-doubling's are up to P / 2.)
      int64_t moves = 0;
      for (const Transfer& x : quick->result.algorithm.transfers()) moves += x.count;
      give_up.emplace(*o_.deadline, kFinishSecondsPerTransfer * static_cast<double>(moves));
    }
    const auto began = Deadline::Clock::now();
    // What each plan made at each count (PortfolioOptions::on_plan), for double_plans.
    SynthOptions reporting = quiet_;
    int count = 0;
    reporting.portfolio.on_plan = [&](SynthMethod m, Time time, bool predicted) {
      leave_outs_.record(m, count, time, predicted);
      if (o_.portfolio.on_plan) o_.portfolio.on_plan(m, time, predicted);
    };
    reporting.portfolio.on_matcher = [&](MatcherRun run, Time time) {
      leave_outs_.record(run, count, time);
      if (o_.portfolio.on_matcher) o_.portfolio.on_matcher(run, time);
    };
    Time fastest = -1;  // the search's fastest time so far (its rival asks too)
    // The rival made first, where its caller made it (PortfolioOptions::rival_first: halves_rival,
    // double_plan).
    const Algorithm* first = nullptr;
    Made<ChunkingResult> searched = NotMade{};
    try {
      searched = search_chunks(
          c, total_bytes_, max_chunks_per_npu_,
          [&](const Collective& cc, Bytes chunk) -> ChunkMade {
            count = cc.chunks_per_npu;
            // A large count is timed only where its floor beats the fastest so far
            // (SynthOptions::to_beat): a losing count of millions of transfers costs its making
            // and a floor, not a timing. (Below kAutoChunkTurnTransfers floors measured no gain:
            // docs/tuning.md.)
            bool floored = false, predicted = false;
            SynthOptions o = reporting;
            // (Each pipeline variant's times and floors, for the counts after.)
            const std::map<int, Time> floors_before = searched_.floors_before(count);
            o.pipelines.floors_before = floors_before.empty() ? nullptr : &floors_before;
            o.pipelines.on_variant = [this, count](int v, Time time) {
              searched_.times[count][v] = time;
            };
            o.pipelines.on_timed = [this, count](int v, Time time) {
              searched_.timed[count][v] = time;
            };
            o.pipelines.on_floor = [this, count](int v, Time floor) {
              searched_.floors[count][v] = floor;
            };
            if (count == 1 && give_up) o.give_up = &*give_up;
            // (And the ways that lost by far at a size near this one: lost_elsewhere.)
            o.portfolio.leave_out = leave_outs_.leave_out_matchers(cc, chunk, fastest);
            for (MatcherRun run : kMatcherRuns)
              if (lost_elsewhere(c, Way::of(run)))
                o.portfolio.leave_out |= 1U << static_cast<unsigned>(run);
            o.portfolio.matchers_at_figure = leave_outs_.matchers_at_figure();
            const bool server_plan_modelled = leave_outs_.leave_out_server_plan(cc, chunk, fastest);
            o.portfolio.leave_out_server_plan =
                server_plan_modelled || leave_outs_.server_plan_far_behind(cc, chunk, fastest) ||
                lost_elsewhere(c, Way::of(SynthMethod::ServerPlan));
            o.portfolio.leave_out_pipelines = leave_outs_.leave_out_pipelines(count, fastest) ||
                                              lost_elsewhere(c, Way::of(SynthMethod::PlanPipeline));
            o.portfolio.leave_out_plan_matcher =
                leave_outs_.leave_out_plan_matcher(count, fastest) ||
                lost_elsewhere(c, Way::of(SynthMethod::PlanMatcher));
            // (Below kAutoChunkTurnTransfers the pipelines' variants are still predicted against
            // the fastest: a variant predicted to lose is not made, nothing made is floored.)
            o.pipelines.predicted_against = fastest;
            // Past the first count, the baselines race afterwards at their own counts
            // (race_baselines): a count whose methods are all left out makes nothing.
            o.portfolio.baselines_raced =
                count > 1 && o_.method == SynthMethod::Auto && o_.portfolio.baselines;
            // (Below it only pipelines predicted against the fastest stand for a count unmade:
            // PipelineOptions::predicted_against.)
            o.floored = &floored;
            o.predicted = &predicted;
            if (transfer_estimate(cc) > kAutoChunkTurnTransfers) o.to_beat = fastest;
            ChunkMade made_here = as_chunk_made(try_synthesize(t_, cc, chunk, o));
            if (const Algorithm* a = std::get_if<Algorithm>(&made_here)) {
              if (floored && fastest > 0 && a->claimed_time >= fastest) {
                CannotBeat cannot{a->claimed_time, a->size(), predicted};
                // What the count would likely make: the least of the ways' predictions there (the
                // pipelines' stands for the count; the server plan's, left out on its model, may
                // be far less), and no less than the fastest, which it was predicted not to beat.
                if (predicted && server_plan_modelled)
                  if (const std::optional<Time> plan =
                          leave_outs_.modelled(SynthMethod::ServerPlan, count);
                      plan && *plan < cannot.floor)
                    cannot.likely = std::max(*plan, fastest);
                return cannot;
              }
              if (fastest < 0 || a->claimed_time < fastest) fastest = a->claimed_time;
            }
            return made_here;
          },
          1, at_bound_, budget_, -1, min_chunk_of(t_), o_.deadline, rival(c, fastest),
          kChunkSearchSteepTurn,
          lower_bound(t_, c, c.chunk_bytes_for(total_bytes_), bounds_of(o_)).bandwidth,
          // (An All-Reduce's halves' answers, where its caller makes them: made before the last
          // count, they spare it where it cannot beat them.)
          halves_rival(first));
    } catch (const GivenUp&) {
      if (!give_up) throw;  // an outer search's step given up (SynthOptions::give_up)
      ChunkingResult& answer = quick->result;
      answer.algorithm.method += o_.deadline->interrupted()
                                     ? "; tenet's own search was interrupted at its first count"
                                     : "; tenet's own search was given up at its first count, "
                                       "which ran past the time limit";
      return std::move(answer);
    }
    if (std::holds_alternative<NotMade>(searched)) return searched;
    ChunkingResult& best = std::get<ChunkingResult>(searched);
    // (Past the deadline the baselines whose first count is small still race it: where tenet's
    // first count is slow, a baseline's is the answer; races_in_time.)
    if (o_.method == SynthMethod::Auto && o_.portfolio.baselines &&
        portfolio_worth_it(t_, best.algorithm.collective, best.algorithm.chunk_bytes,
                           best.algorithm, bounds_of(o_)))
      race_baselines(c, best);
    // The flow plan's pipelines and the server plan (whose ways stream at a fraction of their
    // links' bandwidth) pay their fill and drain once per chunk count: they keep gaining from more
    // chunks where the matcher no longer does. Keep doubling for them alone.
    int largest = 1;
    for (const ChunkingResult::Try& tried : best.tried)
      largest = std::max(largest, tried.chunks_per_npu);
    // The matcher may keep gaining past the search's last count too: where one of its variants
    // made the fastest at the largest count, its variants double alone after the pipelines (below).
    const MatcherDoubling matcher{t_, o_, quiet_, total_bytes_, leave_outs_, at_bound_};
    const std::vector<MatcherVariant> matcher_variants = matcher.winning_variants(best, largest);
    const Time matcher_last = best.algorithm.claimed_time;
    // A doubling alone at the next count costs about what the whole search's last count did: half
    // the search, as each count costs twice the last (the deadline's estimate).
    const double next_count = seconds_since(began) / 2;
    // (The rival made first, where made before the search's last count or before the pipelines
    // would double: the doublings alone must beat it.)
    double_plans(c, largest, next_count, best, first);
    matcher.run(c, largest, next_count, matcher_last, matcher_variants, best,
                first ? first->claimed_time : -1);
    trim_runner_up(best, o_.portfolio.runner_up);
    learn(c, best);
    return searched;
  }

 private:
  // A group with idle server mates: the team relay first, at multiples of the team size; near the
  // bound, nothing else is searched (the matcher's work for a large group grows with the cluster).
  std::optional<ChunkingResult> relay_first(const Collective& c) const {
    if (o_.method == SynthMethod::Auto && o_.portfolio.team_relay && c.num_ranks() < t_.num_npus())
      if (const auto relay = relay_teams(t_, c, o_.portfolio.borrow_servers);
          relay && static_cast<int>(relay->teams.front().size()) <= max_chunks_per_npu_) {
        {
          Made<ChunkingResult> relayed = search_chunks(
              c, total_bytes_, max_chunks_per_npu_,
              [&](const Collective& cc, Bytes chunk) -> ChunkMade {
                if (std::optional<Algorithm> a = relay_synthesize(t_, cc, chunk, quiet_))
                  return std::move(*a);
                return NotMade{"no team relay"};
              },
              static_cast<int>(relay->teams.front().size()),
              [&, previous = Time{-1}](const Algorithm& a) mutable {
                // Called with each new fastest: stop near the bound, or once doubling stops paying.
                const bool slowing =
                    previous > 0 && static_cast<double>(previous) <
                                        kRelayGain * static_cast<double>(a.claimed_time);
                previous = a.claimed_time;
                return within_bound(t_, a, kRelayClose, bounds_of(o_)) ||
                       (relay_enough(t_, a, bounds_of(o_)) && slowing);
              },
              budget_, -1, min_chunk_of(t_), o_.deadline);
          if (ChunkingResult* r = made(relayed); r && relay_enough(t_, r->algorithm, bounds_of(o_)))
            return std::move(*r);
        }
      }
    return std::nullopt;
  }

  // Whether `way` lost by far at a size near this one, where the caller learns across sizes
  // (PortfolioOptions::across_sizes): it is left out of every count, and of the doubling alone.
  bool lost_elsewhere(const Collective& c, Way way) const {
    return learns_across_sizes(o_) && o_.memo->sizes.loses(t_, c, total_bytes_, way);
  }

  // The sizes a baseline's loss is read from (SizeHistory::From): one of many steps (the rings,
  // hierarchical's rings per level, Blink's pipelined trees) or of costly ones (NVLS, in Simple
  // alone) gains on the answer as the size grows, and is read from sizes at or above; one of one
  // or log P steps (one-shot, direct, halving-doubling, Bruck, the binary trees) from those at or
  // below.
  static SizeHistory::From read_from(BaselineKind b) {
    const bool many = b == BaselineKind::Ring || b == BaselineKind::BidirRing ||
                      b == BaselineKind::Hierarchical || b == BaselineKind::Blink ||
                      b == BaselineKind::Nvls;
    return many ? SizeHistory::From::NearestAbove : SizeHistory::From::NearestBelow;
  }

  // Whether baseline `b` lost by far at the nearest size on its side of this one where it raced
  // (within kAcrossSizesRange; read_from): it is not raced here.
  bool lost_beside(const Collective& c, BaselineKind b) const {
    return learns_across_sizes(o_) &&
           o_.memo->sizes.loses(t_, c, total_bytes_, Way::of(b), read_from(b));
  }

  // What this size taught (SizeHistory::record): each way's fastest over the counts, the
  // doublings alone past the search included, against the answer.
  void learn(const Collective& c, const ChunkingResult& best) const {
    // (Not from a search the time limit cut short: its ways' times are its early counts'.)
    if (!learns_across_sizes(o_) || (o_.deadline && o_.deadline->stopped())) return;
    std::map<Way, Time> fastest = leave_outs_.fastest();
    for (const ChunkingResult::Try& tried : best.tried)
      if (tried.alone == SynthMethod::PlanPipeline || tried.alone == SynthMethod::ServerPlan)
        keep_fastest(fastest, Way::of(*tried.alone), tried.time);
    for (const auto& [way, time] : raced_) keep_fastest(fastest, way, time);
    o_.memo->sizes.record(t_, c, total_bytes_, fastest, best.algorithm.claimed_time);
  }

  // The search's last rival (search_chunks): an All-Reduce's halves' answers, where its caller
  // makes them (PortfolioOptions::rival_first), kept in `halves`; none elsewhere (a
  // Reduce-Scatter's rival made first has no halves' figure: double_plan asks it). They are asked
  // for before the last count `at` only where they would be after it, before the pipelines double
  // alone (double_plan), whatever that count makes, as times go from the count before (a
  // doubling at most halves a time's excess over the bound): the pipelines' time there may be
  // within kHalvesFirstNear of the fastest, and the fastest there is still over the halves' figure
  // by kHalvesAnswersOver (halves_may_beat). Elsewhere they are left to after it, as they were: -1.
  std::function<Time(const Collective&, const Algorithm&)> halves_rival(
      const Algorithm*& halves) const {
    if (!o_.portfolio.rival_first) return {};
    return [this, &halves](const Collective& at, const Algorithm& fastest) -> Time {
      const std::optional<Time> before =
          leave_outs_.plan_time(SynthMethod::PlanPipeline, at.chunks_per_npu / 2);
      const Bytes chunk = at.chunk_bytes_for(total_bytes_);
      const Time bound = lower_bound(t_, at, chunk, bounds_of(o_)).bandwidth;
      auto halved = [bound](Time time) { return time > bound ? bound + (time - bound) / 2 : time; };
      const std::optional<HalvesInTurn> figure =
          halves_in_turn_bound(t_, at, chunk, fastest.step_costs, bounds_of(o_));
      if (!before || *before <= 0 || !figure ||
          static_cast<double>(halved(*before)) >
              kHalvesFirstNear * static_cast<double>(fastest.claimed_time) ||
          static_cast<double>(halved(fastest.claimed_time)) <=
              kHalvesAnswersOver * static_cast<double>(figure->total()))
        return -1;
      halves = o_.portfolio.rival_first(fastest);
      return halves ? halves->claimed_time : -1;
    };
  }

  // The search's rival (search_chunks): what the baselines race after the search makes at least
  // (looked up when asked: only large searches ask): the ring at one chunk per NPU, and Blink's
  // trees at the count the search is at (`at`: their pipelines gain from chunks as the search's
  // do; an All-Reduce's tree reductions go below what Reduce-Scatter + All-Gather can reach,
  // hetmesh2d:8x8 1.44x). A count that cannot beat the faster need not be made. A ring whose
  // closed floor (closed_floor) is at or over `searched` (the search's fastest when asked) is no
  // rival, its plan not made: where the search is ahead of it, no count is left out for it (as
  // times go, it cannot say that a count ahead will not beat a time above the fastest).
  std::function<Time(const Collective&)> rival(const Collective& c, const Time& searched) const {
    if (o_.method != SynthMethod::Auto || !o_.portfolio.baselines) return {};
    return [this, c, &searched](const Collective& at) {
      std::optional<BaselineSpec> ring, blink;
      for_each_baseline(t_, c, [&](const BaselineSpec& spec) {
        if (!ring && spec.kind == BaselineKind::Ring) ring = spec;
        if (!blink && spec.kind == BaselineKind::Blink) blink = spec;
      });
      Time fastest = -1;
      auto race = [&](const BaselineSpec& spec, const Collective& cc) {
        Made<Algorithm> made_here =
            try_baseline(spec, t_, cc, cc.chunk_bytes_for(total_bytes_), o_.link_model,
                         o_.reduce_bandwidth, true, baselines_of(o_));
        if (const Algorithm* a = made(made_here); a && (fastest < 0 || a->claimed_time < fastest))
          fastest = a->claimed_time;
      };
      Collective one = c;
      one.chunks_per_npu = 1;
      if (const std::optional<PlanFloor> closed =
              ring ? closed_floor(*ring, t_, one, one.chunk_bytes_for(total_bytes_)) : std::nullopt;
          closed && searched > 0 && closed->floor >= searched)
        ring.reset();
      if (ring) {
        // A large ring's time from its plan, no transfer made (a 1024-NPU ring All-Reduce is 2M
        // of them, seconds to make and time): its floor, the ring's time where nothing contends
        // (the generator families), a little below it where routes share switch links.
        std::optional<PlanFloor> plan;
        if (transfer_estimate(one) > kAutoChunkTurnTransfers)
          plan = plan_floors_.of(*ring, t_, one, one.chunk_bytes_for(total_bytes_), o_);
        if (plan)
          fastest = plan->floor;
        else
          race(*ring, one);
      }
      // (Within the budget its own search keeps to.)
      if (blink && transfer_estimate(at) <= kBlinkTransferBudget) race(*blink, at);
      return fastest;
    };
  }

  // An All-Reduce whose packed spanning trees (Blink's, the blink baseline) end under
  // kTreesFirstBelow of the Reduce-Scatter + All-Gather figure (LowerBound::coarse): their answer
  // raced by the other baselines, tenet's own search not made. Its methods join the two halves
  // (synthesize_with), which come near that figure at best, not so far under it. Not tried where
  // the lower bound itself is that high: no algorithm ends under it.
  std::optional<ChunkingResult> trees_first(const Collective& c) const {
    if (c.kind != CollectiveKind::AllReduce || o_.method != SynthMethod::Auto ||
        !o_.portfolio.baselines)
      return std::nullopt;
    std::optional<BaselineSpec> blink;
    for_each_baseline(t_, c, [&](const BaselineSpec& spec) {
      if (!blink && spec.kind == BaselineKind::Blink) blink = spec;
    });
    if (!blink) return std::nullopt;
    const LowerBound bound = lower_bound(t_, c, c.chunk_bytes_for(total_bytes_), bounds_of(o_));
    const auto below = static_cast<Time>(kTreesFirstBelow * static_cast<double>(bound.coarse));
    if (bound.total >= below) return std::nullopt;
    Made<ChunkingResult> searched = baseline_search(c, *blink, below);
    ChunkingResult* trees = made(searched);
    if (!trees || trees->algorithm.claimed_time >= below) return std::nullopt;
    ChunkingResult best = std::move(*trees);
    best.algorithm.method = fmt::format(
        "baseline {} (its trees end under {}x the Reduce-Scatter + All-Gather figure, which "
        "tenet's own methods come near at best: their search was left out)",
        blink->name(), kTreesFirstBelow);
    best.algorithm.provenance = Provenance::of_baseline(blink->name());
    best.algorithm.name = "tenet";
    race_baselines(c, best, BaselineKind::Blink);
    return best;
  }

  // Baseline `spec`'s own chunk search against `to_beat`. Blink's trees reduce below the RS+AG
  // figure the other searches stop at (LowerBound::coarse): its counts go on to the bound itself.
  // `least`, when given, receives the least of its counts' times and floors (a count that could
  // not beat `to_beat`, untimed, at its floor), or -1 where it made none.
  Made<ChunkingResult> baseline_search(const Collective& c, const BaselineSpec& spec, Time to_beat,
                                       Time* least = nullptr) const {
    const bool blink = spec.kind == BaselineKind::Blink;
    const std::function<bool(const Algorithm&)> at_valid_bound = [&](const Algorithm& a) {
      return within_valid_bound(t_, a, 1 + kChunkSearchSlack, bounds_of(o_));
    };
    const auto& enough = blink ? at_valid_bound : at_bound_;
    // Each count must beat `to_beat` and the fastest count this search made: one that cannot is
    // not timed (nor built, where the baseline has a plan), as it could not be kept. Floors fall
    // and rise with the chunks as times go (search_chunks): a count that cannot win, whose floor
    // is at or over the count before's (made or not), has none ahead that can; the search ends
    // there.
    Time beat = to_beat;
    Time last_floor = -1;
    const Time bound =
        to_beat > 0 ? lower_bound(t_, c, c.chunk_bytes_for(total_bytes_), bounds_of(o_)).bandwidth
                    : 0;
    return search_chunks(
        c, total_bytes_, max_chunks_per_npu_,
        [&](const Collective& cc, Bytes chunk) -> ChunkMade {
          Time floor = -1;
          // (Where the caller learns across sizes from `least`, Blink's tighter floor: its time's.)
          ChunkMade m = baseline_to_beat(spec, t_, cc, chunk, o_, beat, enough, &floor,
                                         &plan_floors_, !(least && learns_across_sizes(o_)));
          if (const Algorithm* a = std::get_if<Algorithm>(&m))
            if (beat <= 0 || a->claimed_time < beat) beat = a->claimed_time;
          if (least) {
            const Time time =
                std::holds_alternative<Algorithm>(m)    ? std::get<Algorithm>(m).claimed_time
                : std::holds_alternative<CannotBeat>(m) ? std::get<CannotBeat>(m).floor
                                                        : -1;
            if (time >= 0 && (*least < 0 || time < *least)) *least = time;
          }
          const bool rose =
              std::holds_alternative<CannotBeat>(m) && last_floor >= 0 && floor >= last_floor;
          last_floor = floor;
          if (rose)
            return NotMade{fmt::format("{}'s floor rose to {} at {} chunks per NPU", spec.name(),
                                       format_time(floor), cc.chunks_per_npu)};
          return m;
        },
        1, enough, blink ? std::min(budget_, kBlinkTransferBudget) : budget_, to_beat,
        min_chunk_of(t_), o_.deadline, {}, 0, bound);
  }

  // Of `specs`, the first of the rings whose plan's floor at one chunk per NPU is the least, or
  // nothing where no ring has a plan; a ring whose closed floor (closed_floor) is at or over
  // `to_beat` is passed over, its plan not made.
  std::optional<int> most_promising_ring(const Collective& c,
                                         const std::vector<BaselineSpec>& specs,
                                         Time to_beat) const {
    Collective one = c;
    one.chunks_per_npu = 1;
    std::optional<int> out;
    Time least = 0;
    for (int i = 0; i < static_cast<int>(specs.size()); ++i)
      if (std::optional<PlanFloor> closed =
              closed_floor(specs[i], t_, one, one.chunk_bytes_for(total_bytes_));
          closed && to_beat > 0 && closed->floor >= to_beat)
        continue;
      else if (std::optional<PlanFloor> plan =
                   plan_floors_.of(specs[i], t_, one, one.chunk_bytes_for(total_bytes_), o_);
               plan && (!out || plan->floor < least)) {
        out = i;
        least = plan->floor;
      }
    return out;
  }

  // Each baseline's own chunk search (but `raced`'s, already made, and those that lost by far at a
  // size beside this one: lost_beside), the fastest in place of `best` where it is faster. Where
  // the caller learns across sizes, each search's least time or floor is kept for learn.
  void race_baselines(const Collective& c, ChunkingResult& best,
                      std::optional<BaselineKind> raced = std::nullopt) const {
    // The rest of the searches are independent (their time to beat is tenet's, or the promising
    // ring's where faster), so they run side by side: as many as there are cores, and memory for
    // one search each (its largest algorithm and its best so far). The fastest wins, ties to the
    // first listed, whichever finishes first. Searches whose first count is already over the budget
    // go one at a time: two at once take nearly twice the memory and no less time.
    std::vector<BaselineSpec> specs;
    for_each_baseline(t_, c, [&](const BaselineSpec& spec) {
      if (spec.kind != raced && races_in_time(spec, c, o_.deadline) && !lost_beside(c, spec.kind))
        specs.push_back(spec);
    });
    auto learn_from = [&](const BaselineSpec& spec, Time least) {
      if (least >= 0 && learns_across_sizes(o_)) keep_fastest(raced_, Way::of(spec.kind), least);
    };
    Time to_beat = best.algorithm.claimed_time;
    std::mutex m;
    std::optional<std::pair<int, ChunkingResult>> fastest;
    // The ring whose plan promises the least at one chunk per NPU (its floor, no transfer made)
    // races first, alone: the others must then beat its time as well, and one whose floor cannot
    // is not timed (a ring's plan, not built). Tenet's own answer may be far slower than a ring
    // on a large switched fabric, where every other baseline would be built and timed against it.
    const std::optional<int> promising = most_promising_ring(c, specs, to_beat);
    if (promising) {
      Time least = -1;
      Made<ChunkingResult> searched = baseline_search(c, specs[*promising], to_beat, &least);
      learn_from(specs[*promising], least);
      if (ChunkingResult* r = made(searched)) {
        to_beat = std::min(to_beat, r->algorithm.claimed_time);
        fastest.emplace(*promising, std::move(*r));
      }
    }
    const uint64_t per_search =
        2 * kSynthBytesPerTransfer *
        static_cast<uint64_t>(
            std::max(transfer_estimate(c),
                     std::min<int64_t>(budget_, transfer_estimate(c) * max_chunks_per_npu_)));
    const uint64_t memory = topo::available_memory();
    const int threads = memory == 0 || transfer_estimate(c) > budget_
                            ? 1
                            : static_cast<int>(std::min<uint64_t>(
                                  cores(), memory / std::max<uint64_t>(1, per_search)));
    // Dealt last listed first: hierarchical and the trees build step by step and take the longest,
    // the rings are quick plans.
    parallel_for(static_cast<int>(specs.size()), threads, [&](int job) {
      const int i = static_cast<int>(specs.size()) - 1 - job;
      if (i == promising || !races_in_time(specs[i], c, o_.deadline)) return;  // (raced already)
      Time least = -1;
      Made<ChunkingResult> searched = baseline_search(c, specs[i], to_beat, &least);
      std::lock_guard lock(m);
      learn_from(specs[i], least);
      if (!made(searched)) return;  // it does not apply, or no count beats tenet
      ChunkingResult& r = std::get<ChunkingResult>(searched);
      const Time mine = r.algorithm.claimed_time;
      if (!fastest || mine < fastest->second.algorithm.claimed_time ||
          (mine == fastest->second.algorithm.claimed_time && i < fastest->first))
        fastest.emplace(i, std::move(r));
    });
    if (fastest) {
      if (fastest->second.algorithm.claimed_time < best.algorithm.claimed_time)
        best.chunks_per_npu = fastest->second.chunks_per_npu;
      keep_if_faster(best.algorithm, std::move(fastest->second.algorithm), specs[fastest->first]);
    }
  }

  // The flow plan's pipelines and the server plan doubling their chunks alone past `largest`.
  // `first`: the rival made first where its caller made it (PortfolioOptions::rival_first) before
  // the search's last count, else nothing; it receives the rival where it is made before the
  // pipelines would double.
  void double_plans(Collective c, int largest, double next_count, ChunkingResult& best,
                    const Algorithm*& first) const {
    for (SynthMethod m : {SynthMethod::PlanPipeline, SynthMethod::ServerPlan}) {
      if (o_.method != SynthMethod::Auto && o_.method != m) continue;
      // (An All-Reduce's pipelines may beat the RS+AG figure (LowerBound::coarse), which is no
      // bound for reductions down trees.)
      if (o_.method == SynthMethod::Auto && c.kind != CollectiveKind::AllReduce &&
          at_bound_(best.algorithm))
        break;
      if (m == SynthMethod::ServerPlan && !server_plan_applies(t_, c)) continue;
      // (Not the server plan where its rails go in messages from the next count on and its
      // estimate there may win: its times so far say nothing of messages.)
      Collective next = c;
      next.chunks_per_npu = 2 * largest;
      if ((leave_outs_.cannot_win(m, c.kind, largest, best.algorithm.claimed_time,
                                  doublings_within_budget(m, c, largest)) &&
           !(m == SynthMethod::ServerPlan &&
             leave_outs_.rail_messages_may_win(next, next.chunk_bytes_for(total_bytes_),
                                               best.algorithm.claimed_time))) ||
          lost_elsewhere(c, Way::of(m)))
        continue;
      double_plan(m, c, largest, next_count, best, first);
    }
  }

  // Whether `c`'s count cuts the collective under the least chunk, or into more pieces than bytes:
  // where a doubling alone stops.
  bool past_least_chunk(const Collective& c) const {
    return c.chunk_bytes_for(total_bytes_) < min_chunk_of(t_) || c.pieces() > total_bytes_;
  }

  // How many counts plan `m`'s doubling alone past `largest` may make at most: its counts stop
  // under the least chunk, past a chunk per byte, and past the pipelines' loosest transfer budget
  // (kPipelineFastestTransferBudget; an All-Reduce's counted as its halves', as double_plan may).
  int doublings_within_budget(SynthMethod m, Collective c, int largest) const {
    const bool halves = m == SynthMethod::PlanPipeline && c.kind == CollectiveKind::AllReduce;
    int doublings = 0;
    for (int k = 2 * largest; k <= (1 << 20); k *= 2, ++doublings) {
      c.chunks_per_npu = k;
      if (past_least_chunk(c) ||
          transfer_estimate(c) / (halves ? 2 : 1) > kPipelineFastestTransferBudget)
        break;
    }
    return doublings;
  }

  // Plan `m` (the flow plan's pipelines or the server plan) doubling its chunks alone past
  // `largest` (double_plans). Before the pipelines' first count, `first` receives the rival made
  // first where it is made there; once made (there or before the search's last count), it is the
  // time to beat.
  void double_plan(SynthMethod m, Collective c, int largest, double next_count,
                   ChunkingResult& best, const Algorithm*& first) const {
    auto fastest = [&] {
      return under_first(best.algorithm.claimed_time, first ? first->claimed_time : -1);
    };
    SynthOptions quiet = quiet_;  // (each method's own: its hooks point at its own locals)
    quiet.method = m;
    // The method's best time so far, and its time at the last count. The pipelines' times need
    // not fall steadily: past a count that does not gain they try one more, unless the best is
    // within kDoublingEnough of the bound already (each count costs twice the last); the server
    // plan, whose counts cost seconds on large clusters, stops there. A count that gains ends
    // the doubling where what it gained, gained again, would not beat the fastest (unless the
    // pipelines persist far from the bound).
    // (The server plan's first count alone gains on its own time at `largest`, where it has
    // one: else that count is its first that does not gain.)
    Time previous =
        m == SynthMethod::ServerPlan ? leave_outs_.plan_time(m, largest).value_or(-1) : -1;
    Time last = -1, before_last = -1;  // (made at the count before `last`'s)
    // The time the next count's gain is measured from: the last count's, or at the first the
    // method's own time at `largest`, where the search made one or predicted it. (An
    // All-Reduce's pipelines predicted there stand as their halves' likely times summed, over
    // what they take joined: no time to say they cannot win (CountLeaveOuts::cannot_win), and
    // here a gain overstated, which a count that cannot win goes on from only where halving
    // over the bound also may win, below.)
    Time trend = leave_outs_.plan_time(m, largest).value_or(-1);
    int idle = 0;
    double last_seconds = next_count / 2;  // what the last count took
    // Where the fastest is far from the bound (over kPipelinesPersist of it) and they are close
    // to it (within kPipelinesContend), they also try their split variants.
    auto contending = [&](Time time) {
      return static_cast<double>(time) <= kPipelinesContend * static_cast<double>(fastest());
    };
    DoublingModel model(m == SynthMethod::PlanPipeline && t_.charges_steps());
    DoublingVariants variants(searched_, largest, m == SynthMethod::PlanPipeline);
    variants.listen(quiet.pipelines);
    // (What cannot beat the fastest is not made or timed: to_beat.)
    bool floored = false, predicted = false;
    quiet.floored = &floored;
    quiet.predicted = &predicted;
    for (int k = 2 * largest; k <= (1 << 20); k *= 2) {
      c.chunks_per_npu = k;
      const Bytes chunk = c.chunk_bytes_for(total_bytes_);
      if (past_least_chunk(c)) break;
      // An All-Reduce's pipelines over kHalvesOver of the bound count their halves' transfers.
      const bool by_halves = m == SynthMethod::PlanPipeline &&
                             c.kind == CollectiveKind::AllReduce &&
                             !within_bound(t_, best.algorithm, kHalvesOver, bounds_of(o_));
      const int64_t transfers = transfer_estimate(c) / (by_halves ? 2 : 1);
      if (transfers > kPipelineTransferBudget &&
          (m != SynthMethod::PlanPipeline || !variants.reported() ||
           transfers > kPipelineFastestTransferBudget))
        break;
      variants.before(k, transfers > kPipelineAllVariantsTransfers, quiet.pipelines);
      quiet.pipelines.split = o_.pipelines.split &&
                              !within_bound(t_, best.algorithm, kPipelinesPersist, bounds_of(o_)) &&
                              (last < 0 || contending(last));
      if (o_.deadline && o_.deadline->reached(2 * last_seconds)) break;
      // (The server plan predicted not to gain, as the search leaves it out of a count.)
      if (m == SynthMethod::ServerPlan &&
          leave_outs_.leave_out_server_plan(
              c, chunk, fastest(), last >= 0 ? std::optional<Time>(last) : std::nullopt,
              before_last >= 0 ? std::optional<Time>(before_last) : std::nullopt))
        break;
      // The rival made first, where its caller makes it (rival_first: an All-Reduce's halves'
      // answers, a Reduce-Scatter's All-Gather's answer reversed), made before the pipelines'
      // first count alone where their time at `largest` is within kHalvesFirstNear of the
      // fastest. Where it is the fastest, the pipelines double no further: the halves' answers
      // join each half's best count of the same pipelines, each drained, where the whole's join
      // them at one count (which did not beat the former where measured: docs/synthesis.md), made
      // here or before the search's last count (halves_rival); the All-Gather's answer finished
      // reverses in its time, where the Reduce-Scatter's pipelines' head is not theirs to finish.
      // The server plan's doubling must beat it (`fastest`).
      if (m == SynthMethod::PlanPipeline && last < 0) {
        if (o_.portfolio.rival_first && !first && trend > 0 &&
            static_cast<double>(trend) <=
                kHalvesFirstNear * static_cast<double>(best.algorithm.claimed_time))
          first = o_.portfolio.rival_first(best.algorithm);
        if (first && first->claimed_time < best.algorithm.claimed_time) break;
      }
      const auto began = Deadline::Clock::now();
      quiet.to_beat = fastest();
      quiet.pipelines.floored_at =
          m == SynthMethod::PlanPipeline ? doubling_stops_at(fastest(), last, trend) : -1;
      floored = predicted = false;
      Made<Algorithm> made_here = try_synthesize(t_, c, chunk, quiet);
      last_seconds = seconds_since(began);
      if (!made(made_here)) break;  // no plan here
      Algorithm& a = std::get<Algorithm>(made_here);
      const bool floor = floored && a.claimed_time >= quiet.to_beat;
      best.tried.push_back({k, a.claimed_time, m, floor, floor && predicted});
      if (best.tried.back().floor) {
        // Cannot win, and its time is not known: the doubling ends, unless, far from the bound
        // (over kPipelinesPersist of it), the next count may still win (doubling_goes_past).
        const Time stands = a.claimed_time;
        if (!(m == SynthMethod::PlanPipeline && contending(stands) &&
              !within_bound(t_, best.algorithm, kPipelinesPersist, bounds_of(o_)) &&
              doubling_goes_past(stands, trend, fastest(),
                                 lower_bound(t_, c, chunk, bounds_of(o_)).bandwidth)))
          break;
        trend = stands;
        before_last = last;
        last = stands;
        continue;
      }
      const Time now = a.claimed_time;
      const bool gaining = previous < 0 || gains(now, previous);
      if (previous < 0 || now < previous) previous = now;
      if (now < best.algorithm.claimed_time) displace_answer(best, std::move(a), k);
      // A count is promising where its gain, gained again, would beat the fastest by more than
      // kDoublingGain: each count after it gains less than the one before. The first count over
      // kPipelinesContend of the fastest is not, whatever it gained.
      const bool promising =
          (last >= 0 || contending(now)) && (trend < 0 || doubling_promises(now, trend, fastest()));
      trend = now;
      // Far from the bound but contending, the pipelines go on up to
      // kPipelineAllVariantsTransfers, gaining or not, while their times jump by over 0.5 % from
      // count to count or their chunks are of kPipelinesPersistChunk or more. Smaller settling
      // ones leave a gap more chunks do not close (it is latency).
      const bool jumping = last >= 0 && std::abs(static_cast<double>(now - last)) >
                                            0.005 * static_cast<double>(last);
      // Gained on the count before, but under 0.5 %: a doubling's gain shrinks as the chunks do,
      // so the next count gains less.
      const bool settled = last >= 0 && now < last;
      before_last = last;
      last = now;
      const bool far = m == SynthMethod::PlanPipeline &&
                       (jumping || chunk >= kPipelinesPersistChunk) && contending(now) &&
                       !within_bound(t_, best.algorithm, kPipelinesPersist, bounds_of(o_));
      if (model.ends_at(k, now, fastest())) break;  // (on fill and steps)
      if (gaining) {
        idle = 0;
        // The last doubling's gain, gained again, would not reach the fastest: a doubling's gain
        // shrinks as the chunks do, so the next count cannot win either.
        if (!promising && !far) break;
        continue;
      }
      // Under 0.5 % from doubling: enough.
      const bool close = c.kind != CollectiveKind::AllReduce &&
                         within_bound(t_, best.algorithm, kDoublingEnough, bounds_of(o_));
      // Not gaining, and over kPipelinesContend of the fastest: the next count is no nearer.
      // Past kPipelineAllVariantsTransfers (the costliest counts, where only the fastest
      // variants run) neither persisting nor one more count. One more only after a count that
      // lost (times need not fall steadily), not after one that settled.
      if (transfers > kPipelineAllVariantsTransfers || (++idle >= 2 && !far) || (settled && !far) ||
          m != SynthMethod::PlanPipeline || close || !contending(now))
        break;
    }
  }

  const topo::Topology& t_;
  const SynthOptions& o_;
  SynthOptions quiet_;  // o_ without progress, baselines and split pipelines
  Bytes total_bytes_;
  int max_chunks_per_npu_;
  int64_t budget_;
  std::function<bool(const Algorithm&)> at_bound_;
  CountLeaveOuts leave_outs_;          // what the times its counts made predict it need not make
  PipelineCalibration calibration_;    // the pipelines' made times against their predictions
  SearchedVariants searched_;          // the pipeline variants' times and floors in the search
  mutable std::map<Way, Time> raced_;  // each raced baseline's least time or floor (learn)
  mutable PlanFloors plan_floors_;     // the rings' (the rival, the promising ring, their searches)
};

}  // namespace

Made<ChunkingResult> detail::flat_auto_chunks(const topo::Topology& t, Collective c,
                                              Bytes total_bytes, const SynthOptions& o,
                                              int max_chunks_per_npu) {
  FlatSearch search(t, c, total_bytes, o, max_chunks_per_npu);
  return search.run(c);
}

}  // namespace tenet::synth
