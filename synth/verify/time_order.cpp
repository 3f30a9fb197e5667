#include "synth/verify/time_order.hpp"

#include <algorithm>
#include <bit>
#include <boost/sort/spreadsort/integer_sort.hpp>
#include <cstdint>

namespace tenet::synth {

void sort_by_time(std::vector<TimedTransfer>& events) {
  if (events.empty()) return;
  const auto [least, most] = std::minmax_element(
      events.begin(), events.end(),
      [](const TimedTransfer& x, const TimedTransfer& y) { return x.at < y.at; });
  TransferId last_id = 0;
  for (const TimedTransfer& e : events) last_id = std::max(last_id, e.id);
  const auto earliest = static_cast<uint64_t>(least->at);
  const int id_bits = std::bit_width(static_cast<uint64_t>(last_id));
  if (std::bit_width(static_cast<uint64_t>(most->at) - earliest) + id_bits > 64) {
    std::sort(events.begin(), events.end());
    return;
  }
  std::vector<uint64_t> keys(events.size());
  for (size_t i = 0; i < events.size(); ++i)
    keys[i] = (static_cast<uint64_t>(events[i].at) - earliest) << id_bits |
              static_cast<uint64_t>(events[i].id);
  boost::sort::spreadsort::integer_sort(keys.begin(), keys.end());
  const uint64_t id_mask = (uint64_t{1} << id_bits) - 1;
  for (size_t i = 0; i < keys.size(); ++i)
    events[i] = {static_cast<Time>(earliest + (keys[i] >> id_bits)),
                 static_cast<TransferId>(keys[i] & id_mask)};
}

}  // namespace tenet::synth
