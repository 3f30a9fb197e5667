// The flow plan's trees as pipelines: chunks streamed down every tree at its fluid rate.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "synth/plans/tree_packing.hpp"
#include "synth/ten/channel_graph.hpp"
#include "synth/ten/raw_list.hpp"
#include "synth/tuning.hpp"
#include "topo/topology.hpp"

namespace tenet::synth::detail {

// How plan_pipeline streams a plan's trees (its comment says what each does).
struct PipelineShape {
  bool lanes = false;
  int split = 1;
  double least_lane = kLeastLane;
  bool serial = false;
  bool messages = false;  // a stream sends several chunks per transfer (plan_pipeline)
  // A stream's rate, whole: its tree's, or in lanes its tree's times its lane (at least
  // least_lane).
  double stream_rate(double tree_rate, double lane) const {
    return lanes ? tree_rate * std::max(least_lane, lane) : tree_rate;
  }
};

// How much faster than the plan's rates a pipeline's streams may go: per link, its bandwidth over
// the rates the plan puts on it (the trees' rates times their shares of the arc's routes, or
// their lanes), at least 1; a stream goes at its rate times the least of its route's factors, and
// never over the route's narrowest bandwidth. On every link the plan's rates so sped up still sum
// to at most its bandwidth (each stream's factor is at most the link's): the links the plan
// saturates keep their rates and the others carry a chunk sooner, which shortens the pipelines'
// fill (a chunk's time at the stream's rate per level) and lets a stream that fell behind catch
// up. Timed beside the plan's rates, the faster kept (for_each_pipeline_variant).
class StreamSpeedup {
 public:
  // With `on` false, every factor is 1: the plan's rates.
  StreamSpeedup(const topo::Topology& ft, const TreePacking& packing, bool lanes, bool on)
      : ft_(ft), factor_(ft.num_links(), 1.0) {
    if (!on) return;
    std::vector<double> planned(ft.num_links(), 0.0);
    const double per_copy = static_cast<double>(packing.unit) / packing.congestion;
    for (const PackedTree& tr : packing.trees)
      for (NodeId v = 0; v < ft.num_npus(); ++v)
        for (size_t r = 0; r < tr.routes[v].size(); ++r)
          for (LinkId l : tr.routes[v][r])
            planned[l] += per_copy * tr.copies * (lanes ? tr.lanes[v][r] : tr.shares[v][r]);
    for (LinkId l = 0; l < ft.num_links(); ++l)
      factor_[l] =
          planned[l] > 0
              ? std::max(1.0, static_cast<double>(ft.link(l).bandwidth) / planned[l] * (1 - 1e-9))
              : 1.0;
  }
  // Whether some link has room (else every stream keeps its rate).
  bool any() const {
    return std::any_of(factor_.begin(), factor_.end(), [](double f) { return f > 1; });
  }
  // A stream's `rate` on `route`, sped up.
  Bandwidth operator()(std::span<const LinkId> route, double rate) const {
    double factor = std::numeric_limits<double>::infinity();
    Bandwidth narrowest = std::numeric_limits<Bandwidth>::max();
    for (LinkId l : route) {
      factor = std::min(factor, factor_[l]);
      narrowest = std::min(narrowest, ft_.link(l).bandwidth);
    }
    // (Factors are at least 1, a hair under the link's room, and the rate rounds down: the sum over
    // a link's streams stays within its bandwidth.)
    return std::max<Bandwidth>(1, std::min(narrowest, static_cast<Bandwidth>(rate * factor)));
  }

