// Internal to synth/baselines: how a baseline's logical NPU-to-NPU sends become routed transfers
// (Hops, Builder), and the primitives the families share: the steps of a step-synchronous
// algorithm (Steps), ring, direct and halving-doubling exchanges over a group of NPUs, and how
// chunks are split into blocks.
#pragma once

#include <fmt/format.h>
#include <boost/container_hash/hash.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "synth/baselines/baselines.hpp"
#include "synth/cost/timing.hpp"
#include "topo/routing.hpp"

namespace tenet::synth::detail {

using topo::Topology;

// How logical NPU-to-NPU sends cross the topology: per pair of NPUs, the hops of its path (one
// when the two are linked, directly or through switches or router NPUs; else relays over NPUs),
// each with its routes.
class Hops {
 public:
  explicit Hops(const Topology& t) : t_(t), router_(t) {}
  struct Hop {
    NodeId to;
    topo::FlatRoutes routes;  // parallel links, or equal-cost routes: used in turn
    mutable size_t next = 0;
    // Its routes, each as a vector (a ring plan's lanes keep them so).
    std::vector<std::vector<LinkId>> each_route() const {
      std::vector<std::vector<LinkId>> out;
      for (size_t i = 0; i < routes.count(); ++i)
        out.emplace_back(routes.route(i).begin(), routes.route(i).end());
      return out;
    }
  };
  // A route of the hop for the next send over it: its routes in turn.
  static std::span<const LinkId> pick(const Hop& h) {
    return h.routes.route(h.next++ % h.routes.count());
  }

  // The hops from `from` to `to` (cached: sends over a pair share its hops' turns). Throws
  // NotApplicable when there is no way.
  const std::vector<Hop>& path(NodeId from, NodeId to) {
    const uint64_t k = static_cast<uint64_t>(from) << 32 | static_cast<uint32_t>(to);
    auto it = paths_.find(k);
    if (it != paths_.end()) return it->second;
    std::vector<Hop> hops;
    if (auto h = hop(from, to)) {
      hops.push_back(std::move(*h));
    } else {
      // Relays: a shortest path over NPUs that can reach each other directly or through switches.
      std::vector<NodeId> parent(t_.num_npus(), -1);
      std::vector<NodeId> queue{from};
      parent[from] = from;
      for (size_t i = 0; i < queue.size() && parent[to] < 0; ++i)
        for (NodeId w : npu_neighbours(queue[i]))
          if (parent[w] < 0) {
            parent[w] = queue[i];
            queue.push_back(w);
          }
      if (parent[to] < 0)
        throw NotApplicable(
            fmt::format("no way from {} to {}", t_.node(from).name, t_.node(to).name));
      std::vector<NodeId> chain{to};
      while (chain.back() != from) chain.push_back(parent[chain.back()]);
      std::reverse(chain.begin(), chain.end());
      for (size_t i = 0; i + 1 < chain.size(); ++i) hops.push_back(*hop(chain[i], chain[i + 1]));
    }
    return paths_.emplace(k, std::move(hops)).first->second;
  }

 private:
  // One hop: direct links (all parallel ones), else the equal-cost routes through pass-through
  // nodes. Successive sends over the hop take them in turn, starting from one picked by a hash of
  // the pair (per-flow ECMP, deterministic), so a collective's flows spread over the routes.
  std::optional<Hop> hop(NodeId u, NodeId v) {
    Hop h{v, {}};
    for (LinkId l : t_.out_links(u))
      if (t_.link(l).dst == v) h.routes.links.push_back(l);
    if (!h.routes.links.empty()) {
      h.routes.length = 1;
    } else {
      h.routes = routes_.flat_equal_cost_routes(u, v);
      if (h.routes.count() > 1) h.next = flow_hash(u, v) % h.routes.count();
    }
    if (h.routes.count() == 0) return std::nullopt;
    return h;
  }
  static uint64_t flow_hash(NodeId u, NodeId v) {  // splitmix64's finaliser
    uint64_t x =
        (static_cast<uint64_t>(u) << 32 | static_cast<uint32_t>(v)) + 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  }

