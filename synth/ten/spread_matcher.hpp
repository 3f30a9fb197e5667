// The TEN link-chunk matcher for spread collectives (All-Gather, Broadcast; Reduce-Scatter and
// Reduce run it on the reversed topology): every NPU ends with the chunks it needs.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <span>
#include <vector>

#include "synth/synthesizer.hpp"
#include "synth/ten/channel_graph.hpp"
#include "synth/ten/event_loop.hpp"
#include "synth/ten/raw_list.hpp"
#include "topo/topology.hpp"

namespace tenet::synth::detail {

// Spreads chunks: every NPU ends with the chunks it needs (All-Gather, Broadcast; relays need
// everything). Chunk ids are permuted by the seed so that ties break differently per seed.
class SpreadMatcher {
 public:
  SpreadMatcher(const topo::Topology& t, const ChannelGraph& g, int chunks, const SynthOptions& o)
      : t_(t),
        g_(g),
        n_(t.num_npus()),
        chunks_(chunks),
        words_((chunks + 63) / 64),
        opt_(o),
        random_(o.matcher.priority == ChunkPriority::Random),
        yield_(random_ && o.matcher.slow_links_yield),
        rng_(o.seed),
        holds_(static_cast<size_t>(n_) * words_, 0),
        want_(holds_.size(), 0),
        count_(chunks, 0),
        perm_(chunks),
        unperm_(chunks) {
    std::iota(perm_.begin(), perm_.end(), 0);
    if (o.matcher.priority != ChunkPriority::Lowest) {
      std::mt19937_64 rng(o.seed);
      std::shuffle(perm_.begin(), perm_.end(), rng);
    }
    for (int c = 0; c < chunks; ++c) unperm_[perm_[c]] = c;
    if (yield_) {
      wants_.assign(n_, 0);
      others_rate_.assign(g.size(), 0);
      for (ChannelId c = 0; c < static_cast<ChannelId>(g.size()); ++c)
        for (ChannelId d : g.in(g[c].dst))
          if (d != c)
            others_rate_[c] += 1.0 / static_cast<double>(std::max<Time>(1, g[d].duration));
    }
    for (ChannelId c = 1; c < static_cast<ChannelId>(g.size()); ++c)
      mixed_ = mixed_ || g[c].duration != g[0].duration;
    // Estimates cost O(N) per transfer: only for mixed-speed topologies of moderate size. A
    // random choice is made without them.
    mixed_ = mixed_ && n_ <= kMaxEstimatedNpus && !random_;
    if (mixed_) {
      far_ = g.all_pairs_durations();
      best_.assign(static_cast<size_t>(n_) * chunks_, {kNever, kNever, -1});
    }
  }
  void hold(NodeId v, ChunkId c) {
    int p = perm_[c];
    if (origin_.empty()) {
      origin_.assign(chunks_, -1);
      own_.assign(holds_.size(), 0);
    }
    if (origin_[p] < 0) {
      origin_[p] = v;
      own_[v * words_ + p / 64] |= uint64_t{1} << (p % 64);
    }
    holds_[v * words_ + p / 64] |= uint64_t{1} << (p % 64);
    ++count_[p];
    if (mixed_) spread_estimate(v, p, 0);
  }
  void need(NodeId v, ChunkId c) {
    int p = perm_[c];
    if (holds_[v * words_ + p / 64] >> (p % 64) & 1) return;
    uint64_t& w = want_[v * words_ + p / 64];
    if (!(w >> (p % 64) & 1)) {
      w |= uint64_t{1} << (p % 64);
      ++remaining_;
      if (yield_) ++wants_[v];
    }
  }