 private:
  const topo::Topology& ft_;
  std::vector<double> factor_;
};

// The most arcs from tree `tr`'s root down to one of its NPUs.
int tree_height(const PackedTree& tr);

// In messages (PipelineShape::messages), the chunks a stream sends as one transfer into `v` of
// tree `tr`, of height `height` (tree_height), which streams `chunks` chunks of `chunk_bytes` at
// `rate`: a transfer pays its route's per-step cost s once (docs/model.md), so m chunks at a time
// spend N s / m of the stream's time on steps, and the last message still has to be forwarded by
// the h - 1 NPUs below the first arc of the tree's deepest path, each holding it for m chunk times
// c. Their sum, N s / m + (h - 1) m c, is least at m = sqrt(N s / ((h - 1) c)), which this rounds
// (balanced_message_chunks: at least 1, at most the chunks and kMaxChunksPerTransfer; h - 1 taken
// as at least 1). 1 where steps are not charged.
int message_chunks(const topo::Topology& ft, const PackedTree& tr, NodeId v, int chunks,
                   Bytes chunk_bytes, double rate, int height);

// Per tree of a plan, as plan_pipeline streams it: `chunk_time`, a chunk's time at the tree's
// rate (a chunk leaves the root each chunk time), and `last`, when its first chunk reaches its last
// NPU (per arc, a chunk's time at the stream's rate as `speedup` gives it, `split` times as long
// when split, plus the latency of its slowest route).
// For the prediction (pipeline_prediction), where steps are charged: `likely`, `last` with each
// arc's step (its route's largest) added; `soonest`, the same over each arc's fastest route (its
// slowest decides `last`: the dealing waits for it; a chunk may go the fastest), split chunks at
// the whole stream's rate (they leave `split` at once, each as fast as its links have room for);
// `step_time`, the most steps an arc spends per chunk (a step per message).
struct PipelineFill {
  std::vector<Time> chunk_time, last, likely, soonest, step_time;
  int split = 1;
};
// In messages, each arc's first message (message_chunks, the tree taking its copies' share of
// `chunks_per_root`) stands for its chunk.
PipelineFill pipeline_fill(const topo::Topology& ft, const TreePacking& packing, Bytes chunk_bytes,
                           const PipelineShape& shape, const StreamSpeedup& speedup,
                           int chunks_per_root);

// The pipelines' time as predicted before they are made (`end`): the latest over the trees of when
// the tree's first chunk may reach its last NPU (`fill.soonest`) plus a chunk time at the tree's
// rate and its steps (`fill.chunk_time`, `fill.step_time`) for each chunk `dealing` gives it (per
// chunk, its tree; -1: none) past the first (split: past the first `fill.split`, which leave
// together): the fluid schedule with its fill (a message's first chunks counted twice). `first`:
// the least of those fills over the trees dealt a chunk (none reaches every NPU sooner).
// `likely`: the same from `fill.likely`, each chunk past the first, which variants end nearer to;
// `end` is meant to be under what they end at (kPipelinePredictedSure).
struct PipelinePrediction {
  Time end = 0, first = 0, likely = 0;
};
PipelinePrediction pipeline_prediction(const PipelineFill& fill, const std::vector<int>& dealing,
                                       size_t trees);

// `dealing` (each chunk's tree) with the same number of chunks per tree, each tree's consecutive:
// the chunks of a root are dealt to its trees in tree order. A root's chunks are alike, so a
// pipeline streams the same either way; in messages its chunks must be consecutive.
std::vector<int> block_dealing(const std::vector<int>& dealing, const TreePacking& packing);

// The flow plan's trees as pipelines: every tree streams its chunks down its arcs at its fluid
// rate (copies x unit / U, so that the rates on every link sum to at most its bandwidth), the
// transfers listed in the order the fluid schedule starts them. Each stream (a tree's chunks from
// one NPU to one child over one route) is a channel of its own: a sender serves a channel in list
// order, and one channel per tree at an NPU held the tree's other streams behind a transfer whose
// route was full.
// With `last_first`, each tree streams its chunks in reverse order (the All-Gather half of an
// All-Reduce: the reversed Reduce-Scatter pipelines finish their last chunks first).
// An arc split off at switches stands for several routes. Without `lanes`, a tree's chunks take
// them in proportion to their shares of the arc, each at the tree's rate: short bursts, but the
// trees on a route may burst at once beyond its capacity, and a route through a link thinner than
// the tree's rate holds the tree back chunk after chunk. With `lanes`, in proportion to the tree's
// own lanes (PackedTree::lanes), at its rate times the lane: the trees' streams fit every route
// at once.
// With `pace`, each stream (a tree's chunks to one NPU over one route) gets a pacing dependency:
// a transfer waits for the arrival of the latest transfer of its stream that the fluid schedule
// had delivered by its start. Without it a stream whose chunks are all there (at the root) runs
// ahead while others share its links, and the one it crowds out falls behind for good. With
// `split` > 1, a stream's chunks go at its rate over `split`, as many at once: a transfer waits
// until its whole rate is free on its route, and on a link every plan saturates, a stream that
// fell behind (or ran ahead) left room too small for the next chunk of another, lost for good;
// smaller transfers fit the room (the fill takes `split` times as long). No variant wins
// everywhere; the caller keeps the fastest. The measurements behind each: docs/tuning.md.
// Each stream's rate goes through `speedup` (sped up, or the plan's own where it is off).
// `pace` gets the dependency per transfer (-1: none).
// In `messages` (PipelineShape::messages), a stream sends message_chunks of its tree's chunks at
// a time as one transfer (Transfer::count), once all of them are at its source: `tree_of` must
// then give each tree consecutive chunks (block_dealing), so that a message's are consecutive.
RawList plan_pipeline(const topo::Topology& ft, const ChannelGraph& g, const TreePacking& packing,
                      const std::vector<int>& tree_of, Bytes chunk_bytes, bool last_first,
                      const PipelineShape& shape, const StreamSpeedup& speedup,
                      std::vector<int32_t>* pace = nullptr);

}  // namespace tenet::synth::detail
