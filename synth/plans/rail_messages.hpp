// A server plan's rails in messages that shrink towards the end (synth/plans/server_plan.hpp).
//
// Each rail way carries its root's chunks to the NPU of the same position in another server, which
// forwards them over its NVSwitch. Sent a chunk at a time, the rails pay their per-step cost once
// per chunk, and the forwarding of the last round of chunks is left over at the end: staggering
// the rails (staggered_ways) trades the one against the other, and its overhead, 2 sqrt(s T) at
// best (s the rail's step, T the forwarding of all of an NPU's chunks), does not fall with the
// count. A message of several chunks pays the step once, and the forwarding of one keeps up where
// the next takes about as long as that forwarding (the forwarding's share of the rails' time,
// about 0.9 on nvcluster:8x8): so each rail way sends its chunks in messages that shrink by a
// factor rho (kRailMessageShrink) one after another, down to a single chunk at the end. The steps
// are then paid about log(k) / log(1 / rho) times instead of k, and only the last chunk's
// forwarding is left over. An estimate, not a bound: the server plan times both and keeps the
// faster.
//
// A message carries consecutive chunks (Transfer::count). The matcher sends a root's chunks on a
// way in its own order, so each rail way's chunks are renamed first: the i-th it sends takes the
// way's i-th least chunk id, and so does every transfer that passes that chunk on inside the
// server it enters. Where every root's chunks enter each other server on one rail way (an even
// deal: rail_deal.hpp), those transfers are all that carry them there, so every NPU still receives
// every chunk once: the renaming permutes one root's chunks within one server's share of the plan.
#pragma once

#include <optional>
#include <vector>

#include "synth/plans/server_plan.hpp"
#include "synth/synthesizer.hpp"
#include "synth/ten/channel_graph.hpp"
#include "synth/ten/raw_list.hpp"

namespace tenet::synth::detail {

// `raw`, the matcher's transfers on `g` (the ways of `plan`, an All-Gather's forward problem,
// dealt evenly), with each rail way's chunks renamed and sent in messages shrinking by `rho` (in
// (0, 1)) to one chunk at the end. Nothing where no rail way carries enough chunks for a message
// of two.
std::optional<RawList> rail_messages(const ChannelGraph& g, const ServerPlan& plan,
                                     const RawList& raw, double rho);

// Whether a server plan's rails may go in messages on `t` under `o` (rail_messages, and the
// estimates that model them): asked for (PortfolioOptions::rail_messages), steps charged, under
// `pipelined`.
bool rail_messages_asked(const topo::Topology& t, const SynthOptions& o);
// ... and over `plan`: over servers (not flat, over pods or relayed) whose deal is even (`even`:
// RailDeal::even, even_rails), so that a rail way carries its root's chunks alone.
bool rail_messages_apply(const topo::Topology& t, const ServerPlan& plan, bool even,
                         const SynthOptions& o);

// The sizes, first to last, of the messages rail_messages sends a way's `chunks` consecutive
// chunks in: from the end, one chunk, then each at most 1 / rho times the one after it (rounded
// down). As many as `chunks` where no message of two fits.
std::vector<int> rail_message_sizes(int chunks, double rho);

}  // namespace tenet::synth::detail
