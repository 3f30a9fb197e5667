// What a run that synthesizes one collective at size after size (the simulator: a workload's
// All-Reduces of each layer's gradients) learned at each: which of `auto`'s ways lost there, so
// that the sizes after it need not make them again (PortfolioOptions::across_sizes).
//
// A way is one run of the plain matcher (MatcherRun), one plan (the server plan, the matcher on the
// flow plan, the flow plan's pipelines), the composition per level or one baseline's chunk search
// (race_baselines). It lost at a size where the fastest it made there, over every count, took over
// kAcrossSizesBehind of the answer's time (a baseline's count not made because its floor could not
// beat the answer counts at that floor, below its time: a baseline is said to lose by far only
// where its floors say so). At another size it is predicted to lose where the size nearest it at
// which it was made is within kAcrossSizesRange of it (either way; a baseline's, on one side
// alone: From) and it lost there. A heuristic, not a floor: the times of two ways need not scale
// alike with the size (latency against bandwidth); the margin and the range are where the
// simulator's answers measured the same (docs/tuning.md).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "synth/baselines/baselines.hpp"
#include "synth/synthesizer.hpp"
#include "topo/topology.hpp"

namespace tenet::synth::detail {

// One of `auto`'s ways, as the history tells them apart.
struct Way {
  enum class Kind : uint8_t { Matcher, Plan, Baseline };
  static Way of(MatcherRun run) { return {Kind::Matcher, static_cast<uint8_t>(run)}; }
  static Way of(SynthMethod plan) { return {Kind::Plan, static_cast<uint8_t>(plan)}; }
  static Way of(BaselineKind baseline) { return {Kind::Baseline, static_cast<uint8_t>(baseline)}; }
  Kind kind = Kind::Matcher;  // and id: its MatcherRun, SynthMethod or BaselineKind
  uint8_t id = 0;
  friend auto operator<=>(const Way&, const Way&) = default;
};

// Whether the run `o` learns across sizes: method auto, PortfolioOptions::across_sizes, and a memo
// to keep the history in (SynthMemo::sizes).
inline bool learns_across_sizes(const SynthOptions& o) {
  return o.method == SynthMethod::Auto && o.portfolio.across_sizes && o.memo != nullptr;
}

// `fastest[way]` lowered to `time` (set where it has none).
inline void keep_fastest(std::map<Way, Time>& fastest, Way way, Time time) {
  auto [it, added] = fastest.emplace(way, time);
  if (!added) it->second = std::min(it->second, time);
}

// Safe to share between threads; what it predicts depends on the order the sizes were recorded
// in, so only a caller that synthesizes one size after another (the simulator) asks it.
class SizeHistory {
 public:
  // The fastest each way made at `total_bytes` of `c` on `t` (over every count; a floor, or a
  // prediction of a way left unmade, where that is what it reported), against the answer's time.
  void record(const topo::Topology& t, const Collective& c, Bytes total_bytes,
              const std::map<Way, Time>& fastest, Time answer);
  // Which sizes a prediction reads: the nearest either way, or the nearest at or above (below) the
  // size asked, for a way that may only gain on the answer as the size grows (falls). A baseline
  // of many steps pays more fixed costs than the answer and loses more as the size falls (NVLS on
  // dgx-h100: over 1.2x behind at 7.82 MiB, the answer at 57.07 MiB); one of few steps sends more
  // bytes, or slower ones, and loses more as it grows.
  enum class From : uint8_t { Nearest, NearestAbove, NearestBelow };
  // Whether `way` is predicted to lose at `total_bytes` of `c` on `t` (above).
  bool loses(const topo::Topology& t, const Collective& c, Bytes total_bytes, Way way,
             From from = From::Nearest) const;

 private:
  // The topology's fingerprint and whether it charges per-step costs, the collective's kind, its
  // ranks and root, and an All-to-Allv's traffic (Collective::pair_units: another matrix is another
  // collective, whatever its size).
  using Key =
      std::tuple<uint64_t, bool, CollectiveKind, std::vector<NodeId>, int, std::vector<int32_t>>;
  static Key key_of(const topo::Topology& t, const Collective& c);
  mutable std::mutex mutex_;
  std::map<Key, std::map<Way, std::map<Bytes, bool>>> lost_;  // per way, per size: whether it lost
};

}  // namespace tenet::synth::detail
