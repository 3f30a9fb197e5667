// What the flat chunk search (chunk_search.cpp) predicts, from the times its counts made, that it
// need not make: the plain matcher's runs, the matcher on the flow plan, the server plan and the
// flow plan's pipelines left out of a count (PortfolioOptions::leave_out...), and the plans whose
// doubling past the search cannot win.
#pragma once

#include <map>
#include <optional>
#include <set>

#include "synth/auto/size_history.hpp"
#include "synth/plans/server_plan.hpp"
#include "synth/synthesizer.hpp"
#include "topo/topology.hpp"

namespace tenet::synth::detail {

// Whether a doubling from `before` to `now` gained: by over 0.5 % (times settle by less than that
// from count to count where more chunks no longer pay).
bool gains(Time now, Time before);

// A method's time at `count` in the search (`times`: its time per count), if it made one.
std::optional<Time> time_at(const std::map<int, Time>& times, int count);

// Whether a method whose time at a count was `last` (and at half that count `before`, where it
// made one) cannot catch up with `fastest` by doubling its chunks: over `far` of it (at least 2: as
// times go, search_chunks, a doubling at most halves a count's time), or over `contend` of it with
// the last doubling's gain, gained again, short of it (each doubling gains less than the one
// before); without `before`, over `contend` says `without_before`.
bool falls_behind(Time last, std::optional<Time> before, Time fastest, double contend, double far,
                  bool without_before);

// Whether a pipeline variant whose time at the doubling's last count was `last` (and at the count
// before `before`, where it made one) is left out of the counts after: it falls_behind the
// fastest variant there (`fastest`) by kPipelineVariantBehind (without `before`, only by
// kMatcherFar). Such a variant losing ground on its siblings was not measured to catch up
// (docs/tuning.md), and each costs a timing of the whole algorithm.
bool variant_falls_behind(Time last, std::optional<Time> before, Time fastest);

// A plan's time at the next doubling of its chunks, from its times at three counts in a row (q,
// 2q, 4q chunks per NPU) fit to T(k) = A + B / k + C k, the model times go by (search_chunks): its
// bandwidth term, its fill and drain (each chunk's time, B / k) and its per-step costs (C k, a step
// per transfer, twice the transfers at twice the count). Nothing where the fit has no step term (C
// <= 0) or no fill term (B <= 0): there the model says nothing the doublings before did not.
std::optional<Time> fill_and_steps(Time quarter, Time half, Time last);

// Whether a plan's times `times` (per count, each made) at `count` and the three counts before it
// (halving) follow fill_and_steps (the model's time at `count` from the three before within
// kPipelinesModelTrust of the one made) and the model's next count does not beat `fastest` by more
// than kDoublingGain: where the times follow the model, the gains of the counts after shrink as it
// says, whatever the bound (far from it too). CountLeaveOuts::cannot_win asks it at the search's
// last count, the pipelines' doubling alone (DoublingModel) at each count it makes.
bool model_ends_doubling(const std::map<int, Time>& times, int count, Time fastest);

// The times one search's counts made (record) and what they predict. Each leave_out_... is asked
// once per count, in count order (some keep what they decided for the counts after).
class CountLeaveOuts {
 public:
  CountLeaveOuts(const topo::Topology& t, const SynthOptions& o) : t_(t), o_(o) {}

  // What plan `m` (PortfolioOptions::on_plan: `predicted` where it was left unmade on a prediction
  // of its time), or run `run` of the plain matcher (on_matcher), made at `count`.
  void record(SynthMethod m, int count, Time time, bool predicted) {
    plan_times_[m][count] = time;
    if (predicted) plan_predicted_[m].insert(count);
  }
  void record(MatcherRun run, int count, Time time) { matcher_times_[run][count] = time; }
  // What run `run` of the plain matcher made at `count`, where it ran there.
  std::optional<Time> matcher_time(MatcherRun run, int count) const {
    const auto times = matcher_times_.find(run);
    if (times == matcher_times_.end()) return std::nullopt;
    return time_at(times->second, count);
  }

  // Whether leave_out_matchers left every run out as none can beat the fastest by 0.5 %
  // (PortfolioOptions::matchers_at_figure).
  bool matchers_at_figure() const { return matchers_at_figure_; }

