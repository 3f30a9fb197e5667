// The plain matcher doubling alone past the flat chunk search (matcher_doubling.hpp).
#include "synth/auto/matcher_doubling.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "synth/auto/deadline.hpp"
#include "synth/auto/pipeline_doubling.hpp"
#include "synth/auto/portfolio.hpp"
#include "synth/cost/timing.hpp"
#include "synth/plans/all_reduce.hpp"
#include "synth/plans/pipeline_variants.hpp"
#include "synth/tuning.hpp"

namespace tenet::synth::detail {

std::vector<MatcherVariant> MatcherDoubling::winning_variants(const ChunkingResult& best,
                                                              int largest) const {
  std::vector<MatcherVariant> variants;
  if (o.method != SynthMethod::Auto || best.chunks_per_npu != largest || at_bound(best.algorithm))
    return variants;
  SynthOptions v = quiet;
  v.method = SynthMethod::Matcher;
  const Provenance matcher(Producer::Matcher);
  variants.push_back({v, "matcher", matcher, MatcherRun::Scarce});
  if (o.link_model == LinkModel::Pipelined && mixed_speeds(t)) {  // as synthesize_once runs them
    SynthOptions hold = v;
    hold.link_model = LinkModel::Hold;  // re-timed under the pipelined model below
    hold.portfolio.random_choice = false;
    Provenance under_hold = matcher;
    under_hold.under_hold = true;
    variants.push_back(
        {hold, "matcher" + std::string(kUnderHold), under_hold, MatcherRun::ScarceUnderHold});
  }
  if (o.portfolio.random_choice && o.matcher.priority == ChunkPriority::Scarce && mixed_speeds(t)) {
    v.matcher.priority = ChunkPriority::Random;
    Provenance random = matcher;
    random.choice = MatcherChoice::Random;
    variants.push_back({v, std::string(kRandomMatcher), random, MatcherRun::Random});
    v.matcher.slow_links_yield = true;
    random.choice = MatcherChoice::RandomYielding;
    variants.push_back(
        {v, std::string(kRandomYieldingMatcher), random, MatcherRun::RandomYielding});
  }
  const bool won = std::any_of(variants.begin(), variants.end(), [&](const MatcherVariant& x) {
    return x.made_by == best.algorithm.provenance;
  });
  if (!won) variants.clear();
  return variants;
}

void MatcherDoubling::run(Collective c, int largest, double next_count, Time matcher_last,
                          const std::vector<MatcherVariant>& variants, ChunkingResult& best,
                          Time first) const {
  Time previous = matcher_last;
  double last_seconds = next_count / 2;  // what the last count took
  // Each variant's times at the doubling's counts, and those it leaves out for good, as the
  // search would leave them out of its next count (CountLeaveOuts::leaves_out_doubling).
  std::map<MatcherRun, std::map<int, Time>> times;
  std::set<MatcherRun> left_out;
  if (first > 0 && first < best.algorithm.claimed_time)
    for (const ChunkingResult::Try& before : best.tried)
      if (2 * before.chunks_per_npu == largest && !before.alone && !before.floor &&
          !doubling_promises(matcher_last, before.time, first))
        return;
  // Where another way beat the matcher's answer past the search (the plans' doubling alone), a
  // variant starts only where its own last gain in the search, gained again, beats that by
  // kDoublingGain: as a count of the doubling that does not ends it (below).
  if (const Time beat = under_first(best.algorithm.claimed_time, first); beat < matcher_last)
    for (const MatcherVariant& v : variants) {
      const std::optional<Time> now = leave_outs.matcher_time(v.run, largest),
                                before = leave_outs.matcher_time(v.run, largest / 2);
      if (now && before && !doubling_promises(*now, *before, beat)) left_out.insert(v.run);
    }
  for (int k = 2 * largest; !variants.empty() && k <= (1 << 20) && !at_bound(best.algorithm);
       k *= 2) {
    c.chunks_per_npu = k;
    const Bytes chunk = c.chunk_bytes_for(total_bytes);
    if (chunk < 1 || c.pieces() > total_bytes || transfer_estimate(c) > kPipelineTransferBudget)
      break;
    const Time beat = under_first(best.algorithm.claimed_time, first);
    std::optional<Time> fastest;
    if ((o.deadline && o.deadline->reached(2 * last_seconds)) ||
        leave_outs.matchers_cannot_gain(c, chunk, beat))
      break;  // (as leave_out_matchers leaves the matchers out of a count)
    for (const MatcherVariant& v : variants)
      if (leave_outs.leaves_out_doubling(v.run, k, times[v.run], beat)) left_out.insert(v.run);
    if (left_out.size() == variants.size()) break;
    const auto began = Deadline::Clock::now();
    for (const auto& [variant, label, made_by, run] : variants) {
      if (left_out.contains(run)) continue;
      Algorithm a = synthesize(t, c, chunk, variant);
      if (variant.link_model != o.link_model) {
        a.link_model = o.link_model;
        time(t, a);
      }
      times[run][k] = a.claimed_time;
      fastest = std::min(fastest.value_or(a.claimed_time), a.claimed_time);
      if (a.claimed_time < best.algorithm.claimed_time) {
        const int waves = a.provenance.waves;
        a.method = waves > 0 ? label + in_waves_words(waves) : label;
        a.provenance = made_by;
        a.provenance.waves = waves;
        displace_answer(best, std::move(a), k);
      }
    }
    last_seconds = seconds_since(began);
    best.tried.push_back({k, *fastest, SynthMethod::Matcher});
    // (Where another way is the fastest, gaining on its own count before is not enough.)
    if (!doubling_promises(*fastest, previous, under_first(best.algorithm.claimed_time, first)))
      break;
    previous = *fastest;
  }
}

}  // namespace tenet::synth::detail