  RawList run() {
    EventLoop loop(t_, g_, opt_.link_model);
    live_words_ = (words_ + 63) / 64;
    live_.assign(g_.size() * static_cast<size_t>(live_words_), 0);
    const bool planned = planned_;
    if (planned) index_allowed();
    for (ChannelId c = 0; c < static_cast<ChannelId>(g_.size()); ++c) {
      if (planned && dense_row_[c] < 0) continue;  // a short list: scanned whole, no summary
      const uint64_t* h = &holds_[static_cast<size_t>(g_[c].src) * words_];
      const uint64_t* w = &want_[static_cast<size_t>(g_[c].dst) * words_];
      const uint64_t* a = planned ? allowed_row(c) : nullptr;
      for (int i = 0; i < words_; ++i)
        if (h[i] & w[i] & (a ? a[i] : ~uint64_t{0}))
          live_[static_cast<size_t>(c) * live_words_ + i / 64] |= uint64_t{1} << (i % 64);
    }
    const int64_t total = std::max<int64_t>(1, remaining_);
    const int64_t hundredth = total / 100 + 1;  // progress and give-up points every hundredth
    int64_t reported = 0, matched = 0;
    loop.mark_all_dirty();
    auto arrive = [&](int32_t x) {
      const Raw& r = raw_[x];
      const NodeId v = g_[r.channel].dst;
      const int p = perm_[r.chunk];
      holds_[v * words_ + p / 64] |= uint64_t{1} << (p % 64);
      ++count_[p];
      --remaining_;
      // Under a plan only the channels it lets carry this chunk can want it now (where the loop
      // matches in the order channels were marked, all are marked, as that order decides).
      if (planned && !loop.matches_in_marking_order()) {
        for (ChannelId c : allowed_from(v, p)) {
          if (dense_row_[c] >= 0) wake_word(c, p);  // a list is scanned whole: it keeps no summary
          loop.mark_dirty(c);
        }
      } else {
        for (ChannelId c : g_.out(v)) {
          wake_word(c, p);
          loop.mark_dirty(c);
        }
      }
      if (total - remaining_ - reported >= hundredth) {
        reported = total - remaining_;
        give_up_point(opt_.give_up);
        if (opt_.progress) opt_.progress(static_cast<double>(reported) / total);
      }
    };
    auto match = [&](ChannelId id, Time now) {
      const Channel& ch = g_[id];
      const int p = planned ? pick_planned(id) : mixed_ ? pick_ahead(id, now) : pick(id);
      if (p < 0) return false;
      if (++matched % kGiveUpMatches == 0) give_up_point(opt_.give_up);
      want_[ch.dst * words_ + p / 64] &= ~(uint64_t{1} << (p % 64));
      if (yield_) --wants_[ch.dst];
      if (mixed_) spread_estimate(ch.dst, p, now + ch.duration);
      const ChunkId c = unperm_[p];
      send(raw_, loop, c, id, now, -1);  // its dependency: found after the loop (link_dependencies)
      return true;
    };
    loop.run(arrive, match);
    if (remaining_ > 0)
      throw Unreachable(
          fmt::format("synthesis is stuck: {} chunk deliveries cannot be made through "
                      "the topology's links and switch routes",
                      remaining_));
    link_dependencies();
    return std::move(raw_);
  }

  // Each send depends on the transfer that brought its chunk to its source (none where the source
  // held it from the start). A node gets a chunk once (it stops wanting it when a send to it is
  // matched), and a send leaves only after that arrival: so the one delivery to (source, chunk) is
  // it. Found here, in two passes over the list, rather than looked up in the (node, chunk) table
  // per match, where the lookup missed the cache every time (a 32x32 torus's table is 4 MB, a
  // 64x64 torus's 64 MB).
  void link_dependencies() {
    const auto n = static_cast<int32_t>(raw_.size());
    std::vector<int32_t> brought(static_cast<size_t>(n_) * chunks_,
                                 -1);  // per (node, chunk): its delivery
    auto at = [&](int32_t x, bool source) -> int32_t& {
      const Channel& ch = g_[raw_[x].channel];
      return brought[static_cast<size_t>(source ? ch.src : ch.dst) * chunks_ + raw_[x].chunk];
    };
    constexpr int32_t kAhead = 16;  // prefetch distance: the table is far larger than the caches
    for (int32_t x = 0; x < n; ++x) {
      if (x + kAhead < n) __builtin_prefetch(&at(x + kAhead, false), 1);
      at(x, false) = x;
    }
    for (int32_t x = 0; x < n; ++x) {
      if (x + kAhead < n) __builtin_prefetch(&at(x + kAhead, true));
      const int32_t y = at(x, true);
      raw_[x].dep = y >= 0 && y < x && raw_[y].end <= raw_[x].start ? y : -1;
    }
  }