  const std::vector<NodeId>& npu_neighbours(NodeId u) {
    auto it = neighbours_.find(u);
    if (it != neighbours_.end()) return it->second;
    std::vector<NodeId> n;
    for (LinkId l : t_.out_links(u))
      if (t_.is_npu(t_.link(l).dst)) n.push_back(t_.link(l).dst);
    if (t_.num_switches() > 0) {
      auto routes = router_.switch_routes_from(u, 1);
      for (NodeId v = 0; v < t_.num_npus(); ++v)
        if (!routes[v].empty()) n.push_back(v);
    }
    std::sort(n.begin(), n.end());
    n.erase(std::unique(n.begin(), n.end()), n.end());
    return neighbours_.emplace(u, std::move(n)).first->second;
  }

  const Topology& t_;
  topo::Router router_;
  topo::RouteCache routes_{router_};
  std::unordered_map<uint64_t, std::vector<Hop>> paths_;
  std::unordered_map<NodeId, std::vector<NodeId>> neighbours_;
};

// Turns logical NPU-to-NPU sends into transfers, and remembers what arrived where.
class Builder {
 public:
  Builder(const Topology& t, const Collective& c, Bytes chunk_bytes, LinkModel model,
          std::string name)
      : t_(t), hops_(t), arrivals_(t.num_nodes()) {
    // The last arrival per (node, chunk): a flat table where it is small (every ring, tree and
    // halving-doubling; a hash lookup per send weighs on building a large ring), else a
    // hash map (an All-to-All's N^2 chunks).
    chunks_ = c.num_chunks();
    if (const int64_t slots = static_cast<int64_t>(t.num_nodes()) * chunks_;
        slots <= kFlatLastArrivals)
      last_flat_.assign(static_cast<size_t>(slots), -1);
    a_ = empty_algorithm(std::move(name), t, c, chunk_bytes, model);
  }

  // Sends chunk c from NPU `from` to NPU `to` (with `count`, chunks c .. c + count - 1 as one
  // message: Transfer::count). It waits for `deps` and for the chunks' last arrivals at `from`.
  // Returns the transfer that arrives at `to`.
  TransferId send(ChunkId c, NodeId from, NodeId to, Op op, std::vector<TransferId> deps = {},
                  int count = 1) {
    const std::vector<Hops::Hop>& hops = hops_.path(from, to);
    if (op == Op::Reduce && hops.size() > 1)
      throw NotApplicable(fmt::format(
          "{} and {} are neither linked nor joined through switches or router NPUs: the partial "
          "reduction would have to pass through NPU {}, which holds its own copy of the chunk",
          t_.node(from).name, t_.node(to).name, t_.node(hops[0].to).name));
    if (auto g = gates_.find(from); g != gates_.end())
      deps.insert(deps.end(), g->second.begin(), g->second.end());
    NodeId at = from;
    TransferId last = -1;
    for (size_t i = 0; i < hops.size(); ++i) {
      std::vector<TransferId> d = i == 0 ? std::move(deps) : std::vector<TransferId>{last};
      // (A message's chunks' arrivals are its implicit data dependencies alone: split into its
      // chunks again (split_messages), each waits for its own.)
      if (TransferId before = last_arrival(at, c); count == 1 && before >= 0) d.push_back(before);
      std::sort(d.begin(), d.end());
      d.erase(std::unique(d.begin(), d.end()), d.end());
      const std::span<const LinkId> route = Hops::pick(hops[i]);
      last = a_.add(c, at, hops[i].to, route, i + 1 == hops.size() ? op : Op::Copy, d, -1, -1, 0,
                    channel_, false, static_cast<uint16_t>(count));
      if (i == 0) first_hop_ = last;
      for (ChunkId x = c; x < c + count; ++x) set_last_arrival(hops[i].to, x, last);
      arrivals_[hops[i].to].push_back(last);
      at = hops[i].to;
    }
    return last;
  }

