#include "synth/plans/pipeline_variants.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <utility>
#include <vector>

#include "synth/bounds/lower_bound.hpp"
#include "synth/memo.hpp"

namespace tenet::synth {
namespace detail {

bool mixed_speeds(const topo::Topology& t) {
  for (const topo::Link& l : t.links())
    if (l.bandwidth != t.link(0).bandwidth) return true;
  return false;
}

PipelineVariant pipeline_variant(int v) {
  PipelineVariant p;
  if (v >= kPipelineSerial) {
    const int w = v - kPipelineSerial;
    p.shape = {.lanes = w % 2 == 1, .split = 1, .least_lane = 0, .serial = true};
    p.sped_up = w >= 2;
    return p;
  }
  p.shape = {.lanes = v % kPipelineVariants >= 2,
             .split = v % kPipelineSpedUp >= kPipelineVariants ? kPipelineSplit : 1,
             .least_lane = kLeastLane,
             .serial = false};
  p.paced = v % 2 == 1;
  p.sped_up = v >= kPipelineSpedUp;
  return p;
}

std::optional<int> unpaced_twin(int v) {
  if (v < 0 || v >= kPipelineInTurn || !pipeline_variant(v).paced) return std::nullopt;
  return v - 1;
}

bool floor_may_decide(const PipelineOptions& p, int v, Time mark) {
  if (mark <= 0) return false;
  if (p.floors_before == nullptr) return true;
  const auto before = p.floors_before->find(v);
  return before == p.floors_before->end() || before->second >= mark;
}

void for_each_pipeline_variant(const topo::Topology& t, const Collective& c, Bytes chunk_bytes,
                               const SynthOptions& o, const std::optional<Algorithm>& best,
                               const std::function<void(int)>& made) {
  const auto run = [&](int v) {
    if ((o.pipelines.left_out >> v & 1) == 0) made(v);
  };
  if (o.pipelines.variants != 0) {
    for (int v = 0; v < kPipelineInTurn; ++v)
      if ((o.pipelines.variants >> v & 1) != 0) run(v);
    return;
  }
  const bool mixed = mixed_speeds(t);
  for (int sped = 0; sped <= (mixed ? kPipelineSpedUp : 0); sped += kPipelineSpedUp)
    for (int v = 0; v < pipeline_variants(t); ++v) run(sped + v);
  if (!mixed) return;
  // (Where every whole variant was left out, the caller's fastest stands for theirs.)
  const Time fastest = best ? best->claimed_time : o.to_beat;
  if (fastest > 0 && o.pipelines.split &&
      static_cast<double>(fastest) >
          kPipelinesPersist *
              static_cast<double>(lower_bound(t, c, chunk_bytes, bounds_of(o)).coarse))
    for (int sped = 0; sped <= kPipelineSpedUp; sped += kPipelineSpedUp)
      for (int v = kPipelineVariants; v < 2 * kPipelineVariants; ++v) run(sped + v);
  for (int w = 0; w < 4; ++w) run(kPipelineSerial + w);
}

}  // namespace detail

using namespace detail;

uint64_t fastest_pipeline_variants(const std::map<int, Time>& times, size_t n) {
  std::vector<std::pair<Time, int>> fastest;
  std::array<std::pair<Time, int>, 2> halves{{{-1, -1}, {-1, -1}}};
  for (const auto& [v, time] : times) {
    const int h = v < kInTurnHalf[0] ? -1 : v < kInTurnHalf[1] ? 0 : 1;
    if (h < 0)
      fastest.emplace_back(time, v);
    else if (halves[h].first < 0 || time < halves[h].first)
      halves[h] = {time, v};
  }
  std::sort(fastest.begin(), fastest.end());
  uint64_t mask = 0;
  for (size_t i = 0; i < fastest.size() && i < n; ++i) mask |= uint64_t{1} << fastest[i].second;
  if ((mask >> kPipelineInTurn & 1) != 0)
    for (const auto& [time, v] : halves)
      if (v >= 0) mask |= uint64_t{1} << v;
  return mask;
}

}  // namespace tenet::synth
