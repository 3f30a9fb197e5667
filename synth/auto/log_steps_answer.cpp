#include "synth/auto/log_steps_answer.hpp"

#include <fmt/format.h>

#include <utility>

#include "synth/auto/portfolio.hpp"
#include "synth/memo.hpp"
#include "synth/tuning.hpp"

namespace tenet::synth::detail {

std::optional<LogStepsAnswer> log_steps_answer(
    const topo::Topology& t, const Collective& c, Bytes total_bytes, const SynthOptions& o,
    const std::function<bool(const Algorithm&)>& at_bound) {
  if (o.method != SynthMethod::Auto || !o.portfolio.baselines) return std::nullopt;
  Collective one = c;
  one.chunks_per_npu = 1;
  if (transfer_estimate(one) <= kAutoChunkTurnTransfers) return std::nullopt;
  std::optional<LogStepsAnswer> out;
  for_each_baseline(t, c, [&](const BaselineSpec& spec) {
    if ((out && out->at_bound) ||
        (spec.kind != BaselineKind::Rhd && spec.kind != BaselineKind::Bruck))
      return;
    Made<Algorithm> made_here =
        try_baseline(spec, t, one, one.chunk_bytes_for(total_bytes), o.link_model,
                     o.reduce_bandwidth, true, baselines_of(o));
    Algorithm* a = made(made_here);
    if (!a || (out && a->claimed_time >= out->result.algorithm.claimed_time)) return;
    const bool enough = at_bound(*a);
    const Time time = a->claimed_time;
    LogStepsAnswer answer{{std::move(*a), 1, {{1, time, std::nullopt, false}}, std::nullopt},
                          enough};
    Algorithm& made = answer.result.algorithm;
    made.method =
        enough ? fmt::format(
                     "baseline {} (within {} % of the bound at one chunk per NPU: the search was "
                     "left out)",
                     spec.name(), 100 * kChunkSearchSlack)
               : fmt::format(
                     "baseline {} (made first at one chunk per NPU, as the search's first "
                     "count is over {} transfers)",
                     spec.name(), kAutoChunkTurnTransfers);
    made.provenance = Provenance::of_baseline(spec.name());
    made.name = "tenet";
    out = std::move(answer);
  });
  return out;
}

}  // namespace tenet::synth::detail
