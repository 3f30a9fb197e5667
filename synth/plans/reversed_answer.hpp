// A Reduce-Scatter as an All-Gather's answer reversed in time, and the converse, on a topology
// that is its own reverse (topo::twin_links).
//
// Model: an All-Gather that delivers every chunk to every node at most once streams each chunk
// down a tree from its owner. Reversed in time, each transfer u -> v of chunk c becomes v -> u
// reducing c into u, over the twins of its route's links in reverse order, at the same rate: every
// node sends its partial of c once, after the partials of its children in that tree (the transfers
// that left it carrying c, now arriving into it), so the owner ends with c reduced over every rank
// once. On twin links (each link's twin has the same bandwidth, latency and per-step cost) the
// reversed schedule takes about the forward one's time: the transfers are listed by decreasing
// forward end and each port is one queue (every reversed transfer in channel 0), so each port
// admits them in the mirror of the order they arrived over its twin; explicit dependencies are
// turned around (x waited for y: y's reversal waits for x's). It is re-timed, not assumed.
//
// One queue per port is what keeps the mirror where the forward schedule ends in a tail at its
// routes' full rate (synth/plans/full_rate_drain.hpp, tail_spread.hpp): reversed, that tail is a
// head, and in channels of their own the streams' first transfers (sends of input, ready at once)
// would take part of its links first, the head then waiting for the links to empty (the MI250
// box's All-Gather of 1 GiB drained and listed again, 1.0380 of the bound, reversed 5.00 in the
// forward's channels, 1.0379 in one queue per port: docs/synthesis.md).
//
// This is what the reversed plans do to the matcher's schedule before it becomes an algorithm
// (synth/ten/forward.hpp, build), done to a finished answer.
#pragma once

#include <optional>
#include <span>

#include "synth/ir/algorithm.hpp"
#include "topo/topology.hpp"

namespace tenet::synth::detail {

// The Reduce-Scatter over `all_gather`'s ranks, chunks and chunk size, as `all_gather` (timed)
// reversed in time on `t`, whose link l has twin `twins[l]` (topo::twin_links); timed, with
// all_gather's name, method, provenance, link model and protocol (step costs as `t` charges them,
// and no reduction time, as any algorithm new there), every transfer in channel 0. A node outside
// the ranks (a relay) takes its first partial of a chunk as a copy, and the later ones wait for it.
// Nothing where `all_gather` is no timed All-Gather, or delivers some chunk to some node twice (a
// tree per chunk is what reverses into a reduction).
std::optional<Algorithm> reduce_scatter_reversed(const topo::Topology& t,
                                                 const Algorithm& all_gather,
                                                 std::span<const LinkId> twins);

// The converse: the All-Gather over `reduce_scatter`'s ranks, chunks and chunk size, as
// `reduce_scatter` (timed) reversed in time on `t`: each transfer u -> v of chunk c becomes v -> u
// copying c, over the twins of its route's links in reverse order, listed and timed as above. A
// node that sent its partial of c once receives c once, from the node it sent its partial to, after
// that node has it (the owner holds it first). Nothing where `reduce_scatter` is no timed
// Reduce-Scatter, or sends some chunk from some node twice.
std::optional<Algorithm> all_gather_reversed(const topo::Topology& t,
                                             const Algorithm& reduce_scatter,
                                             std::span<const LinkId> twins);

}  // namespace tenet::synth::detail
