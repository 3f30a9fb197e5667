// A collective as the matcher's forward problem (a spread or a routing, maybe on the reversed
// topology), run on the channels, and the matcher's output built into the IR.
#pragma once

#include <cstdint>
#include <vector>

#include "synth/synthesizer.hpp"
#include "synth/ten/channel_graph.hpp"
#include "synth/ten/event_loop.hpp"
#include "synth/ten/raw_list.hpp"
#include "topo/topology.hpp"

namespace tenet::synth::detail {

using Method = SynthMethod;

// The forward problem a collective reduces to.
enum class Shape { Spread, Route };

struct ForwardPlan {
  Shape shape;
  bool reversed;  // synthesize on the reversed topology and reverse time
  bool reduce;    // the reversed transfers reduce
};

ForwardPlan plan_for(CollectiveKind k);

// The forward version of `c` (what runs on the reversed topology for the reversed plans):
// Reduce-Scatter -> All-Gather, Reduce -> Broadcast, Gather -> Scatter.
CollectiveKind forward_kind(CollectiveKind k);

// The forward problem `c` matched on `g` (a spread or a routing, as plan_for says).
RawList run_forward(const topo::Topology& t, const ChannelGraph& g, const Collective& c,
                    const SynthOptions& o);

// An algorithm named "tenet" for `c`, with no transfers yet.
Algorithm empty_algorithm(const topo::Topology& t, const Collective& c, Bytes chunk_bytes,
                          const SynthOptions& o);

// The matcher's transfers as an (untimed) algorithm on `t`: as they are (forward), or, for the
// reversed plans, with time and direction turned around: the forward problem ran on the reversed
// topology, whose link l is t's link l backwards. `pace`: per transfer, one more it waits for (-1:
// none); from the pipelines, which run over every NPU, so never pruned.
Algorithm build(const topo::Topology& t, const ChannelGraph& g, RawList raw,
                const ForwardPlan& plan, const Collective& c, Bytes chunk_bytes,
                const SynthOptions& o, const std::vector<int32_t>* pace = nullptr);

// The plain matcher's work (SynthOptions::portfolio.matcher_work): each of about N x N x k
// deliveries wakes the channels through the links it frees, which through switches are about every
// channel per NPU.
double matcher_work(const ChannelGraph& g, const Collective& forward);
// A lower bound on matcher_work over every channel of `t` (ChannelGraph's first constructor),
// without building them: one channel per link between two NPUs, and at least one per ordered pair
// of NPUs joined through switches alone (its quickest route). A breadth-first search per NPU over
// the switches, no routes or costs: where even this is over a budget, the graph is not built.
double least_matcher_work(const topo::Topology& t, const Collective& forward);

}  // namespace tenet::synth::detail
