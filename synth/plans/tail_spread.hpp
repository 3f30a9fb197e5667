// A timed algorithm's last deliveries, listed again: earliest arrival first over its own ways.
//
// Model: producers that follow trees (the flow plan's, a box's trees lifted over its NICs) send
// each chunk down its tree hop by hop, however deep the tree. Where the links into part of the
// fabric are the cut (a box's NICs) and the links inside have room, the chunks that cross the cut
// last still go down their trees, one chunk time a hop, after the cut's links have gone idle: the
// run ends a tree's depth of chunk times after its bottleneck did. From a cut time on, the
// transfers that start at or after it are taken out and what they delivered is delivered again by
// list scheduling: a node that holds the chunk sends it to one that still needs it, over one of
// the ways (routes) the algorithm already uses, whichever arrives soonest given when each link
// is free, each link taken whole, one transfer after the other. The schedule before the cut stays
// as it was; the result is timed under the model in full and verified as any other.
//
// For collectives that only copy (no reduction: a chunk's every copy is alike, so any holder may
// send it) and whose chunk sizes are even, and an All-Reduce's copies from a cut past its last
// reduction (each chunk whole at its one owner, the node its partials were reduced into, and at
// every node a copy of it reached since); a Reduce-Scatter's head through its reverse in time
// (spread_head).
#pragma once

#include <optional>
#include <span>

#include "synth/auto/deadline.hpp"
#include "synth/ir/algorithm.hpp"
#include "topo/topology.hpp"

namespace tenet::synth::detail {

// `a` (timed on `t`: every transfer has its start and end) with the transfers that start at or
// after `cut` replaced by the deliveries list scheduling makes of what they delivered, timed.
// Nothing where `a` reduces (an All-Reduce: where some reduction starts at or after `cut`, a copy
// sends a partial, or a chunk has no one owner), where its chunk sizes are uneven, or where some
// delivery its ways cannot make (a chunk relayed through a node that does not need it).
// `scheduled`, where given, receives when the list scheduling ended, before the timing.
std::optional<Algorithm> spread_from(const topo::Topology& t, const Algorithm& a, Time cut,
                                     Time* scheduled = nullptr);

// A floor on when spread_from's list scheduling from `cut` ends (not on the timed result, which
// the model may end sooner), no delivery scheduled: the latest end of the transfers it keeps, or
// over the nodes, the soonest the links that end its ways into a node (each free from its kept
// transfers' last hold, taking a delivery at a time for its way's occupancy at least) can bring it
// every chunk it still needs. Nothing where spread_from makes nothing before its schedule.
std::optional<Time> spread_floor(const topo::Topology& t, const Algorithm& a, Time cut);

// `a` with its last deliveries listed again: the fractions of kSpreadTails are scheduled
// (spread_from's list scheduling, not timed), the shortest first, until kSpreadTailsPast in a row
// end no sooner than the soonest so far or cannot end kDrainGain before `a` (spread_floor: those
// are not scheduled), and the schedule that ends soonest is timed; `a` is replaced where that is
// faster than it by more than kDrainGain. Returns whether it was (then
// `a.provenance.tail_spread` gives the fraction). Nothing is tried where `a` has over
// kDrainTransferBudget transfers, or where its timing would end past `deadline` (may be null).
bool spread_tail(const topo::Topology& t, Algorithm& a, const Deadline* deadline);

// A Reduce-Scatter's first reductions finished as the mirror of an All-Gather's last deliveries:
// `reduce_scatter` (timed on `t`, whose link l has twin `twins[l]`: topo::twin_links) reversed in
// time into an All-Gather (all_gather_reversed: its first reductions become the last deliveries),
// that All-Gather finished as an All-Gather's answer is (its tail at its routes' full rate,
// drain_at_full_rate, where `drain`, then its last deliveries listed again, spread_tail), reversed
// back (reduce_scatter_reversed, whose one queue per port keeps the mirror of a tail at full rate),
// and kept where faster than `reduce_scatter` by more than kDrainGain. Returns whether it was (then
// `provenance.tail_spread` gives the fraction of the reverse's run listed again, 0 where only its
// drain gained). Nothing where the reverse gains nothing, or past `deadline` (may be null).
bool spread_head(const topo::Topology& t, Algorithm& reduce_scatter, std::span<const LinkId> twins,
                 bool drain, const Deadline* deadline);

}  // namespace tenet::synth::detail