  // Sends chunk c over one given route (no relays) at `rate` (0: the route's bottleneck), after
  // `deps` and the chunk's last arrival at `from`.
  TransferId send_on(ChunkId c, NodeId from, NodeId to, const std::vector<LinkId>& route, Op op,
                     std::vector<TransferId> deps = {}, Bandwidth rate = 0, int channel = -1) {
    if (channel < 0) channel = channel_;
    if (auto g = gates_.find(from); g != gates_.end())
      deps.insert(deps.end(), g->second.begin(), g->second.end());
    if (TransferId before = last_arrival(from, c); before >= 0) deps.push_back(before);
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    Bandwidth narrowest = std::numeric_limits<Bandwidth>::max();
    for (LinkId l : route) narrowest = std::min(narrowest, t_.link(l).bandwidth);
    const TransferId id =
        a_.add(c, from, to, route, op, deps, -1, -1, rate > 0 && rate < narrowest ? rate : 0,
               static_cast<uint16_t>(channel));
    first_hop_ = id;
    set_last_arrival(to, c, id);
    arrivals_[to].push_back(id);
    return id;
  }

  // Sends NPU `from`'s input of chunk c to NPU `to` (Transfer::from_input: what the precondition
  // put there, whatever has arrived since), reducing it into `to`'s copy or copying it there, after
  // `deps` only. Throws NotApplicable when the two are not linked directly or through switches or
  // router NPUs (a relay would have to hold a second copy of the chunk). With `count`, chunks c ..
  // c + count - 1 as one message.
  TransferId send_input(ChunkId c, NodeId from, NodeId to, Op op, std::vector<TransferId> deps = {},
                        int count = 1) {
    const std::vector<Hops::Hop>& hops = hops_.path(from, to);
    if (hops.size() > 1)
      throw NotApplicable(fmt::format(
          "{} and {} are neither linked nor joined through switches or router NPUs: {}'s input "
          "would have to be relayed by NPU {}, which holds its own copy of the chunk",
          t_.node(from).name, t_.node(to).name, t_.node(from).name, t_.node(hops[0].to).name));
    if (auto g = gates_.find(from); g != gates_.end())
      deps.insert(deps.end(), g->second.begin(), g->second.end());
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    const TransferId id = a_.add(c, from, to, Hops::pick(hops[0]), op, deps, -1, -1, 0, channel_,
                                 true, static_cast<uint16_t>(count));
    first_hop_ = id;
    for (ChunkId x = c; x < c + count; ++x) set_last_arrival(to, x, id);
    arrivals_[to].push_back(id);
    return id;
  }

  // The first transfer of the last send (the one that leaves its source; differs from the returned
  // one when the send is relayed).
  TransferId first_hop() const { return first_hop_; }