  // Whether the plain matcher's answer at `cc`'s count takes at least `fastest` less kMatcherGain
  // (matcher_figure), unless it also runs in waves, where an All-Reduce may end under that figure.
  bool matchers_cannot_gain(const Collective& cc, Bytes chunk, Time fastest) const;

  // The plain matcher's runs `auto` leaves out at `cc`'s count (PortfolioOptions::leave_out),
  // `fastest` the search's fastest at the counts before (-1: none yet): a run whose time at half
  // the count falls behind it by kMatcherContend (falls_behind; without a time at a quarter of the
  // count, only by kMatcherFar); every run where `fastest` is within kMatcherGain of what its
  // answer takes at least (matcher_figure; in waves an All-Reduce may end under it: not left out
  // for it). A run left out stays out.
  unsigned leave_out_matchers(const Collective& cc, Bytes chunk, Time fastest);

  // Whether run `run` of the plain matcher is left out of `count` where it doubles alone past the
  // search's counts (double_matcher), `doubled` its times at the doubling's counts so far and
  // `fastest` the fastest found: where the search left it out (leave_out_matchers: for good), or
  // where its times at half and a quarter of `count` (the search's, or the doubling's) fall behind
  // `fastest` as they would there. (A run the doubling leaves out stays out: its caller keeps it.)
  bool leaves_out_doubling(MatcherRun run, int count, const std::map<int, Time>& doubled,
                           Time fastest) const;

  // Whether the server plan cannot beat `fastest` (the search's fastest at the counts before) at
  // `cc`'s count: its time at the last count it made before, with every doubling since halving its
  // excess over the bound's bandwidth term (the most a doubling gains, as times go:
  // search_chunks), does not.
  bool server_plan_far_behind(const Collective& cc, Bytes chunk, Time fastest) const;

  // Whether `auto` leaves the server plan out of `cc`'s count (PortfolioOptions::
  // leave_out_server_plan), `fastest` the search's fastest at the counts before: where per-step
  // costs are charged and the plan made times at an eighth, a quarter and half the count, where
  // fill_and_steps predicts it at or over its time at half the count (past its least time) and
  // over kServerPlanBehind of `fastest`; or a large count (as
  // for floors, over kAutoChunkTurnTransfers) where the plan's time at half the count was within
  // kServerPlanTrust of its estimate there (plan_estimate: staggered_estimate, or flat_estimate,
  // pod_estimate; an All-Reduce's two halves as twice the All-Gather), and the estimate at this
  // count, scaled by the same ratio, is over kServerPlanBehind of `fastest`; where its time at a
  // quarter of the count was within kServerPlanTrust of its estimate too, scaled by the larger of
  // the two ratios. `half`, `quarter`: the plan's times at half and a quarter of the count where
  // the search did not make them (its doubling alone, double_plans).
  bool leave_out_server_plan(const Collective& cc, Bytes chunk, Time fastest,
                             std::optional<Time> half = std::nullopt,
                             std::optional<Time> quarter = std::nullopt) const;

  // Whether `auto` leaves the flow plan's pipelines out of `count` (PortfolioOptions::
  // leave_out_pipelines), `fastest` the search's fastest at the counts before: as times go
  // (search_chunks), a doubling at most halves a count's time, so half their time at half the
  // count (or half their floor there, where they were left out of it) is a floor on their time at
  // this one; left out where it is over twice kPipelinesContend of `fastest`, which is where
  // double_plans would not double them past this count either (cannot_win, falls_behind): the
  // floor is kept for the next count and for it.
  bool leave_out_pipelines(int count, Time fastest);

  // Whether `auto` leaves the matcher on the flow plan out of `count` (PortfolioOptions::
  // leave_out_plan_matcher), `fastest` the search's fastest at the counts before: as the plain
  // matcher's runs (leave_out_matchers), where its time at half the count falls behind `fastest`
  // by kMatcherContend (falls_behind; without a time at a quarter of the count, by kMatcherFar).
  // Left out, it stays out.
  bool leave_out_plan_matcher(int count, Time fastest);

  // The fastest time each plan and each run of the plain matcher made over the counts (a floor,
  // or a prediction of a way left unmade, where that is what it reported), for SizeHistory.
  std::map<Way, Time> fastest() const;

