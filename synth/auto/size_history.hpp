// What a run that synthesizes one collective at size after size (the simulator: a workload's
// All-Reduces of each layer's gradients) learned at each: which of `auto`'s ways lost there, so
// that the sizes after it need not make them again (PortfolioOptions::across_sizes).
//
// A way is one run of the plain matcher (MatcherRun), one plan (the server plan, the matcher on the
// flow plan, the flow plan's pipelines) or the composition per level. It lost at a size where the
// fastest it made there, over every count, took over kAcrossSizesBehind of the answer's time. At
// another size it is predicted to lose where the size nearest it at which it was made is within
// kAcrossSizesRange of it (either way) and it lost there. A heuristic, not a floor: the times of
// two ways need not scale alike with the size (latency against bandwidth); the margin and the
// range are where the simulator's answers measured the same (docs/tuning.md).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "synth/synthesizer.hpp"
#include "topo/topology.hpp"

namespace tenet::synth::detail {

// One of `auto`'s ways, as the history tells them apart.
struct Way {
  static Way of(MatcherRun run) { return {false, static_cast<uint8_t>(run)}; }
  static Way of(SynthMethod plan) { return {true, static_cast<uint8_t>(plan)}; }
  bool plan = false;  // a plan (id: its SynthMethod), else a run of the plain matcher (MatcherRun)
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
  // Whether `way` is predicted to lose at `total_bytes` of `c` on `t` (above).
  bool loses(const topo::Topology& t, const Collective& c, Bytes total_bytes, Way way) const;

 private:
  // The topology's fingerprint and whether it charges per-step costs, the collective's kind, its
  // ranks and root.
  using Key = std::tuple<uint64_t, bool, CollectiveKind, std::vector<NodeId>, int>;
  static Key key_of(const topo::Topology& t, const Collective& c);
  mutable std::mutex mutex_;
  std::map<Key, std::map<Way, std::map<Bytes, bool>>> lost_;  // per way, per size: whether it lost
};

}  // namespace tenet::synth::detail
