#include "synth/auto/count_leave_outs.hpp"

#include <cmath>
#include <iterator>

#include "synth/auto/portfolio.hpp"
#include "synth/bounds/lower_bound.hpp"
#include "synth/memo.hpp"
#include "synth/plans/all_reduce.hpp"
#include "synth/plans/rail_deal.hpp"
#include "synth/plans/rail_messages.hpp"
#include "synth/plans/server_plan.hpp"
#include "synth/tuning.hpp"

namespace tenet::synth::detail {

bool gains(Time now, Time before) {
  return static_cast<double>(now) < 0.995 * static_cast<double>(before);
}

std::optional<Time> time_at(const std::map<int, Time>& times, int count) {
  const auto at = times.find(count);
  if (at == times.end()) return std::nullopt;
  return at->second;
}

bool falls_behind(Time last, std::optional<Time> before, Time fastest, double contend, double far,
                  bool without_before) {
  const auto over = [&](double f) {
    return static_cast<double>(last) > f * static_cast<double>(fastest);
  };
  if (over(far)) return true;
  if (!over(contend)) return false;
  // (In doubles: a floor of a link of a few bytes a second saturates at 2^63 - 1 ps.)
  return before ? 2.0 * static_cast<double>(last) - static_cast<double>(*before) >=
                      static_cast<double>(fastest)
                : without_before;
}

bool variant_falls_behind(Time last, std::optional<Time> before, Time fastest) {
  return falls_behind(last, before, fastest, kPipelineVariantBehind, kMatcherFar,
                      /*without_before=*/false);
}

bool CountLeaveOuts::matchers_cannot_gain(const Collective& cc, Bytes chunk, Time fastest) const {
  return static_cast<double>(fastest) <=
             (1 + kMatcherGain) * matcher_figure(t_, cc, chunk, bounds_of(o_)) &&
         !waves_apply(t_, cc, chunk, o_);
}

namespace {

// Whether a matcher (a run of the plain one, or the one on the flow plan) whose times at half and a
// quarter of a count were `last` and `before` is left out of it: falls_behind by kMatcherContend,
// or by kMatcherFar without a count before to show its trend.
bool matcher_falls_behind(std::optional<Time> last, std::optional<Time> before, Time fastest) {
  return last && falls_behind(*last, before, fastest, kMatcherContend, kMatcherFar,
                              /*without_before=*/false);
}

}  // namespace

unsigned CountLeaveOuts::leave_out_matchers(const Collective& cc, Bytes chunk, Time fastest) {
  if (o_.method != SynthMethod::Auto || fastest < 0) return left_out_;
  const int count = cc.chunks_per_npu;
  if (matchers_cannot_gain(cc, chunk, fastest)) {
    matchers_at_figure_ = true;
    for (MatcherRun run : kMatcherRuns) left_out_ |= 1U << static_cast<unsigned>(run);
    return left_out_;
  }
  for (const auto& [run, times] : matcher_times_)
    if (matcher_falls_behind(time_at(times, count / 2), time_at(times, count / 4), fastest))
      left_out_ |= 1U << static_cast<unsigned>(run);
  return left_out_;
}

bool CountLeaveOuts::leaves_out_doubling(MatcherRun run, int count,
                                         const std::map<int, Time>& doubled, Time fastest) const {
  if ((left_out_ >> static_cast<unsigned>(run) & 1U) != 0) return true;
  const auto searched = matcher_times_.find(run);
  const auto at = [&](int k) -> std::optional<Time> {  // the doubling's time, else the search's
    if (const std::optional<Time> mine = time_at(doubled, k)) return mine;
    return searched == matcher_times_.end() ? std::nullopt : time_at(searched->second, k);
  };
  return matcher_falls_behind(at(count / 2), at(count / 4), fastest);
}

std::map<Way, Time> CountLeaveOuts::fastest() const {
  std::map<Way, Time> out;
  for (const auto& [m, times] : plan_times_)
    for (const auto& [count, time] : times) keep_fastest(out, Way::of(m), time);
  for (const auto& [run, times] : matcher_times_)
    for (const auto& [count, time] : times) keep_fastest(out, Way::of(run), time);
  return out;
}

std::optional<Time> fill_and_steps(Time quarter, Time half, Time last) {
  // With q the count at `quarter`: d1 = B / 2q - Cq, d2 = B / 4q - 2Cq, so Cq = (d1 - 2 d2) / 3;
  // the next doubling's d3 = B / 8q - 4Cq = (d1 + Cq) / 4 - 4Cq.
  const double d1 = static_cast<double>(quarter - half), d2 = static_cast<double>(half - last);
  const double cq = (d1 - 2 * d2) / 3;
  if (cq <= 0 || d1 + cq <= 0) return std::nullopt;  // no step term, or no fill term
  return static_cast<Time>(static_cast<double>(last) - ((d1 + cq) / 4 - 4 * cq));
}

bool model_ends_doubling(const std::map<int, Time>& times, int count, Time fastest) {
  if (count < 8) return false;
  const std::optional<Time> eighth = time_at(times, count / 8), quarter = time_at(times, count / 4),
                            half = time_at(times, count / 2), made = time_at(times, count);
  if (!eighth || !quarter || !half || !made) return false;
  const std::optional<Time> at = fill_and_steps(*eighth, *quarter, *half);
  const std::optional<Time> next = fill_and_steps(*quarter, *half, *made);
  return at && next &&
         std::abs(static_cast<double>(*at - *made)) <=
             kPipelinesModelTrust * static_cast<double>(*made) &&
         static_cast<double>(*next) >= (1 - kDoublingGain) * static_cast<double>(fastest);
}

std::optional<double> CountLeaveOuts::server_plan_estimate(const ServerPlan& plan,
                                                           CollectiveKind kind, int count,
                                                           Bytes chunk) const {
  const std::optional<Time> e =
      plan_estimate(t_, plan, count, chunk, o_.link_model, o_.portfolio.rail_messages);
  if (!e || *e <= 0) return std::nullopt;
  return (kind == CollectiveKind::AllReduce ? 2 : 1) * static_cast<double>(*e);
}

bool CountLeaveOuts::server_plan_far_behind(const Collective& cc, Bytes chunk, Time fastest) const {
  const auto times = plan_times_.find(SynthMethod::ServerPlan);
  if (o_.method != SynthMethod::Auto || fastest <= 0 || times == plan_times_.end()) return false;
  const int count = cc.chunks_per_npu;
  const auto after = times->second.lower_bound(count);
  if (after == times->second.begin()) return false;
  const auto& [made_at, time] = *std::prev(after);
  const double bound = static_cast<double>(lower_bound(t_, cc, chunk, bounds_of(o_)).bandwidth);
  const double excess = static_cast<double>(time) - bound;
  return excess > 0 &&
         bound + excess / static_cast<double>(count / made_at) >= static_cast<double>(fastest);
}

bool CountLeaveOuts::leave_out_server_plan(const Collective& cc, Bytes chunk, Time fastest,
                                           std::optional<Time> half,
                                           std::optional<Time> quarter) const {
  const int count = cc.chunks_per_npu;
  if (o_.method != SynthMethod::Auto || fastest <= 0 || count < 2 || !server_plan_applies(t_, cc) ||
      is_rooted(cc.kind))
    return false;
  // Past its least time on its model: more chunks now cost it more in steps than they save in
  // fill (where it would still gain, if by less than 0.5 %, it is made: stopping there measured
  // slower answers and longer searches, docs/tuning.md).
  if (!half)
    if (const std::optional<Time> next = modelled(SynthMethod::ServerPlan, count),
        last = plan_time(SynthMethod::ServerPlan, count / 2);
        next && last && *next >= *last &&
        static_cast<double>(*next) > kServerPlanBehind * static_cast<double>(fastest))
      return true;
  if (transfer_estimate(cc) <= kAutoChunkTurnTransfers) return false;
  const std::optional<Time> last = half ? half : plan_time(SynthMethod::ServerPlan, count / 2);
  if (!last) return false;
  // (One plan for both estimates: its fluid rates do not depend on the chunk size, and its
  // routes only where the quickest route for twice the chunk is another. The count before's,
  // where its All-Gather made it, else this count's.)
  detail::ServerPlans::Plan kept =
      o_.memo ? o_.memo->servers.kept(t_, 2 * chunk, o_.link_model, o_.ecmp_routes) : nullptr;
  if (!kept) kept = server_plan_of(t_, chunk, o_);
  const std::optional<ServerPlan>& plan = *kept;
  // (The staggered estimate models the rails staggered, not dealt over unequal rails:
  // RailDeal.)
  if (!plan || (!plan->flat() && !plan->pods() && !even_rails(t_, *plan))) return false;
  auto estimate = [&](int k, Bytes at) { return server_plan_estimate(*plan, cc.kind, k, at); };
  const std::optional<double> before = estimate(count / 2, 2 * chunk);
  if (!before) return false;
  double ratio = static_cast<double>(*last) / *before;
  if (std::abs(ratio - 1) > kServerPlanTrust) return false;
  // Where the plan also made a time at a quarter of the count that followed its estimate, the
  // less favourable of the two ratios: the estimate is trusted only as far as both counts bear it
  // out (a count that beat its estimate by luck promises no more at the next).
  if (!quarter) quarter = plan_time(SynthMethod::ServerPlan, count / 4);
  if (quarter)
    if (const std::optional<double> then = estimate(count / 4, 4 * chunk)) {
      const double earlier = static_cast<double>(*quarter) / *then;
      if (std::abs(earlier - 1) <= kServerPlanTrust) ratio = std::max(ratio, earlier);
    }
  const std::optional<double> now = estimate(count, chunk);
  return now && ratio * *now > kServerPlanBehind * static_cast<double>(fastest);
}

bool CountLeaveOuts::rail_messages_may_win(const Collective& cc, Bytes chunk, Time fastest) const {
  const int count = cc.chunks_per_npu;
  if (!rail_messages_asked(t_, o_) || count < 2 || fastest <= 0 || is_rooted(cc.kind) ||
      !server_plan_applies(t_, cc) ||
      rail_message_sizes(count, kRailMessageShrink).size() == static_cast<size_t>(count) ||
      rail_message_sizes(count / 2, kRailMessageShrink).size() < static_cast<size_t>(count / 2))
    return false;
  const detail::ServerPlans::Plan kept = server_plan_of(t_, chunk, o_);
  const std::optional<ServerPlan>& plan = *kept;
  if (!plan || !rail_messages_apply(t_, *plan, even_rails(t_, *plan), o_)) return false;
  auto estimate = [&](int k, Bytes at) { return server_plan_estimate(*plan, cc.kind, k, at); };
  // Scaled as the plan's time at the largest count below it that it made was to its estimate,
  // where that is within kServerPlanTrust (as leave_out_server_plan trusts it).
  for (int k = count / 2; k >= 1; k /= 2)
    if (const std::optional<Time> made = plan_time(SynthMethod::ServerPlan, k)) {
      const std::optional<double> then = estimate(k, chunk * (count / k)),
                                  now = estimate(count, chunk);
      if (!then || !now) return false;
      const double ratio = static_cast<double>(*made) / *then;
      return std::abs(ratio - 1) <= kServerPlanTrust &&
             ratio * *now < (1 - kDoublingGain) * static_cast<double>(fastest);
    }
  return false;
}

bool CountLeaveOuts::leave_out_pipelines(int count, Time fastest) {
  if (o_.method != SynthMethod::Auto || fastest <= 0 || count < 2) return false;
  std::optional<Time> last = plan_time(SynthMethod::PlanPipeline, count / 2);
  if (!last) last = time_at(pipeline_floors_, count / 2);
  if (!last ||
      static_cast<double>(*last) / 2 <= 2 * kPipelinesContend * static_cast<double>(fastest))
    return false;
  pipeline_floors_[count] = *last / 2;
  return true;
}

bool CountLeaveOuts::leave_out_plan_matcher(int count, Time fastest) {
  if (o_.method != SynthMethod::Auto || fastest <= 0 || count < 2) return false;
  if (!plan_matcher_left_out_)
    plan_matcher_left_out_ =
        matcher_falls_behind(plan_time(SynthMethod::PlanMatcher, count / 2),
                             plan_time(SynthMethod::PlanMatcher, count / 4), fastest);
  return plan_matcher_left_out_;
}

std::optional<Time> CountLeaveOuts::plan_time(SynthMethod m, int count) const {
  const auto times = plan_times_.find(m);
  if (times == plan_times_.end()) return std::nullopt;
  return time_at(times->second, count);
}

std::optional<Time> CountLeaveOuts::modelled(SynthMethod m, int count) const {
  if (!t_.charges_steps() || count < 8) return std::nullopt;
  const std::optional<Time> eighth = plan_time(m, count / 8);
  const std::optional<Time> quarter = eighth ? plan_time(m, count / 4) : std::nullopt;
  const std::optional<Time> last = quarter ? plan_time(m, count / 2) : std::nullopt;
  return last ? fill_and_steps(*eighth, *quarter, *last) : std::nullopt;
}

bool CountLeaveOuts::cannot_win(SynthMethod m, CollectiveKind kind, int largest, Time fastest,
                                int doublings) const {
  // The server plan left out of `largest` on its model (leave_out_server_plan), past its least
  // time there: under the model each doubling after it loses more.
  if (m == SynthMethod::ServerPlan && !plan_time(m, largest))
    if (const std::optional<Time> at = modelled(m, largest), before = plan_time(m, largest / 2);
        at && before && *at >= *before)
      return true;

  const bool pipelines = m == SynthMethod::PlanPipeline;
  // An All-Reduce's pipelines left unmade on their prediction at `largest` (below).
  const bool stand_in = pipelines && kind == CollectiveKind::AllReduce && predicted_at(m, largest);
  // The pipelines whose times at the search's last four counts follow fill and steps (the model's
  // time at `largest` from the three before within kPipelinesModelTrust of the one made) and whose
  // next count on the model does not beat `fastest` by more than kDoublingGain.
  if (pipelines && !stand_in && t_.charges_steps())
    if (const auto times = plan_times_.find(m);
        times != plan_times_.end() && model_ends_doubling(times->second, largest, fastest))
      return true;
  // (The pipelines left out of a count, leave_out_pipelines: their floor there stands for their
  // time at `largest`, over twice kPipelinesContend of `fastest`; at half that count it says
  // nothing of the doubling's gain.)
  // (Nor is an All-Reduce's pipelines' stand-in at half that count, left unmade on their
  // prediction, a time the doubling gained from: it is their halves' likely times summed, as if
  // neither overlapped the other, over what they would take joined. With no time there, the count
  // at `largest` is as the doubling's first, which double_plans ends over kPipelinesContend of the
  // fastest whatever it gained.)
  // (Nor, likewise, their stand-in at `largest` itself: over what they would take joined, it would
  // put them behind where they may not be: docs/tuning.md, kPipelinesPersist.)
  std::optional<Time> last = plan_time(m, largest);
  std::optional<Time> before = plan_time(m, largest / 2);
  if (pipelines && kind == CollectiveKind::AllReduce && predicted_at(m, largest / 2))
    before.reset();
  if (stand_in) last.reset();
  if (!last && pipelines) last = time_at(pipeline_floors_, largest);
  if (!last) return false;
  if (m == SynthMethod::ServerPlan && before && !gains(*last, *before)) return true;
  const bool floored_before = pipelines && !before && time_at(pipeline_floors_, largest / 2);
  // (falls_behind sets the last gain, gained once more in all, against `fastest`; the pipelines
  // within their budgets gain at most its halving series up to their last count: `doublings`.)
  if (pipelines && before && *before > *last && doublings >= 0 && doublings < 62)
    before = *last + static_cast<Time>(static_cast<double>(*before - *last) *
                                       (1 - std::ldexp(1.0, -doublings)));
  return falls_behind(*last, before, fastest, kPipelinesContend, 2 * kPipelinesContend,
                      /*without_before=*/!floored_before);
}

}  // namespace tenet::synth::detail