  // Plan m's time at `count` as fill_and_steps predicts it from its times at an eighth, a quarter
  // and half the count, where per-step costs are charged and it made all three.
  std::optional<Time> modelled(SynthMethod m, int count) const;

  // Plan m's time at `count` in the search (plan_times_, without split pipelines), if it made one.
  std::optional<Time> plan_time(SynthMethod m, int count) const;

  // Whether plan m's doubling past `largest` cannot win, predicted from what it made in the search
  // (plan_time): at `largest` over kPipelinesContend of `fastest`, and either not made at half that
  // count or that doubling's gain, gained again, short of `fastest` (each doubling gains less than
  // the one before). Its first count would be as far behind, and end its doubling there. A plan at
  // over twice kPipelinesContend of `fastest` cannot either: as times go (search_chunks), a
  // doubling at most halves a count's time, so its first count alone would be over
  // kPipelinesContend of `fastest` too, which ends its doubling there. Nor can the server plan,
  // which stops at its first count that does not gain (double_plans), where its time at `largest`
  // gained under 0.5 % on its time at half that count: that count was it; nor where it was left out
  // of `largest` on its model (modelled) past its least time: each doubling after loses more. Nor
  // can the pipelines whose times at the search's last four counts follow that model (its time at
  // `largest` within kPipelinesModelTrust of theirs) where it predicts their next count no faster
  // than `fastest` by more than kDoublingGain. (An All-Reduce's pipelines left unmade at half
  // `largest`, or at `largest`, on their prediction made no time there: as for a plan not made
  // there.)
  // `doublings`: how many counts the doubling alone may make past `largest` within its budgets,
  // -1 for no limit. As each doubling gains at most half the last one's gain (the fill halves with
  // the chunk), the pipelines' counts ahead gain at most their last gain times 1/2 + 1/4 + ... +
  // 1/2^doublings: short of the whole of it, which is what falls_behind sets against `fastest`
  // without a limit. (A prediction, as that is: where messages come in, gains have grown.)
  bool cannot_win(SynthMethod m, CollectiveKind kind, int largest, Time fastest,
                  int doublings = -1) const;

  // Whether the server plan sends its rails in messages (synth/plans/rail_messages.hpp) at `cc`'s
  // count of `chunk` bytes and not at half of it (steps charged, under `pipelined`, a plan over
  // servers with even rails, and a way's chunks make fewer messages there only), and its estimate
  // there (plan_estimate, scaled as its time at the largest count below it that it made was to its
  // estimate there, where that is within kServerPlanTrust) beats `fastest` by kDoublingGain. Its
  // times at the counts before say nothing of messages, so cannot_win's verdicts from them do not
  // hold there.
  bool rail_messages_may_win(const Collective& cc, Bytes chunk, Time fastest) const;

 private:
  // Whether plan m's time at `count` is a prediction, the plan left unmade there.
  bool predicted_at(SynthMethod m, int count) const {
    const auto counts = plan_predicted_.find(m);
    return counts != plan_predicted_.end() && counts->second.contains(count);
  }
  // The server plan's estimate (plan_estimate) for `kind` at `count` chunks of `chunk` bytes; an
  // All-Reduce as twice the All-Gather. Nothing where it has none.
  std::optional<double> server_plan_estimate(const ServerPlan& plan, CollectiveKind kind, int count,
                                             Bytes chunk) const;

  const topo::Topology& t_;
  const SynthOptions& o_;
  std::map<SynthMethod, std::map<int, Time>> plan_times_;  // per plan, per count: its time
  std::map<SynthMethod, std::set<int>> plan_predicted_;    // ... the counts it was predicted at
  std::map<int, Time> pipeline_floors_;  // per count the pipelines were left out of: their floor
  std::map<MatcherRun, std::map<int, Time>> matcher_times_;  // per run of the matcher, likewise
  unsigned left_out_ = 0;               // the runs left out (leave_out_matchers)
  bool plan_matcher_left_out_ = false;  // (leave_out_plan_matcher)
  bool matchers_at_figure_ = false;     // ... every one, as none can beat the fastest by 0.5 %
};

}  // namespace tenet::synth::detail