  // Under a flow plan: channel `id` may carry chunk c only if c's tree delivers c to the channel's
  // destination over it.
  void allow(ChannelId id, ChunkId c) {
    planned_ = true;
    mixed_ = false;  // the plan decides which chunks cross which links
    allowed_by_chunk_.push_back({perm_[c], id});
  }

 private:
  // The rarest chunk (fewest holders) the plan lets this channel carry, the lowest id of equals.
  int pick_planned(ChannelId id) const {
    const Channel& ch = g_[id];
    const uint64_t* h = &holds_[ch.src * words_];
    const uint64_t* w = &want_[ch.dst * words_];
    Rarest rarest;
    if (dense_row_[id] < 0) {  // its few chunks, in increasing id as the words would give them
      for (int64_t k = list_start_[id]; k < list_start_[id + 1]; ++k) {
        const int p = list_[k];
        if ((h[p / 64] & w[p / 64]) >> (p % 64) & 1) rarest.offer(p, count_[p]);
      }
      return rarest.best;
    }
    const uint64_t* a = allowed_row(id);
    for_each_live(
        id, h, w,
        [&](int i, uint64_t hwa) {
          for (uint64_t m = hwa; m; m &= m - 1) {
            const int p = i * 64 + std::countr_zero(m);
            rarest.offer(p, count_[p]);
          }
        },
        a);
    return rarest.best;
  }

  // The candidate with the fewest holders, ties to the first offered, kept without a branch:
  // which candidate is rarer is unpredictable, and a match offers every candidate it may carry.
  struct Rarest {
    int best = -1;
    int least = std::numeric_limits<int>::max();
    void offer(int p, int holders) {
      const bool rarer = holders < least;
      best = rarer ? p : best;
      least = rarer ? holders : least;
    }
  };

  // A plan's allowed (chunk, channel) pairs, indexed both ways. Per chunk, its channels sorted by
  // (source, id), found by a binary search on the source: an arrival of chunk p at v wakes only
  // the channels out of v the plan lets carry p (a server plan's NPU has hundreds of ways out, of
  // which a chunk may take a few). Per channel, its chunks as a bitset row where it may carry more
  // chunks than the row has words, else as a sorted list (a server plan's rail way carries its
  // root's few chunks: 4096 NPUs have 2.1M ways, whose rows would take 1.1 GB).
  void index_allowed() {
    std::sort(allowed_by_chunk_.begin(), allowed_by_chunk_.end(),
              [&](const auto& x, const auto& y) {
                if (x.first != y.first) return x.first < y.first;
                const NodeId sx = g_[x.second].src, sy = g_[y.second].src;
                return sx != sy ? sx < sy : x.second < y.second;
              });
    allowed_by_chunk_.erase(std::unique(allowed_by_chunk_.begin(), allowed_by_chunk_.end()),
                            allowed_by_chunk_.end());
    std::vector<int64_t> per_channel(g_.size() + 1, 0);
    for (const auto& [p, id] : allowed_by_chunk_) ++per_channel[id + 1];
    dense_row_.assign(g_.size(), -1);
    int rows = 0;
    for (ChannelId id = 0; id < static_cast<ChannelId>(g_.size()); ++id) {
      if (per_channel[id + 1] > words_) {
        dense_row_[id] = rows++;
        per_channel[id + 1] = 0;
      }
    }
    std::partial_sum(per_channel.begin(), per_channel.end(), per_channel.begin());
    list_start_ = per_channel;
    list_.resize(per_channel.back());
    rows_.assign(static_cast<size_t>(rows) * words_, 0);
    for (const auto& [p, id] : allowed_by_chunk_) {  // in increasing p: each list comes out sorted
      if (dense_row_[id] >= 0)
        rows_[static_cast<size_t>(dense_row_[id]) * words_ + p / 64] |= uint64_t{1} << (p % 64);
      else
        list_[per_channel[id]++] = p;
    }
    allowed_start_.assign(chunks_ + 1, 0);
    allowed_src_.resize(allowed_by_chunk_.size());
    allowed_id_.resize(allowed_by_chunk_.size());
    for (size_t k = 0; k < allowed_by_chunk_.size(); ++k) {
      ++allowed_start_[allowed_by_chunk_[k].first + 1];
      allowed_src_[k] = g_[allowed_by_chunk_[k].second].src;
      allowed_id_[k] = allowed_by_chunk_[k].second;
    }
    std::partial_sum(allowed_start_.begin(), allowed_start_.end(), allowed_start_.begin());
    allowed_by_chunk_ =
        std::vector<std::pair<int, ChannelId>>();  // freed (`= {}` keeps the capacity)
  }
  const uint64_t* allowed_row(ChannelId id) const {
    return &rows_[static_cast<size_t>(dense_row_[id]) * words_];
  }
  std::span<const ChannelId> allowed_from(NodeId v, int p) const {
    const auto first = allowed_src_.begin() + allowed_start_[p],
               last = allowed_src_.begin() + allowed_start_[p + 1];
    const auto lo = std::lower_bound(first, last, v);
    const auto hi = std::upper_bound(lo, last, v);
    return {allowed_id_.data() + (lo - allowed_src_.begin()), static_cast<size_t>(hi - lo)};
  }

