#include "synth/auto/size_history.hpp"

#include <cmath>
#include <iterator>
#include <optional>

#include "synth/tuning.hpp"

namespace tenet::synth::detail {

SizeHistory::Key SizeHistory::key_of(const topo::Topology& t, const Collective& c) {
  return {t.fingerprint(), t.charges_steps(), c.kind, c.ranks, c.root, c.pair_units};
}

void SizeHistory::record(const topo::Topology& t, const Collective& c, Bytes total_bytes,
                         const std::map<Way, Time>& fastest, Time answer) {
  if (answer <= 0) return;
  const Key key = key_of(t, c);
  std::lock_guard lock(mutex_);
  auto& ways = lost_[key];
  for (const auto& [way, time] : fastest)
    ways[way][total_bytes] =
        static_cast<double>(time) > kAcrossSizesBehind * static_cast<double>(answer);
}

bool SizeHistory::loses(const topo::Topology& t, const Collective& c, Bytes total_bytes, Way way,
                        From from) const {
  const Key key = key_of(t, c);
  std::lock_guard lock(mutex_);
  const auto ways = lost_.find(key);
  if (ways == lost_.end()) return false;
  const auto sizes = ways->second.find(way);
  if (sizes == ways->second.end()) return false;
  // The size nearest total_bytes (as ratios go) at which the way was made, on the side `from`
  // reads (total_bytes itself on either).
  const std::map<Bytes, bool>& made = sizes->second;
  auto ratio = [&](Bytes at) {
    return std::abs(std::log(static_cast<double>(at) / static_cast<double>(total_bytes)));
  };
  std::optional<std::pair<Bytes, bool>> at_or_above, below, nearest;
  const auto above = made.lower_bound(total_bytes);
  if (above != made.end()) at_or_above = *above;
  if (above != made.begin()) below = *std::prev(above);
  if (at_or_above && at_or_above->first == total_bytes)
    nearest = at_or_above;
  else if (from == From::NearestAbove)
    nearest = at_or_above;
  else if (from == From::NearestBelow)
    nearest = below;
  else
    nearest = !below || (at_or_above && ratio(at_or_above->first) <= ratio(below->first))
                  ? at_or_above
                  : below;
  return nearest && nearest->second && ratio(nearest->first) <= std::log(kAcrossSizesRange);
}

}  // namespace tenet::synth::detail
