#include "synth/auto/pipeline_doubling.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <optional>
#include <utility>

#include "synth/auto/count_leave_outs.hpp"
#include "synth/plans/pipeline_variants.hpp"
#include "synth/tuning.hpp"

namespace tenet::synth::detail {

std::map<int, Time> least_known(const std::map<int, Time>& times,
                                const std::map<int, Time>& floors) {
  std::map<int, Time> least = times;
  for (const auto& [v, floor] : floors)
    if (const auto at = least.find(v); at != least.end()) at->second = std::min(at->second, floor);
  return least;
}

std::map<int, Time> SearchedVariants::floors_before(int count) const {
  const auto below = times.lower_bound(count);
  if (below == times.begin()) return {};
  const auto last = std::prev(below);
  const auto floored = floors.find(last->first);
  return least_known(last->second,
                     floored == floors.end() ? std::map<int, Time>() : floored->second);
}

std::map<int, Time> SearchedVariants::timed_at(int count) const {
  const auto at = timed.find(count);
  return at == timed.end() ? std::map<int, Time>() : at->second;
}

uint64_t variants_falling_behind(const std::map<int, Time>& last,
                                 const std::map<int, Time>& before) {
  Time fastest = -1;
  for (const auto& [v, time] : last)
    if (v < kInTurnHalf[0] && (fastest < 0 || time < fastest)) fastest = time;
  uint64_t out = 0;
  for (const auto& [v, time] : last) {
    if (v >= kInTurnHalf[0] || (v < kPipelineInTurn && pipeline_variant(v).shape.split > 1))
      continue;
    const auto then = before.find(v);
    if (variant_falls_behind(
            time, then == before.end() ? std::nullopt : std::optional(then->second), fastest))
      out |= uint64_t{1} << v;
  }
  return out;
}

void DoublingVariants::listen(PipelineOptions& p) {
  p.on_variant = [this](int v, Time time) { times_[v] = time; };
  p.on_timed = [this](int v, Time time) { timed_[v] = time; };
  p.on_floor = [this](int v, Time floor) { floors_[v] = floor; };
}

void DoublingVariants::before(int k, bool fastest_alone, PipelineOptions& p) {
  if (pipelines_ && k == 2 * largest_)
    timed_ = searched_.timed_at(largest_);
  else if (pipelines_ && !timed_.empty())
    out_ |= variants_falling_behind(timed_, timed_before_);
  if (pipelines_ && fastest_alone && !times_.empty())
    p.variants = fastest_pipeline_variants(times_, kVariantsPast);
  p.left_out = out_;
  floors_before_ = !pipelines_         ? std::map<int, Time>()
                   : k == 2 * largest_ ? searched_.floors_before(k)
                                       : least_known(times_, floors_);
  floors_.clear();
  timed_before_ = std::move(timed_);
  timed_.clear();
  times_.clear();
  p.floors_before = floors_before_.empty() ? nullptr : &floors_before_;
}

bool DoublingModel::ends_at(int k, Time now, Time fastest) {
  if (!applies_) return false;
  times_[k] = now;
  return model_ends_doubling(times_, k, fastest);
}

bool doubling_promises(Time now, Time before, Time fastest) {
  // (In doubles: a floor of a link of a few bytes a second saturates at 2^63 - 1 ps.)
  return 2.0 * static_cast<double>(now) - static_cast<double>(before) <
         (1 - kDoublingGain) * static_cast<double>(fastest);
}

Time doubling_stops_at(Time fastest, Time last, Time trend) {
  const auto over = [](double x) { return static_cast<Time>(std::floor(x)) + 1; };
  Time at = over(kPipelinesContend * static_cast<double>(fastest));
  if (last >= 0)
    at = std::max(
        at, over(((1 - kDoublingGain) * static_cast<double>(fastest) + static_cast<double>(trend)) /
                 2));
  return at;
}

bool doubling_goes_past(Time stands, Time trend, Time fastest, Time bandwidth) {
  const Time under = std::clamp<Time>(bandwidth, 0, stands);
  const Time halved = under + (stands - under) / 2;
  return trend >= 0 && doubling_promises(stands, trend, fastest) &&
         static_cast<double>(halved) < (1 - kDoublingGain) * static_cast<double>(fastest);
}

}  // namespace tenet::synth::detail