  // Calls f(i, h[i] & w[i]) for every word i where channel `id`'s source holds chunks its
  // destination wants, in increasing i: the words its summary marks live (a superset, kept by
  // arrivals), forgetting those found empty. A match looks at a few words, not all of them
  // (4096 chunks: 64 words per channel and match on a 64x64 torus). Under a plan, `a` is the
  // channel's allowed chunks and f gets h[i] & w[i] & a[i]: a word stays live only while the
  // channel may carry some chunk of it (the others come over other channels).
  template <typename F>
  void for_each_live(ChannelId id, const uint64_t* h, const uint64_t* w, F&& f,
                     const uint64_t* a = nullptr) const {
    uint64_t* s = &live_[static_cast<size_t>(id) * live_words_];
    for (int j = 0; j < live_words_; ++j)
      for (uint64_t bits = s[j]; bits; bits &= bits - 1) {
        const int i = j * 64 + std::countr_zero(bits);
        if (const uint64_t m = h[i] & w[i] & (a ? a[i] : ~uint64_t{0})) {
          f(i, m);
        } else {
          s[j] &= ~(uint64_t{1} << (i % 64));
        }
      }
  }
  // Chunk p has come to the source of `id`: its word is live if the destination wants p.
  void wake_word(ChannelId id, int p) {
    if (want_[static_cast<size_t>(g_[id].dst) * words_ + p / 64] >> (p % 64) & 1)
      live_[static_cast<size_t>(id) * live_words_ + p / 4096] |= uint64_t{1} << (p / 64 % 64);
  }

