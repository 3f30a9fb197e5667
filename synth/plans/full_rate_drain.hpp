// A timed algorithm's drain at its routes' full rate.
//
// Model: a producer that streams at fluid rates (the flow plan's pipelines, the server plan's
// ways) gives each transfer a fixed share of its links (Algorithm::rate), so that the streams
// together fit every link. Near the end most streams have finished and their links stand idle,
// while the last chunks still go down their trees at their shares: the drain (what it costs where
// measured: docs/synthesis.md). A transfer that starts in the last part of the run may instead
// take its route's full rate (rate 0: the narrowest bandwidth on it); the timing admits it once
// that capacity is free (synth/cost/link_admission.hpp), so the result is still a schedule the
// model charges in full, verified as any other.
#pragma once

#include <optional>

#include "synth/auto/deadline.hpp"
#include "synth/ir/algorithm.hpp"
#include "topo/topology.hpp"

namespace tenet::synth::detail {

// Where the last `tail` (a fraction) of a run of `span` begins: the cut from which
// drain_at_full_rate re-rates the transfers of that tail.
Time drain_cut(Time span, double tail);

// `a` (timed on `t`: every transfer has its start) with the transfers that start at or after `cut`
// at their routes' full rate, timed; nothing where none of them has a rate of its own.
std::optional<Algorithm> drained_from(const topo::Topology& t, const Algorithm& a, Time cut);

// What drained_from(t, a, cut) takes at least where the schedule before the cut stays as it was,
// `span` being a's time (its makespan), in one pass over a's timing: each link still has to carry,
// after the cut, what the transfers started before it carried there and all that those started at
// or after it carry (each at the rate it then has), so the run ends no sooner than the cut plus the
// most any link carries after it. The schedule before the cut stays wherever a's timing is one
// pass (links admit in list order: what is re-rated starts at or after the cut); where links admit
// in order of readiness (synth/cost/link_admission.hpp), a re-rated transfer waiting before the cut
// for its larger rate may hold back others there, and this may then overstate: a tail it rules out
// is left untried, never a slower answer kept.
Time drained_floor(const topo::Topology& t, const Algorithm& a, Time cut, Time span);

// `a` (timed on `t`: every transfer has its start) with the transfers that start in its last
// fraction f of its time at their routes' full rate, re-timed, for the f of kDrainTails a hill
// climb over that ladder ends at: from kDrainTailsFirst, towards the shorter tails first, each
// step a timing of the whole algorithm, taken only where drained_floor may beat the fastest so far
// by more than kDrainGain and kept where faster. `a` is replaced only where that is faster;
// returns whether it was, and then `a.provenance.full_rate_drain` gives the fraction. Nothing is
// tried where no transfer has a rate of its own, where `a` has over kDrainTransferBudget
// transfers, or where a step would end past `deadline` (may be null; a step expected to take
// kSearchSecondsPerTransfer a transfer).
bool drain_at_full_rate(const topo::Topology& t, Algorithm& a, const Deadline* deadline);

}  // namespace tenet::synth::detail
