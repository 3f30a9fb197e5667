#include "synth/synthesizer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <tuple>
#include <numeric>
#include <optional>
#include <queue>
#include <random>
#include <thread>

#include "synth/baselines.hpp"
#include "synth/composed.hpp"
#include "synth/lower_bound.hpp"
#include "synth/server_plan.hpp"
#include "synth/symmetric.hpp"
#include "synth/group_map.hpp"
#include "synth/team_relay.hpp"
#include "synth/timing.hpp"
#include "synth/tree_packing.hpp"
#include "topo/analysis.hpp"
#include "topo/error.hpp"
#include "topo/limits.hpp"
#include "topo/routing.hpp"

namespace tenet::synth {

int64_t transfer_estimate(const Collective& c) {
  if (one_destination(c.kind)) return c.num_chunks();  // relays add their hops
  return c.num_chunks() * static_cast<int64_t>(c.num_ranks() - 1) * (c.kind == CollectiveKind::AllReduce ? 2 : 1);
}

Collective composed_collective(const topo::Topology& t, Collective c) {
  if (c.all_reduce_chunks > 0) return c;
  if (const auto servers = composed_servers(t, c)) {
    c.all_reduce_chunks = static_cast<int>(servers->front().size()) * c.chunks_per_npu;
    c.chunks_per_npu = 1;
  }
  return c;
}

namespace {
// Whether flat synthesis is out of reach for `c`: over kFlatTransferCap transfers at one chunk per
// NPU. An All-Reduce over servers is then composed per level only (synth/composed.hpp).
bool flat_out_of_reach(Collective c) {
  c.chunks_per_npu = 1;
  c.all_reduce_chunks = 0;
  return transfer_estimate(c) > kFlatTransferCap;
}
}  // namespace

Collective as_synthesized(const topo::Topology& t, const Collective& c, const SynthOptions& o) {
  if (c.kind != CollectiveKind::AllReduce) return c;
  if (o.method == SynthMethod::Composed || (o.method == SynthMethod::Auto && flat_out_of_reach(c)))
    return composed_collective(t, c);
  return c;
}

std::string_view to_string(SynthMethod m) {
  switch (m) {
    case SynthMethod::Auto: return "auto";
    case SynthMethod::Matcher: return "matcher";
    case SynthMethod::PlanMatcher: return "plan-matcher";
    case SynthMethod::PlanPipeline: return "plan-pipeline";
    case SynthMethod::ServerPlan: return "server-plan";
    case SynthMethod::Composed: return "composed";
    case SynthMethod::Symmetric: return "symmetric";
  }
  return "?";
}

SynthMethod parse_synth_method(std::string_view name) {
  for (SynthMethod m : {SynthMethod::Auto, SynthMethod::Matcher, SynthMethod::PlanMatcher, SynthMethod::PlanPipeline,
                        SynthMethod::ServerPlan, SynthMethod::Composed, SynthMethod::Symmetric})
    if (to_string(m) == name) return m;
  throw Error(fmt::format(
      "unknown method '{}' (auto, matcher, plan-matcher, plan-pipeline, server-plan, composed or symmetric)", name));
}

std::string_view to_string(ChunkPriority p) {
  switch (p) {
    case ChunkPriority::Scarce: return "scarce";
    case ChunkPriority::Rarest: return "rarest";
    case ChunkPriority::Random: return "random";
    case ChunkPriority::Lowest: return "lowest";
  }
  return "?";
}

ChunkPriority parse_chunk_priority(std::string_view name) {
  for (ChunkPriority p : {ChunkPriority::Scarce, ChunkPriority::Rarest, ChunkPriority::Random, ChunkPriority::Lowest})
    if (to_string(p) == name) return p;
  throw Error(fmt::format("unknown chunk priority '{}' (scarce, rarest, random or lowest)", name));
}

namespace {

using ChannelId = int32_t;
constexpr int64_t kRoutedMatcherWork = int64_t{1} << 26;
constexpr double kRoutedEnough = 1.005;
// Past the chunk search, the pipelines double their chunks alone once more after a count that
// gained nothing, unless already within this of the bound.
constexpr double kDoublingEnough = 1.005;
// Past this of the bound, the pipelines' own doubling (past the chunk search) tries their split
// variants and goes on to its transfer budget, gaining or not (flat_auto_chunks). Issue 15's mark
// is 1.02, but just over it (the pods of examples/ at 64 MiB, 1.022x) both cost 1.6x the CPU and
// gained nothing.
constexpr double kPipelinesPersist = 1.03;
// ... while their last count came within this of the fastest: far behind it, more chunks only
// cost.
constexpr double kPipelinesContend = 1.1;
// ... and while their times still jump from count to count, or their chunks are of this or more:
// small chunks whose times settle far from the bound are latency, which more chunks do not remove
// (without this, the simulation suite's test took twice as long).
constexpr Bytes kPipelinesPersistChunk = 4096;
// Past kPipelineTransferBudget, that doubling goes on with the kVariantsPast fastest pipeline
// variants at the count before alone, up to kPipelineFastestTransferBudget, at a fraction of the
// CPU all of them take (random-fabric-122 All-Gather at 4096 chunks: 3.3 s for two, 46 s for all
// twenty). Below the budget all run, as their rankings move from count to count (there: sped up
// whole at 512 chunks, split at 1024, split in lanes at 2048; random-fabric-177 All-Gather: a chunk
// of a stream at a time 1.18x the fastest at 128 chunks, the fastest from 16384 on).
constexpr size_t kVariantsPast = 2;
// An All-Reduce's pipelines are two halves, each of half its transfer estimate. While their
// fastest is over this of the bound (issue 15's mark), they count a half's transfers against both
// budgets, and so go a count further, as a half alone would. Their joined times jump from count to
// count (the halves' streams share links where they overlap), so the fastest at one count need not
// be at the next: random-fabric-68's serial pipelines in lanes make 1.20x the bound at 512 and 1024
// chunks per NPU and 1.011x at 2048, where only 1024's two fastest had run before, making 1.039x
// and 1.043x: 1.028x -> 1.011x. Random-fabric-122's: 1.021x -> 1.0185x at 4096. Only while over
// the mark: everywhere, the 200 random fabrics' All-Reduce took 21 % more CPU for the same two
// gains and two other results 0.2 % apart.
constexpr double kHalvesOver = 1.02;
// The matcher's variants as synthesize_once names them (the chunk search doubles the winning one
// alone past its last count: flat_auto_chunks).
constexpr std::string_view kRandomMatcher = "matcher (random choice among the scarcest chunks)";
constexpr std::string_view kRandomYieldingMatcher =
    "matcher (random choice among the scarcest chunks; slow links yield the last ones)";
constexpr std::string_view kUnderHold = " under hold, re-timed";
// A server plan's matcher: at most this many bitset words scanned (its allowed chunks take about
// 24 B per transfer, Spreader::index_allowed).
constexpr int64_t kServerPlanWork = int64_t{1} << 32;

// A way for one NPU to send to another: a direct link, or a route through switches. It moves a
// chunk at `rate`, the narrowest bandwidth on its route, holding that much of every link on it.
struct Channel {
  NodeId src, dst;
  uint32_t route_begin, route_size;
  Time duration, occupancy;
  Bandwidth rate;
  bool pinned = false;  // moves at a rate below its route's narrowest bandwidth: a share of a fat link
};

class ChannelGraph {
 public:
  static constexpr int kMaxRoutedNpus = 256;
  ChannelGraph(const topo::Topology& t, Bytes chunk_bytes, LinkModel model, int ecmp) : t_(t) {
    for (LinkId l = 0; l < t.num_links(); ++l) {
      const topo::Link& k = t.link(l);
      if (t.is_npu(k.src) && t.is_npu(k.dst)) add(k.src, k.dst, std::span(&l, 1), chunk_bytes, model);
    }
    topo::Router router(t);
    if (t.num_switches() > 0) {
      for (NodeId u = 0; u < t.num_npus(); ++u) {
        auto routes = router.quickest_switch_routes_from(u, chunk_bytes, ecmp);
        for (NodeId v = 0; v < t.num_npus(); ++v)
          for (const topo::Route& r : routes[v]) add(u, v, r.links, chunk_bytes, model);
      }
    }
    // NPUs with on-chip routers pass traffic through: every pair they join gets a channel, as long
    // as N^2 channels stay affordable.
    bool routers = false;
    for (NodeId v = 0; v < t.num_npus(); ++v) routers = routers || t.node(v).router;
    if (routers && t.num_npus() <= kMaxRoutedNpus) {
      std::vector<char> has(static_cast<size_t>(t.num_npus()) * t.num_npus(), 0);
      for (const Channel& c : channels_) has[static_cast<size_t>(c.src) * t.num_npus() + c.dst] = 1;
      for (NodeId u = 0; u < t.num_npus(); ++u)
        for (NodeId v = 0; v < t.num_npus(); ++v)
          if (u != v && !has[static_cast<size_t>(u) * t.num_npus() + v])
            if (auto r = router.route(u, v)) add(u, v, r->links, chunk_bytes, model);
    }
    finish();
  }

  // Only the given ways (src, dst, route), each once: the channels of a flow plan.
  ChannelGraph(const topo::Topology& t, Bytes chunk_bytes, LinkModel model,
               const std::vector<std::tuple<NodeId, NodeId, std::vector<LinkId>>>& ways)
      : t_(t) {
    for (const auto& [u, v, route] : ways) add(u, v, route, chunk_bytes, model);
    finish();
  }
  // The ways of a server plan, channel i being way i, each at its own rate.
  ChannelGraph(const topo::Topology& t, Bytes chunk_bytes, LinkModel model, const std::vector<ServerWay>& ways)
      : t_(t) {
    for (const ServerWay& w : ways) add(w.src, w.dst, w.route, chunk_bytes, model, w.rate);
    finish();
  }

  // The channel from u to v over `route`, or -1.
  ChannelId find(NodeId u, NodeId v, std::span<const LinkId> route) const {
    for (ChannelId c : out(u))
      if (channels_[c].dst == v && std::ranges::equal(this->route(channels_[c]), route)) return c;
    return -1;
  }

  size_t size() const { return channels_.size(); }
  const Channel& operator[](ChannelId id) const { return channels_[id]; }
  std::span<const LinkId> route(const Channel& c) const { return {routes_.data() + c.route_begin, c.route_size}; }
  std::span<const ChannelId> out(NodeId u) const { return slice(out_offset_, out_, u); }
  std::span<const ChannelId> in(NodeId v) const { return slice(in_offset_, in_, v); }
  std::span<const ChannelId> on_link(LinkId l) const { return slice(link_offset_, on_link_, l); }

  // The fastest congestion-free time from every NPU to every NPU over channels (N x N, row =
  // source), kNever where none: one Dijkstra per NPU.
  std::vector<Time> all_pairs_durations() const {
    const int n = t_.num_npus();
    const Time never = std::numeric_limits<Time>::max();
    std::vector<Time> d(static_cast<size_t>(n) * n, never);
    using Item = std::pair<Time, NodeId>;
    for (NodeId s = 0; s < n; ++s) {
      Time* row = &d[static_cast<size_t>(s) * n];
      std::priority_queue<Item, std::vector<Item>, std::greater<Item>> q;
      row[s] = 0;
      q.push({0, s});
      while (!q.empty()) {
        auto [at, u] = q.top();
        q.pop();
        if (at > row[u]) continue;
        for (ChannelId c : out(u)) {
          const Time t = at + channels_[c].duration;
          if (t < row[channels_[c].dst]) {
            row[channels_[c].dst] = t;
            q.push({t, channels_[c].dst});
          }
        }
      }
    }
    return d;
  }

  // Hop distances between NPUs over channels, from `from` (forward) or to it (reverse).
  std::vector<int> hops(NodeId from, bool reverse) const {
    std::vector<int> d(t_.num_npus(), -1);
    std::vector<NodeId> q{from};
    d[from] = 0;
    for (size_t i = 0; i < q.size(); ++i)
      for (ChannelId c : reverse ? in(q[i]) : out(q[i])) {
        NodeId w = reverse ? channels_[c].src : channels_[c].dst;
        if (d[w] < 0) {
          d[w] = d[q[i]] + 1;
          q.push_back(w);
        }
      }
    return d;
  }

 private:
  void add(NodeId u, NodeId v, std::span<const LinkId> route, Bytes bytes, LinkModel model, Bandwidth rate = 0) {
    const RouteCost cost = route_cost(t_, route, bytes, model, rate);
    channels_.push_back({u, v, static_cast<uint32_t>(routes_.size()), static_cast<uint32_t>(route.size()),
                         cost.duration, cost.occupancy, cost.rate, cost.rate < cost.bottleneck});
    routes_.insert(routes_.end(), route.begin(), route.end());
  }
  void finish() {
    csr(out_offset_, out_, [&](const Channel& c) { return std::vector<int>{c.src}; }, t_.num_npus());
    csr(in_offset_, in_, [&](const Channel& c) { return std::vector<int>{c.dst}; }, t_.num_npus());
    csr(link_offset_, on_link_, [&](const Channel& c) {
      auto r = route(c);
      return std::vector<int>(r.begin(), r.end());
    }, t_.num_links());
  }
  template <typename Keys>
  void csr(std::vector<int64_t>& offset, std::vector<ChannelId>& ids, Keys keys, int n) {
    offset.assign(n + 1, 0);
    for (const Channel& c : channels_)
      for (int k : keys(c)) ++offset[k + 1];
    std::partial_sum(offset.begin(), offset.end(), offset.begin());
    ids.resize(offset.back());
    std::vector<int64_t> next(offset.begin(), offset.end() - 1);
    for (ChannelId id = 0; id < static_cast<ChannelId>(channels_.size()); ++id)
      for (int k : keys(channels_[id])) ids[next[k]++] = id;
  }
  static std::span<const ChannelId> slice(const std::vector<int64_t>& off, const std::vector<ChannelId>& ids, int k) {
    return {ids.data() + off[k], static_cast<size_t>(off[k + 1] - off[k])};
  }

  const topo::Topology& t_;
  std::vector<Channel> channels_;
  std::vector<LinkId> routes_;
  std::vector<int64_t> out_offset_, in_offset_, link_offset_;
  std::vector<ChannelId> out_, in_, on_link_;
};

// One transfer as the matcher decides it. `dep` is the transfer that brought the chunk to the
// source (-1 when the source held it from the start).
struct Raw {
  ChunkId chunk;
  ChannelId channel;
  int32_t dep;
  uint16_t queue;  // its channel in the IR (a stream of the pipeline), or 0
  Time start, end;
  Bandwidth rate;  // its own rate (a pinned flow-plan pipeline), or 0
};
static_assert(sizeof(Raw) <= 40 && std::is_trivial_v<Raw>, "the matcher holds one per transfer (16.8M on a 64x64 torus)");

// The matcher's transfers, in blocks of 1M that build() gives back one by one as it turns them
// into the algorithm, so that the two are never held whole at once (on a 64x64 torus All-Gather,
// 671 MB of these and 805 MB of algorithm: the build was the command's peak). A block is 40 MB,
// over the largest threshold at which glibc's malloc maps a block of its own (32 MiB), so a freed
// block leaves memory: smaller ones came from the heap once the threshold had grown, and stayed
// (a 128x128 torus held 22 GB at its build). Raw is trivial, so a block's pages are touched only
// as it fills.
class RawList {
 public:
  static constexpr int kShift = 20;
  static constexpr size_t kBlock = size_t{1} << kShift;
  size_t size() const { return size_; }
  Raw& operator[](size_t i) { return blocks_[i >> kShift][i & (kBlock - 1)]; }
  const Raw& operator[](size_t i) const { return blocks_[i >> kShift][i & (kBlock - 1)]; }
  Raw& back() { return (*this)[size_ - 1]; }
  void push_back(const Raw& r) {
    if ((size_ >> kShift) == blocks_.size()) blocks_.push_back(std::make_unique_for_overwrite<Raw[]>(kBlock));
    (*this)[size_++] = r;
  }
  // Frees the block that ends with element i (call once i is the last of its block, or of all).
  void release_through(size_t i) {
    if ((i + 1) % kBlock == 0 || i + 1 == size_) blocks_[i >> kShift].reset();
  }
  template <typename F>
  void for_each(F&& f) const {
    for (size_t i = 0; i < size_; ++i) f((*this)[i]);
  }

 private:
  std::vector<std::unique_ptr<Raw[]>> blocks_;
  size_t size_ = 0;
};

// The event loop shared by both matchers: arrivals and link releases in time order; after each
// instant's events, the dirty channels are matched, fastest first. A link carries concurrent
// transfers whose rates sum to at most its bandwidth (under `hold`, one transfer at a time).
class EventLoop {
 public:
  EventLoop(const topo::Topology& t, const ChannelGraph& g, LinkModel model)
      : g_(g),
        hold_(model == LinkModel::Hold),
        spare_(t.num_links()),
        dirty_flag_(g.size(), 0),
        in_flight_(g.size(), 0) {
    // Under hold a link serves one transfer at a time: count it as 1 unit that a transfer takes.
    for (LinkId l = 0; l < t.num_links(); ++l) spare_[l] = hold_ ? 1 : t.link(l).bandwidth;
    for (ChannelId c = 1; c < static_cast<ChannelId>(g.size()); ++c) uniform_ = uniform_ && g[c].duration == g[0].duration;
    for (ChannelId c = 0; c < static_cast<ChannelId>(g.size()); ++c) routed_ = routed_ || g[c].route_size > 1;
    // Channels whose rates fit every link they share at once (a server plan's ways at their fluid
    // shares) never wait for each other: a release frees its own channel only.
    independent_ = !hold_;
    for (LinkId l = 0; independent_ && l < t.num_links(); ++l) {
      Bandwidth sum = 0;
      for (ChannelId c : g.on_link(l)) sum += held(g[c]);
      independent_ = sum <= spare_[l];
    }
    npus_ = t.num_npus();
    if (routed_) {  // per channel, its duration's rank and (dst - src) mod N: the routed order's keys
      shift_.resize(g.size());
      for (ChannelId c = 0; c < static_cast<ChannelId>(g.size()); ++c)
        shift_[c] = static_cast<int>(((g[c].dst - g[c].src) % npus_ + npus_) % npus_);
      std::vector<Time> durations;
      for (ChannelId c = 0; c < static_cast<ChannelId>(g.size()); ++c) durations.push_back(g[c].duration);
      std::sort(durations.begin(), durations.end());
      durations.erase(std::unique(durations.begin(), durations.end()), durations.end());
      speeds_ = static_cast<int>(durations.size());
      speed_.resize(g.size());
      for (ChannelId c = 0; c < static_cast<ChannelId>(g.size()); ++c)
        speed_[c] = static_cast<int>(std::lower_bound(durations.begin(), durations.end(), g[c].duration) - durations.begin());
    }
    // Events scheduled `delay` after now are pushed in time order for a fixed delay: one FIFO per
    // distinct delay (and kind), and a small heap of the FIFOs' heads, instead of one big heap.
    std::vector<Time> delays;
    for (ChannelId c = 0; c < static_cast<ChannelId>(g.size()); ++c) {
      delays.push_back(g[c].duration);
      delays.push_back(g[c].occupancy);
    }
    std::sort(delays.begin(), delays.end());
    delays.erase(std::unique(delays.begin(), delays.end()), delays.end());
    arrival_class_.resize(g.size());
    free_class_.resize(g.size());
    for (ChannelId c = 0; c < static_cast<ChannelId>(g.size()); ++c) {
      auto index = [&](Time d) { return static_cast<int>(std::lower_bound(delays.begin(), delays.end(), d) - delays.begin()); };
      arrival_class_[c] = 2 * index(g[c].duration);
      free_class_[c] = 2 * index(g[c].occupancy) + 1;
    }
    fifos_.resize(2 * delays.size());
  }