  // The best chunk (permuted id) the channel's source holds and its destination wants, or -1.
  // Through switches, where every pair has its own channel and relaying costs an extra
  // crossing, the source's own data goes first.
  int pick(ChannelId id) const {
    const Channel& ch = g_[id];
    const NodeId u = ch.src, v = ch.dst;
    const uint64_t* h = &holds_[u * words_];
    const uint64_t* w = &want_[v * words_];
    if (ch.route_size > 1 && !own_.empty()) {
      const uint64_t* mine = &own_[u * words_];
      Rarest rarest;
      for_each_live(id, h, w, [&](int i, uint64_t hw) {
        for (uint64_t m = hw & mine[i]; m; m &= m - 1) {
          const int p = i * 64 + std::countr_zero(m);
          rarest.offer(p, count_[p]);
        }
      });
      if (rarest.best >= 0) return rarest.best;
    }
    if (opt_.matcher.priority == ChunkPriority::Lowest) {
      int first = -1;
      for_each_live(id, h, w, [&](int i, uint64_t hw) {
        if (first < 0) first = i * 64 + std::countr_zero(hw);
      });
      return first;
    }
    // Who else could deliver to v: the sources of v's other in-channels (at most 64).
    suppliers_.clear();
    if (opt_.matcher.priority != ChunkPriority::Rarest)
      for (ChannelId c : g_.in(v))
        if (g_[c].src != u && suppliers_.size() < 64)
          suppliers_.push_back(&holds_[g_[c].src * words_]);
    int best = -1, best_level = 8;
    uint64_t ties = 0;  // Random: the chunks seen at best_level, one of which is kept at random
    auto better = [&](int p, int level) {  // the rarest, then u's own data, then the first
      if (random_) {
        if (level < best_level) ties = 0;
        return rng_() % ++ties == 0;
      }
      return level < best_level || count_[p] < count_[best] ||
             (count_[p] == count_[best] && origin_[p] == u && origin_[best] != u);
    };
    for_each_live(id, h, w, [&](int i, uint64_t m) {
      if (best_level == 0) {  // only chunks no other supplier holds can still win: no counting
        uint64_t held = 0;
        for (const uint64_t* sup : suppliers_) held |= sup[i];
        for (uint64_t at = m & ~held; at; at &= at - 1)
          if (const int p = i * 64 + std::countr_zero(at); better(p, 0)) best = p;
        return;
      }
      // Per candidate bit, how many other suppliers hold it: a 3-bit counter sliced over three
      // words (saturating at 7), so one pass over the suppliers serves all 64 chunks of the word.
      uint64_t c0 = 0, c1 = 0, c2 = 0;
      for (const uint64_t* sup : suppliers_) {
        const uint64_t x = sup[i] & m;
        const uint64_t carry0 = c0 & x;
        c0 ^= x;
        const uint64_t carry1 = c1 & carry0;
        c1 ^= carry0;
        c2 |= carry1;
      }
      for (int level = 0; level <= std::min(best_level, 7); ++level) {
        uint64_t at = m & (level & 1 ? c0 : ~c0) & (level & 2 ? c1 : ~c1) & (level & 4 ? c2 : ~c2);
        if (!at) continue;
        for (; at; at &= at - 1) {  // the rarest among the scarcest, then u's own data
          const int p = i * 64 + std::countr_zero(at);
          if (better(p, level)) {
            best = p;
            best_level = level;
          }
        }
        break;
      }
    });
    if (yield_ && best >= 0 && best_level > 0 &&
        static_cast<double>(ch.duration) * others_rate_[id] >= static_cast<double>(wants_[v])) {
      faster_.clear();
      for (ChannelId c : g_.in(v))
        if (g_[c].duration < ch.duration) faster_.push_back(&holds_[g_[c].src * words_]);
      bool covered = !faster_.empty();
      for_each_live(id, h, w, [&](int i, uint64_t m) {
        uint64_t held = 0;
        for (const uint64_t* f : faster_) held |= f[i];
        covered = covered && (m & ~held) == 0;
      });
      if (covered) return -1;
    }
    return best;
  }

  // On mixed-speed topologies: the chunk this channel delivers furthest ahead of the best other
  // supplier (congestion-free estimates; chunks nobody else can bring soon come first), ties to
  // the priority order. Keeps slow links for chunks that cannot arrive faster another way.
  int pick_ahead(ChannelId id, Time now) const {
    const Channel& ch = g_[id];
    const uint64_t* h = &holds_[ch.src * words_];
    const uint64_t* w = &want_[ch.dst * words_];
    const Time mine = now + ch.duration;
    int best = -1;
    Time best_lead = 0;
    for_each_live(id, h, w, [&](int i, uint64_t hw) {
      for (uint64_t m = hw; m; m &= m - 1) {
        const int p = i * 64 + std::countr_zero(m);
        const Estimate& e = best_[static_cast<size_t>(ch.dst) * chunks_ + p];
        const Time other = e.from == ch.src ? e.second : e.first;
        const Time lead = other == kNever ? kNever : other - mine;
        if (best < 0 || lead > best_lead || (lead == best_lead && count_[p] < count_[best])) {
          best = p;
          best_lead = lead;
        }
      }
    });
    return best;
  }

