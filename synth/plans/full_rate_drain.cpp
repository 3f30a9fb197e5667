#include "synth/plans/full_rate_drain.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <optional>
#include <utility>
#include <vector>

#include "synth/cost/protocol_view.hpp"
#include "synth/cost/timing.hpp"
#include "synth/tuning.hpp"

namespace tenet::synth::detail {

Time drain_cut(Time span, double tail) {
  return span - static_cast<Time>(tail * static_cast<double>(span));
}

Time drained_floor(const topo::Topology& t, const Algorithm& a, Time cut, Time span) {
  const ProtocolView view(t, a);
  const topo::Topology& u = view.topology();
  RouteCoster coster(u, a);
  std::vector<Time> after(static_cast<size_t>(u.num_links()), 0);
  for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id) {
    const Transfer& x = a[id];
    if (x.end <= cut) continue;
    // (What drained_from re-rates takes its route's full rate, all of it after the cut.)
    const bool re_rated = x.start >= cut && a.rate(id) != 0;
    const RouteCost cost = re_rated ? coster(a.route(id), 0, x.count) : coster(a, id);
    const Time held = re_rated ? cost.occupancy
                               : std::min(x.start + cost.occupancy, span) - std::max(x.start, cut);
    if (held <= 0) continue;
    for (LinkId l : a.route(id))
      after[static_cast<size_t>(l)] +=
          busy_share(held, held_rate(u, l, cost.rate, a.link_model), u.link(l).bandwidth);
  }
  return cut + *std::max_element(after.begin(), after.end());
}

std::optional<Algorithm> drained_from(const topo::Topology& t, const Algorithm& a, Time cut) {
  std::optional<Algorithm> b;
  for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id)
    if (a[id].start >= cut && a.rate(id) != 0) {
      if (!b) b = a;
      b->set_rate(id, 0);
    }
  if (b) time(t, *b);
  return b;
}

bool drain_at_full_rate(const topo::Topology& t, Algorithm& a, const Deadline* deadline) {
  if (a.size() == 0 || static_cast<int64_t>(a.size()) > kDrainTransferBudget || !a.has_rates() ||
      !a.fully_timed())
    return false;
  const Time span = a.makespan();
  if (span <= 0) return false;
  constexpr int kTails = static_cast<int>(std::size(kDrainTails));
  std::optional<Algorithm> best;
  double best_tail = 0;
  // Tries the tail at `i`: whether it is faster than the fastest so far (then kept). Not made where
  // its floor (drained_floor) cannot beat that by more than kDrainGain.
  auto gains = [&](int i) {
    if (i < 0 || i >= kTails) return false;
    const Time fastest = best ? best->claimed_time : a.claimed_time;
    const Time cut = drain_cut(span, kDrainTails[i]);
    if (static_cast<double>(drained_floor(t, a, cut, span)) >=
        (1 - kDrainGain) * static_cast<double>(fastest))
      return false;
    // (Asked only of a step that would be taken: one past the deadline marks the search stopped.)
    if (deadline && deadline->reached(kSearchSecondsPerTransfer * static_cast<double>(a.size())))
      return false;
    std::optional<Algorithm> b = drained_from(t, a, cut);
    if (!b || b->claimed_time >= fastest) return false;
    best = std::move(b);
    best_tail = kDrainTails[i];
    return true;
  };
  const bool first = gains(kDrainTailsFirst);
  // Then shorter tails while they gain; where the first shorter one does not but the first tail
  // did, longer ones while they gain.
  int i = kDrainTailsFirst - 1;
  const bool shorter = gains(i);
  while (shorter && gains(--i)) {
  }
  if (!shorter && first)
    for (i = kDrainTailsFirst + 1; gains(i); ++i) {
    }
  if (!best) return false;
  best->provenance.full_rate_drain = best_tail;
  best->method +=
      fmt::format("; the transfers of its last {:g} % at their routes' full rate", 100 * best_tail);
  a = std::move(*best);
  return true;
}

}  // namespace tenet::synth::detail
