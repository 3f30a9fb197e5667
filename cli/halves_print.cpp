#include "cli/halves_print.hpp"

#include <fmt/format.h>

#include <string>

namespace tenet::cli {

std::optional<synth::HalvesInTurn> halves_beyond(const topo::Topology& t, const synth::Algorithm& a,
                                                 const synth::LowerBound& bound,
                                                 synth::BoundMemo* memo) {
  std::optional<synth::HalvesInTurn> h =
      synth::halves_in_turn_bound(t, a.collective, a.chunk_bytes, a.step_costs, memo);
  if (h && !h->above(bound)) h.reset();
  return h;
}

void print_halves(const synth::HalvesInTurn& h, Time time, int width) {
  fmt::print(
      "{:<{}}{}  (a Reduce-Scatter, then an All-Gather once it has ended, take {} + {} at least: a "
      "bound on that shape only; this algorithm takes {:.4f}x that, and one that overlaps the "
      "halves may take less)\n",
      "halves in turn ", width, format_time(h.total()), format_time(h.reduce_scatter.total),
      format_time(h.all_gather.total), static_cast<double>(time) / static_cast<double>(h.total()));
  if (const std::string limit = synth::describe_limit(h); !limit.empty())
    fmt::print("{:<{}}{}\n", "halves' limit ", width, limit);
}

}  // namespace tenet::cli