  const Channel& channel(ChannelId id) const { return g_[id]; }
  // Whether dirty channels are matched in the order they were marked (else sorted by speed and,
  // through switches, by shift): then which were marked, and when, changes the schedule.
  bool matches_in_marking_order() const { return uniform_ && !routed_; }
  void mark_dirty(ChannelId c) {
    if (!dirty_flag_[c]) {
      dirty_flag_[c] = 1;
      dirty_.push_back(c);
    }
  }
  void mark_all_dirty() {
    for (ChannelId c = 0; c < static_cast<ChannelId>(g_.size()); ++c) mark_dirty(c);
  }
  // Whether every link of the channel has the channel's rate to spare now.
  bool free_now(const Channel& c) const {
    for (LinkId l : g_.route(c))
      if (spare_[l] < held(c)) return false;
    return true;
  }
  // Occupies the channel's links from `t` (now); returns the arrival time.
  Time occupy(ChannelId id, Time t, int32_t transfer) {
    const Channel& c = g_[id];
    for (LinkId l : g_.route(c)) spare_[l] -= held(c);
    push(free_class_[id], {t + c.occupancy, 1, id});
    ++in_flight_[id];
    push(arrival_class_[id], {t + c.duration, 0, transfer});
    return t + c.duration;
  }

  // Runs until no event is left. `arrive(transfer)` handles an arrival; `match(channel, now)`
  // tries a dirty channel that is free.
  template <typename Arrive, typename Match>
  void run(Arrive&& arrive, Match&& match) {
    Time now = 0;
    process(now, match);
    while (!heads_.empty()) {
      now = heads_.top().event.time;
      while (!heads_.empty() && heads_.top().event.time == now) {
        const Event e = pop();
        if (e.kind == 0) {
          arrive(e.id);
        } else {  // the channel's transfer releases its links
          const Channel& ch = g_[e.id];
          --in_flight_[e.id];
          for (LinkId l : g_.route(ch)) {
            spare_[l] += held(ch);
            if (!independent_)
              for (ChannelId c : g_.on_link(l)) mark_dirty(c);
          }
          if (independent_) mark_dirty(e.id);
        }
      }
      process(now, match);
    }
  }

 private:
  struct Event {
    Time time;
    int kind;  // 0 arrival (id = transfer), 1 release of a channel's links (id = channel)
    int32_t id;
    bool operator>(const Event& o) const {
      if (time != o.time) return time > o.time;
      if (kind != o.kind) return kind > o.kind;
      return id > o.id;
    }
  };
  struct Head {
    Event event;
    int fifo;
    bool operator>(const Head& o) const { return event > o.event; }
  };
  struct Fifo {
    std::vector<Event> items;
    size_t front = 0;
  };
  void push(int fifo, const Event& e) {
    Fifo& f = fifos_[fifo];
    if (f.front == f.items.size()) {
      f.items.clear();
      f.front = 0;
      heads_.push({e, fifo});
    }
    f.items.push_back(e);
  }
  Event pop() {
    const int fifo = heads_.top().fifo;
    heads_.pop();
    Fifo& f = fifos_[fifo];
    const Event e = f.items[f.front++];
    if (f.front < f.items.size()) {
      heads_.push({f.items[f.front], fifo});
      if (f.front > 4096 && 2 * f.front > f.items.size()) {  // drop what was consumed
        f.items.erase(f.items.begin(), f.items.begin() + static_cast<std::ptrdiff_t>(f.front));
        f.front = 0;
      }
    }
    return e;
  }
  template <typename Match>
  void process(Time now, Match& match) {
    if (dirty_.empty()) return;
    if (routed_) {
      // Channels through switches compete for shared up- and downlinks. Considering them by the
      // shift (dst - src - round) mod N makes each round's greedy matching the perfect shift
      // permutation on a star, and rotates the shift from round to round.
      const int n = npus_;
      const int64_t round = round_ % n;
      auto shift_of = [&](ChannelId c) {
        const int s = shift_[c] - static_cast<int>(round);
        return s < 0 ? s + n : s;
      };
      const size_t buckets = static_cast<size_t>(speeds_) * n;
      if (dirty_.size() > static_cast<size_t>(n) && buckets <= 4 * dirty_.size()) {
        // Few distinct channel speeds (a switched fabric, where thousands of channels are dirty
        // each instant): the dirty channels in id order (from the flags when they are many), then
        // a stable counting sort by (speed, shift): the general sort's order below at a fraction of
        // its cost.
        if (dirty_.size() * 16 >= g_.size()) {
          dirty_.clear();
          for (ChannelId c = 0; c < static_cast<ChannelId>(g_.size()); ++c)
            if (dirty_flag_[c]) dirty_.push_back(c);
        } else {
          std::sort(dirty_.begin(), dirty_.end());
        }
        auto bucket = [&](ChannelId c) { return static_cast<size_t>(speed_[c]) * n + shift_of(c); };
        bucket_start_.assign(buckets + 1, 0);
        for (ChannelId c : dirty_) ++bucket_start_[bucket(c) + 1];
        std::partial_sum(bucket_start_.begin(), bucket_start_.end(), bucket_start_.begin());
        sorted_.resize(dirty_.size());
        for (ChannelId c : dirty_) sorted_[bucket_start_[bucket(c)]++] = c;
        dirty_.swap(sorted_);
      } else {
        keyed_.clear();
        for (ChannelId c : dirty_)
          keyed_.push_back({g_[c].duration, static_cast<int64_t>(shift_of(c)) << 32 | static_cast<uint32_t>(c)});
        std::sort(keyed_.begin(), keyed_.end());
        for (size_t i = 0; i < keyed_.size(); ++i) dirty_[i] = static_cast<ChannelId>(keyed_[i].second & 0xffffffff);
      }
    } else if (!uniform_) {
      std::sort(dirty_.begin(), dirty_.end(), [&](ChannelId a, ChannelId b) {
        return g_[a].duration != g_[b].duration ? g_[a].duration < g_[b].duration : a < b;
      });
    }
    batch_.swap(dirty_);  // matching may dirty channels again: they go to the next round
    dirty_.clear();
    for (ChannelId c : batch_) dirty_flag_[c] = 0;
    bool matched = false;
    for (ChannelId c : batch_)
      if (free_now(g_[c]) && !(g_[c].pinned && in_flight_[c] > 0)) matched = match(c, now) || matched;
    if (matched) ++round_;  // the shift rotates from one round of matches to the next
  }

  const ChannelGraph& g_;
  bool uniform_ = true;  // every channel equally fast: match in the order they became dirty
  bool routed_ = false;  // some channels go through switches
  bool independent_ = false;  // the channels' rates fit every link at once
  int npus_ = 0;
  int64_t round_ = 0;
  Bandwidth held(const Channel& c) const { return hold_ ? 1 : c.rate; }

  bool hold_;
  std::vector<Bandwidth> spare_;  // per link: bandwidth not held now (hold: 1 when free)
  std::vector<char> dirty_flag_;
  // Per channel, its transfers holding their links. A pinned channel (a way at its fluid share
  // of a fat link) carries one at a time: where the ways' rates fit every link at once, only a
  // way's own release wakes it, and a way that doubled up on a link's spare capacity would hold
  // its sibling off with nothing left to wake it (a Broadcast's double binary trees, two ways
  // sharing a NIC, stopped with chunks undelivered).
  std::vector<int32_t> in_flight_;
  std::vector<ChannelId> dirty_, batch_;
  std::vector<std::pair<Time, int64_t>> keyed_;  // (duration, shift and channel): the routed order
  std::vector<int> shift_;               // per channel, (dst - src) mod N (routed only)
  std::vector<int> speed_;               // per channel, its duration's rank among the distinct ones (routed only)
  int speeds_ = 1;
  std::vector<int64_t> bucket_start_;    // the routed order's counting sort by (speed, shift)
  std::vector<ChannelId> sorted_;
  std::vector<int> arrival_class_, free_class_;  // per channel, its FIFO for each kind of event
  std::vector<Fifo> fifos_;
  std::priority_queue<Head, std::vector<Head>, std::greater<Head>> heads_;
};

// Channel `id` carries chunk `c` from `now`, `dep` having brought it to the channel's source (-1:
// held from the start): the matchers' one way to send. Returns the transfer's index.
int32_t send(RawList& raw, EventLoop& loop, ChunkId c, ChannelId id, Time now, int32_t dep) {
  const auto x = static_cast<int32_t>(raw.size());
  raw.push_back({.chunk = c, .channel = id, .dep = dep, .queue = 0, .start = now, .end = 0, .rate = 0});
  raw.back().end = loop.occupy(id, now, x);
  if (loop.channel(id).pinned) raw.back().rate = loop.channel(id).rate;
  return x;
}

// Spreads chunks: every NPU ends with the chunks it needs (All-Gather, Broadcast; relays need
// everything). Chunk ids are permuted by the seed so that ties break differently per seed.
class Spreader {
 public:
  Spreader(const topo::Topology& t, const ChannelGraph& g, int chunks, const SynthOptions& o)
      : t_(t), g_(g), n_(t.num_npus()), chunks_(chunks), words_((chunks + 63) / 64), opt_(o),
        random_(o.priority == ChunkPriority::Random), yield_(random_ && o.slow_links_yield), rng_(o.seed),
        holds_(static_cast<size_t>(n_) * words_, 0), want_(holds_.size(), 0), count_(chunks, 0),
        perm_(chunks), unperm_(chunks) {
    std::iota(perm_.begin(), perm_.end(), 0);
    if (o.priority != ChunkPriority::Lowest) {
      std::mt19937_64 rng(o.seed);
      std::shuffle(perm_.begin(), perm_.end(), rng);
    }
    for (int c = 0; c < chunks; ++c) unperm_[perm_[c]] = c;
    if (yield_) {
      wants_.assign(n_, 0);
      others_rate_.assign(g.size(), 0);
      for (ChannelId c = 0; c < static_cast<ChannelId>(g.size()); ++c)
        for (ChannelId d : g.in(g[c].dst))
          if (d != c) others_rate_[c] += 1.0 / static_cast<double>(std::max<Time>(1, g[d].duration));
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
    int64_t reported = 0;
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
      if (opt_.progress && total - remaining_ - reported >= total / 100 + 1) {
        reported = total - remaining_;
        opt_.progress(static_cast<double>(reported) / total);
      }
    };
    auto match = [&](ChannelId id, Time now) {
      const Channel& ch = g_[id];
      const int p = planned ? pick_planned(id) : mixed_ ? pick_ahead(id, now) : pick(id);
      if (p < 0) return false;
      want_[ch.dst * words_ + p / 64] &= ~(uint64_t{1} << (p % 64));
      if (yield_) --wants_[ch.dst];
      if (mixed_) spread_estimate(ch.dst, p, now + ch.duration);
      const ChunkId c = unperm_[p];
      send(raw_, loop, c, id, now, -1);  // its dependency: found after the loop (link_dependencies)
      return true;
    };
    loop.run(arrive, match);
    if (remaining_ > 0) throw Error(fmt::format("synthesis is stuck: {} chunk deliveries cannot be made through "
                                                "the topology's links and switch routes", remaining_));
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
    std::vector<int32_t> brought(static_cast<size_t>(n_) * chunks_, -1);  // per (node, chunk): its delivery
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
    int best = -1;
    if (dense_row_[id] < 0) {  // its few chunks, in increasing id as the words would give them
      for (int64_t k = list_start_[id]; k < list_start_[id + 1]; ++k) {
        const int p = list_[k];
        if ((h[p / 64] & w[p / 64]) >> (p % 64) & 1 && (best < 0 || count_[p] < count_[best])) best = p;
      }
      return best;
    }
    const uint64_t* a = allowed_row(id);
    for_each_live(id, h, w, [&](int i, uint64_t hwa) {
      for (uint64_t m = hwa; m; m &= m - 1) {
        const int p = i * 64 + std::countr_zero(m);
        if (best < 0 || count_[p] < count_[best]) best = p;
      }
    }, a);
    return best;
  }

  // A plan's allowed (chunk, channel) pairs, indexed both ways. Per chunk, its channels sorted by
  // (source, id), found by a binary search on the source: an arrival of chunk p at v wakes only
  // the channels out of v the plan lets carry p (a server plan's NPU has hundreds of ways out, of
  // which a chunk may take a few). Per channel, its chunks as a bitset row where it may carry more
  // chunks than the row has words, else as a sorted list (a server plan's rail way carries its
  // root's few chunks: 4096 NPUs have 2.1M ways, whose rows would take 1.1 GB).
  void index_allowed() {
    std::sort(allowed_by_chunk_.begin(), allowed_by_chunk_.end(), [&](const auto& x, const auto& y) {
      if (x.first != y.first) return x.first < y.first;
      const NodeId sx = g_[x.second].src, sy = g_[y.second].src;
      return sx != sy ? sx < sy : x.second < y.second;
    });
    allowed_by_chunk_.erase(std::unique(allowed_by_chunk_.begin(), allowed_by_chunk_.end()), allowed_by_chunk_.end());
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
      if (dense_row_[id] >= 0) rows_[static_cast<size_t>(dense_row_[id]) * words_ + p / 64] |= uint64_t{1} << (p % 64);
      else list_[per_channel[id]++] = p;
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
    allowed_by_chunk_ = std::vector<std::pair<int, ChannelId>>();  // freed (`= {}` keeps the capacity)
  }
  const uint64_t* allowed_row(ChannelId id) const { return &rows_[static_cast<size_t>(dense_row_[id]) * words_]; }
  std::span<const ChannelId> allowed_from(NodeId v, int p) const {
    const auto first = allowed_src_.begin() + allowed_start_[p], last = allowed_src_.begin() + allowed_start_[p + 1];
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
  void for_each_live(ChannelId id, const uint64_t* h, const uint64_t* w, F&& f, const uint64_t* a = nullptr) const {
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
      int best = -1;
      for_each_live(id, h, w, [&](int i, uint64_t hw) {
        for (uint64_t m = hw & mine[i]; m; m &= m - 1) {
          const int p = i * 64 + std::countr_zero(m);
          if (best < 0 || count_[p] < count_[best]) best = p;
        }
      });
      if (best >= 0) return best;
    }
    if (opt_.priority == ChunkPriority::Lowest) {
      int first = -1;
      for_each_live(id, h, w, [&](int i, uint64_t hw) {
        if (first < 0) first = i * 64 + std::countr_zero(hw);
      });
      return first;
    }
    // Who else could deliver to v: the sources of v's other in-channels (at most 64).
    suppliers_.clear();
    if (opt_.priority != ChunkPriority::Rarest)
      for (ChannelId c : g_.in(v))
        if (g_[c].src != u && suppliers_.size() < 64) suppliers_.push_back(&holds_[g_[c].src * words_]);
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
  // SynthOptions::slow_links_yield: a channel leaves the last chunks its destination wants to its
  // faster in-channels, when their sources hold every chunk it could carry and they would bring
  // all the destination still wants before its own transfer arrived (a destination's other
  // in-channels carry others_rate_ chunks per ps; it wants wants_).
  const bool yield_;
  mutable std::mt19937_64 rng_;
  mutable std::vector<const uint64_t*> faster_;
  std::vector<int64_t> wants_;       // yield_: per NPU, the chunks it wants not yet on their way
  std::vector<double> others_rate_;  // yield_: per channel, chunks per ps its destination's other in-channels carry
  std::vector<uint64_t> holds_, want_;
  std::vector<int> count_;
  std::vector<int> perm_, unperm_;
  std::vector<NodeId> origin_;  // per permuted chunk, its first holder
  std::vector<uint64_t> own_;   // per NPU, the chunks it held from the start
  RawList raw_;
  int64_t remaining_ = 0;
  mutable std::vector<const uint64_t*> suppliers_;
  bool mixed_ = false;           // channels of different speeds: pick_ahead
  bool planned_ = false;           // under a flow plan: channels carry only the chunks it allows
  std::vector<int> dense_row_;     // per channel, its row of rows_, or -1 for a list in list_
  std::vector<uint64_t> rows_;     // bitset rows of the allowed chunks of channels that may carry many
  std::vector<int64_t> list_start_;  // per channel, its slice of list_ (empty for a row)
  std::vector<int> list_;          // the allowed (permuted) chunks of the other channels, increasing
  std::vector<std::pair<int, ChannelId>> allowed_by_chunk_;  // (permuted chunk, channel) as allowed, until run()
  std::vector<int64_t> allowed_start_;  // per permuted chunk, its slice of the two below
  std::vector<NodeId> allowed_src_;     // the allowed channels' sources, sorted per chunk
  std::vector<ChannelId> allowed_id_;   // the allowed channels, in that order
  int live_words_ = 0;
  mutable std::vector<uint64_t> live_;  // per channel, the words of h & w that may be nonzero
  std::vector<Time> far_;        // N x N fastest channel-path durations (kNever: unreachable)
  std::vector<Estimate> best_;   // per NPU and permuted chunk
};

// Routes chunks that each have one destination (Scatter, All-to-All) along shortest channel paths,
// the chunk with the longest way still to go first (ties: the one waiting longest). An NPU's
// waiting chunks are kept by destination, so a match looks at destinations, not chunks.
class Router {
 public:
  Router(const topo::Topology& t, const ChannelGraph& g, const SynthOptions& o) : t_(t), g_(g), opt_(o), outbox_(t.num_npus()) {}

  void add(ChunkId c, NodeId at, NodeId target) {
    if (at == target) return;
    if (dist_to_.empty()) dist_to_.resize(t_.num_npus());
    if (dist_to_[target].empty()) dist_to_[target] = g_.hops(target, true);
    if (dist_to_[target][at] < 0)
      throw Error(fmt::format("synthesis is stuck: NPU {} cannot reach NPU {} through channels", at, target));
    items_.push_back({c, target, -1});
    wait(at, static_cast<int32_t>(items_.size() - 1));
  }