  // Chunk p reaches NPU v at `at`: every NPU could then have it at `at` + the fastest way there.
  void spread_estimate(NodeId v, int p, Time at) {
    const Time* row = &far_[static_cast<size_t>(v) * n_];
    for (NodeId x = 0; x < n_; ++x) {
      if (row[x] == kNever || x == v) continue;
      Estimate& e = best_[static_cast<size_t>(x) * chunks_ + p];
      const Time t = at + row[x];
      if (e.from == v) {
        e.first = std::min(e.first, t);
      } else if (t < e.first) {
        e.second = e.first;
        e.first = t;
        e.from = v;
      } else if (t < e.second) {
        e.second = t;
      }
    }
  }

  static constexpr Time kNever = std::numeric_limits<Time>::max();
  static constexpr int kMaxEstimatedNpus = 512;
  struct Estimate {
    Time first, second;  // the two earliest estimated arrivals, from different suppliers
    NodeId from;         // the supplier of `first`
  };
  const topo::Topology& t_;
  const ChannelGraph& g_;
  const int n_, chunks_, words_;
  const SynthOptions& opt_;
  // ChunkPriority::Random: a random one among the scarcest, at every match.
  const bool random_;
  // SynthOptions::matcher.slow_links_yield: a channel leaves the last chunks its destination wants
  // to its faster in-channels, when their sources hold every chunk it could carry and they would
  // bring all the destination still wants before its own transfer arrived (a destination's other
  // in-channels carry others_rate_ chunks per ps; it wants wants_).
  const bool yield_;
  mutable std::mt19937_64 rng_;
  mutable std::vector<const uint64_t*> faster_;
  std::vector<int64_t> wants_;  // yield_: per NPU, the chunks it wants not yet on their way
  std::vector<double>
      others_rate_;  // yield_: per channel, chunks per ps its destination's other in-channels carry
  std::vector<uint64_t> holds_, want_;
  std::vector<int> count_;
  std::vector<int> perm_, unperm_;
  std::vector<NodeId> origin_;  // per permuted chunk, its first holder
  std::vector<uint64_t> own_;   // per NPU, the chunks it held from the start
  RawList raw_;
  int64_t remaining_ = 0;
  mutable std::vector<const uint64_t*> suppliers_;
  bool mixed_ = false;          // channels of different speeds: pick_ahead
  bool planned_ = false;        // under a flow plan: channels carry only the chunks it allows
  std::vector<int> dense_row_;  // per channel, its row of rows_, or -1 for a list in list_
  std::vector<uint64_t> rows_;  // bitset rows of the allowed chunks of channels that may carry many
  std::vector<int64_t> list_start_;  // per channel, its slice of list_ (empty for a row)
  std::vector<int> list_;  // the allowed (permuted) chunks of the other channels, increasing
  std::vector<std::pair<int, ChannelId>>
      allowed_by_chunk_;                // (permuted chunk, channel) as allowed, until run()
  std::vector<int64_t> allowed_start_;  // per permuted chunk, its slice of the two below
  std::vector<NodeId> allowed_src_;     // the allowed channels' sources, sorted per chunk
  std::vector<ChannelId> allowed_id_;   // the allowed channels, in that order
  int live_words_ = 0;
  mutable std::vector<uint64_t> live_;  // per channel, the words of h & w that may be nonzero
  std::vector<Time> far_;       // N x N fastest channel-path durations (kNever: unreachable)
  std::vector<Estimate> best_;  // per NPU and permuted chunk
};

}  // namespace tenet::synth::detail