  TransferId last_arrival(NodeId v, ChunkId c) const {
    if (!last_flat_.empty()) return last_flat_[flat(v, c)];
    auto it = last_.find(key(v, c));
    return it == last_.end() ? -1 : it->second;
  }
  // Of transfers to wait for, the last listed of each queue: transfers that leave over the same
  // first link in the same channel, along the same route at the same rate with the same op and
  // as many chunks, are admitted in list order and take equally long, so the last of them arrives
  // last and stands for the others (a step of a ring over 512 servers waits for 512 chunks from its
  // neighbour: one dependency, not 512 per send).
  std::vector<TransferId> last_per_queue(std::vector<TransferId> d) const {
    if (d.size() < 2) return d;
    // Same queue and same transfer shape: channel, rate, op, chunks carried and the whole route.
    auto same_shape = [&](TransferId x, TransferId y) {
      const auto r = a_.route(x), u = a_.route(y);
      return a_[x].channel == a_[y].channel && a_.rate(x) == a_.rate(y) && a_[x].op == a_[y].op &&
             a_[x].count == a_[y].count && std::equal(r.begin(), r.end(), u.begin(), u.end());
    };
    // Sorted by a hash of the shape, read once per transfer (a 1024-NPU hierarchical All-Reduce
    // has hundreds of arrivals of a few shapes per step: sorting by the shapes themselves was most
    // of its build), then by id; a run of one hash is one shape but for a collision.
    std::vector<std::pair<size_t, TransferId>> keyed;
    keyed.reserve(d.size());
    for (TransferId x : d) {
      size_t h = 0;
      boost::hash_combine(h, a_[x].channel);
      boost::hash_combine(h, a_.rate(x));
      boost::hash_combine(h, static_cast<int>(a_[x].op));
      boost::hash_combine(h, a_[x].count);
      for (LinkId l : a_.route(x)) boost::hash_combine(h, l);
      keyed.emplace_back(h, x);
    }
    std::sort(keyed.begin(), keyed.end());
    std::vector<TransferId> out, last;  // `last`: per shape of a run, its latest so far
    for (size_t i = 0, j = 0; i < keyed.size(); i = j) {
      last.clear();
      for (; j < keyed.size() && keyed[j].first == keyed[i].first; ++j) {
        const TransferId x = keyed[j].second;
        auto same =
            std::find_if(last.begin(), last.end(), [&](TransferId y) { return same_shape(x, y); });
        if (same == last.end())
          last.push_back(x);
        else
          *same = x;  // ids rise along a run
      }
      out.insert(out.end(), last.begin(), last.end());  // the last of each queue
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  // Transfers listed so far: a mark for arrivals_since.
  TransferId mark() const { return static_cast<TransferId>(a_.size()); }
  // What arrived at v in transfers listed since `mark` (a step barrier).
  std::vector<TransferId> arrivals_since(NodeId v, TransferId mark) const {
    std::vector<TransferId> out;
    for (auto it = arrivals_[v].rbegin(); it != arrivals_[v].rend() && *it >= mark; ++it)
      out.push_back(*it);
    return out;
  }
  // Room for about `transfers` transfers of one link and one dependency each.
  void reserve(size_t transfers) { a_.reserve(transfers, transfers, transfers); }
  // Where the families keep what does not depend on the chunks (try_baseline's `memo`), or null.
  void set_memo(BaselineMemo* memo) { memo_ = memo; }
  BaselineMemo* memo() const { return memo_; }

  // The channel of the sends that follow (NCCL's channels: independent queues at every port).
  void set_channel(int channel) { channel_ = static_cast<uint16_t>(channel); }

  // Until cleared, every send from `v` also waits for `deps` (a phase barrier).
  void gate(NodeId v, std::vector<TransferId> deps) { gates_[v] = std::move(deps); }
  void clear_gates() { gates_.clear(); }

  // NPUs linked to v directly or through pass-through nodes (the ring search's neighbours).
  bool adjacent(NodeId u, NodeId v) { return hops_.path(u, v).size() == 1; }
  // The routes of the one hop from u to v (linked directly, or through switches or router NPUs),
  // or nullptr where the way relays through NPUs or there is none.
  const topo::FlatRoutes* hop_routes(NodeId u, NodeId v) {
    try {
      const std::vector<Hops::Hop>& hops = hops_.path(u, v);
      return hops.size() == 1 ? &hops[0].routes : nullptr;
    } catch (const NotApplicable&) {
      return nullptr;
    }
  }

  // How many of `chunks` consecutive chunks to send from u to v as one message where the way
  // relays through NPUs (each forwards a message once all of it has arrived): where steps are
  // charged, as many as balance the steps against the relays' holding back
  // (balanced_message_chunks, at the way's narrowest bandwidth and a hop's largest step); else 1,
  // each relay forwarding a chunk as soon as it holds it.
  int relayed_message_chunks(NodeId u, NodeId v, int64_t chunks) {
    if (!a_.step_costs) return 1;
    const std::vector<Hops::Hop>& hops = hops_.path(u, v);
    Time step = 0;
    Bandwidth narrowest = std::numeric_limits<Bandwidth>::max();
    for (const Hops::Hop& h : hops)
      for (LinkId l : h.routes.links) {
        step = std::max(step, t_.link(l).step);
        narrowest = std::min(narrowest, t_.link(l).bandwidth);
      }
    return balanced_message_chunks(chunks, step, transfer_time(a_.chunk_bytes, narrowest),
                                   static_cast<int>(hops.size()) - 1);
  }

  Algorithm finish(Bandwidth reduce_bandwidth, bool timed) {
    if (std::any_of(a_.transfers().begin(), a_.transfers().end(),
                    [](const Transfer& x) { return x.op == Op::Reduce; }))
      a_.reduce_bandwidth = reduce_bandwidth;
    // A calibrated system may say this algorithm reaches only part of its links' rate.
    if (const double e = t_.calibration().efficiency_of(a_.name); e < 1.0)
      for (TransferId id = 0; id < static_cast<TransferId>(a_.size()); ++id) {
        Bandwidth rate = a_.rate(id);
        if (rate == 0) {
          rate = std::numeric_limits<Bandwidth>::max();
          for (LinkId l : a_.route(id)) rate = std::min(rate, t_.link(l).bandwidth);
        }
        a_.set_rate(id,
                    std::max<Bandwidth>(1, static_cast<Bandwidth>(static_cast<double>(rate) * e)));
      }
    if (timed) time(t_, a_);
    return std::move(a_);
  }

 private:
  static uint64_t key(NodeId v, ChunkId c) {
    return (static_cast<uint64_t>(v) << 32) | static_cast<uint32_t>(c);
  }
  size_t flat(NodeId v, ChunkId c) const {
    return static_cast<size_t>(v) * static_cast<size_t>(chunks_) + static_cast<size_t>(c);
  }
  void set_last_arrival(NodeId v, ChunkId c, TransferId id) {
    if (!last_flat_.empty())
      last_flat_[flat(v, c)] = id;
    else
      last_[key(v, c)] = id;
  }
  static constexpr int64_t kFlatLastArrivals = int64_t{1} << 24;

  const Topology& t_;
  Hops hops_;
  Algorithm a_;
  int64_t chunks_ = 0;
  std::vector<TransferId> last_flat_;
  std::unordered_map<uint64_t, TransferId> last_;
  std::vector<std::vector<TransferId>> arrivals_;
  std::unordered_map<NodeId, std::vector<TransferId>> gates_;
  TransferId first_hop_ = -1;
  uint16_t channel_ = 0;
  BaselineMemo* memo_ = nullptr;
};

// ---- Group primitives -----------------------------------------------------------------------
// A group is a list of NPUs; `blocks[i]` are the chunks member i owns (Reduce-Scatter: ends with
// reduced; All-Gather: starts with).

using Blocks = std::vector<std::vector<ChunkId>>;

inline int wrap(int64_t x, int n) { return static_cast<int>(((x % n) + n) % n); }

// A step of a step-synchronous algorithm: what `from` sends waits for everything that arrived at
// it in the previous step and for its own previous step's sends (blocking send-receive).
struct Steps {
  explicit Steps(Builder& builder) : b(builder) {}
  Builder& b;
  std::map<NodeId, std::vector<TransferId>> sent;  // last step's sends per node
  TransferId step_mark = 0;
  TransferId previous_mark = 0;
  void begin() {
    previous_mark = step_mark;
    step_mark = b.mark();
  }
  std::vector<TransferId> deps(NodeId from) {
    std::vector<TransferId> d = b.arrivals_since(from, previous_mark);
    std::erase_if(d, [&](TransferId x) { return x >= step_mark; });
    auto it = sent.find(from);
    if (it != sent.end()) d.insert(d.end(), it->second.begin(), it->second.end());
    return b.last_per_queue(std::move(d));
  }
  void record(NodeId from, std::vector<TransferId> ids) { sent[from] = std::move(ids); }
};

// Ring Reduce-Scatter (reduce) or All-Gather along `order` in direction dir (+1 or -1). With
// `steps`, each step waits for the previous one and sends its block at once, as messages
// (send_runs: ASTRA-sim's and MPI's rings); without, chunk by chunk, the chunks pipelining from
// step to step (NCCL's).
void ring_steps(Builder& b, const std::vector<NodeId>& order, const Blocks& blocks, int dir,
                bool reduce, Steps* steps = nullptr);
void ring_reduce_scatter(Builder& b, const std::vector<NodeId>& order, const Blocks& blocks,
                         int dir);
void ring_all_gather(Builder& b, const std::vector<NodeId>& order, const Blocks& blocks, int dir);

// Ring All-to-All, store and forward (ASTRA-sim's native ring All-to-All: astraccl/
// native_collectives/collective_algorithm/Ring.cc, p(p-1)/2 messages per rank) along `order`:
// towards[i * p + j] are the chunks order[i] holds for order[j], which cross j - i links (mod p).
// In round r = 1 .. p-1 every member forwards, nearest destination first, the p - r blocks that
// came from r - 1 places back (its own in round 1); each message is a step of `st` that waits for
// the message the member received in the step before (a chain, as there: a receive releases the
// next send).
void ring_all_to_all_steps(Builder& b, const std::vector<NodeId>& order,
                           const std::vector<std::vector<ChunkId>>& towards, Steps& st);

// A pipelined chain from order[0] (Broadcast) or towards it (Reduce): chunk j crosses hop h at
// wave j + h, so the chunks stream.
void ring_chain(Builder& b, const std::vector<NodeId>& order, const std::vector<ChunkId>& chunks,
                bool reduce);

// Sends `chunks` from `from` to `to` as messages (Builder::send with a count): per run of
// consecutive chunk ids one per route the hop has (Builder::hop_routes), as a runtime sends a
// step's contiguous buffer at once; where the way relays through NPUs, in messages of
// Builder::relayed_message_chunks (chunk by chunk where steps are not charged: each relay forwards
// a chunk as soon as it holds it, as a message would not). Appends the first hop of each to `sent`
// when given. `input`: sends `from`'s input of them (Builder::send_input).
void send_runs(Builder& b, const std::vector<ChunkId>& chunks, NodeId from, NodeId to, Op op,
               const std::vector<TransferId>& deps, std::vector<TransferId>* sent = nullptr,
               bool input = false);

// Everyone sends member j its block (Reduce-Scatter) or its own block to everyone (All-Gather),
// member i talking to i+1, i+2, ... in turn, chunk by chunk: with no barrier between the phases, a
// chunk's All-Gather leaves once that chunk is reduced, so more chunks pipeline the two phases (at
// a step each); as one message a block would wait for all of its reductions.
void direct_exchange(Builder& b, const std::vector<NodeId>& group, const Blocks& blocks,
                     bool reduce);

// Recursive halving: member i keeps the half of the blocks that agree with it on the bit being
// split and sends the other half to partner i ^ d; power-of-two groups. A step's half is one
// message where its chunks are consecutive (send_runs), as MPI sends it.
void rhd_reduce_scatter(Builder& b, const std::vector<NodeId>& group, const Blocks& blocks,
                        Steps& st);

// Recursive doubling: member i sends every block it holds to partner i ^ d, d = 1, 2, 4, ..., as
// messages of consecutive chunks (send_runs).
void rhd_all_gather(Builder& b, const std::vector<NodeId>& group, const Blocks& blocks, Steps& st);

inline bool power_of_two(int p) { return p > 0 && (p & (p - 1)) == 0; }

// One tree of a tree All-Reduce (dbt, tree, blink): its members, each one's parent (an index into
// `group`, -1 for the root), the chunks it carries and its channel.
struct TreeJob {
  std::vector<NodeId> group;
  std::vector<int> parent;
  std::vector<ChunkId> chunks;
  int channel = 0;
};

// Splits `chunks` into `parts` contiguous blocks (the first ones one larger when uneven).
Blocks split(const std::vector<ChunkId>& chunks, int parts);

// `n` items dealt in proportion to `weights` by largest remainder (ties to the earlier): how many
// each gets. Whole-number weights are divided exactly.
template <typename W>
std::vector<int64_t> largest_remainders(int64_t n, const std::vector<W>& weights) {
  W total = 0;
  for (W w : weights) total += w;
  std::vector<int64_t> count(weights.size(), 0);
  using Rest = std::conditional_t<std::is_integral_v<W>, Int128, double>;
  std::vector<std::pair<Rest, size_t>> rest;
  int64_t dealt = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    if constexpr (std::is_integral_v<W>) {
      const Int128 exact = static_cast<Int128>(n) * weights[i];
      count[i] = static_cast<int64_t>(exact / total);
      rest.emplace_back(exact % total, i);
    } else {
      const double share = static_cast<double>(n) * weights[i] / total;
      count[i] = static_cast<int64_t>(std::floor(share));
      rest.emplace_back(share - std::floor(share), i);
    }
    dealt += count[i];
  }
  std::stable_sort(rest.begin(), rest.end(),
                   [](const auto& x, const auto& y) { return x.first > y.first; });
  for (size_t r = 0; dealt < n; ++r, ++dealt) ++count[rest[r % rest.size()].second];
  return count;
}

// The blocks of a collective over its ranks: block r = rank r's chunks.
Blocks rank_blocks(const Collective& c);

// Every chunk of the collective, in order.
std::vector<ChunkId> all_chunks(const Collective& c);

}  // namespace tenet::synth::detail