  RawList run() {
    EventLoop loop(t_, g_, opt_.link_model);
    int64_t remaining = static_cast<int64_t>(items_.size());
    const int64_t total = std::max<int64_t>(1, remaining);
    loop.mark_all_dirty();
    std::vector<int32_t> item_of;  // per raw transfer
    auto arrive = [&](int32_t x) {
      const NodeId v = g_[raw_[x].channel].dst;
      Item& it = items_[item_of[x]];
      it.last = x;
      if (v == it.target) {
        --remaining;
        if (opt_.progress && remaining % (total / 100 + 1) == 0)
          opt_.progress(1.0 - static_cast<double>(remaining) / total);
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
        if (d[ch.src] > best_left || (d[ch.src] == best_left && box[b].items.front().first < box[best].items.front().first)) {
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
      send(raw_, loop, items_[item].chunk, id, now, items_[item].last);
      return true;
    };
    loop.run(arrive, match);
    if (remaining > 0) throw Error(fmt::format("synthesis is stuck: {} chunks never reach their destination", remaining));
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
    auto it = std::find_if(box.begin(), box.end(), [&](const Waiting& w) { return w.target == target; });
    if (it == box.end()) it = box.insert(box.end(), Waiting{target, {}});
    it->items.push_back({seq_++, item});
  }

  const topo::Topology& t_;
  const ChannelGraph& g_;
  const SynthOptions& opt_;
  std::vector<std::vector<Waiting>> outbox_;  // per NPU, its waiting chunks by destination (in no order)
  int64_t seq_ = 0;
  std::vector<Item> items_;
  std::vector<std::vector<int>> dist_to_;  // per destination, hop distances to it (filled when first needed)
  RawList raw_;
};

// Ways for routed chunks (All-to-All, Scatter) that spread their load over the links as the
// multicommodity-flow optimum does (topo/flow_bound.hpp), chosen by congestion: each chunk takes
// a shortest way over channels whose length is the sum over its links of
//   (1 / bandwidth) x exp(gamma x load / (bandwidth x horizon)),
// the load being the bytes routed over the link (by every other chunk) and `horizon` the time the
// bound allows (Garg and Koenemann's lengths: a link that carries its whole share costs e^8 times
// an idle one). Rounds go over the chunks' index within their pair, sources take turns, and a
// source's chunks follow one shortest-way tree per batch (up to 64 batches per source over all
// rounds), so that a source's own links are balanced too. A single pass routes early sources as if
// the later ones did not exist (a 4x4x4 torus: the busiest link 1.38x the bound), so three more
// passes rip each batch up and route it again among everyone else's load (negotiated congestion,
// as FPGA routers do): the busiest link 1.06x the bound at one chunk per pair, 1.004x at 16.
struct ChunkWays {
  std::vector<int64_t> offset;  // chunk i's ways are ways[offset[i] .. offset[i + 1])
  std::vector<ChannelId> ways;
  std::span<const ChannelId> of(size_t i) const {
    return {ways.data() + offset[i], static_cast<size_t>(offset[i + 1] - offset[i])};
  }
};

ChunkWays flow_ways(const topo::Topology& t, const ChannelGraph& g, const std::vector<std::array<NodeId, 2>>& ends,
                    const std::vector<int>& round_of, Bytes chunk_bytes, double horizon_seconds) {
  constexpr double kGamma = 8.0;
  constexpr int kPasses = 4;
  // Shortest-way trees per source and pass, over all rounds: 64, fewer where that would cost more
  // than about 2e8 channel relaxations (512 NPUs of a 3D torus: 32).
  const int trees_per_source = static_cast<int>(std::clamp<int64_t>(
      int64_t{200'000'000} / (int64_t{t.num_npus()} * kPasses * std::max<int64_t>(1, static_cast<int64_t>(g.size()))), 8, 64));
  const int n = t.num_npus();
  std::vector<double> load(t.num_links(), 0.0);
  std::vector<double> length(g.size());
  auto refresh = [&](ChannelId c) {
    double len = 0;
    for (LinkId l : g.route(g[c])) {
      const double bw = static_cast<double>(t.link(l).bandwidth);
      len += std::exp(std::min(50.0, kGamma * load[l] / (bw * horizon_seconds))) / bw;
    }
    length[c] = len;
  };
  for (ChannelId c = 0; c < static_cast<ChannelId>(g.size()); ++c) refresh(c);
  // Chunks by round and source.
  int rounds = 0;
  for (int r : round_of) rounds = std::max(rounds, r + 1);
  const int batches = std::max(1, trees_per_source / rounds);
  std::vector<std::vector<std::vector<int32_t>>> by(rounds, std::vector<std::vector<int32_t>>(n));
  for (size_t i = 0; i < ends.size(); ++i) by[round_of[i]][ends[i][0]].push_back(static_cast<int32_t>(i));
  std::vector<std::vector<ChannelId>> way(ends.size());
  std::vector<double> dist(n);
  std::vector<ChannelId> via(n);
  std::vector<char> touched(g.size(), 0);
  std::vector<ChannelId> stale;
  std::vector<int64_t> wanted(n, 0);  // == stamp: a destination of the batch not yet settled
  int64_t stamp = 0;
  using Item = std::pair<double, NodeId>;
  std::vector<ChannelId> path;
  // Adds (sign 1) or removes (-1) the chunks' ways' load, and refreshes the lengths it changes.
  auto carry = [&](std::span<const int32_t> chunks, double sign) {
    for (int32_t i : chunks)
      for (ChannelId c : way[i])
        for (LinkId l : g.route(g[c])) {
          load[l] += sign * static_cast<double>(chunk_bytes);
          for (ChannelId o : g.on_link(l))
            if (!touched[o]) {
              touched[o] = 1;
              stale.push_back(o);
            }
        }
    for (ChannelId o : stale) {
      touched[o] = 0;
      refresh(o);
    }
    stale.clear();
  };
  for (int pass = 0; pass < kPasses; ++pass)
    for (int r = 0; r < rounds; ++r)
      for (int k = 0; k < n; ++k) {
        const NodeId s = static_cast<NodeId>((k + (static_cast<int64_t>(r) + pass) * 7919) % n);  // sources take turns
        const std::vector<int32_t>& mine = by[r][s];
        const size_t batch = std::max<size_t>(1, (mine.size() + batches - 1) / batches);
        for (size_t b0 = 0; b0 < mine.size(); b0 += batch) {
          const std::span<const int32_t> these(mine.data() + b0, std::min(batch, mine.size() - b0));
          if (pass > 0) carry(these, -1);  // rip up, then route again among everyone else's load
          std::fill(dist.begin(), dist.end(), std::numeric_limits<double>::infinity());
          std::fill(via.begin(), via.end(), -1);
          std::priority_queue<Item, std::vector<Item>, std::greater<Item>> q;
          dist[s] = 0;
          q.push({0, s});
          // Until every destination of the batch is settled.
          ++stamp;
          int unsettled = 0;
          for (int32_t i : these)
            if (wanted[ends[i][1]] != stamp) {
              wanted[ends[i][1]] = stamp;
              ++unsettled;
            }
          while (!q.empty() && unsettled > 0) {
            auto [d, u] = q.top();
            q.pop();
            if (d > dist[u]) continue;
            if (wanted[u] == stamp) {
              wanted[u] = 0;
              --unsettled;
            }
            for (ChannelId c : g.out(u))
              if (d + length[c] < dist[g[c].dst]) {
                dist[g[c].dst] = d + length[c];
                via[g[c].dst] = c;
                q.push({dist[g[c].dst], g[c].dst});
              }
          }
          for (int32_t i : these) {
            path.clear();
            for (NodeId v = ends[i][1]; v != s; v = g[via[v]].src) {
              if (via[v] < 0) throw Error(fmt::format("synthesis is stuck: NPU {} cannot reach NPU {} through channels", s, ends[i][1]));
              path.push_back(via[v]);
            }
            way[i].assign(path.rbegin(), path.rend());
          }
          carry(these, 1);
        }
      }
  ChunkWays out;
  out.offset.push_back(0);
  for (const auto& w : way) {
    out.ways.insert(out.ways.end(), w.begin(), w.end());
    out.offset.push_back(static_cast<int64_t>(out.ways.size()));
  }
  return out;
}

// The matcher along fixed ways: each channel, when free, sends the waiting chunk whose way has the
// most time left (its congestion-free duration), ties to the lowest chunk.
class WayRouter {
 public:
  WayRouter(const topo::Topology& t, const ChannelGraph& g, const SynthOptions& o, std::vector<ChunkId> chunks,
            ChunkWays ways)
      : t_(t), g_(g), opt_(o), chunks_(std::move(chunks)), ways_(std::move(ways)), waiting_(g.size()) {}

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
    loop.mark_all_dirty();
    std::vector<int32_t> item_of;  // per raw transfer
    auto arrive = [&](int32_t x) {
      const int32_t i = item_of[x];
      last_[i] = x;
      if (++pos_[i] == static_cast<int>(ways_.of(i).size())) {
        --remaining;
        if (opt_.progress && remaining % (total / 100 + 1) == 0) opt_.progress(1.0 - static_cast<double>(remaining) / total);
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
      send(raw_, loop, chunks_[i], id, now, last_[i]);
      return true;
    };
    loop.run(arrive, match);
    if (remaining > 0) throw Error(fmt::format("synthesis is stuck: {} chunks never reach their destination", remaining));
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

// NPUs on shortest channel paths from any of `from` to any of `to`: the relays a spread needs.
std::vector<char> relays(const ChannelGraph& g, int n, const std::vector<NodeId>& from, const std::vector<NodeId>& to) {
  std::vector<char> on(n, 0);
  std::vector<std::vector<int>> d_to;
  for (NodeId b : to) d_to.push_back(g.hops(b, true));
  for (NodeId a : from) {
    std::vector<int> d_from = g.hops(a, false);
    for (size_t j = 0; j < to.size(); ++j) {
      const int total = d_from[to[j]];
      if (total < 0) continue;
      for (NodeId x = 0; x < n; ++x)
        if (d_from[x] >= 0 && d_to[j][x] >= 0 && d_from[x] + d_to[j][x] == total) on[x] = 1;
    }
  }
  return on;
}

// The forward problem a collective reduces to.
enum class Shape { Spread, Route };

struct Plan {
  Shape shape;
  bool reversed;  // synthesize on the reversed topology and reverse time
  bool reduce;    // the reversed transfers reduce
};

Plan plan_for(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::AllGather:
    case CollectiveKind::Broadcast: return {Shape::Spread, false, false};
    case CollectiveKind::ReduceScatter:
    case CollectiveKind::Reduce: return {Shape::Spread, true, true};
    case CollectiveKind::Scatter:
    case CollectiveKind::AllToAll: return {Shape::Route, false, false};
    case CollectiveKind::Gather: return {Shape::Route, true, false};
    case CollectiveKind::AllReduce: break;
  }
  throw Error("All-Reduce has no single plan");
}

// The forward version of `c` (what runs on the reversed topology for the reversed plans):
// Reduce-Scatter -> All-Gather, Reduce -> Broadcast, Gather -> Scatter.
CollectiveKind forward_kind(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::ReduceScatter: return CollectiveKind::AllGather;
    case CollectiveKind::Reduce: return CollectiveKind::Broadcast;
    case CollectiveKind::Gather: return CollectiveKind::Scatter;
    default: return k;
  }
}

RawList run_forward(const topo::Topology& t, const ChannelGraph& g, const Collective& c, const SynthOptions& o) {
  const int p = c.num_ranks();
  const ChunkId chunks = c.num_chunks();
  if (plan_for(c.kind).shape == Shape::Route) {
    Router r(t, g, o);
    for (ChunkId ch = 0; ch < chunks; ++ch) {
      int target = c.needed_by(ch);
      r.add(ch, c.ranks[c.origin(ch)], c.ranks[target]);
    }
    return r.run();
  }
  Spreader s(t, g, chunks, o);
  for (ChunkId ch = 0; ch < chunks; ++ch) s.hold(c.ranks[c.origin(ch)], ch);
  std::vector<char> takes(t.num_npus(), 0);
  for (NodeId v : c.ranks) takes[v] = 1;
  if (p < t.num_npus()) {
    std::vector<NodeId> sources = c.kind == CollectiveKind::Broadcast ? std::vector<NodeId>{c.ranks[c.root]} : c.ranks;
    std::vector<char> on = relays(g, t.num_npus(), sources, c.ranks);
    for (NodeId v = 0; v < t.num_npus(); ++v) takes[v] = takes[v] || on[v];
  }
  for (NodeId v = 0; v < t.num_npus(); ++v)
    if (takes[v])
      for (ChunkId ch = 0; ch < chunks; ++ch) s.need(v, ch);
  return s.run();
}

Algorithm empty_algorithm(const topo::Topology& t, const Collective& c, Bytes chunk_bytes, const SynthOptions& o) {
  return synth::empty_algorithm("tenet", t, c, chunk_bytes, o.link_model);
}

// The matcher's transfers as an (untimed) algorithm on `t`: as they are (forward), or, for the
// reversed plans, with time and direction turned around: the forward problem ran on the reversed
// topology, whose link l is t's link l backwards.
// Drops what the matcher sent to relays (NPUs outside the communicator) that never went on to a
// member: such a relay has nothing to pass back once the schedule is reversed, and forward it only
// wasted a link. Children come after their parents, so one backward pass decides.
RawList prune_relays(const ChannelGraph& g, RawList raw, const Collective& c, int npus) {
  std::vector<char> member(npus, 0);
  for (NodeId v : c.ranks) member[v] = 1;
  std::vector<char> keep(raw.size(), 0);
  for (size_t i = raw.size(); i-- > 0;) {
    keep[i] = keep[i] || member[g[raw[i].channel].dst];
    if (keep[i] && raw[i].dep >= 0) keep[raw[i].dep] = 1;
  }
  std::vector<int32_t> index(raw.size(), -1);
  RawList out;
  for (size_t i = 0; i < raw.size(); ++i)
    if (keep[i]) {
      index[i] = static_cast<int32_t>(out.size());
      out.push_back(raw[i]);
      if (out.back().dep >= 0) out.back().dep = index[out.back().dep];
    }
  return out;
}

Algorithm build(const topo::Topology& t, const ChannelGraph& g, RawList raw, const Plan& plan,
                const Collective& c, Bytes chunk_bytes, const SynthOptions& o,
                const std::vector<int32_t>* pace = nullptr) {
  // `pace`: per transfer, one more it waits for (-1: none); from the pipelines, which run over
  // every NPU, so never pruned.
  if (c.num_ranks() < t.num_npus()) raw = prune_relays(g, std::move(raw), c, t.num_npus());
  Algorithm a = empty_algorithm(t, c, chunk_bytes, o);
  const size_t n = raw.size();
  size_t route_links = 0;
  raw.for_each([&](const Raw& r) { route_links += g[r.channel].route_size; });
  a.reserve(n, route_links, n);
  std::vector<LinkId> route;
  if (!plan.reversed) {  // already in start order; dep = the transfer that brought the chunk
    for (size_t i = 0; i < n; ++i) {
      const Raw& r = raw[i];
      const Channel& ch = g[r.channel];
      std::array<TransferId, 2> deps{r.dep, pace ? (*pace)[i] : -1};
      if (deps[0] > deps[1]) std::swap(deps[0], deps[1]);
      const size_t from = deps[0] < 0 || deps[0] == deps[1] ? 1 : 0;
      a.add(r.chunk, ch.src, ch.dst, g.route(ch), Op::Copy,
            deps[1] >= 0 ? std::span<const TransferId>(deps.data() + from, 2 - from) : std::span<const TransferId>(),
            -1, -1, r.rate, r.queue);
      raw.release_through(i);
    }
    return a;
  }
  // Reversed: forward transfer y depended on x (x brought the chunk to y's source), so the
  // reversed x waits for the reversed y. In reversed time, order by decreasing forward end.
  std::vector<int32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t x, int32_t y) { return raw[x].end > raw[y].end; });
  std::vector<TransferId> index(n);
  for (size_t k = 0; k < n; ++k) index[order[k]] = static_cast<TransferId>(k);
  // Children of each forward transfer: those it brought the chunk for, and those it paced.
  std::vector<int64_t> offset(n + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    if (raw[i].dep >= 0) ++offset[raw[i].dep + 1];
    if (pace && (*pace)[i] >= 0 && (*pace)[i] != raw[i].dep) ++offset[(*pace)[i] + 1];
  }
  std::partial_sum(offset.begin(), offset.end(), offset.begin());
  std::vector<TransferId> children(offset.back());
  std::vector<int64_t> next(offset.begin(), offset.end() - 1);
  for (size_t i = 0; i < n; ++i) {
    if (raw[i].dep >= 0) children[next[raw[i].dep]++] = index[i];
    if (pace && (*pace)[i] >= 0 && (*pace)[i] != raw[i].dep) children[next[(*pace)[i]]++] = index[i];
  }
  std::vector<char> member(t.num_nodes(), 0);
  for (NodeId v : c.ranks) member[v] = 1;
  // A node that holds nothing (a relay outside the communicator) takes its first partial as a
  // copy; later ones reduce into it and wait for that copy.
  std::map<std::pair<NodeId, ChunkId>, TransferId> first_copy;
  std::vector<TransferId> deps;
  for (size_t k = 0; k < n; ++k) {
    const Raw& r = raw[order[k]];
    const Channel& ch = g[r.channel];
    auto fwd = g.route(ch);
    route.assign(fwd.rbegin(), fwd.rend());
    deps.assign(children.begin() + offset[order[k]], children.begin() + offset[order[k] + 1]);
    Op op = plan.reduce ? Op::Reduce : Op::Copy;
    if (plan.reduce && !member[ch.src]) {
      auto [it, inserted] = first_copy.emplace(std::pair(ch.src, r.chunk), static_cast<TransferId>(k));
      if (inserted) op = Op::Copy;
      else deps.push_back(it->second);
    }
    std::sort(deps.begin(), deps.end());
    a.add(r.chunk, ch.dst, ch.src, route, op, deps, -1, -1, r.rate, r.queue);
  }
  return a;
}

// The flow plan of a topology (trees for All-Gather over every NPU, or for Broadcast from `root`),
// computed once per topology and root.
const TreePacking* plan_of(const topo::Topology& t, NodeId root = -1) {
  static std::mutex lock;
  static std::map<std::pair<uint64_t, NodeId>, std::optional<TreePacking>> cache;
  std::lock_guard<std::mutex> guard(lock);
  auto it = cache.find({t.fingerprint(), root});
  if (it == cache.end())
    it = cache.emplace(std::pair(t.fingerprint(), root), root < 0 ? pack_spanning_trees(t) : pack_broadcast_trees(t, root))
             .first;
  return it->second ? &*it->second : nullptr;
}

using Method = SynthMethod;

// In lanes, a chunk goes at the tree's rate times its lane, but at least this of it: a chunk in a
// lane of a few percent would take the whole stream's time, and its subtree would wait. (Not in
// serial channels: there a stream over its lane would hold its route's other streams back. They
// drop the thin lanes where the tree's other routes have room for them instead: drop_thin_lanes.)
constexpr double kLeastLane = 0.5;

// How plan_pipeline streams a plan's trees (its comment says what each does).
struct PipelineShape {
  bool lanes = false;
  int split = 1;
  double least_lane = kLeastLane;
  bool serial = false;
  // A stream's rate, whole: its tree's, or in lanes its tree's times its lane (at least least_lane).
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
// fill (a chunk's time at the stream's rate per level) and lets a stream that fell behind catch up
// (random fabric 122's All-Reduce at 1024 chunks per NPU: 1.063x the bound -> 1.048x). Timed
// beside the plan's rates, the faster kept (for_each_pipeline_variant).
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
      factor_[l] = planned[l] > 0 ? std::max(1.0, static_cast<double>(ft.link(l).bandwidth) / planned[l] * (1 - 1e-9)) : 1.0;
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

// Per tree of a plan, as plan_pipeline streams it: `chunk_time`, a chunk's time at the tree's
// rate (a chunk leaves the root each chunk time), and `last`, when its first chunk reaches its last
// NPU (per arc, a chunk's time at the stream's rate as `speedup` gives it, `split` times as long
// when split, plus the latency of its slowest route).
struct PipelineFill {
  std::vector<Time> chunk_time, last;
};
PipelineFill pipeline_fill(const topo::Topology& ft, const TreePacking& packing, Bytes chunk_bytes,
                           const PipelineShape& shape, const StreamSpeedup& speedup) {
  const bool lanes = shape.lanes;
  const int split = shape.split;
  const int n = ft.num_npus();
  const double per_copy = static_cast<double>(packing.unit) / packing.congestion;
  auto time_at = [&](double rate) { return transfer_time(chunk_bytes, std::max<Bandwidth>(1, static_cast<Bandwidth>(rate))); };
  PipelineFill f;
  std::vector<Time> arrival(n);
  std::vector<char> known(n);
  std::vector<NodeId> path;
  for (const PackedTree& tr : packing.trees) {
    const double rate = per_copy * tr.copies;
    f.chunk_time.push_back(time_at(rate));
    std::fill(known.begin(), known.end(), 0);
    arrival[tr.root] = 0;
    known[tr.root] = 1;
    Time last = 0;
    for (NodeId v = 0; v < n; ++v) {
      path.clear();  // v and its ancestors not yet known, deepest first
      for (NodeId at = v; !known[at]; at = tr.parent[at]) path.push_back(at);
      for (auto it = path.rbegin(); it != path.rend(); ++it) {
        const NodeId u = *it;
        const auto& shares = lanes ? tr.lanes[u] : tr.shares[u];
        Time hop = 0;
        for (size_t r = 0; r < tr.routes[u].size(); ++r) {
          if (shares[r] <= 0) continue;
          Time latency = 0;
          for (LinkId l : tr.routes[u][r]) latency += ft.link(l).latency;
          const double own = shape.stream_rate(rate, shares[r]) / split;
          hop = std::max(hop, transfer_time(chunk_bytes, speedup(tr.routes[u][r], own)) + latency);
        }
        arrival[u] = arrival[tr.parent[u]] + hop;
        known[u] = 1;
      }
      last = std::max(last, arrival[v]);
    }
    f.last.push_back(last);
  }
  return f;
}

// The flow plan's trees as pipelines: every tree streams its chunks down its arcs at its fluid
// rate (copies x unit / U, so that the rates on every link sum to at most its bandwidth), the
// transfers listed in the order the fluid schedule starts them. Each stream (a tree's chunks from
// one NPU to one child over one route) is a channel of its own: a sender serves a channel in list
// order, and one channel per tree at an NPU held the tree's other streams behind a transfer whose
// route was full (200 random switched fabrics' 40 first seeds: 21 of 200 cases faster, by up to
// 15 % on All-Reduce, 3 slower by under 0.6 %).
// With `last_first`, each tree streams its chunks in reverse order (the All-Gather half of an
// All-Reduce: the reversed Reduce-Scatter pipelines finish their last chunks first).
// An arc split off at switches stands for several routes. Without `lanes`, a tree's chunks take
// them in proportion to their shares of the arc, each at the tree's rate: short bursts, but the
// trees on a route may burst at once beyond its capacity, and a route through a link thinner than
// the tree's rate holds the tree back chunk after chunk (random-fabric-75's Broadcast: 1.30x the
// bound). With `lanes`, in proportion to the tree's own lanes (PackedTree::lanes), at its rate
// times the lane: the trees' streams fit every route at once (that Broadcast: 1.012x).
// With `pace`, each stream (a tree's chunks to one NPU over one route) gets a pacing dependency:
// a transfer waits for the arrival of the latest transfer of its stream that the fluid schedule
// had delivered by its start. Without it a stream whose chunks are all there (at the root) runs
// ahead while others share its links, and the one it crowds out falls behind for good (a
// Reduce on random-fabric-192: 1.114x the bound unpaced, 1.051x paced). With `split` > 1, a
// stream's chunks go at its rate over `split`, as many at once: a transfer waits until its whole
// rate is free on its route, and on a link every plan saturates, a stream that fell behind (or ran
// ahead) left room too small for the next chunk of another, lost for good; smaller transfers fit
// the room (random-fabric-26 Reduce, 4096 chunks: 1.145x the bound whole, 1.031x in quarters; the
// fill takes `split` times as long). No variant wins everywhere; the caller keeps the fastest.
// Each stream's rate goes through `speedup` (sped up, or the plan's own where it is off).
// `pace` gets the dependency per transfer (-1: none).
RawList plan_pipeline(const topo::Topology& ft, const ChannelGraph& g, const TreePacking& packing,
                      const std::vector<int>& tree_of, Bytes chunk_bytes, bool last_first, const PipelineShape& shape,
                      const StreamSpeedup& speedup, std::vector<int32_t>* pace = nullptr) {
  const int n = ft.num_npus();
  const bool lanes = shape.lanes;
  const int split = shape.split;
  struct Item {
    double key;
    int tree, depth;
    NodeId v;
    ChunkId chunk;
    int j;
  };
  std::vector<Item> items;
  std::vector<int> index_in_tree(packing.trees.size(), 0);
  std::vector<std::vector<int>> depth(packing.trees.size());
  for (size_t i = 0; i < packing.trees.size(); ++i) {
    const PackedTree& tr = packing.trees[i];
    depth[i].assign(n, 0);
    for (NodeId v = 0; v < n; ++v)
      for (NodeId at = v; tr.parent[at] >= 0; at = tr.parent[at]) ++depth[i][v];
  }
  std::vector<int> per_tree(packing.trees.size(), 0);
  for (int i : tree_of) ++per_tree[i];
  for (ChunkId ch = 0; ch < static_cast<ChunkId>(tree_of.size()); ++ch) {
    const int i = tree_of[ch];
    const PackedTree& tr = packing.trees[i];
    const int j = last_first ? per_tree[i] - 1 - index_in_tree[i]++ : index_in_tree[i]++;
    for (NodeId v = 0; v < n; ++v)
      if (v != tr.root) items.push_back({static_cast<double>(j + depth[i][v] - 1) / tr.copies, i, depth[i][v], v, ch, j});
  }
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    if (a.key != b.key) return a.key < b.key;
    if (a.depth != b.depth) return a.depth < b.depth;
    return a.tree < b.tree;
  });
  RawList raw;
  // Per NPU and chunk, the transfer that brought it there, or -1.
  const size_t chunks = tree_of.size();
  std::vector<int32_t> brought(static_cast<size_t>(n) * chunks, -1);
  // Per tree and NPU, per route: its stream. The next chunk goes to the route furthest below its
  // share. A queue is a sender's first link and channel, so streams that share a route's first
  // link (or, reversed, its last) need different channels; each takes the lowest free at both
  // (few channels, as MSCCL-XML wants: on direct links as many as trees share the link). Past
  // 65535 streams on a link numbers repeat, which only joins streams into one queue.
  struct Stream {
    int chunks = 0;
    uint16_t channel = 0;  // 0: none yet
    std::vector<int32_t> paced;  // with `pace`: its transfers so far
    Time free = 0;  // serial: when its last transfer leaves the link, at the plan's rate
  };
  std::vector<std::vector<Stream>> streams(packing.trees.size() * static_cast<size_t>(n));
  std::vector<std::vector<char>> channels_at_first(static_cast<size_t>(ft.num_links()));
  std::vector<std::vector<char>> channels_at_last(channels_at_first.size());
  if (pace) pace->clear();
  const double per_copy = static_cast<double>(packing.unit) / packing.congestion;
  for (const Item& it : items) {
    const PackedTree& tr = packing.trees[it.tree];
    const auto& routes = tr.routes[it.v];
    const auto& shares = lanes ? tr.lanes[it.v] : tr.shares[it.v];
    std::vector<Stream>& mine = streams[static_cast<size_t>(it.tree) * n + it.v];
    mine.resize(routes.size());
    size_t pick = 0;
    while (shares[pick] <= 0) ++pick;
    for (size_t r = pick + 1; r < routes.size(); ++r)
      if (shares[r] > 0 && (mine[r].chunks + 1) / shares[r] < (mine[pick].chunks + 1) / shares[pick]) pick = r;
    Stream& stream = mine[pick];
    ++stream.chunks;
    const ChannelId id = g.find(tr.parent[it.v], it.v, routes[pick]);
    if (stream.channel == 0) {
      std::vector<char>& first = channels_at_first[static_cast<size_t>(routes[pick].front())];
      std::vector<char>& last = channels_at_last[static_cast<size_t>(routes[pick].back())];
      size_t free = 1;
      while ((free < first.size() && first[free]) || (free < last.size() && last[free])) ++free;
      first.resize(std::max(first.size(), free + 1), 0);
      last.resize(std::max(last.size(), free + 1), 0);
      first[free] = last[free] = 1;
      stream.channel = static_cast<uint16_t>(1 + (free - 1) % 65535);
    }
    const Bandwidth tree_rate = std::max<Bandwidth>(1, static_cast<Bandwidth>(per_copy * tr.copies));
    const Time ser = transfer_time(chunk_bytes, tree_rate);
    // In lanes, a chunk goes at the tree's rate times its lane (shape.least_lane). Split, a chunk takes
    // `split` times as long at that rate over `split`.
    const Bandwidth whole =
        lanes ? static_cast<Bandwidth>(shape.stream_rate(per_copy * tr.copies, shares[pick])) : tree_rate;
    const Bandwidth planned = std::max<Bandwidth>(1, whole / split);
    const Bandwidth rate = speedup(routes[pick], static_cast<double>(planned));
    const int32_t dep = brought[static_cast<size_t>(tr.parent[it.v]) * chunks + it.chunk];
    // The fluid start, but never before the chunk has arrived (the reversal orders by these times),
    // nor, in serial channels, before the stream's last chunk has left the link (random fabric
    // 177's All-Reduce at 8192 chunks per NPU: 1.047x the bound without, 1.031x with).
    Time start = static_cast<Time>(it.key * static_cast<double>(ser) * tr.copies);
    if (dep >= 0) start = std::max(start, raw[dep].end);
    if (shape.serial) {
      start = std::max(start, stream.free);
      stream.free = start + transfer_time(chunk_bytes, planned);
    }
    raw.push_back({.chunk = it.chunk,
                   .channel = id,
                   .dep = dep,
                   .queue = stream.channel,
                   .start = start,
                   // At the plan's rate: the fluid schedule, which orders and paces.
                   .end = start + transfer_time(chunk_bytes, planned) + (g[id].duration - transfer_time(chunk_bytes, g[id].rate)),
                   .rate = rate < g[id].rate ? rate : 0});
    brought[static_cast<size_t>(it.v) * chunks + it.chunk] = static_cast<int32_t>(raw.size()) - 1;
    if (pace) {
      // Starts need not rise along a stream (a chunk waits for its arrival): look back over the
      // last 64 for the latest delivered in time.
      std::vector<int32_t>& sent = stream.paced;
      int32_t x = -1;
      for (size_t q = sent.size(); q-- > 0 && q + 64 >= sent.size();)
        if (raw[sent[q]].end <= start) {
          x = sent[q];
          break;
        }
      pace->push_back(x);
      sent.push_back(static_cast<int32_t>(raw.size()) - 1);
    }
  }
  return raw;
}

// The plain matcher's work (SynthOptions::matcher_work): each of about N x N x k deliveries wakes
// the channels through the links it frees, which through switches are about every channel per NPU.
double matcher_work(const ChannelGraph& g, const Collective& forward) {
  return static_cast<double>(g.size()) * static_cast<double>(transfer_estimate(forward)) /
         static_cast<double>(std::max(1, forward.num_ranks()));
}

// A Broadcast over every NPU of a cluster of servers (Reduce: on the reversed topology): the
// root's chunks dealt over its server, chunk c to the NPU at position c mod G (the root keeps its
// own position's), each slice on along its rail to the NPU at that position in every other server
// (in a chain, or down double binary trees), and from there over each server's NVSwitch: every
// NIC carries each slice at most once, so all G NICs of a server stream at once (the flow plan's
// trees are deep there, and every level costs a chunk time and a latency of fill: on
// nvcluster:4x8 rail the last NIC of a server began 14 us after the first, 1.025x the bound;
// 1.039x on its fat tree). The matcher decides when, over the ways each chunk may take. Nothing
// where the plan would allow over 2^26 (chunk, way) pairs.
std::optional<Algorithm> broadcast_server_plan(const topo::Topology& t, const topo::Topology& ft, const Plan& plan,
                                               const Collective& c, const Collective& forward, Bytes chunk_bytes,
                                               const SynthOptions& o, const ServerPlan& servers, bool trees) {
  // The server plan's ways give the routes (balanced over the fabric's equal-cost ones).
  const int n = ft.num_npus(), g = static_cast<int>(servers.servers()[0].size());
  const int count = static_cast<int>(servers.servers().size());
  const NodeId root = forward.ranks[forward.root];
  const int home = servers.server_of(root), r = servers.position(root);
  auto at = [&](int sv, int i) { return servers.servers()[sv][i]; };
  // This plan's ways (each pair is one of the server plan's: in a server or on a rail), each with
  // the share of the root's data it carries (for its fluid rate).
  std::vector<ServerWay> ways;
  std::vector<double> volume;
  std::vector<int> mine(servers.ways().size(), -1);  // per way of the server plan, this plan's
  auto use = [&](NodeId u, NodeId v, double share) {
    const int w = servers.way_between(u, v);
    int& id = mine[static_cast<size_t>(w)];
    if (id < 0) {
      id = static_cast<int>(ways.size());
      ways.push_back(servers.ways()[static_cast<size_t>(w)]);
      volume.push_back(0);
    }
    volume[id] += share;
    return static_cast<ChannelId>(id);
  };
  const double slice = 1.0 / g, piece = slice / (g - 1);
  // Outside the root's server, slice i goes along rail i from the root's server: with `trees`,
  // each half down one tree of a double binary tree over the other servers (synth/baselines.hpp),
  // in which an inner node of one tree is a leaf of the other and no server has more than two
  // children in both, so each NIC sends at most the slice once and the depth is log2 of the
  // servers; else both halves along a chain from server to server (each NIC sends it once). The
  // NPU at position i of each server hands the slice on inside it.
  const int others = count - 1;
  auto server = [&](int member) { return (home + 1 + member) % count; };  // member m of the trees
  std::vector<int> shape(others), second(others);
  for (int m = 0; m < others; ++m) shape[m] = m - 1, second[m] = m;  // the chain
  if (trees) shape = binary_tree(others), second = complementary_positions(shape);
  std::vector<std::array<std::vector<ChannelId>, 2>> of_half(g);  // per slice and half
  std::vector<std::vector<ChannelId>> inside(g);                   // per slice, in the other servers
  for (int i = 0; i < g; ++i) {
    for (int half = 0; half < 2; ++half)
      for (int pos = 0; pos < others; ++pos) {
        const int member = half == 0 ? pos : second[pos];
        const int from = shape[pos] < 0 ? home : server(half == 0 ? shape[pos] : second[shape[pos]]);
        of_half[i][half].push_back(use(at(from, i), at(server(member), i), slice / 2));
      }
    for (int m = 0; m < others; ++m)
      for (int j = 0; j < g; ++j)
        if (j != i) inside[i].push_back(use(at(server(m), i), at(server(m), j), slice));
  }
  // Inside the root's server, a chunk goes from the root to one NPU, which hands it to the others:
  // the NPU at its slice's position (which sends it on along the rail), or for the root's own slice
  // (which the root sends along its rail) each of the others in turn, so that the root's NVSwitch
  // link carries every chunk once.
  auto distributor = [&](ChunkId ch) {
    const int i = ch % g;
    if (i != r) return i;
    const int k = (ch / g) % (g - 1);
    return k < r ? k : k + 1;
  };
  std::vector<std::vector<ChannelId>> from_root(g);  // per distributor: root -> it, it -> the others
  for (int d = 0; d < g; ++d) {
    if (d == r) continue;
    from_root[d].push_back(use(root, at(home, d), slice + piece));
    for (int x = 0; x < g; ++x)
      if (x != r && x != d) from_root[d].push_back(use(at(home, d), at(home, x), slice + piece));
  }
  set_fluid_rates(ft, o.link_model, ways, volume);
  const ChunkId chunks = forward.num_chunks();
  if (static_cast<int64_t>(chunks) * (static_cast<int64_t>(count) * g + 2 * g) > (int64_t{1} << 26)) return std::nullopt;
  ChannelGraph channels(ft, chunk_bytes, o.link_model, ways);
  Spreader s(ft, channels, chunks, o);
  for (ChunkId ch = 0; ch < chunks; ++ch) {
    s.hold(root, ch);
    for (NodeId v = 0; v < n; ++v)
      if (v != root) s.need(v, ch);
    for (ChannelId id : inside[ch % g]) s.allow(id, ch);
    for (ChannelId id : of_half[ch % g][(ch / g) % 2]) s.allow(id, ch);
    for (ChannelId id : from_root[distributor(ch)]) s.allow(id, ch);
  }
  Algorithm a = build(t, channels, s.run(), plan, c, chunk_bytes, o);
  a.method = fmt::format("matcher on a server plan ({} servers of {}: the root's server, then {} on the rails, then "
                         "NVSwitch)",
                         count, g, trees ? "double binary trees" : "a chain");
  return a;
}

// The plan above with a chain along the rails and with double binary trees, the faster kept: the
// chain's every hop costs a chunk of the whole slice, the trees' a chunk of half of it, over
// log2 of the servers (Broadcast of 256 MiB under auto: on nvcluster:4x8 the chain, 1.0155x the
// bound; on nvcluster:16x8 fat tree the trees, 1.062x, where the chain alone was 1.12x). Both on
// one server plan's routes; nothing where there is none.
std::optional<Algorithm> broadcast_server_plan(const topo::Topology& t, const topo::Topology& ft, const Plan& plan,
                                               const Collective& c, const Collective& forward, Bytes chunk_bytes,
                                               const SynthOptions& o) {
  const std::optional<ServerPlan> servers = plan_servers(ft, chunk_bytes, o.link_model, o.ecmp_routes);
  if (!servers) return std::nullopt;
  std::optional<Algorithm> chain = broadcast_server_plan(t, ft, plan, c, forward, chunk_bytes, o, *servers, false);
  if (!chain) return chain;
  std::optional<Algorithm> trees = broadcast_server_plan(t, ft, plan, c, forward, chunk_bytes, o, *servers, true);
  time(t, *chain);
  if (trees) time(t, *trees);
  return trees && trees->claimed_time < chain->claimed_time ? std::move(trees) : std::move(chain);
}

bool mixed_speeds(const topo::Topology& t) {
  for (const topo::Link& l : t.links())
    if (l.bandwidth != t.link(0).bandwidth) return true;
  return false;
}

// The pipelines' variants (plan_pipeline): lanes x 2 + paced, then the same split in quarters
// (variant v: lanes when v % 4 >= 2, paced when v is odd, split when v >= 4). The first four only
// on mixed speeds, where trees share links at uneven rates (random fabrics: 90.0 -> 92.5 % within
// 1.02x of the bound); elsewhere they gained under 0.2 % (issue 15's families: ring, tori, meshes,
// fc and hypercube Broadcast 1.005 -> 1.003) for a timing of the whole algorithm each. The split
// ones only where the whole ones end over kPipelinesPersist of the bound: near it they lose a
// little to their longer fill (random fabrics' 40 first seeds, split instead of whole everywhere:
// 37 of 200 cases faster, 16 slower, 1.54x the CPU).
// Each of the eight also *sped up* (v + kPipelineSpedUp; StreamSpeedup), on mixed speeds only (where
// links the plan leaves room on lie beside saturated ones). Neither way wins everywhere (the
// random fabrics with the unpaced variants sped up in place of the plan's rates, at the counts
// both searches chose: 136 of 716 cases faster, 24 slower; sped up, the paced ones can lose badly:
// random-fabric-5's Reduce-Scatter at 2048 chunks, 1.006x the bound at the plan's rates, 1.10x sped
// up), so both are timed.
constexpr int kPipelineVariants = 4;
constexpr int kPipelineSplit = 4;
constexpr int kPipelineSpedUp = 2 * kPipelineVariants;
// Then, on mixed speeds, in serial channels (v = kPipelineSerial + w; Algorithm::serial_channels):
// each stream sends one chunk at a time, so it never runs over its rate, and where the plan's
// rates fit a link's bandwidth no stream waits on another's: the fluid schedule, bar the fill (a
// chunk time per level). Lanes exact there (no kLeastLane, which over-fills a route: random-fabric
// 177's Broadcast puts 1.84x a 108 GB/s link's bandwidth on it), whole or in lanes (w odd), at the
// plan's rates or sped up (w >= 2); neither paced (a stream cannot run ahead) nor split.
constexpr int kPipelineSerial = 4 * kPipelineVariants;
// An All-Reduce's halves in turn, each its own fastest variant (synthesize_with), where together
// they end over kInTurnOver of the RS+AG bound (issue 15's mark).
constexpr int kPipelineInTurn = kPipelineSerial + 4;
constexpr double kInTurnOver = 1.02;
// The halves in turn report their own variants as these plus v (Reduce-Scatter, then All-Gather),
// and run those whose bits are set (SynthOptions::pipeline_variants; none set: every one).
constexpr int kInTurnHalf[2] = {kPipelineInTurn + 1, 2 * kPipelineInTurn + 1};
constexpr uint64_t kWholeVariants = (uint64_t{1} << kPipelineInTurn) - 1;
int pipeline_variants(const topo::Topology& t) { return mixed_speeds(t) ? kPipelineVariants : 1; }
// What variant v streams.
struct PipelineVariant {
  PipelineShape shape;
  bool paced = false, sped_up = false;
};
PipelineVariant pipeline_variant(int v) {
  PipelineVariant p;
  if (v >= kPipelineSerial) {
    const int w = v - kPipelineSerial;
    p.shape = {.lanes = w % 2 == 1, .split = 1, .least_lane = 0, .serial = true};
    p.sped_up = w >= 2;
    return p;
  }
  p.shape = {.lanes = v % kPipelineVariants >= 2,
             .split = v % kPipelineSpedUp >= kPipelineVariants ? kPipelineSplit : 1,
             .least_lane = kLeastLane,
             .serial = false};
  p.paced = v % 2 == 1;
  p.sped_up = v >= kPipelineSpedUp;
  return p;
}
// Calls run(v) for each pipeline variant that applies: the whole ones (at the plan's rates, then sped
// up); then, where they made `best` over kPipelinesPersist of the bound (and
// SynthOptions::split_pipelines), the split ones; then, on mixed speeds, the serial ones (last, so
// that the split ones are tried wherever they were before them).
void for_each_pipeline_variant(const topo::Topology& t, const SynthOptions& o, const std::optional<Algorithm>& best,
                               const std::function<void(int)>& run) {
  if (o.pipeline_variants != 0) {
    for (int v = 0; v < kPipelineInTurn; ++v)
      if ((o.pipeline_variants >> v & 1) != 0) run(v);
    return;
  }
  const bool mixed = mixed_speeds(t);
  for (int sped = 0; sped <= (mixed ? kPipelineSpedUp : 0); sped += kPipelineSpedUp)
    for (int v = 0; v < pipeline_variants(t); ++v) run(sped + v);
  if (!mixed) return;
  if (best && o.split_pipelines &&
      static_cast<double>(best->claimed_time) >
          kPipelinesPersist * static_cast<double>(lower_bound(t, best->collective, best->chunk_bytes).coarse))
    for (int sped = 0; sped <= kPipelineSpedUp; sped += kPipelineSpedUp)
      for (int v = kPipelineVariants; v < 2 * kPipelineVariants; ++v) run(sped + v);
  for (int w = 0; w < 4; ++w) run(kPipelineSerial + w);
}

// The forward problem of `c` run on `ft` (t or its reverse), under the flow plan when `planned`.
// Nothing when planned but no plan applies (a subset of NPUs, not a spread, no plan found), or
// for the plain matcher when its work is over `work_budget` (0: none). The pipelines run
// `variant` (or, at -1, every variant, the fastest kept; nothing where a variant in lanes would
// be the one without).
std::optional<Algorithm> synthesize_plan(const topo::Topology& t, const Collective& c, Bytes chunk_bytes,
                                         const SynthOptions& o, Method method, bool last_first = false,
                                         double work_budget = 0, int variant = -1) {
  const bool planned = method != Method::Matcher;
  const Plan plan = plan_for(c.kind);
  Collective forward = c;
  forward.kind = forward_kind(c.kind);
  std::optional<topo::Topology> reversed;
  if (plan.reversed) reversed = topo::reversed(t);
  const topo::Topology& ft = plan.reversed ? *reversed : t;
  if (!planned) {
    ChannelGraph g(ft, chunk_bytes, o.link_model, o.ecmp_routes);
    if (work_budget > 0 && matcher_work(g, forward) > work_budget) return std::nullopt;
    return build(t, g, run_forward(ft, g, forward, o), plan, c, chunk_bytes, o);
  }
  if (plan.shape == Shape::Route) {  // the flow plan of routed chunks: ways spread as the flow optimum spreads
    if (method != Method::PlanMatcher) return std::nullopt;
    ChannelGraph g(ft, chunk_bytes, o.link_model, o.ecmp_routes);
    std::vector<ChunkId> chunks;
    std::vector<std::array<NodeId, 2>> ends;
    std::vector<int> round_of;
    for (ChunkId ch = 0; ch < forward.num_chunks(); ++ch) {
      const NodeId from = forward.ranks[forward.origin(ch)], to = forward.ranks[forward.needed_by(ch)];
      if (from == to) continue;
      chunks.push_back(ch);
      ends.push_back({from, to});
      round_of.push_back(ch % forward.chunks_per_npu);
    }
    const double horizon = std::max<double>(1, static_cast<double>(lower_bound(ft, forward, chunk_bytes).bandwidth)) /
                           static_cast<double>(kPicosPerSecond);
    WayRouter r(ft, g, o, std::move(chunks), flow_ways(ft, g, ends, round_of, chunk_bytes, horizon));
    Algorithm a = build(t, g, r.run(), plan, c, chunk_bytes, o);
    a.method = "matcher on ways spread like the flow optimum";
    return a;
  }
  const bool broadcast = forward.kind == CollectiveKind::Broadcast;
  if ((!broadcast && forward.kind != CollectiveKind::AllGather) || forward.num_ranks() != ft.num_npus())
    return std::nullopt;
  if (method == Method::ServerPlan && broadcast) return broadcast_server_plan(t, ft, plan, c, forward, chunk_bytes, o);
  if (method == Method::ServerPlan) {
    const std::optional<ServerPlan> servers = plan_servers(ft, chunk_bytes, o.link_model, o.ecmp_routes);
    // A match scans at most a bitset of chunks of its way.
    const int64_t words = (forward.num_chunks() + 63) / 64;
    if (!servers || transfer_estimate(forward) * words > kServerPlanWork)
      return std::nullopt;
    ChannelGraph g(ft, chunk_bytes, o.link_model, servers->ways());
    Spreader s(ft, g, forward.num_chunks(), o);
    for (ChunkId ch = 0; ch < forward.num_chunks(); ++ch) {
      const NodeId root = forward.ranks[forward.origin(ch)];
      s.hold(root, ch);
      for (NodeId v = 0; v < ft.num_npus(); ++v)
        if (v != root) {
          s.need(v, ch);
          s.allow(servers->way(root, v), ch);
        }
    }
    Algorithm a = build(t, g, s.run(), plan, c, chunk_bytes, o);
    a.method = fmt::format("matcher on a server plan ({} servers of {}: rails, then NVSwitch)",
                           servers->servers().size(), servers->servers()[0].size());
    return a;
  }
  const TreePacking* packing = plan_of(ft, broadcast ? forward.ranks[forward.root] : -1);
  if (!packing) return std::nullopt;
  // The chunks of each root go to its trees in proportion to their copies, as seats to parties by
  // Jefferson's (D'Hondt's) method: each next chunk to the tree whose (chunks + 1) / copies is
  // least, which makes the slowest tree's chunks / copies (its time at its fluid rate) least. A
  // tree of one copy among hundreds may get none: rounding to it would make it the slowest.
  const ChunkId chunks = forward.num_chunks();
  std::vector<std::vector<int>> trees_of(ft.num_npus());
  for (size_t i = 0; i < packing->trees.size(); ++i) trees_of[packing->trees[i].root].push_back(static_cast<int>(i));
  // Each chunk in turn to the first of its root's trees that none is `before`, given how many
  // each was dealt so far (before(i, j, dealt): tree i goes before tree j).
  auto deal = [&](auto&& before) {
    std::vector<int> dealing(chunks, -1), dealt(packing->trees.size(), 0);
    for (ChunkId ch = 0; ch < chunks; ++ch) {
      int best = -1;
      for (int i : trees_of[forward.ranks[forward.origin(ch)]])
        if (best < 0 || before(i, best, dealt)) best = i;
      dealing[ch] = best;
      ++dealt[best];
    }
    return dealing;
  };
  const std::vector<int> tree_of = deal([&](int i, int j, const std::vector<int>& dealt) {
    return int64_t{dealt[i] + 1} * packing->trees[j].copies < int64_t{dealt[j] + 1} * packing->trees[i].copies;
  });
  // The pipelines also deal by when a chunk would arrive (pipeline_fill): each next chunk of a
  // root to the tree where it would reach the tree's last NPU the earliest, at its fill plus a
  // chunk time at the tree's rate per chunk dealt before. Jefferson's method is that where the fill
  // is one chunk time; where a level costs a chunk time at a thin tree's own rate (four, split) and
  // trees are deep, thin and deep trees take fewer chunks and the trees end together. Random
  // fabric 184's Broadcast (19 trees of 1 to dozens of copies, split): 1.138x the bound at 8192
  // chunks by copies, 1.076x by arrival; 1.078x -> 1.042x at 65536. The pipelines time both and
  // keep the faster (200 random fabrics x 5 collectives: 66 cases faster, 12 slower, by under
  // 0.7 % but one 2 %, whose doubling stopped earlier; worst 1.078x -> 1.069x the bound).
  auto deal_by_arrival = [&](const PipelineFill& fill) {
    return deal([&](int i, int j, const std::vector<int>& dealt) {
      return fill.last[i] + dealt[i] * fill.chunk_time[i] < fill.last[j] + dealt[j] * fill.chunk_time[j];
    });
  };
  std::vector<std::tuple<NodeId, NodeId, std::vector<LinkId>>> ways;
  std::set<std::tuple<NodeId, NodeId, std::vector<LinkId>>> distinct;
  for (const PackedTree& tr : packing->trees)
    for (NodeId v = 0; v < ft.num_npus(); ++v)
      for (const auto& route : tr.routes[v])
        if (distinct.emplace(tr.parent[v], v, route).second) ways.emplace_back(tr.parent[v], v, route);
  ChannelGraph g(ft, chunk_bytes, o.link_model, ways);
  if (method == Method::PlanPipeline) {
    std::optional<Algorithm> best;
    // Lanes differ from shares only where an arc stands for several routes.
    bool routed = false;
    for (const PackedTree& tr : packing->trees)
      for (const auto& routes : tr.routes) routed = routed || routes.size() > 1;
    // In serial channels, lanes are the plan's with the thin ones dropped (drop_thin_lanes, once).
    std::optional<TreePacking> narrowed;
    auto run = [&](int v) {
      const PipelineVariant pv = pipeline_variant(v);
      const bool lanes = pv.shape.lanes, paced = pv.paced, sped_up = pv.sped_up;
      const int split = pv.shape.split;
      if (lanes && !routed) return;
      if (lanes && pv.shape.serial && !narrowed) narrowed = drop_thin_lanes(ft, *packing);
      const TreePacking& streamed = lanes && pv.shape.serial ? *narrowed : *packing;
      const StreamSpeedup speedup(ft, streamed, lanes, sped_up);
      if (sped_up && !speedup.any()) return;  // the same as at the plan's rates
      // Both dealings where they differ, timed, the faster kept; sped up, by arrival alone (its fill
      // is what the speed-up shortens). A variant asked for alone (an All-Reduce's halves, timed
      // joined) deals by arrival where split (a level costs four chunk times) or sped up, else by
      // copies.
      const bool arrival_only = split > 1 || sped_up;
      std::vector<int> by_arrival;
      if (variant < 0 || arrival_only)
        by_arrival = deal_by_arrival(pipeline_fill(ft, streamed, chunk_bytes, pv.shape, speedup));
      std::vector<const std::vector<int>*> dealings;
      if (variant >= 0 || sped_up) {
        dealings.push_back(arrival_only ? &by_arrival : &tree_of);
      } else {
        dealings.push_back(&tree_of);
        if (by_arrival != tree_of) dealings.push_back(&by_arrival);
      }
      Time fastest = -1;
      for (const std::vector<int>* dealing : dealings) {
        std::vector<int32_t> pace;
        RawList raw =
            plan_pipeline(ft, g, streamed, *dealing, chunk_bytes, last_first, pv.shape, speedup, paced ? &pace : nullptr);
        Algorithm a = build(t, g, std::move(raw), plan, c, chunk_bytes, o, paced ? &pace : nullptr);
        a.serial_channels = pv.shape.serial;
        if (variant < 0) time(t, a);
        a.method = fmt::format("flow-plan pipelines ({} trees, {} per {}, at their fluid rates{}{}{}{}{}{})",
                               packing->trees.size(), packing->k, broadcast ? "root" : "NPU",
                               sped_up ? " or faster where links have room" : "",
                               lanes ? ", in lanes" : "", paced ? ", paced" : "",
                               pv.shape.serial ? ", a chunk of a stream at a time" : "",
                               split > 1 ? fmt::format(", {} chunks of a stream at once at 1/{} of its rate", split, split)
                                         : "",
                               dealing == &by_arrival && *dealing != tree_of ? ", dealt by arrival" : "");
        if (fastest < 0 || a.claimed_time < fastest) fastest = a.claimed_time;
        if (!best || a.claimed_time < best->claimed_time) best = std::move(a);
      }
      if (variant < 0 && fastest >= 0 && o.on_pipeline_variant) o.on_pipeline_variant(v, fastest);
    };
    if (variant >= 0)
      run(variant);
    else
      for_each_pipeline_variant(t, o, best, run);
    return best;
  }
  Spreader s(ft, g, chunks, o);
  for (ChunkId ch = 0; ch < chunks; ++ch) {
    s.hold(forward.ranks[forward.origin(ch)], ch);
    const PackedTree& tr = packing->trees[tree_of[ch]];
    for (NodeId v = 0; v < ft.num_npus(); ++v) {
      if (v == tr.root) continue;
      s.need(v, ch);
      for (const auto& route : tr.routes[v]) s.allow(g.find(tr.parent[v], v, route), ch);
    }
  }
  Algorithm a = build(t, g, s.run(), plan, c, chunk_bytes, o);
  a.method = fmt::format("matcher on a flow plan ({} trees, {} per {})", packing->trees.size(), packing->k,
                         broadcast ? "root" : "NPU");
  return a;
}

// How many times the halves in turn are joined again at most (join_all_reduce).
constexpr int kInTurnRounds = 8;

// The Reduce-Scatter `first` and the All-Gather `second` as one All-Reduce over `c`, timed: each
// chunk's All-Gather waits for its own reduction, or, `in_turn`, each NPU sends its own chunks'
// All-Gather once every reduction into it has arrived. Such a send waits for the reductions into
// its NPU that end last: first as the halves were timed alone, then, joined again while one of them
// ends after a send it should precede, as timed together (the All-Gather's traffic slows the
// reductions down; each round adds the one that ends last, at most kInTurnRounds times). `serial`
// sets Algorithm::serial_channels.
Algorithm join_all_reduce(const topo::Topology& t, const Collective& c, Algorithm first, const Algorithm& second,
                          bool serial, bool in_turn = false) {
  const auto offset = static_cast<TransferId>(first.size());
  // Per NPU, the reductions into it its own All-Gather sends wait for.
  std::vector<std::vector<TransferId>> waits(static_cast<size_t>(t.num_nodes()));
  // Per NPU, the reduction into it that ends last in `a` (-1: none).
  auto last_into = [&](const Algorithm& a) {
    std::vector<TransferId> last(waits.size(), -1);
    for (TransferId i = 0; i < offset; ++i) {
      TransferId& l = last[static_cast<size_t>(a[i].dst)];
      if (l < 0 || a[i].end > a[l].end) l = i;
    }
    return last;
  };
  // Adds those to `waits`: whether any was not there yet.
  auto add = [&](const std::vector<TransferId>& last) {
    bool added = false;
    for (size_t v = 0; v < waits.size(); ++v)
      if (last[v] >= 0 && std::find(waits[v].begin(), waits[v].end(), last[v]) == waits[v].end()) {
        waits[v].push_back(last[v]);
        added = true;
      }
    return added;
  };
  if (in_turn) add(last_into(first));
  // The spreading phase in channels of its own, so that a port does not hold its first sends back
  // until the reduction phase's last ones there have gone.
  int channels = 0;
  for (const Transfer& x : first.transfers()) channels = std::max(channels, x.channel + 1);
  auto own = [&](TransferId i) {
    const Transfer& x = second[i];
    return x.src == second.collective.ranks[second.collective.origin(x.chunk)];
  };
  auto join = [&] {
    // A chunk's All-Gather leaves its owner after every reduction into it there: listed before it,
    // they are its implicit data dependencies (algorithm.hpp). (Listing them on each send from the
    // owner made N^3 dependencies on a switch: a 1 GB algorithm.json for 512 NPUs.)
    Algorithm a = in_turn ? first : std::move(first);  // joined once unless in turn
    a.collective = c;
    a.serial_channels = serial;
    std::vector<TransferId> deps;
    for (TransferId i = 0; i < static_cast<TransferId>(second.size()); ++i) {
      const Transfer& x = second[i];
      deps.clear();
      for (TransferId d : second.deps(i)) deps.push_back(d + offset);
      if (in_turn && own(i))
        for (TransferId w : waits[static_cast<size_t>(x.src)]) deps.push_back(w);
      std::sort(deps.begin(), deps.end());
      a.add(x.chunk, x.src, x.dst, second.route(i), Op::Copy, deps, -1, -1, second.rate(i),
            static_cast<uint16_t>(std::min(65535, x.channel + channels)));
    }
    time(t, a);
    return a;
  };
  Algorithm a = join();
  for (int round = 0; in_turn && round < kInTurnRounds; ++round) {
    // Whether some NPU sends one of its own chunks before a reduction into it has arrived.
    const std::vector<TransferId> last = last_into(a);
    std::vector<Time> sends(waits.size(), std::numeric_limits<Time>::max());
    for (TransferId i = 0; i < static_cast<TransferId>(second.size()); ++i)
      if (own(i)) {
        Time& first_send = sends[static_cast<size_t>(second[i].src)];
        first_send = std::min(first_send, a[offset + i].start);
      }
    bool early = false;
    for (size_t v = 0; v < waits.size(); ++v) early = early || (last[v] >= 0 && sends[v] < a[last[v]].end);
    if (!early || !add(last)) break;
    a = join();
  }
  return a;
}

// One method: the plain matcher, or the matcher on the flow plan. Nothing when the plan does not apply.
std::optional<Algorithm> synthesize_with(const topo::Topology& t, const Collective& c, Bytes chunk_bytes,
                                         const SynthOptions& o, Method planned, double work_budget = 0) {
  if (c.kind != CollectiveKind::AllReduce) {
    std::optional<Algorithm> a = synthesize_plan(t, c, chunk_bytes, o, planned, false, work_budget);
    if (a && planned != Method::PlanPipeline) time(t, *a);  // the pipelines were timed to pick one
    return a;
  }
  // Reduce-Scatter, then All-Gather; each chunk's All-Gather waits only for its own reduction.
  Collective rs = c, ag = c;
  rs.kind = CollectiveKind::ReduceScatter;
  ag.kind = CollectiveKind::AllGather;
  SynthOptions half = o;
  // The pipelines run each variant in both halves, the fastest whole kept (a half fastest alone
  // may join worse: pod-1spine.yaml, 1.0063x the bound with the plain pipelines, 1.0096x with the
  // halves' fastest).
  std::optional<Algorithm> best;
  auto run = [&](int variant) {
    if (o.progress) half.progress = [&](double f) { o.progress(f / 2); };
    std::optional<Algorithm> first = synthesize_plan(t, rs, chunk_bytes, half, planned, false, work_budget, variant);
    if (!first) return;
    if (o.progress) half.progress = [&](double f) { o.progress(0.5 + f / 2); };
    std::optional<Algorithm> second = synthesize_plan(t, ag, chunk_bytes, half, planned, /*last_first=*/true, 0, variant);
    if (!second) return;
    const bool serial = first->serial_channels;
    Algorithm a = join_all_reduce(t, c, std::move(*first), *second, serial);
    a.method = second->method;
    if (variant >= 0 && o.on_pipeline_variant) o.on_pipeline_variant(variant, a.claimed_time);
    if (!best || a.claimed_time < best->claimed_time) best = std::move(a);
  };
  if (planned != Method::PlanPipeline) {
    run(-1);
    return best;
  }
  for_each_pipeline_variant(t, o, best, run);
  // The halves in turn (kPipelineInTurn): each its own fastest variant, each NPU's All-Gather
  // starting once every reduction into it is done, so that neither half's streams crowd the
  // other's out. The joined channels are serial where both halves' are, shared where neither's
  // are, else timed both ways. On mixed speeds, where the pipelines together end over kInTurnOver
  // of the RS+AG bound (below it they may overlap where in turn they cannot; and each count in
  // turn costs as much again).
  const bool asked = (o.pipeline_variants >> kPipelineInTurn & 1) != 0;
  const bool far = mixed_speeds(t) && (!best || static_cast<double>(best->claimed_time) >
                                                    kInTurnOver * static_cast<double>(lower_bound(t, c, chunk_bytes).coarse));
  if (o.pipeline_variants != 0 ? !asked : !far) return best;
  // Each half its own variants, reported as kInTurnHalf[h] + v.
  auto alone = [&](int h) {
    SynthOptions a = o;
    a.progress = nullptr;
    a.pipeline_variants = o.pipeline_variants >> kInTurnHalf[h] & kWholeVariants;
    if (o.on_pipeline_variant)
      a.on_pipeline_variant = [&o, h](int v, Time time) { o.on_pipeline_variant(kInTurnHalf[h] + v, time); };
    return a;
  };
  std::optional<Algorithm> first = synthesize_plan(t, rs, chunk_bytes, alone(0), planned, false, work_budget);
  if (!first) return best;
  std::optional<Algorithm> second = synthesize_plan(t, ag, chunk_bytes, alone(1), planned, false, 0);
  if (!second) return best;
  // "flow-plan pipelines (...)": what is in the parentheses.
  auto inside = [](const std::string& m) {
    const size_t open = m.find('(');
    return open == std::string::npos || m.back() != ')' ? m : m.substr(open + 1, m.size() - open - 2);
  };
  const std::string method = fmt::format("flow-plan pipelines, the halves in turn (Reduce-Scatter: {}; All-Gather: {})",
                                         inside(first->method), inside(second->method));
  Algorithm a = join_all_reduce(t, c, *first, *second, first->serial_channels, /*in_turn=*/true);
  if (first->serial_channels != second->serial_channels) {
    Algorithm b = join_all_reduce(t, c, *first, *second, second->serial_channels, /*in_turn=*/true);
    if (b.claimed_time < a.claimed_time) a = std::move(b);
  }
  a.method = method;
  if (o.on_pipeline_variant) o.on_pipeline_variant(kPipelineInTurn, a.claimed_time);
  if (!best || a.claimed_time < best->claimed_time) best = std::move(a);
  return best;
}

// Whether a server plan may apply: a spread over every NPU of a cluster of servers.
bool server_plan_applies(const topo::Topology& t, const Collective& c) {
  const bool spread = c.kind == CollectiveKind::AllGather || c.kind == CollectiveKind::ReduceScatter ||
                      c.kind == CollectiveKind::AllReduce || c.kind == CollectiveKind::Broadcast ||
                      c.kind == CollectiveKind::Reduce;
  return spread && c.num_ranks() == t.num_npus() && !topo::detect_servers(t).empty();
}

void for_each_baseline(const topo::Topology& t, const Collective& c,
                       const std::function<void(const BaselineSpec&)>& make);

// Every method that applies, the fastest kept (ties to the first): the plain matcher; on
// mixed-speed topologies the matcher under `hold` re-timed under the pipelined model (hold keeps
// slow links from taking chunks a faster way would bring, which the pipelined greedy misjudges);
// and the matcher on the flow plan.
Algorithm synthesize_once(const topo::Topology& t, const Collective& c, Bytes chunk_bytes, const SynthOptions& o) {
  const bool any = o.method == Method::Auto;
  std::optional<Algorithm> best;
  auto consider = [&](std::optional<Algorithm> a, std::string method) {
    if (a) set_reduce_bandwidth(t, *a, o.reduce_bandwidth);
    if (a && (!best || a->claimed_time < best->claimed_time)) {
      best = std::move(*a);
      best->method = std::move(method);
    }
  };
  // On a topology that looks the same from every NPU, one rank's schedule moved to every NPU
  // (synth/symmetric.hpp): N times less work than the matcher on every link. At the bound (or
  // near it, for a large algorithm: kSymmetricEnough) it is the answer (a 64x64 torus All-Gather:
  // 0.65 s where the matcher takes 20 s); else the others run too and the fastest is kept (ties
  // to the others).
  std::optional<Algorithm> symmetric;
  if (any || o.method == Method::Symmetric) {
    std::string why;
    symmetric = synthesize_symmetric(t, c, chunk_bytes, o.link_model, &why, o.reduce_bandwidth);
    if (!symmetric && !any) throw NotApplicable(fmt::format("method symmetric: {}", why));
    if (symmetric) {
      set_reduce_bandwidth(t, *symmetric, o.reduce_bandwidth);
      const double ratio = static_cast<double>(symmetric->claimed_time) /
                           static_cast<double>(lower_bound(t, c, chunk_bytes).coarse);
      const bool large = static_cast<int64_t>(symmetric->size()) > kPortfolioTransferBudget;
      if (!any || ratio <= 1 + kChunkSearchSlack || (large && ratio <= kSymmetricEnough)) return std::move(*symmetric);
    }
  }
  const bool routed = one_destination(c.kind);
  // The plain matcher compares, at every match, the destinations of the chunks waiting at an NPU:
  // for large routed collectives (512 NPUs: 2^27 chunk-destinations) the ways spread like the flow
  // optimum are both better and far cheaper, and are the only ones built.
  const bool matcher_affordable = !routed || static_cast<int64_t>(c.num_chunks()) * c.num_ranks() <= kRoutedMatcherWork;
  // Where the plain matcher's work is over SynthOptions::matcher_work, `auto` leaves it to the
  // plans, else to the baselines (below); --method matcher runs it whatever it costs.
  bool matcher_over_budget = false;
  const bool servers = server_plan_applies(t, c);
  const double matcher_budget = servers     ? std::min(o.matcher_work, o.matcher_work_beside_servers)
                                : symmetric ? std::min(o.matcher_work, o.matcher_work_beside_symmetric)
                                            : o.matcher_work;
  if ((any && matcher_affordable) || o.method == Method::Matcher) {
    std::optional<Algorithm> a = synthesize_with(t, c, chunk_bytes, o, Method::Matcher, any ? matcher_budget : 0);
    matcher_over_budget = !a;
    consider(std::move(a), "matcher");
  }
  const bool beside_symmetric = symmetric.has_value();
  if (matcher_over_budget && symmetric) {
    std::string method = symmetric->method;
    consider(std::move(symmetric), std::move(method));
    symmetric.reset();
  }
  if (any && o.link_model == LinkModel::Pipelined && mixed_speeds(t)) {
    // The best schedule under hold, re-timed: the pipelined model is never more constrained, so
    // this keeps pipelined results no worse than hold ones.
    SynthOptions hold = o;
    hold.link_model = LinkModel::Hold;
    hold.progress = nullptr;
    hold.random_choice = false;  // run under pipelined below, where it is timed as it will run
    Algorithm a = synthesize_once(t, c, chunk_bytes, hold);
    a.link_model = LinkModel::Pipelined;
    time(t, a);
    std::string method = a.method + std::string(kUnderHold);
    consider(std::move(a), std::move(method));
  }
  // The flow plan, where it applies and the matcher is not at the bound already.
  const bool spread = c.kind == CollectiveKind::AllGather || c.kind == CollectiveKind::ReduceScatter ||
                      c.kind == CollectiveKind::AllReduce || c.kind == CollectiveKind::Broadcast ||
                      c.kind == CollectiveKind::Reduce;
  // The server plan first: it is cheap, and where it reaches the bound the trees are not needed.
  const bool whole = spread && c.num_ranks() == t.num_npus();
  const bool trees = whole && t.num_npus() <= PackingOptions{}.max_npus;
  std::optional<Time> bound;
  auto short_of = [&](const Algorithm& a) {  // over 0.5 % above the lower bound
    if (!bound) bound = lower_bound(t, c, chunk_bytes).coarse;
    return static_cast<double>(a.claimed_time) > 1.005 * static_cast<double>(*bound);
  };
  auto short_of_bound = [&] { return short_of(*best); };
  SynthOptions quiet = o;
  quiet.progress = nullptr;
  for (Method m : {Method::ServerPlan, Method::PlanMatcher, Method::PlanPipeline}) {
    if (!(any || o.method == m)) continue;
    const bool applies = routed || (m == Method::ServerPlan ? servers : trees);
    if (best && any && !(applies && short_of_bound())) continue;
    if (std::optional<Algorithm> a = synthesize_with(t, c, chunk_bytes, quiet, m)) {
      std::string method = a->method;
      consider(std::move(a), method);
    }
  }
  // On mixed speeds the scarce choice looks ahead along the fastest paths (pick_ahead), and every
  // slow link of a cut tends to pick the same chunks; a random choice among the scarcest, as TACOS
  // makes, spreads them over different ones (TACOS's 7x10 heterogeneous mesh, 3 chunks per NPU,
  // hold: 77.5 -> 45.3 ms; the bound is 44.3). At the end a slow link's last transfer may arrive
  // after the fast ones would have brought everything (that mesh's corner NPUs: 38 chunks over
  // the slow link where 37 fit), so it also runs with slow links yielding the last chunks
  // (SynthOptions::slow_links_yield): 44.61 ms there, TACOS's own result (its schedules need not
  // be causal; this one is); the yield loses 0.6 % on TACOS's 8x5 mesh. Where the plans have not
  // reached the bound, both run and the faster is kept (200 random switched fabrics: the 95th
  // percentile 1.072 -> 1.056 of the bound, the worst 1.53 -> 1.33).
  if (any && o.random_choice && !matcher_over_budget && matcher_affordable && o.priority == ChunkPriority::Scarce &&
      mixed_speeds(t) &&
      best && short_of_bound() && !(symmetric && !short_of(*symmetric))) {
    SynthOptions random = quiet;
    random.priority = ChunkPriority::Random;
    for (bool yield : {false, true}) {
      random.slow_links_yield = yield;
      consider(synthesize_with(t, c, chunk_bytes, random, Method::Matcher, matcher_budget),
               std::string(yield ? kRandomYieldingMatcher : kRandomMatcher));
    }
  }
  constexpr std::string_view kLeftOut = "auto leaves the plain matcher out";
  if (best && matcher_over_budget && (servers || beside_symmetric) && best->method.find(kLeftOut) == std::string::npos)
    best->method += fmt::format(" ({} beside {}: --method matcher runs it)", kLeftOut,
                                servers ? "a server plan on a cluster this large" : "a symmetric schedule here");
  if (!best && matcher_over_budget) {
    auto method = [&](const BaselineSpec& spec) {
      return fmt::format("baseline {} ({} on a fabric this large: --method matcher runs it)", spec.name(), kLeftOut);
    };
    // Where two algorithms of this size may not fit in memory at once (a 128x128 torus: 268M
    // transfers, 13 GB each), each baseline is timed and dropped, and the fastest made again.
    const uint64_t memory = topo::available_memory();
    const bool one_at_a_time =
        memory != 0 && 2 * kSynthBytesPerTransfer * static_cast<uint64_t>(transfer_estimate(c)) > memory;
    std::optional<std::pair<Time, BaselineSpec>> fastest;
    for_each_baseline(t, c, [&](const BaselineSpec& spec) {
      Algorithm a = make_baseline(spec, t, c, chunk_bytes, o.link_model, o.reduce_bandwidth);
      a.name = "tenet";
      if (!one_at_a_time) return consider(std::move(a), method(spec));
      set_reduce_bandwidth(t, a, o.reduce_bandwidth);
      if (!fastest || a.claimed_time < fastest->first) fastest = {a.claimed_time, spec};
    });
    if (fastest) {
      Algorithm a = make_baseline(fastest->second, t, c, chunk_bytes, o.link_model, o.reduce_bandwidth);
      a.name = "tenet";
      consider(std::move(a), method(fastest->second));
    }
    if (!best) consider(synthesize_with(t, c, chunk_bytes, o, Method::Matcher), "matcher");
  }
  if (symmetric) {
    std::string method = symmetric->method;
    consider(std::move(symmetric), std::move(method));
  }
  if (!best)
    throw NotApplicable(fmt::format("method {}: no flow plan for this collective on this topology (tree plans cover "
                                    "All-Gather, Reduce-Scatter, All-Reduce, Broadcast and Reduce over every NPU, up to {} NPUs, and "
                                    "need every switch split off completely, which fails on some irregular fabrics; "
                                    "server plans cover All-Gather, Reduce-Scatter, All-Reduce, Broadcast and Reduce over every NPU of a "
                                    "cluster of equal servers (NPUs joined by their fastest links); "
                                    "All-to-All, Scatter and Gather have plan-matcher only)",
                                    to_string(o.method), PackingOptions{}.max_npus));
  return std::move(*best);
}

}  // namespace

namespace {

// Every baseline that applies to `c` on `t` (NotApplicable ones skipped), made by `make`. Direct,
// halving-doubling and Bruck talk to far ranks: where NPUs would relay for them (a torus), they
// multiply their transfers by the hop count (gigabytes at 1024 NPUs) and are never the fastest,
// so they are left out there.
void for_each_baseline(const topo::Topology& t, const Collective& c,
                       const std::function<void(const BaselineSpec&)>& make) {
  std::optional<bool> joined;
  for (BaselineKind b : all_baselines()) {
    if (!supports(b, c.kind)) continue;
    // A ring All-to-All carries each chunk half way round on average: beyond the synthesizer's own
    // budget (512 NPUs: 67M transfers) it is not built.
    if (b == BaselineKind::Ring && c.kind == CollectiveKind::AllToAll &&
        static_cast<double>(c.num_chunks()) * c.num_ranks() / 2 > static_cast<double>(kAutoChunkTransferBudget))
      continue;
    if (b == BaselineKind::Direct || b == BaselineKind::Rhd || b == BaselineKind::Bruck) {
      if (!joined) joined = topo::npus_joined_pairwise(t, c.ranks);
      if (!*joined) continue;
    }
    try {
      make(BaselineSpec{b, {}});
    } catch (const NotApplicable&) {
    }
  }
}


// Whether the baselines may still beat `best` by more than it costs to build them (see
// SynthOptions::baselines).
bool portfolio_worth_it(const topo::Topology& t, const Collective& c, Bytes chunk_bytes, const Algorithm& best) {
  if (transfer_estimate(c) <= kPortfolioTransferBudget) return true;
  for (topo::NodeId v = 0; v < t.num_nodes(); ++v)
    if (t.node(v).can_reduce) return true;  // nvls may beat the RS+AG bound
  const Time bound = lower_bound(t, c, chunk_bytes).coarse;
  return static_cast<double>(best.claimed_time) > static_cast<double>(bound) * (1 + kPortfolioSlack);
}

// The baseline, timed; CannotBeat when its time_floor says that it cannot be faster than `to_beat`
// (then it is not timed: on 1024 NPUs, timing a ring or tree All-Reduce takes 2-4 times as long as
// building it and its floor, and their floors are 9x and 1.03x tenet's time there). `enough`, when
// given, is the chunk search's: a floor it would accept is timed anyway, so that the search stops
// there as it would have.
Algorithm baseline_to_beat(const BaselineSpec& spec, const topo::Topology& t, const Collective& c, Bytes chunk_bytes,
                           const SynthOptions& o, Time to_beat,
                           const std::function<bool(const Algorithm&)>& enough = {}) {
  Algorithm a = make_baseline(spec, t, c, chunk_bytes, o.link_model, o.reduce_bandwidth, false);
  if (to_beat > 0)
    if (const Time floor = time_floor(t, a); floor >= to_beat) {
      a.claimed_time = floor;
      if (!enough || !enough(a)) throw CannotBeat{floor, a.size()};
    }
  time(t, a);
  return a;
}

// `candidate` in place of `best` when it is faster, as tenet's own, saying which baseline it is.
void keep_if_faster(Algorithm& best, Algorithm candidate, const BaselineSpec& spec) {
  if (candidate.claimed_time >= best.claimed_time) return;
  candidate.method = "baseline " + spec.name();
  candidate.name = best.name;
  best = std::move(candidate);
}

Algorithm synthesize_restarts(const topo::Topology& t, const Collective& c, Bytes chunk_bytes, const SynthOptions& o);

// A group whose members' server mates sit idle, borrowing them (synth/team_relay.hpp); nothing when
// the group has none to borrow or its chunks do not split into the team's slices. Each slice's
// sub-collective is synthesized (without borrowing again) where it is small; else it is the
// baseline fastest on the first slice (on a rail's switch: direct or halving-doubling), since the
// matcher's work for a group still grows with the whole cluster (a 128-member rail group of a
// 1024-NPU cluster takes it seconds, and there are as many sub-groups as mates).
constexpr int64_t kRelaySubSynthesisTransfers = 4096;
constexpr double kRelayBaselineTie = 1.01;
// Whether `a` is within `factor` of its lower bound.
bool within_bound(const topo::Topology& t, const Algorithm& a, double factor) {
  const Time bound = lower_bound(t, a.collective, a.chunk_bytes).coarse;
  return static_cast<double>(a.claimed_time) <= factor * static_cast<double>(bound);
}
bool relay_enough(const topo::Topology& t, const Algorithm& a) { return within_bound(t, a, kRelayEnough); }
std::optional<Algorithm> relay_synthesize(const topo::Topology& t, const Collective& c, Bytes chunk_bytes,
                                          const SynthOptions& o) {
  const std::optional<RelayTeams> relay = relay_teams(t, c, o.borrow_servers);
  if (!relay) return std::nullopt;
  const int k = c.chunks_per_npu, team_size = static_cast<int>(relay->teams.front().size());
  if (relay->mirrors ? k < 2 : k % team_size != 0) return std::nullopt;
  // The slices' sub-groups are usually one shape (mates of one position, on one rail; the members
  // and their mirrors): the first one's algorithm at each chunk count is renamed for the others
  // where it can be (synth/group_map.hpp).
  std::map<int, Algorithm> first;
  auto renamed_first = [&](const Collective& sc) -> std::optional<Algorithm> {
    const auto it = first.find(sc.chunks_per_npu);
    return it != first.end() ? map_to_group(t, it->second, sc.ranks) : std::nullopt;
  };
  std::string synthesized_how;
  auto synthesized = [&](const Collective& sc) {
    if (std::optional<Algorithm> a = renamed_first(sc)) return std::move(*a);
    SynthOptions inner = o;
    inner.team_relay = false;
    inner.progress = nullptr;
    Algorithm a = synthesize(t, sc, chunk_bytes, inner);
    if (synthesized_how.empty()) synthesized_how = a.method;
    first.try_emplace(sc.chunks_per_npu, a);
    return a;
  };
  auto compose_in = [&](const std::vector<int>& slices,
                        const std::function<Algorithm(const Collective&)>& sub) -> std::optional<Algorithm> {
    try {
      return team_relay(t, c, chunk_bytes, o.link_model, *relay, slices, sub);
    } catch (const Error&) {  // a slice's sub-group has no algorithm (NotApplicable, unreachable mates)
      return std::nullopt;
    }
  };
  // Mates take equal slices. Mirrors take m of the k chunks, where the two paths would finish
  // together: all k at home take T0, all through the mirrors T1, so m = k T0 / (T0 + T1), rounded
  // both ways (and all through the mirrors, should that be faster).
  std::optional<Algorithm> relayed;
  std::string how;
  // `seed`: the first slice's algorithm when already made.
  auto compose = [&](const std::function<Algorithm(const Collective&)>& sub, const std::string& label,
                     std::optional<Algorithm> seed) {
    first.clear();
    if (seed) first.emplace(seed->collective.chunks_per_npu, std::move(*seed));
    auto keep = [&](std::optional<Algorithm> a) {
      if (a && (!relayed || a->claimed_time < relayed->claimed_time)) relayed = std::move(a), how = label;
    };
    if (!relay->mirrors) return keep(compose_in(equal_slices(k, team_size), sub));
    const std::optional<Algorithm> home = compose_in({k, 0}, sub);
    std::optional<Algorithm> away = compose_in({0, k}, sub);
    if (!home || !away) return;
    const double through = static_cast<double>(k) * static_cast<double>(home->claimed_time) /
                           static_cast<double>(home->claimed_time + away->claimed_time);
    const int low = std::clamp(static_cast<int>(std::floor(through)), 1, k - 1);
    const int high = std::clamp(static_cast<int>(std::ceil(through)), 1, k - 1);
    keep(compose_in({k - low, low}, sub));
    if (high != low) keep(compose_in({k - high, high}, sub));
    keep(std::move(away));
  };
  // Small sub-groups are synthesized; every sub-group size gets the baselines fastest alone on the
  // first slice (within 1 % of the fastest: a ring and direct often tie alone and compose very
  // differently, the ring wanting its chunks in an order the hand-overs cannot follow). Each is
  // composed, and the fastest composition stays.
  Collective first_slice = c;
  for (size_t i = 0; i < first_slice.ranks.size(); ++i) first_slice.ranks[i] = relay->teams[i][0];
  first_slice.chunks_per_npu = relay->mirrors ? k : k / team_size;
  if (transfer_estimate(first_slice) <= kRelaySubSynthesisTransfers) compose(synthesized, "", std::nullopt);
  std::vector<std::pair<BaselineSpec, Algorithm>> alone;  // every baseline on the first slice
  try {
    for_each_baseline(t, first_slice, [&](const BaselineSpec& spec) {
      alone.emplace_back(spec, make_baseline(spec, t, first_slice, chunk_bytes, o.link_model, o.reduce_bandwidth));
    });
  } catch (const Error&) {  // the members cannot reach each other without other NPUs
  }
  Time fastest = std::numeric_limits<Time>::max();
  for (const auto& [spec, a] : alone) fastest = std::min(fastest, a.claimed_time);
  for (auto& [spec, a] : alone) {
    if (static_cast<double>(a.claimed_time) > kRelayBaselineTie * static_cast<double>(fastest)) continue;
    compose(
        [&](const Collective& sc) {
          if (std::optional<Algorithm> renamed = renamed_first(sc)) return std::move(*renamed);
          Algorithm made = make_baseline(spec, t, sc, chunk_bytes, o.link_model, o.reduce_bandwidth);
          first.try_emplace(sc.chunks_per_npu, made);
          return made;
        },
        "baseline " + spec.name(), std::move(a));
  }
  if (!relayed) return std::nullopt;
  set_reduce_bandwidth(t, *relayed, o.reduce_bandwidth);
  relayed->method =
      relay->mirrors
          ? fmt::format("team relay: each member's mirror (the NPU at its place in another server, through its NIC) "
                        "carries a slice of its data; each slice's sub-group by {}",
                        how.empty() ? synthesized_how : how)
          : fmt::format("team relay: {} idle server mates per member carry slices of its data; each slice's "
                        "sub-group by {}",
                        team_size - 1, how.empty() ? synthesized_how : how);
  return relayed;
}

}  // namespace

namespace {

// A rail's All-Reduce in a composition per level (synth/composed.hpp), and how to make it over
// another rail.
struct RailLevel {
  Algorithm first;
  std::function<Algorithm(const Collective&)> make;
};

// The ways a rail's All-Reduce of k chunks may go: the trees (dbt, tree) on the k chunks in all,
// made in the rail's part of the cluster (its NPUs, their NVSwitches, its rail switch: the routes the
// rail uses); and, where the k chunks split evenly among the rail's ranks, flat synthesis on one
// chunk per rank (method auto, baselines included), repeated.
std::vector<RailLevel> rail_levels(const topo::Topology& t, const Collective& rail, int k, Bytes chunk_bytes,
                                   const SynthOptions& o, const SynthOptions& inner) {
  std::vector<RailLevel> out;
  const int p = rail.num_ranks();
  if (k % p == 0) {
    auto make = [&t, chunk_bytes, inner](const Collective& lc) { return synthesize(t, lc, chunk_bytes, inner); };
    Collective flat = rail;
    flat.chunks_per_npu = 1;
    out.push_back({make(flat), make});
  }
  for (BaselineKind b : {BaselineKind::Dbt, BaselineKind::Tree}) {
    auto make = [&t, chunk_bytes, spec = BaselineSpec{b, {}}, model = o.link_model,
                 reduce = o.reduce_bandwidth](const Collective& lc) {
      const std::optional<GroupPart> part = group_part(t, lc);
      Algorithm a =
          part ? part->lift(make_baseline(spec, part->topology, part->collective, chunk_bytes, model, reduce), t,
                            lc.ranks)
               : make_baseline(spec, t, lc, chunk_bytes, model, reduce);
      a.method = "baseline " + spec.name();
      return a;
    };
    Collective trees = rail;
    trees.all_reduce_chunks = k;
    try {
      out.push_back({make(trees), make});
    } catch (const NotApplicable&) {
    }
  }
  return out;
}

// Compositions larger than this are made with the rail level fastest alone only; smaller ones with
// each rail level, the fastest composition kept (the phases overlap differently).
constexpr int64_t kComposeEveryRailLevel = int64_t{1} << 20;

// The servers `c` composes over (composed_servers), or NotApplicable saying why there are none.
std::vector<std::vector<topo::NodeId>> servers_to_compose(const topo::Topology& t, const Collective& c,
                                                          Bandwidth* joined = nullptr) {
  if (auto servers = composed_servers(t, c, joined)) return std::move(*servers);
  throw NotApplicable(
      c.all_reduce_chunks > 0
          ? fmt::format("an all-reduce in {} chunks in all is made per level on a cluster of servers (method "
                        "composed), or by the dbt, tree and nvls baselines",
                        c.all_reduce_chunks)
          : std::string("method composed makes an all-reduce over every NPU of two or more servers (NPUs joined by "
                        "their fastest links)"));
}

// `c` composed per level (SynthMethod::Composed, or an All-Reduce given in chunks in all).
Algorithm synthesize_composed(const topo::Topology& t, const Collective& c, Bytes chunk_bytes, const SynthOptions& o) {
  Bandwidth joined = 0;
  const auto servers = servers_to_compose(t, c, &joined);
  const int g = static_cast<int>(servers.front().size());
  if (c.all_reduce_chunks > 0 && c.all_reduce_chunks % g != 0)
    throw NotApplicable(fmt::format("a composition per level cuts the buffer into {} slices (one per NPU of a server): "
                                    "{} chunks in all do not split into them",
                                    g, c.all_reduce_chunks));
  const int k = c.all_reduce_chunks > 0 ? c.all_reduce_chunks / g : c.chunks_per_npu;
  SynthOptions inner = o;
  inner.method = SynthMethod::Auto;
  inner.team_relay = false;  // the mates are busy with their own slices
  inner.progress = nullptr;
  // A server's levels in its part through the links that join it (its NVSwitch, not the fabric
  // behind its NICs: on a fat tree that part held every switch, and its flow plans took 80 % of
  // the time), else on the whole topology.
  auto in_server = [&](const Collective& sc) {
    if (const std::optional<GroupPart> part = group_part(t, sc, joined))
      return part->lift(synthesize(part->topology, part->collective, chunk_bytes, inner), t, sc.ranks);
    return synthesize(t, sc, chunk_bytes, inner);
  };
  auto server_level = [&](CollectiveKind kind) {
    Collective sc;
    sc.kind = kind;
    sc.ranks = servers.front();
    return in_server(sc);
  };
  ComposedLevels levels{server_level(CollectiveKind::ReduceScatter), server_level(CollectiveKind::AllGather), {}};
  Collective rail;
  rail.kind = CollectiveKind::AllReduce;
  for (const auto& server : servers) rail.ranks.push_back(server.front());
  std::vector<RailLevel> ways = rail_levels(t, rail, k, chunk_bytes, o, inner);
  if (ways.empty())
    throw NotApplicable(fmt::format("no algorithm for the all-reduce across servers ({})", rail.describe()));
  Collective whole = c;
  whole.all_reduce_chunks = g * k;
  if (transfer_estimate(whole) > kComposeEveryRailLevel) {
    // The way fastest alone over all k chunks (a flat one runs k / ranks times).
    auto total = [&](const RailLevel& w) {
      return static_cast<double>(w.first.claimed_time) * k / w.first.collective.num_chunks();
    };
    auto fastest = std::min_element(ways.begin(), ways.end(),
                                    [&](const RailLevel& x, const RailLevel& y) { return total(x) < total(y); });
    std::vector<RailLevel> one;
    one.push_back(std::move(*fastest));
    ways = std::move(one);
  }
  auto label = [](const Algorithm& a) { return a.method.empty() ? a.name : a.method; };
  std::optional<Algorithm> best;
  for (RailLevel& way : ways) {
    levels.across = std::move(way.first);
    const LevelMaker remake = [&](const Collective& lc) {
      return lc.kind == CollectiveKind::AllReduce ? way.make(lc) : in_server(lc);
    };
    std::optional<Algorithm> a = compose_all_reduce(t, c, k, chunk_bytes, o.link_model, levels, remake);
    if (!a || (best && a->claimed_time >= best->claimed_time)) continue;
    a->method = fmt::format("composed: Reduce-Scatter in each server by {}; All-Reduce across servers, GPU by GPU, "
                            "by {}; All-Gather in each server by {}",
                            label(levels.reduce_scatter), label(levels.across), label(levels.all_gather));
    best = std::move(a);
  }
  if (!best) throw NotApplicable("a level's algorithm relays through NPUs outside its server or rail: no composition");
  set_reduce_bandwidth(t, *best, o.reduce_bandwidth);
  return std::move(*best);
}

}  // namespace

uint64_t fastest_pipeline_variants(const std::map<int, Time>& times, size_t n) {
  std::vector<std::pair<Time, int>> fastest;
  std::array<std::pair<Time, int>, 2> halves{{{-1, -1}, {-1, -1}}};
  for (const auto& [v, time] : times) {
    const int h = v < kInTurnHalf[0] ? -1 : v < kInTurnHalf[1] ? 0 : 1;
    if (h < 0)
      fastest.emplace_back(time, v);
    else if (halves[h].first < 0 || time < halves[h].first)
      halves[h] = {time, v};
  }
  std::sort(fastest.begin(), fastest.end());
  uint64_t mask = 0;
  for (size_t i = 0; i < fastest.size() && i < n; ++i) mask |= uint64_t{1} << fastest[i].second;
  if ((mask >> kPipelineInTurn & 1) != 0)
    for (const auto& [time, v] : halves)
      if (v >= 0) mask |= uint64_t{1} << v;
  return mask;
}

Algorithm synthesize(const topo::Topology& t, const Collective& c, Bytes chunk_bytes, const SynthOptions& o) {
  c.validate(t);
  if (chunk_bytes < 1) throw Error("chunk size must be at least 1 byte");
  if (o.restarts < 1) throw Error("restarts must be at least 1");
  if (o.method == SynthMethod::Composed || c.all_reduce_chunks > 0) return synthesize_composed(t, c, chunk_bytes, o);
  // A group with idle server mates: the team relay first; near the bound it is the answer (the
  // matcher's work for a large group grows with the whole cluster).
  std::optional<Algorithm> relayed;
  if (o.method == SynthMethod::Auto && o.team_relay && c.num_ranks() < t.num_npus()) {
    relayed = relay_synthesize(t, c, chunk_bytes, o);
    if (relayed && relay_enough(t, *relayed)) return std::move(*relayed);
  }
  // A group in a much larger cluster works in its part of it (synth/group_map.hpp).
  if (const std::optional<GroupPart> part = group_part(t, c)) {
    SynthOptions inner = o;
    inner.team_relay = false;  // the part has no idle mates
    Algorithm best = part->lift(synthesize(part->topology, part->collective, chunk_bytes, inner), t, c.ranks);
    if (relayed && relayed->claimed_time < best.claimed_time) best = std::move(*relayed);
    return best;
  }
  Algorithm best = o.restarts == 1 ? synthesize_once(t, c, chunk_bytes, o) : synthesize_restarts(t, c, chunk_bytes, o);
  if (relayed && relayed->claimed_time < best.claimed_time) best = std::move(*relayed);
  if (o.method == SynthMethod::Auto && o.baselines && portfolio_worth_it(t, c, chunk_bytes, best))
    for_each_baseline(t, c, [&](const BaselineSpec& spec) {
      try {
        keep_if_faster(best, baseline_to_beat(spec, t, c, chunk_bytes, o, best.claimed_time), spec);
      } catch (const CannotBeat&) {
      }
    });
  return best;
}

namespace {

// Calls job(0) .. job(n - 1) on up to `threads` threads (on the calling one when that is 1), then
// rethrows the exception of the first job (by index) that threw.
void side_by_side(int n, int threads, const std::function<void(int)>& job) {
  std::vector<std::exception_ptr> errors(n);
  std::atomic<int> next{0};
  auto worker = [&] {
    for (int i = next++; i < n; i = next++) {
      try {
        job(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  threads = std::clamp(threads, 1, std::max(1, n));
  if (threads == 1) {
    worker();
  } else {
    std::vector<std::thread> pool;
    for (int i = 0; i < threads; ++i) pool.emplace_back(worker);
    for (std::thread& th : pool) th.join();
  }
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

int cores() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

Algorithm synthesize_restarts(const topo::Topology& t, const Collective& c, Bytes chunk_bytes, const SynthOptions& o) {
  // Seeds seed .. seed+K-1 on all cores; the fastest wins, ties to the lowest seed.
  const int k = o.restarts;
  std::vector<std::optional<Algorithm>> results(k);
  side_by_side(k, cores(), [&](int i) {
    SynthOptions mine = o;
    mine.seed = o.seed + static_cast<uint64_t>(i);
    mine.progress = nullptr;
    results[i] = synthesize_once(t, c, chunk_bytes, mine);
  });
  int best = 0;
  for (int i = 1; i < k; ++i)
    if (results[i]->claimed_time < results[best]->claimed_time) best = i;
  if (o.progress) o.progress(1.0);
  return std::move(*results[best]);
}


}  // namespace

ChunkingResult best_chunking(Collective c, Bytes total_bytes, int max_chunks_per_npu,
                             const std::function<Algorithm(const Collective&, Bytes)>& make, int first,
                             const std::function<bool(const Algorithm&)>& enough, int64_t transfer_budget,
                             Time to_beat) {
  ChunkingResult best;
  bool have = false;
  int worse = 0;
  Time previous = -1;  // the time at the last count (half this one)
  bool previous_floor = false;  // whether `previous` is a floor (CannotBeat), not a time
  Time least_floor = -1;  // the lowest floor so far (CannotBeat)
  double per_chunk = 1;  // transfers per chunk of the last algorithm made (relays' hops, ...)
  // Broadcast and Reduce cut the root's data alone (k chunks, not k per rank): they may go as far as
  // an All-Gather over the group would in chunks (a Broadcast down a few hops wants hundreds: 1.05x
  // the bound at 64 on a random 8-NPU fabric, 1.006x at 256).
  if (c.kind == CollectiveKind::Broadcast || c.kind == CollectiveKind::Reduce)
    max_chunks_per_npu = static_cast<int>(std::min<int64_t>(topo::kMaxChunksPerNpu, int64_t{max_chunks_per_npu} * c.num_ranks()));
  for (int k = first; k <= max_chunks_per_npu; k *= 2) {
    c.chunks_per_npu = k;
    const Bytes chunk = c.chunk_bytes_for(total_bytes);
    if (chunk < 1) break;
    const double estimate = std::max(static_cast<double>(transfer_estimate(c)), per_chunk * c.num_chunks());
    if (k > first && estimate > static_cast<double>(transfer_budget)) break;
    Algorithm a;
    Time now;
    size_t transfers;
    bool floor = false;
    try {
      a = make(c, chunk);
      now = a.claimed_time;
      transfers = a.size();
      best.tried.push_back({k, now, {}});
    } catch (const CannotBeat& e) {
      now = e.floor;
      transfers = e.transfers;
      floor = true;
    }
    per_chunk = static_cast<double>(transfers) / std::max(1, c.num_chunks());
    // (A floor and a time do not extrapolate together: one is below what the count takes.)
    const bool hopeless = to_beat > 0 && previous >= 0 && previous_floor == floor &&
                          transfer_estimate(c) > kAutoChunkCheapTransfers && 2 * now - previous >= to_beat;
    previous = now;
    previous_floor = floor;
    // A time gains on the fastest time, a floor on the lowest floor: times and floors fall and rise
    // with the chunks as times go (above), so either rising says that no count ahead beats what
    // the search has, or to_beat.
    const bool gained = floor ? least_floor < 0 || now < least_floor : !have || now < best.algorithm.claimed_time;
    if (gained) {
      worse = 0;
      if (floor) {
        least_floor = now;
      } else {
        best.algorithm = std::move(a);
        best.chunks_per_npu = k;
        have = true;
        if (enough && enough(best.algorithm)) break;
      }
    } else if (++worse >= 2 && transfer_estimate(c) > kAutoChunkCheapTransfers) {
      break;  // small algorithms try every count: their times need not fall steadily
    } else if (static_cast<double>(transfers) * 2 > static_cast<double>(transfer_budget) / 4) {
      break;  // large ones stop at the first count that does not help
    }
    if (hopeless) break;
    // As times go (above), a doubling at most halves a count's time: at 2^j x to_beat or more, the
    // next j counts cannot beat it. When they are all the budget allows, the search is over (a
    // 1024-NPU ring All-Reduce: 9x tenet's time, floored, at 1 chunk per NPU).
    if (to_beat > 0 && transfer_estimate(c) > kAutoChunkCheapTransfers) {
      Collective next = c;
      for (Time left = now; left >= to_beat && next.chunks_per_npu <= max_chunks_per_npu; left /= 2)
        next.chunks_per_npu *= 2;
      if (next.chunks_per_npu > max_chunks_per_npu ||
          std::max(static_cast<double>(transfer_estimate(next)), per_chunk * next.num_chunks()) >
              static_cast<double>(transfer_budget))
        break;
    }
  }
  if (!have && least_floor >= 0) throw NotApplicable(fmt::format("no chunk count beats {}", format_time(to_beat)));
  return best;
}

namespace {

// The composition per level at 1, 2, 4, ... chunks per NPU inside the servers: as best_chunking
// does, up to the transfer budget, stopping within kChunkSearchSlack of the bound or once doubling
// stops helping (twice for small algorithms, once past 1M transfers).
ChunkingResult composed_auto_chunks(const topo::Topology& t, const Collective& c, Bytes total_bytes,
                                    const SynthOptions& o, int max_chunks_per_npu) {
  SynthOptions quiet = o;
  quiet.progress = nullptr;
  quiet.method = SynthMethod::Composed;
  ChunkingResult best;
  bool have = false;
  int worse = 0;
  std::optional<std::string> why;  // the first count's reason for no composition
  // As many chunks in all as the flat search may make (k chunks per NPU inside a server of G are
  // G*k in all, P*k flat).
  const int64_t most_chunks = static_cast<int64_t>(max_chunks_per_npu) * c.num_ranks();
  const int64_t g = static_cast<int64_t>(servers_to_compose(t, c).front().size());
  for (int k = 1; g * k <= most_chunks; k *= 2) {
    Collective cc = c;
    cc.all_reduce_chunks = 0;
    cc.chunks_per_npu = k;
    cc = composed_collective(t, cc);
    if (k > 1 && transfer_estimate(cc) > o.auto_chunk_transfers) break;  // the first count always runs
    const Bytes chunk = cc.chunk_bytes_for(total_bytes);
    if (chunk < 1) break;
    if (o.progress) o.progress(0.05 + 0.9 * std::log2(k + 1) / std::log2(max_chunks_per_npu + 1));
    Algorithm a;
    try {
      a = synthesize(t, cc, chunk, quiet);
    } catch (const NotApplicable& e) {
      // A rail level may need more chunks (flat synthesis where they split among the rail's
      // ranks, when the trees cannot run there): try the next count.
      if (!why) why = e.message();
      continue;
    }
    best.tried.push_back({k, a.claimed_time, to_string(SynthMethod::Composed)});
    if (!have || a.claimed_time < best.algorithm.claimed_time) {
      best.algorithm = std::move(a);
      best.chunks_per_npu = k;
      have = true;
      worse = 0;
      if (within_bound(t, best.algorithm, 1 + kChunkSearchSlack)) break;
    } else if (++worse >= 2 || transfer_estimate(cc) > (int64_t{1} << 20)) {
      break;
    }
  }
  if (!have) throw NotApplicable(why ? *why : std::string("no chunk count composes"));
  return best;
}

ChunkingResult flat_auto_chunks(const topo::Topology& t, Collective c, Bytes total_bytes, const SynthOptions& o,
                                int max_chunks_per_npu);

}  // namespace

ChunkingResult synthesize_auto_chunks(const topo::Topology& t, Collective c, Bytes total_bytes,
                                      const SynthOptions& o, int max_chunks_per_npu) {
  const bool servers = composed_servers(t, c).has_value();
  if (o.method == SynthMethod::Composed || (o.method == SynthMethod::Auto && servers && flat_out_of_reach(c))) {
    if (!servers) servers_to_compose(t, c);  // throws NotApplicable, saying why
    return composed_auto_chunks(t, c, total_bytes, o, max_chunks_per_npu);
  }
  ChunkingResult best = flat_auto_chunks(t, c, total_bytes, o, max_chunks_per_npu);
  // Where the flat search ends short of the bound (a cluster too large for more than one chunk
  // per NPU), the composition may do better.
  if (o.method == SynthMethod::Auto && servers && c.all_reduce_chunks == 0 &&
      !within_bound(t, best.algorithm, kComposeAbove)) {
    try {
      ChunkingResult composed = composed_auto_chunks(t, c, total_bytes, o, max_chunks_per_npu);
      best.tried.insert(best.tried.end(), composed.tried.begin(), composed.tried.end());
      if (composed.algorithm.claimed_time < best.algorithm.claimed_time) {
        best.algorithm = std::move(composed.algorithm);
        best.chunks_per_npu = composed.chunks_per_npu;
      }
    } catch (const NotApplicable&) {
    }
  }
  return best;
}

namespace {

ChunkingResult flat_auto_chunks(const topo::Topology& t, Collective c, Bytes total_bytes, const SynthOptions& o,
                                int max_chunks_per_npu) {
  SynthOptions quiet = o;
  quiet.progress = nullptr;
  quiet.baselines = false;  // each baseline gets its own chunk search below, the one benchmarks run
  quiet.split_pipelines = false;  // the pipelines' own doubling below tries them
  const int64_t budget = o.auto_chunk_transfers;
  // A group with idle server mates: the team relay first, at multiples of the team size; near the
  // bound, nothing else is searched (the matcher's work for a large group grows with the cluster).
  if (o.method == SynthMethod::Auto && o.team_relay && c.num_ranks() < t.num_npus())
    if (const auto relay = relay_teams(t, c, o.borrow_servers);
        relay && static_cast<int>(relay->teams.front().size()) <= max_chunks_per_npu) {
      try {
        ChunkingResult relayed = best_chunking(
            c, total_bytes, max_chunks_per_npu,
            [&](const Collective& cc, Bytes chunk) {
              if (std::optional<Algorithm> a = relay_synthesize(t, cc, chunk, quiet)) return std::move(*a);
              throw NotApplicable("no team relay");
            },
            static_cast<int>(relay->teams.front().size()), [&, previous = Time{-1}](const Algorithm& a) mutable {
              // Called with each new fastest: stop near the bound, or once doubling stops paying.
              const bool slowing = previous > 0 && static_cast<double>(previous) < kRelayGain * static_cast<double>(a.claimed_time);
              previous = a.claimed_time;
              return within_bound(t, a, kRelayClose) || (relay_enough(t, a) && slowing);
            },
            budget);
        if (relay_enough(t, relayed.algorithm)) return relayed;
      } catch (const NotApplicable&) {
      }
    }
  // Every search stops at the first count within kChunkSearchSlack of the bound (a 512-NPU switch's
  // All-Reduce is there at 1 chunk per NPU, and each doubling cost twice the last: 133 s for three
  // counts). Routed collectives stop already within kRoutedEnough: every count costs them two
  // routings of every chunk (the matcher's and the flow ways), on mixed speeds four.
  const bool routed = one_destination(c.kind);
  const bool in_network = std::any_of(t.nodes().begin(), t.nodes().end(), [](const topo::Node& v) { return v.can_reduce; });
  const std::function<bool(const Algorithm&)> at_bound = [&](const Algorithm& a) {
    return (routed && within_bound(t, a, kRoutedEnough)) || (!in_network && within_bound(t, a, 1 + kChunkSearchSlack));
  };
  ChunkingResult best = best_chunking(
      c, total_bytes, max_chunks_per_npu, [&](const Collective& cc, Bytes chunk) { return synthesize(t, cc, chunk, quiet); },
      1, at_bound, budget);
  if (o.method == SynthMethod::Auto && o.baselines &&
      portfolio_worth_it(t, best.algorithm.collective, best.algorithm.chunk_bytes, best.algorithm)) {
    // Each baseline's search is independent (its time to beat is tenet's), so they run side by
    // side: as many as there are cores, and memory for one search each (its largest algorithm and
    // its best so far). The fastest wins, ties to the first listed, whichever finishes first.
    // Searches whose first count is already over the budget go one at a time: on 4096 NPUs
    // (nvcluster:512x8, 33.5M transfers each) two at once took 14.8 GB instead of 8.6 GB and no
    // less time.
    std::vector<BaselineSpec> specs;
    for_each_baseline(t, c, [&](const BaselineSpec& spec) { specs.push_back(spec); });
    const Time to_beat = best.algorithm.claimed_time;
    const uint64_t per_search = 2 * kSynthBytesPerTransfer *
                                static_cast<uint64_t>(std::max(transfer_estimate(c), std::min<int64_t>(budget, transfer_estimate(c) * max_chunks_per_npu)));
    const uint64_t memory = topo::available_memory();
    const int threads = memory == 0 || transfer_estimate(c) > budget
                            ? 1
                            : static_cast<int>(std::min<uint64_t>(cores(), memory / std::max<uint64_t>(1, per_search)));
    std::mutex m;
    std::optional<std::pair<int, ChunkingResult>> fastest;
    // Dealt last listed first: hierarchical and the trees build step by step and take the longest
    // (nvcluster:128x8: 2.3 and 1.5 s of the four searches' 4.2 s), the rings are quick plans.
    side_by_side(static_cast<int>(specs.size()), threads, [&](int job) {
      const int i = static_cast<int>(specs.size()) - 1 - job;
      ChunkingResult r;
      try {
        r = best_chunking(
            c, total_bytes, max_chunks_per_npu,
            [&](const Collective& cc, Bytes chunk) { return baseline_to_beat(specs[i], t, cc, chunk, o, to_beat, at_bound); },
            1, at_bound, budget, to_beat);
      } catch (const NotApplicable&) {
        return;
      }
      std::lock_guard lock(m);
      const Time mine = r.algorithm.claimed_time;
      if (!fastest || mine < fastest->second.algorithm.claimed_time ||
          (mine == fastest->second.algorithm.claimed_time && i < fastest->first))
        fastest.emplace(i, std::move(r));
    });
    if (fastest) {
      if (fastest->second.algorithm.claimed_time < best.algorithm.claimed_time) best.chunks_per_npu = fastest->second.chunks_per_npu;
      keep_if_faster(best.algorithm, std::move(fastest->second.algorithm), specs[fastest->first]);
    }
  }
  // The flow plan's pipelines and the server plan (whose ways stream at a fraction of their links'
  // bandwidth) pay their fill and drain once per chunk count: they keep gaining from more chunks
  // where the matcher no longer does. Keep doubling for them alone.
  int largest = 1;
  for (const ChunkingResult::Try& tried : best.tried) largest = std::max(largest, tried.chunks_per_npu);
  // The matcher may keep gaining past the search's last count too (random-fabric-169 Broadcast:
  // 1.184, 1.191 and 1.121 ms at 128 to 512 chunks, 1.092 at 1024): where one of its variants made
  // the fastest at the largest count, its variants double alone after the pipelines (below).
  std::vector<std::pair<SynthOptions, std::string>> matcher_variants;
  if (o.method == SynthMethod::Auto && best.chunks_per_npu == largest && !at_bound(best.algorithm)) {
    SynthOptions v = quiet;
    v.method = SynthMethod::Matcher;
    matcher_variants.emplace_back(v, "matcher");
    if (o.link_model == LinkModel::Pipelined && mixed_speeds(t)) {  // as synthesize_once runs them
      SynthOptions hold = v;
      hold.link_model = LinkModel::Hold;  // re-timed under the pipelined model below
      hold.random_choice = false;
      matcher_variants.emplace_back(hold, "matcher" + std::string(kUnderHold));
    }
    if (o.random_choice && o.priority == ChunkPriority::Scarce && mixed_speeds(t)) {
      v.priority = ChunkPriority::Random;
      matcher_variants.emplace_back(v, kRandomMatcher);
      v.slow_links_yield = true;
      matcher_variants.emplace_back(v, kRandomYieldingMatcher);
    }
    const bool won = std::any_of(matcher_variants.begin(), matcher_variants.end(),
                                 [&](const auto& variant) { return variant.second == best.algorithm.method; });
    if (!won) matcher_variants.clear();
  }
  const Time matcher_last = best.algorithm.claimed_time;
  for (SynthMethod m : {SynthMethod::PlanPipeline, SynthMethod::ServerPlan}) {
    if (o.method != SynthMethod::Auto && o.method != m) continue;
    // (An All-Reduce's pipelines may beat the RS+AG bound, which is no bound for reductions down
    // trees: mesh2d:3x5 at 0.86 of it.)
    if (o.method == SynthMethod::Auto && c.kind != CollectiveKind::AllReduce && at_bound(best.algorithm)) break;
    if (m == SynthMethod::ServerPlan && !server_plan_applies(t, c)) continue;
    quiet.method = m;
    // The method's best time so far, and its time at the last count. The pipelines' times need
    // not fall steadily (random-fabric-26 All-Gather: 1.090x the bound at 128, 1.125x at 256,
    // 1.009x at 512): past a count that does not gain they try one more, unless the best is within
    // kDoublingEnough of the bound already (each count costs twice the last); the server plan,
    // whose counts cost seconds on large clusters, stops there. Once past such a count, they go on
    // only while what the last doubling gained, gained again, would beat the fastest (ring:16
    // All-Reduce: pipelines gaining 0.3-3 % a doubling up to 1024 chunks, never under the ring).
    Time previous = -1, last = -1;
    int idle = 0;
    bool extended = false;
    // Where the fastest is far from the bound (over kPipelinesPersist of it) and they are close to
    // it (within kPipelinesContend), they also try their split variants.
    auto contending = [&](Time time) {
      return static_cast<double>(time) <= kPipelinesContend * static_cast<double>(best.algorithm.claimed_time);
    };
    // The pipeline variants' times at the last count.
    std::map<int, Time> variant_times;
    quiet.on_pipeline_variant = [&](int v, Time time) { variant_times[v] = time; };
    for (int k = 2 * largest; k <= (1 << 20); k *= 2) {
      c.chunks_per_npu = k;
      const Bytes chunk = c.chunk_bytes_for(total_bytes);
      if (chunk < 1) break;
      // An All-Reduce's pipelines over kHalvesOver of the bound count their halves' transfers.
      const bool halves = m == SynthMethod::PlanPipeline && c.kind == CollectiveKind::AllReduce &&
                          !within_bound(t, best.algorithm, kHalvesOver);
      const int64_t transfers = transfer_estimate(c) / (halves ? 2 : 1);
      if (transfers > kPipelineTransferBudget) {
        if (m != SynthMethod::PlanPipeline || variant_times.empty() || transfers > kPipelineFastestTransferBudget)
          break;
        quiet.pipeline_variants = fastest_pipeline_variants(variant_times, kVariantsPast);
      }
      quiet.split_pipelines = o.split_pipelines && !within_bound(t, best.algorithm, kPipelinesPersist) &&
                              (last < 0 || contending(last));
      variant_times.clear();
      Algorithm a;
      try {
        a = synthesize(t, c, chunk, quiet);
      } catch (const NotApplicable&) {
        break;  // no plan here
      }
      best.tried.push_back({k, a.claimed_time, to_string(m)});
      const Time now = a.claimed_time;
      const bool gaining = previous < 0 || static_cast<double>(now) < 0.995 * static_cast<double>(previous);
      if (previous < 0 || now < previous) previous = now;
      if (now < best.algorithm.claimed_time) {
        best.algorithm = std::move(a);
        best.chunks_per_npu = k;
      }
      const bool promising = last < 0 || 2 * now - last < best.algorithm.claimed_time;
      // Far from the bound but contending, the pipelines go on to their transfer budget, gaining or
      // not, while their times jump by over 0.5 % from count to count (random-fabric-66 Reduce:
      // 977 us at 1024, 1005 at 2048, 983 at 4096, then 915, 893 and 890 at 8192 to 32768 chunks;
      // the fastest before them 958 us) or their chunks are of kPipelinesPersistChunk or more (split,
      // random-fabric-33 All-Reduce: 1.695, 1.693, 1.685 and 1.611 ms at 512 to 4096). Smaller
      // settling ones leave a gap more chunks do not close (latency: nvcluster:2x4 All-Reduce of
      // 1 MiB, 1.66x the bound, 8x the CPU for 0.1 %).
      const bool jumping = last >= 0 && std::abs(static_cast<double>(now - last)) > 0.005 * static_cast<double>(last);
      last = now;
      const bool far = m == SynthMethod::PlanPipeline && (jumping || chunk >= kPipelinesPersistChunk) &&
                       contending(now) && !within_bound(t, best.algorithm, kPipelinesPersist);
      if (gaining) {
        idle = 0;
        if (extended && !promising && !far) break;
        continue;
      }
      // Under 0.5 % from doubling: enough (switch-cluster.yaml Reduce: 1.0202 -> 1.0164).
      const bool close = c.kind != CollectiveKind::AllReduce && within_bound(t, best.algorithm, kDoublingEnough);
      if ((++idle >= 2 && !far) || m != SynthMethod::PlanPipeline || close) break;
      extended = true;
    }
    quiet.pipeline_variants = 0;
    quiet.on_pipeline_variant = nullptr;
  }
  // The matcher's variants, doubling while a doubling gains 0.5 % on the fastest of them (their
  // times are not smooth: random-fabric-169 Broadcast 1.092 ms at 1024 chunks, 1.095 at 2048, 1.119
  // at 4096), up to the pipelines' transfer budget.
  Time previous = matcher_last;
  for (int k = 2 * largest; !matcher_variants.empty() && k <= (1 << 20) && !at_bound(best.algorithm); k *= 2) {
    c.chunks_per_npu = k;
    const Bytes chunk = c.chunk_bytes_for(total_bytes);
    if (chunk < 1 || transfer_estimate(c) > kPipelineTransferBudget) break;
    std::optional<Time> fastest;
    for (const auto& [variant, label] : matcher_variants) {
      Algorithm a = synthesize(t, c, chunk, variant);
      if (variant.link_model != o.link_model) {
        a.link_model = o.link_model;
        time(t, a);
      }
      fastest = std::min(fastest.value_or(a.claimed_time), a.claimed_time);
      if (a.claimed_time < best.algorithm.claimed_time) {
        a.method = label;
        best.algorithm = std::move(a);
        best.chunks_per_npu = k;
      }
    }
    best.tried.push_back({k, *fastest, "matcher"});
    if (static_cast<double>(*fastest) >= 0.995 * static_cast<double>(previous)) break;
    previous = *fastest;
  }
  return best;
}

}  // namespace

}  // namespace tenet::synth
