// The TEN link-chunk matcher for routed collectives (Scatter, All-to-All; Gather reversed): each
// chunk to its one destination along shortest channel paths.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <queue>
#include <vector>

#include "synth/synthesizer.hpp"
#include "synth/ten/channel_graph.hpp"
#include "synth/ten/event_loop.hpp"
#include "synth/ten/raw_list.hpp"
#include "topo/topology.hpp"

namespace tenet::synth::detail {

// Routes chunks that each have one destination (Scatter, All-to-All) along shortest channel paths,
// the chunk with the longest way still to go first (ties: the one waiting longest). An NPU's
// waiting chunks are kept by destination, so a match looks at destinations, not chunks.
class RouteMatcher {
 public:
  RouteMatcher(const topo::Topology& t, const ChannelGraph& g, const SynthOptions& o)
      : t_(t), g_(g), opt_(o), outbox_(t.num_npus()) {}

  void add(ChunkId c, NodeId at, NodeId target) {
    if (at == target) return;
    if (dist_to_.empty()) dist_to_.resize(t_.num_npus());
    if (dist_to_[target].empty()) dist_to_[target] = g_.hops(target, true);
    if (dist_to_[target][at] < 0)
      throw Unreachable(fmt::format(
          "synthesis is stuck: NPU {} cannot reach NPU {} through channels", at, target));
    items_.push_back({c, target, -1});
    wait(at, static_cast<int32_t>(items_.size() - 1));
  }

  RawList run() {
    EventLoop loop(t_, g_, opt_.link_model);
    int64_t remaining = static_cast<int64_t>(items_.size());
    const int64_t total = std::max<int64_t>(1, remaining);
    const int64_t hundredth = total / 100 + 1;  // progress and give-up points every hundredth
    loop.mark_all_dirty();
    std::vector<int32_t> item_of;  // per raw transfer
    auto arrive = [&](int32_t x) {
      const NodeId v = g_[raw_[x].channel].dst;
      Item& it = items_[item_of[x]];
      it.last = x;
      if (v == it.target) {
        --remaining;
        if ((opt_.give_up || opt_.progress) && remaining % hundredth == 0) {
          give_up_point(opt_.give_up);
          if (opt_.progress) opt_.progress(1.0 - static_cast<double>(remaining) / total);
        }
        return;
      }
      wait(v, item_of[x]);
      for (ChannelId c : g_.out(v)) loop.mark_dirty(c);
    };
    auto match = [&](ChannelId id, Time now) {
      const Channel& ch = g_[id];
      auto& box = outbox_[ch.src];
      size_t best = box.size();
      int best_left = -1;
      for (size_t b = 0; b < box.size(); ++b) {
        const std::vector<int>& d = dist_to_[box[b].target];
        if (d[ch.dst] < 0 || d[ch.dst] >= d[ch.src]) continue;  // not on a shortest way
        if (d[ch.src] > best_left || (d[ch.src] == best_left &&
                                      box[b].items.front().first < box[best].items.front().first)) {
          best = b;
          best_left = d[ch.src];
        }
      }
      if (best == box.size()) return false;
      const int32_t item = box[best].items.front().second;
      box[best].items.pop_front();
      if (box[best].items.empty()) {
        box[best] = std::move(box.back());
        box.pop_back();
      }
      item_of.push_back(item);
      if (item_of.size() % kGiveUpMatches == 0) give_up_point(opt_.give_up);
      send(raw_, loop, items_[item].chunk, id, now, items_[item].last);
      return true;
    };
    loop.run(arrive, match);
    if (remaining > 0)
      throw Unreachable(
          fmt::format("synthesis is stuck: {} chunks never reach their destination", remaining));
    return std::move(raw_);
  }

 private:
  struct Item {
    ChunkId chunk;
    NodeId target;
    int32_t last;  // the raw transfer that brought it where it is, or -1
  };
  struct Waiting {
    NodeId target;
    std::deque<std::pair<int64_t, int32_t>> items;  // (when it began waiting, item), oldest first
  };
  void wait(NodeId at, int32_t item) {
    const NodeId target = items_[item].target;
    auto& box = outbox_[at];
    auto it =
        std::find_if(box.begin(), box.end(), [&](const Waiting& w) { return w.target == target; });
    if (it == box.end()) it = box.insert(box.end(), Waiting{target, {}});
    it->items.push_back({seq_++, item});
  }

  const topo::Topology& t_;
  const ChannelGraph& g_;
  const SynthOptions& opt_;
  std::vector<std::vector<Waiting>>
      outbox_;  // per NPU, its waiting chunks by destination (in no order)
  int64_t seq_ = 0;
  std::vector<Item> items_;
  std::vector<std::vector<int>>
      dist_to_;  // per destination, hop distances to it (filled when first needed)
  RawList raw_;
};

}  // namespace tenet::synth::detail
