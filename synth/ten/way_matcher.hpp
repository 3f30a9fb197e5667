// The TEN link-chunk matcher along ways chosen beforehand (the flow plan of routed collectives):
// the ways spread like the multicommodity-flow optimum (flow_ways), then matched in time.
#pragma once

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <queue>
#include <span>
#include <vector>

#include "synth/synthesizer.hpp"
#include "synth/ten/channel_graph.hpp"
#include "synth/ten/event_loop.hpp"
#include "synth/ten/raw_list.hpp"
#include "topo/topology.hpp"

namespace tenet::synth::detail {

// Ways for routed chunks (All-to-All, Scatter) that spread their load over the links as the
// multicommodity-flow optimum does (topo/flow_bound.hpp), chosen by congestion: each chunk takes
// a shortest way over channels whose length is the sum over its links of
//   (1 / bandwidth) x exp(gamma x load / (bandwidth x horizon)),
// the load being the bytes routed over the link (by every other chunk) and `horizon` the time the
// bound allows (Garg and Koenemann's lengths: a link that carries its whole share costs e^8 times
// an idle one). Rounds go over the chunks' index within their pair, sources take turns, and a
// source's chunks follow one shortest-way tree per batch (up to 64 batches per source over all
// rounds), so that a source's own links are balanced too. A single pass routes early sources as if
// the later ones did not exist, overloading the links they share, so three more passes rip each
// batch up and route it again among everyone else's load (negotiated congestion, as FPGA routers
// do), which brings the busiest link close to the bound.
struct ChunkWays {
  std::vector<int64_t> offset;  // chunk i's ways are ways[offset[i] .. offset[i + 1])
  std::vector<ChannelId> ways;
  std::span<const ChannelId> of(size_t i) const {
    return {ways.data() + offset[i], static_cast<size_t>(offset[i + 1] - offset[i])};
  }
};

ChunkWays flow_ways(const topo::Topology& t, const ChannelGraph& g,
                    const std::vector<std::array<NodeId, 2>>& ends,
                    const std::vector<int>& round_of, Bytes chunk_bytes, double horizon_seconds);

// The matcher along fixed ways: each channel, when free, sends the waiting chunk whose way has the
// most time left (its congestion-free duration), ties to the lowest chunk.
class WayMatcher {
 public:
  WayMatcher(const topo::Topology& t, const ChannelGraph& g, const SynthOptions& o,
             std::vector<ChunkId> chunks, ChunkWays ways)
      : t_(t),
        g_(g),
        opt_(o),
        chunks_(std::move(chunks)),
        ways_(std::move(ways)),
        waiting_(g.size()) {}

  RawList run() {
    const size_t items = chunks_.size();
    pos_.assign(items, 0);
    last_.assign(items, -1);
    left_.assign(items, 0);
    for (size_t i = 0; i < items; ++i)
      for (ChannelId c : ways_.of(i)) left_[i] += g_[c].duration;
    EventLoop loop(t_, g_, opt_.link_model);
    int64_t remaining = 0;
    for (size_t i = 0; i < items; ++i)
      if (!ways_.of(i).empty()) {
        ++remaining;
        enqueue(static_cast<int32_t>(i));
      }
    const int64_t total = std::max<int64_t>(1, remaining);
    const int64_t hundredth = total / 100 + 1;  // progress and give-up points every hundredth
    loop.mark_all_dirty();
    std::vector<int32_t> item_of;  // per raw transfer
    auto arrive = [&](int32_t x) {
      const int32_t i = item_of[x];
      last_[i] = x;
      if (++pos_[i] == static_cast<int>(ways_.of(i).size())) {
        --remaining;
        if ((opt_.give_up || opt_.progress) && remaining % hundredth == 0) {
          give_up_point(opt_.give_up);
          if (opt_.progress) opt_.progress(1.0 - static_cast<double>(remaining) / total);
        }
        return;
      }
      loop.mark_dirty(enqueue(i));
    };
    auto match = [&](ChannelId id, Time now) {
      auto& q = waiting_[id];
      if (q.empty()) return false;
      const int32_t i = -q.top().second;
      q.pop();
      left_[i] -= g_[id].duration;
      item_of.push_back(i);
      if (item_of.size() % kGiveUpMatches == 0) give_up_point(opt_.give_up);
      send(raw_, loop, chunks_[i], id, now, last_[i]);
      return true;
    };
    loop.run(arrive, match);
    if (remaining > 0)
      throw Unreachable(
          fmt::format("synthesis is stuck: {} chunks never reach their destination", remaining));
    return std::move(raw_);
  }

 private:
  ChannelId enqueue(int32_t i) {
    const ChannelId c = ways_.of(i)[pos_[i]];
    waiting_[c].push({left_[i], -i});
    return c;
  }
  const topo::Topology& t_;
  const ChannelGraph& g_;
  const SynthOptions& opt_;
  std::vector<ChunkId> chunks_;
  ChunkWays ways_;
  // Per channel, the chunks waiting to take it: (time left, -item), the largest first.
  std::vector<std::priority_queue<std::pair<Time, int32_t>>> waiting_;
  std::vector<int> pos_;
  std::vector<int32_t> last_;
  std::vector<Time> left_;
  RawList raw_;
};

}  // namespace tenet::synth::detail
