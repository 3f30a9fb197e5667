#include "synth/baselines.hpp"

#include <boost/container_hash/hash.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <unordered_map>

#include "synth/ring_channels.hpp"
#include "synth/ring_plan.hpp"
#include "synth/timing.hpp"
#include "topo/analysis.hpp"
#include "topo/error.hpp"
#include "topo/routing.hpp"
#include "topo/suggest.hpp"

namespace tenet::synth {

std::string_view to_string(BaselineKind k) {
  switch (k) {
    case BaselineKind::Ring: return "ring";
    case BaselineKind::BidirRing: return "bidir-ring";
    case BaselineKind::Direct: return "direct";
    case BaselineKind::Rhd: return "rhd";
    case BaselineKind::Dbt: return "dbt";
    case BaselineKind::Tree: return "tree";
    case BaselineKind::Bruck: return "bruck";
    case BaselineKind::Hierarchical: return "hierarchical";
    case BaselineKind::Nvls: return "nvls";
  }
  return "?";
}

const std::vector<BaselineKind>& all_baselines() {
  static const std::vector<BaselineKind> all{
      BaselineKind::Ring, BaselineKind::BidirRing, BaselineKind::Direct,       BaselineKind::Rhd, BaselineKind::Dbt,
      BaselineKind::Tree, BaselineKind::Bruck,     BaselineKind::Hierarchical, BaselineKind::Nvls};
  return all;
}

bool has_channels(BaselineKind kind) {
  return kind == BaselineKind::Ring || kind == BaselineKind::BidirRing || kind == BaselineKind::Tree;
}

std::string BaselineSpec::name() const {
  std::string s(to_string(kind));
  for (size_t i = 0; i < per_dimension.size(); ++i) {
    s += i ? ',' : ':';
    s += to_string(per_dimension[i]);
  }
  if (channels > 0) s += fmt::format(":{}", channels);
  return s;
}

BaselineSpec parse_baseline(std::string_view text) {
  auto one = [](std::string_view name) {
    for (BaselineKind k : all_baselines())
      if (to_string(k) == name) return k;
    std::vector<std::string> known{"tenet"};
    for (BaselineKind k : all_baselines()) known.emplace_back(to_string(k));
    throw Error(fmt::format("unknown algorithm '{}'{} (known: {})", name, did_you_mean(name, known), fmt::join(known, ", ")));
  };
  BaselineSpec spec;
  const size_t colon = text.find(':');
  spec.kind = one(text.substr(0, colon));
  if (colon == std::string_view::npos) return spec;
  if (has_channels(spec.kind)) {
    const std::string_view count = text.substr(colon + 1);
    if (count == "auto") return spec;
    int n = 0;
    const auto [end, ec] = std::from_chars(count.data(), count.data() + count.size(), n);
    if (ec != std::errc() || end != count.data() + count.size() || n < 1 || n > kMaxChannels)
      throw Error(fmt::format("'{}': the channel count after '{}:' must be auto or a whole number from 1 to {}",
                              text, to_string(spec.kind), kMaxChannels));
    spec.channels = n;
    return spec;
  }
  if (spec.kind != BaselineKind::Hierarchical)
    throw Error(fmt::format("only hierarchical takes per-dimension algorithms and only ring, bidir-ring and tree "
                            "a channel count, not '{}'", text));
  std::string_view rest = text.substr(colon + 1);
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    BaselineKind k = one(rest.substr(0, comma));
    if (k != BaselineKind::Ring && k != BaselineKind::Direct && k != BaselineKind::Rhd)
      throw Error(fmt::format("a dimension of hierarchical runs ring, direct or rhd, not {}", to_string(k)));
    spec.per_dimension.push_back(k);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return spec;
}

bool supports(BaselineKind b, CollectiveKind c) {
  using C = CollectiveKind;
  switch (b) {
    case BaselineKind::Ring:
      return c == C::AllGather || c == C::ReduceScatter || c == C::AllReduce || c == C::Broadcast || c == C::Reduce ||
             c == C::AllToAll;
    case BaselineKind::BidirRing:
      return c == C::AllGather || c == C::ReduceScatter || c == C::AllReduce || c == C::Broadcast || c == C::Reduce;
    case BaselineKind::Direct:
      return c == C::AllGather || c == C::ReduceScatter || c == C::AllReduce || c == C::AllToAll || c == C::Gather ||
             c == C::Scatter;
    case BaselineKind::Rhd: return c == C::AllGather || c == C::ReduceScatter || c == C::AllReduce;
    case BaselineKind::Dbt: return c == C::AllReduce || c == C::Broadcast || c == C::Reduce;
    case BaselineKind::Tree: return c == C::AllReduce;
    case BaselineKind::Bruck: return c == C::AllGather;
    case BaselineKind::Hierarchical: return c == C::AllGather || c == C::ReduceScatter || c == C::AllReduce;
    case BaselineKind::Nvls: return c == C::AllReduce;
  }
  return false;
}

namespace {

using topo::Topology;

// How logical NPU-to-NPU sends cross the topology: per pair of NPUs, the hops of its path (one
// when the two are linked, directly or through switches or router NPUs; else relays over NPUs),
// each with its routes.
class Hops {
 public:
  explicit Hops(const Topology& t) : t_(t), router_(t) {}
  struct Hop {
    NodeId to;
    std::vector<std::vector<LinkId>> routes;  // parallel links: used in turn
    mutable size_t next = 0;
  };
  // A route of the hop for the next send over it: its routes in turn.
  static const std::vector<LinkId>& pick(const Hop& h) { return h.routes[h.next++ % h.routes.size()]; }

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
        throw NotApplicable(fmt::format("no way from {} to {}", t_.node(from).name, t_.node(to).name));
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
      if (t_.link(l).dst == v) h.routes.push_back({l});
    if (h.routes.empty()) {
      for (topo::Route& r : routes_.equal_cost_routes(u, v)) h.routes.push_back(std::move(r.links));
      if (h.routes.size() > 1) h.next = flow_hash(u, v) % h.routes.size();
    }
    if (h.routes.empty()) return std::nullopt;
    return h;
  }
  static uint64_t flow_hash(NodeId u, NodeId v) {  // splitmix64's finaliser
    uint64_t x = (static_cast<uint64_t>(u) << 32 | static_cast<uint32_t>(v)) + 0x9e3779b97f4a7c15ULL;
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
  Builder(const Topology& t, const Collective& c, Bytes chunk_bytes, LinkModel model, std::string name)
      : t_(t), hops_(t), arrivals_(t.num_nodes()) {
    // The last arrival per (node, chunk): a flat table where it is small (every ring, tree and
    // halving-doubling; a hash lookup per send was a tenth of building a 1024-rank ring), else a
    // hash map (an All-to-All's N^2 chunks).
    chunks_ = c.num_chunks();
    if (const int64_t slots = static_cast<int64_t>(t.num_nodes()) * chunks_; slots <= kFlatLastArrivals)
      last_flat_.assign(static_cast<size_t>(slots), -1);
    a_ = empty_algorithm(std::move(name), t, c, chunk_bytes, model);
  }

  // Sends chunk c from NPU `from` to NPU `to`. It waits for `deps` and for the chunk's last
  // arrival at `from`. Returns the transfer that arrives at `to`.
  TransferId send(ChunkId c, NodeId from, NodeId to, Op op, std::vector<TransferId> deps = {}) {
    const std::vector<Hops::Hop>& hops = hops_.path(from, to);
    if (op == Op::Reduce && hops.size() > 1)
      throw NotApplicable(fmt::format(
          "{} and {} are neither linked nor joined through switches or router NPUs: the partial "
          "reduction would have to pass through NPU {}, which holds its own copy of the chunk",
          t_.node(from).name, t_.node(to).name, t_.node(hops[0].to).name));
    if (auto g = gates_.find(from); g != gates_.end()) deps.insert(deps.end(), g->second.begin(), g->second.end());
    NodeId at = from;
    TransferId last = -1;
    for (size_t i = 0; i < hops.size(); ++i) {
      std::vector<TransferId> d = i == 0 ? std::move(deps) : std::vector<TransferId>{last};
      if (TransferId before = last_arrival(at, c); before >= 0) d.push_back(before);
      std::sort(d.begin(), d.end());
      d.erase(std::unique(d.begin(), d.end()), d.end());
      const std::vector<LinkId>& route = Hops::pick(hops[i]);
      last = a_.add(c, at, hops[i].to, route, i + 1 == hops.size() ? op : Op::Copy, d, -1, -1, 0, channel_);
      if (i == 0) first_hop_ = last;
      set_last_arrival(hops[i].to, c, last);
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
    if (auto g = gates_.find(from); g != gates_.end()) deps.insert(deps.end(), g->second.begin(), g->second.end());
    if (TransferId before = last_arrival(from, c); before >= 0) deps.push_back(before);
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    Bandwidth narrowest = std::numeric_limits<Bandwidth>::max();
    for (LinkId l : route) narrowest = std::min(narrowest, t_.link(l).bandwidth);
    const TransferId id = a_.add(c, from, to, route, op, deps, -1, -1, rate > 0 && rate < narrowest ? rate : 0,
                                 static_cast<uint16_t>(channel));
    first_hop_ = id;
    set_last_arrival(to, c, id);
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
  // first link in the same channel, along the same route at the same rate with the same op, are
  // admitted in list order and take equally long, so the last of them arrives last and stands for
  // the others (a step of a ring over 512 servers waits for 512 chunks from its neighbour: one
  // dependency, not 512 per send; hierarchical on nvcluster:128x8 made 6.7 GB of them).
  std::vector<TransferId> last_per_queue(std::vector<TransferId> d) const {
    if (d.size() < 2) return d;
    // Same queue and same transfer shape: channel, rate, op and the whole route.
    auto same_shape = [&](TransferId x, TransferId y) {
      const auto r = a_.route(x), u = a_.route(y);
      return a_[x].channel == a_[y].channel && a_.rate(x) == a_.rate(y) && a_[x].op == a_[y].op &&
             std::equal(r.begin(), r.end(), u.begin(), u.end());
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
      for (LinkId l : a_.route(x)) boost::hash_combine(h, l);
      keyed.emplace_back(h, x);
    }
    std::sort(keyed.begin(), keyed.end());
    std::vector<TransferId> out, last;  // `last`: per shape of a run, its latest so far
    for (size_t i = 0, j = 0; i < keyed.size(); i = j) {
      last.clear();
      for (; j < keyed.size() && keyed[j].first == keyed[i].first; ++j) {
        const TransferId x = keyed[j].second;
        auto same = std::find_if(last.begin(), last.end(), [&](TransferId y) { return same_shape(x, y); });
        if (same == last.end()) last.push_back(x);
        else *same = x;  // ids rise along a run
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
    for (auto it = arrivals_[v].rbegin(); it != arrivals_[v].rend() && *it >= mark; ++it) out.push_back(*it);
    return out;
  }
  // Room for about `transfers` transfers of one link and one dependency each.
  void reserve(size_t transfers) { a_.reserve(transfers, transfers, transfers); }
  // The channel of the sends that follow (NCCL's channels: independent queues at every port).
  void set_channel(int channel) { channel_ = static_cast<uint16_t>(channel); }

  // Until cleared, every send from `v` also waits for `deps` (a phase barrier).
  void gate(NodeId v, std::vector<TransferId> deps) { gates_[v] = std::move(deps); }
  void clear_gates() { gates_.clear(); }

  // NPUs linked to v directly or through pass-through nodes (the ring search's neighbours).
  bool adjacent(NodeId u, NodeId v) { return hops_.path(u, v).size() == 1; }

  Algorithm finish(Bandwidth reduce_bandwidth, bool timed) {
    if (std::any_of(a_.transfers().begin(), a_.transfers().end(), [](const Transfer& x) { return x.op == Op::Reduce; }))
      a_.reduce_bandwidth = reduce_bandwidth;
    // A calibrated system may say this algorithm reaches only part of its links' rate.
    if (const double e = t_.calibration().efficiency_of(a_.name); e < 1.0)
      for (TransferId id = 0; id < static_cast<TransferId>(a_.size()); ++id) {
        Bandwidth rate = a_.rate(id);
        if (rate == 0) {
          rate = std::numeric_limits<Bandwidth>::max();
          for (LinkId l : a_.route(id)) rate = std::min(rate, t_.link(l).bandwidth);
        }
        a_.set_rate(id, std::max<Bandwidth>(1, static_cast<Bandwidth>(static_cast<double>(rate) * e)));
      }
    if (timed) time(t_, a_);
    return std::move(a_);
  }

 private:
  static uint64_t key(NodeId v, ChunkId c) { return (static_cast<uint64_t>(v) << 32) | static_cast<uint32_t>(c); }
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
};

// ---- Ring orders ----------------------------------------------------------------------------

// A path through every cell of a grid (first dimension fastest) in which consecutive cells differ
// by one step in one coordinate: the reflected mixed-radix Gray code (boustrophedon).
std::vector<int64_t> snake_path(const std::vector<int>& dims) {
  std::vector<int64_t> path{0};
  int64_t stride = 1;
  for (int d : dims) {
    std::vector<int64_t> next;
    for (int v = 0; v < d; ++v) {
      if (v % 2 == 0)
        for (int64_t x : path) next.push_back(x + v * stride);
      else
        for (auto it = path.rbegin(); it != path.rend(); ++it) next.push_back(*it + v * stride);
    }
    path = std::move(next);
    stride *= d;
  }
  return path;
}

// A Hamiltonian cycle of an A x L grid (x along A, y along the path `rows`), or nothing when A
// and L are both odd: x = 0 is the way back, the rest is traversed as a snake.
std::vector<NodeId> grid_cycle(int a, const std::vector<int64_t>& rows) {
  const int64_t l = static_cast<int64_t>(rows.size());
  if (a < 2 || l < 2) return {};
  auto id = [&](int x, int64_t y) { return static_cast<NodeId>(x + a * rows[y]); };
  std::vector<NodeId> cycle;
  if (l % 2 == 0) {
    for (int64_t y = 0; y < l; ++y)
      for (int i = 1; i < a; ++i) cycle.push_back(id(y % 2 == 0 ? i : a - i, y));
    for (int64_t y = l - 1; y >= 0; --y) cycle.push_back(id(0, y));
  } else if (a % 2 == 0) {
    for (int x = 0; x < a; ++x)
      for (int64_t j = 1; j < l; ++j) cycle.push_back(id(x, x % 2 == 0 ? j : l - j));
    for (int x = a - 1; x >= 0; --x) cycle.push_back(id(x, 0));
  }
  return cycle;
}

}  // namespace

std::vector<NodeId> ring_order(const Topology& t, const std::vector<NodeId>& npus) {
  const size_t p = npus.size();
  if (p <= 2) return npus;
  Builder probe(t, Collective::over_all(t, CollectiveKind::AllGather), 1, LinkModel::Pipelined, "");
  auto closes = [&](const std::vector<NodeId>& order) {
    for (size_t i = 0; i < order.size(); ++i)
      if (!probe.adjacent(order[i], order[(i + 1) % order.size()])) return false;
    return true;
  };
  // The generator's grid, when the ring covers every NPU.
  if (static_cast<int>(p) == t.num_npus() && t.grid().size() >= 2) {
    std::vector<int> rest(t.grid().begin() + 1, t.grid().end());
    std::vector<NodeId> cycle = grid_cycle(t.grid()[0], snake_path(rest));
    if (cycle.size() == p && closes(cycle)) return cycle;
  }
  if (closes(npus)) return npus;
  // A bounded depth-first search preferring the neighbour with the fewest onward choices
  // (Warnsdorff's rule).
  std::vector<char> member(t.num_npus(), 0), used(t.num_npus(), 0);
  for (NodeId v : npus) member[v] = 1;
  std::vector<std::vector<NodeId>> adj(t.num_npus());
  if (p <= 512)
    for (NodeId u : npus)
      for (NodeId v : npus)
        if (u != v && probe.adjacent(u, v)) adj[u].push_back(v);
  std::vector<NodeId> order{npus[0]};
  used[npus[0]] = 1;
  int64_t budget = p <= 512 ? 200'000 : 0;
  std::function<bool()> extend = [&]() -> bool {
    if (order.size() == p) return probe.adjacent(order.back(), order.front());
    if (--budget < 0) return false;
    std::vector<std::pair<int, NodeId>> options;
    for (NodeId v : adj[order.back()])
      if (!used[v]) {
        int onward = 0;
        for (NodeId w : adj[v]) onward += !used[w];
        options.emplace_back(onward, v);
      }
    std::sort(options.begin(), options.end());
    for (auto [onward, v] : options) {
      used[v] = 1;
      order.push_back(v);
      if (extend()) return true;
      order.pop_back();
      used[v] = 0;
    }
    return false;
  };
  if (budget > 0 && extend()) return order;
  // Otherwise: nearest unvisited NPU (by hops over the topology) next.
  order.assign(1, npus[0]);
  std::fill(used.begin(), used.end(), 0);
  used[npus[0]] = 1;
  while (order.size() < p) {
    std::vector<int> d(t.num_nodes(), -1);
    std::vector<NodeId> q{order.back()};
    d[order.back()] = 0;
    NodeId next = -1;
    for (size_t i = 0; i < q.size() && next < 0; ++i)
      for (LinkId l : t.out_links(q[i])) {
        const NodeId w = t.link(l).dst;
        if (d[w] >= 0) continue;
        d[w] = d[q[i]] + 1;
        q.push_back(w);
        if (t.is_npu(w) && member[w] && !used[w]) {
          next = w;
          break;
        }
      }
    if (next < 0)
      for (NodeId v : npus)
        if (!used[v]) {
          next = v;
          break;
        }
    used[next] = 1;
    order.push_back(next);
  }
  return order;
}

std::vector<int> binary_tree(int p) {
  std::vector<int> parent(p, -1);
  std::function<int(int, int, int)> build = [&](int lo, int hi, int up) -> int {
    if (lo > hi) return -1;
    const int mid = (lo + hi) / 2;
    parent[mid] = up;
    build(lo, mid - 1, mid);
    build(mid + 1, hi, mid);
    return mid;
  };
  build(0, p - 1, -1);
  return parent;
}

// (Shifting the first tree by one, as before, gave a member two children in one tree and one in
// the other wherever p is not 2^n - 1: three chunks in per step, every tree all-reduce 1.5x slower
// than its links allow.)
std::vector<int> complementary_positions(const std::vector<int>& parent) {
  const int p = static_cast<int>(parent.size());
  std::vector<int> children(p, 0);
  for (int v : parent)
    if (v >= 0) ++children[v];
  std::vector<int> members(p), positions(p);
  std::iota(members.begin(), members.end(), 0);
  std::iota(positions.begin(), positions.end(), 0);
  std::stable_sort(members.begin(), members.end(), [&](int x, int y) { return children[x] < children[y]; });
  std::stable_sort(positions.begin(), positions.end(), [&](int x, int y) { return children[x] > children[y]; });
  std::vector<int> at(p);
  for (int i = 0; i < p; ++i) at[positions[i]] = members[i];
  return at;
}

namespace {

// ---- Group primitives -----------------------------------------------------------------------
// A group is a list of NPUs; `blocks[i]` are the chunks member i owns (Reduce-Scatter: ends with
// reduced; All-Gather: starts with).

using Blocks = std::vector<std::vector<ChunkId>>;

int wrap(int64_t x, int n) { return static_cast<int>(((x % n) + n) % n); }

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
// `steps`, each step waits for the previous one (ASTRA-sim's and MPI's rings); without, chunks
// pipeline from step to step (NCCL's).
void ring_steps(Builder& b, const std::vector<NodeId>& order, const Blocks& blocks, int dir, bool reduce,
                Steps* steps = nullptr) {
  const int p = static_cast<int>(order.size());
  for (int s = 0; s + 1 < p; ++s) {
    if (steps) steps->begin();
    std::map<NodeId, std::vector<TransferId>> sent;  // for `steps` only
    for (int i = 0; i < p; ++i) {
      const std::vector<TransferId> deps = steps ? steps->deps(order[i]) : std::vector<TransferId>{};
      for (ChunkId c : blocks[wrap(i - dir * (reduce ? s + 1 : s), p)]) {
        b.send(c, order[i], order[wrap(i + dir, p)], reduce ? Op::Reduce : Op::Copy, deps);
        if (steps) sent[order[i]].push_back(b.first_hop());
      }
    }
    if (steps)
      for (auto& [v, ids] : sent) steps->record(v, ids);
  }
}
void ring_reduce_scatter(Builder& b, const std::vector<NodeId>& order, const Blocks& blocks, int dir) {
  ring_steps(b, order, blocks, dir, true);
}
void ring_all_gather(Builder& b, const std::vector<NodeId>& order, const Blocks& blocks, int dir) {
  ring_steps(b, order, blocks, dir, false);
}

// A pipelined chain from order[0] (Broadcast) or towards it (Reduce): chunk j crosses hop h at
// wave j + h, so the chunks stream.
void ring_chain(Builder& b, const std::vector<NodeId>& order, const std::vector<ChunkId>& chunks, bool reduce) {
  const int p = static_cast<int>(order.size()), k = static_cast<int>(chunks.size());
  for (int wave = 0; wave < k + p - 2; ++wave)
    for (int h = 0; h + 1 < p; ++h) {
      const int j = wave - h;
      if (j < 0 || j >= k) continue;
      if (reduce) b.send(chunks[j], order[p - 1 - h], order[p - 2 - h], Op::Reduce);
      else b.send(chunks[j], order[h], order[h + 1], Op::Copy);
    }
}

// Everyone sends member j its block (Reduce-Scatter) or its own block to everyone (All-Gather),
// member i talking to i+1, i+2, ... in turn.
void direct_exchange(Builder& b, const std::vector<NodeId>& group, const Blocks& blocks, bool reduce) {
  const int p = static_cast<int>(group.size());
  for (int s = 1; s < p; ++s)
    for (int i = 0; i < p; ++i) {
      const int j = (i + s) % p;
      for (ChunkId c : blocks[reduce ? j : i]) b.send(c, group[i], group[j], reduce ? Op::Reduce : Op::Copy);
    }
}

// Recursive halving: member i keeps the half of the blocks that agree with it on the bit being
// split and sends the other half to partner i ^ d; power-of-two groups.
void rhd_reduce_scatter(Builder& b, const std::vector<NodeId>& group, const Blocks& blocks, Steps& st) {
  const int p = static_cast<int>(group.size());
  for (int d = p / 2; d >= 1; d /= 2) {
    st.begin();
    std::map<NodeId, std::vector<TransferId>> sent;
    for (int i = 0; i < p; ++i) {
      std::vector<TransferId> deps = st.deps(group[i]);
      for (int blk = 0; blk < p; ++blk) {
        const bool owned = (blk & ~(2 * d - 1)) == (i & ~(2 * d - 1));
        if (!owned || (blk & d) == (i & d)) continue;
        for (ChunkId c : blocks[blk]) { b.send(c, group[i], group[i ^ d], Op::Reduce, deps); sent[group[i]].push_back(b.first_hop()); }
      }
    }
    for (auto& [v, ids] : sent) st.record(v, ids);
  }
}

// Recursive doubling: member i sends every block it holds to partner i ^ d, d = 1, 2, 4, ...
void rhd_all_gather(Builder& b, const std::vector<NodeId>& group, const Blocks& blocks, Steps& st) {
  const int p = static_cast<int>(group.size());
  for (int d = 1; d < p; d *= 2) {
    st.begin();
    std::map<NodeId, std::vector<TransferId>> sent;
    for (int i = 0; i < p; ++i) {
      std::vector<TransferId> deps = st.deps(group[i]);
      for (int blk = 0; blk < p; ++blk)
        if ((blk & ~(d - 1)) == (i & ~(d - 1)))
          for (ChunkId c : blocks[blk]) { b.send(c, group[i], group[i ^ d], Op::Copy, deps); sent[group[i]].push_back(b.first_hop()); }
    }
    for (auto& [v, ids] : sent) st.record(v, ids);
  }
}

bool power_of_two(int p) { return p > 0 && (p & (p - 1)) == 0; }

// Splits `chunks` into `parts` contiguous blocks (the first ones one larger when uneven).
Blocks split(const std::vector<ChunkId>& chunks, int parts) {
  Blocks out(parts);
  const size_t n = chunks.size();
  for (size_t i = 0; i < n; ++i) out[i * parts / n].push_back(chunks[i]);
  return out;
}

// The blocks of a collective over its ranks: block r = rank r's chunks.
Blocks rank_blocks(const Collective& c) {
  Blocks out(c.num_ranks());
  for (ChunkId ch = 0; ch < c.num_chunks(); ++ch) out[c.origin(ch)].push_back(ch);
  return out;
}

// ---- Trees ----------------------------------------------------------------------------------

// All-Reduce of `chunks` over a tree (parent of each member): reduce towards the root, then
// broadcast back, chunk by chunk in waves so the chunks pipeline.
// One tree of a (double) tree All-Reduce: its members, each one's parent (-1 for the root), the
// chunks it carries and its channel.
struct TreeJob {
  std::vector<NodeId> group;
  std::vector<int> parent;
  std::vector<ChunkId> chunks;
  int channel = 0;
};

// All-Reduce over trees: reduce towards each root, then broadcast back, chunk by chunk in waves so
// the chunks pipeline. The trees' waves are listed interleaved (wave w of every tree, then wave
// w + 1), so trees sharing a port progress together.
void trees_all_reduce(Builder& b, const std::vector<TreeJob>& jobs) {
  std::vector<std::vector<int>> depth(jobs.size());
  int max_depth = 0, max_k = 0;
  for (size_t t = 0; t < jobs.size(); ++t) {
    const int p = static_cast<int>(jobs[t].group.size());
    depth[t].assign(p, 0);
    for (int i = 0; i < p; ++i) {
      for (int at = i; jobs[t].parent[at] >= 0; at = jobs[t].parent[at]) ++depth[t][i];
      max_depth = std::max(max_depth, depth[t][i]);
    }
    max_k = std::max(max_k, static_cast<int>(jobs[t].chunks.size()));
  }
  // Up: the deepest first within a wave; a node sends chunk j after its children's chunk j arrived.
  for (int wave = 0; wave < max_k + max_depth; ++wave)
    for (size_t t = 0; t < jobs.size(); ++t) {
      const TreeJob& job = jobs[t];
      b.set_channel(job.channel);
      for (int dd = max_depth; dd >= 1; --dd) {
        const int j = wave - (max_depth - dd);
        if (j < 0 || j >= static_cast<int>(job.chunks.size())) continue;
        for (size_t i = 0; i < job.group.size(); ++i)
          if (depth[t][i] == dd) b.send(job.chunks[j], job.group[i], job.group[job.parent[i]], Op::Reduce);
      }
    }
  // Down.
  for (int wave = 0; wave < max_k + max_depth; ++wave)
    for (size_t t = 0; t < jobs.size(); ++t) {
      const TreeJob& job = jobs[t];
      b.set_channel(job.channel);
      for (int dd = 1; dd <= max_depth; ++dd) {
        const int j = wave - (dd - 1);
        if (j < 0 || j >= static_cast<int>(job.chunks.size())) continue;
        for (size_t i = 0; i < job.group.size(); ++i)
          if (depth[t][i] == dd) b.send(job.chunks[j], job.group[job.parent[i]], job.group[i], Op::Copy);
      }
    }
  b.set_channel(0);
}

// Binomial tree rooted at group[root]: round by round (masks 1, 2, 4, ...), each node sending its
// rounds in order.
void binomial(Builder& b, const std::vector<NodeId>& group, int root, const std::vector<ChunkId>& chunks, bool reduce,
              Steps& st) {
  const int p = static_cast<int>(group.size());
  auto member = [&](int rel) { return group[(rel + root) % p]; };
  std::vector<int> masks;
  for (int mask = 1; mask < p; mask *= 2) masks.push_back(mask);
  if (reduce) std::reverse(masks.begin(), masks.end());  // the broadcast's rounds, mirrored
  // Broadcast: rel < mask sends to rel + mask. Reduce: rel + mask sends to rel.
  for (int mask : masks) {
    st.begin();
    std::map<NodeId, std::vector<TransferId>> sent;
    for (int rel = 0; rel < mask && rel + mask < p; ++rel) {
      const NodeId from = reduce ? member(rel + mask) : member(rel), to = reduce ? member(rel) : member(rel + mask);
      std::vector<TransferId> deps = st.deps(from);
      for (ChunkId c : chunks) { b.send(c, from, to, reduce ? Op::Reduce : Op::Copy, deps); sent[from].push_back(b.first_hop()); }
    }
    for (auto& [v, ids] : sent) st.record(v, ids);
  }
}

// ---- The algorithms -------------------------------------------------------------------------

std::vector<ChunkId> all_chunks(const Collective& c) {
  std::vector<ChunkId> v(c.num_chunks());
  std::iota(v.begin(), v.end(), 0);
  return v;
}

// Splits `n` items among channels in proportion to their rates (largest remainder, ties to the
// earlier channel): how many each gets.
std::vector<int> share_by_rate(int n, const std::vector<RingChannel>& rings) {
  Bandwidth total = 0;
  for (const RingChannel& r : rings) total += r.rate;
  std::vector<int> count(rings.size(), 0);
  std::vector<std::pair<Int128, int>> rest;
  int given = 0;
  for (size_t i = 0; i < rings.size(); ++i) {
    const Int128 exact = static_cast<Int128>(n) * rings[i].rate;
    count[i] = static_cast<int>(exact / total);
    given += count[i];
    rest.emplace_back(-(exact % total), static_cast<int>(i));
  }
  std::sort(rest.begin(), rest.end());
  for (int k = 0; given < n; ++k, ++given) ++count[rest[k % rest.size()].second];
  return count;
}

// `chunks` dealt to the channels in order, each a share in proportion to its rate.
std::vector<std::vector<ChunkId>> split_by_rate(const std::vector<ChunkId>& chunks, const std::vector<RingChannel>& rings) {
  const std::vector<int> count = share_by_rate(static_cast<int>(chunks.size()), rings);
  std::vector<std::vector<ChunkId>> out(rings.size());
  size_t at = 0;
  for (size_t ch = 0; ch < rings.size(); ++ch)
    for (int k = 0; k < count[ch]; ++k) out[ch].push_back(chunks[at++]);
  return out;
}

// NCCL-style chains for Broadcast and Reduce over channel rings (see ring_channels.hpp): of the
// chunks, a share in proportion to each channel's rate. False when no ring over adjacent members
// exists (the single ring with relays takes over).
bool channel_chains(Builder& b, const Topology& t, const Collective& c, bool bidir, int channels) {
  const std::vector<RingChannel> rings = find_ring_channels(t, c.ranks, channels, bidir);
  if (rings.empty()) return false;
  const int p = c.num_ranks();
  const std::vector<std::vector<ChunkId>> per = split_by_rate(all_chunks(c), rings);
  const NodeId root = c.ranks[c.root];
  for (size_t ch = 0; ch < rings.size(); ++ch) {
    if (per[ch].empty()) continue;
    const RingChannel& ring = rings[ch];
    const int r0 = static_cast<int>(std::find(ring.order.begin(), ring.order.end(), root) - ring.order.begin());
    // Broadcast: the chain starts at the root; Reduce: it ends there. Hop h of the chain is ring
    // hop `first + h`.
    const int first = c.kind == CollectiveKind::Broadcast ? r0 : (r0 + 1) % p;
    const int k = static_cast<int>(per[ch].size());
    for (int wave = 0; wave < k + p - 2; ++wave)
      for (int h = 0; h + 1 < p; ++h) {
        const int j = wave - h;
        if (j < 0 || j >= k) continue;
        const int at = (first + h) % p;
        b.send_on(per[ch][j], ring.order[at], ring.order[(at + 1) % p], ring.routes[at],
                  c.kind == CollectiveKind::Reduce ? Op::Reduce : Op::Copy, {}, ring.rate, static_cast<int>(ch));
      }
  }
  return true;
}

// A ring Reduce-Scatter, All-Gather or All-Reduce as a plan (synth/ring_plan.hpp): NCCL-style
// channel rings (channels other than 1) where the topology has them, each rank's block split among
// them in proportion to their rates; else one ring along ring_order, and its reverse carrying the
// second half of every block when bidirectional. nullopt where that ring needs NPUs to relay (its
// neighbours are neither linked nor joined through switches): the ring baseline's relays take over.
std::optional<RingPlan> plan_ring(const Topology& t, const Collective& c, Bytes chunk_bytes, LinkModel model,
                                  Bandwidth reduce_bandwidth, bool bidir, int channels, const std::string& name) {
  const int p = c.num_ranks();
  if (p < 2) return std::nullopt;
  const Blocks by_rank = rank_blocks(c);
  std::vector<RingPlan::Lane> lanes;
  const std::vector<RingChannel> rings = channels != 1 ? find_ring_channels(t, c.ranks, channels, bidir) : std::vector<RingChannel>{};
  if (!rings.empty()) {
    std::vector<int> rank_of(t.num_nodes(), -1);
    for (int r = 0; r < p; ++r) rank_of[c.ranks[r]] = r;
    std::vector<std::vector<std::vector<ChunkId>>> per_rank(p);  // [rank][channel]
    for (int r = 0; r < p; ++r) per_rank[r] = split_by_rate(by_rank[r], rings);
    for (size_t ch = 0; ch < rings.size(); ++ch) {
      const RingChannel& ring = rings[ch];
      RingPlan::Lane lane;
      lane.order = ring.order;
      lane.rate = ring.rate;
      lane.channel = static_cast<uint16_t>(ch);
      for (int i = 0; i < p; ++i) {
        lane.hops.push_back({{ring.routes[i]}, 0});
        lane.blocks.push_back(per_rank[rank_of[ring.order[i]]][ch]);
      }
      lanes.push_back(std::move(lane));
    }
  } else {
    const std::vector<NodeId> order = ring_order(t, c.ranks);
    std::vector<int> position(t.num_nodes(), -1);
    for (int i = 0; i < p; ++i) position[order[i]] = i;
    Hops hops(t);
    for (int dir : {1, -1}) {
      if (dir < 0 && !bidir) break;
      RingPlan::Lane lane;
      lane.order = order;
      lane.dir = dir;
      lane.blocks.resize(p);
      for (int i = 0; i < p; ++i) {
        const std::vector<Hops::Hop>& path = hops.path(order[i], order[wrap(i + dir, p)]);
        if (path.size() != 1) return std::nullopt;
        lane.hops.push_back({path[0].routes, static_cast<uint32_t>(path[0].next)});
      }
      for (int r = 0; r < p; ++r) {
        const std::vector<ChunkId>& chunks = by_rank[r];
        const auto half = static_cast<std::ptrdiff_t>(bidir ? (chunks.size() + 1) / 2 : chunks.size());
        std::vector<ChunkId>& block = lane.blocks[position[c.ranks[r]]];
        if (dir > 0) block.assign(chunks.begin(), chunks.begin() + half);
        else block.assign(chunks.begin() + half, chunks.end());
      }
      lanes.push_back(std::move(lane));
    }
  }
  return RingPlan(t, name, c, chunk_bytes, model, reduce_bandwidth, t.calibration().efficiency_of(name), std::move(lanes));
}

// Rings: rank blocks placed along the ring order. Bidirectional: the first half of each block's
// chunks goes one way, the rest the other way. With channels other than 1: channel_rings.
// Ring All-to-All, store and forward (ASTRA-sim's native ring All-to-All: astraccl/
// native_collectives/collective_algorithm/Ring.cc, p(p-1)/2 messages per rank): the data for the
// rank d places on crosses d links. In round r = 1 .. p-1 every rank forwards, nearest destination
// first, the p - r blocks that came from r - 1 places back (its own in round 1); each message is a
// step that waits for the message the rank received in the step before (a chain, as there: a
// receive releases the next send).
void ring_all_to_all(Builder& b, const Topology& t, const Collective& c) {
  const std::vector<NodeId> order = ring_order(t, c.ranks);
  const int p = static_cast<int>(order.size());
  std::vector<int> rank_of(t.num_nodes(), -1);
  for (int r = 0; r < p; ++r) rank_of[c.ranks[r]] = r;
  const Blocks blocks = rank_blocks(c);
  // Each rank's chunks by the rank that needs them, in block order (a scan of the block per
  // (origin, destination) pair was p^4 k tests: 74 % of a 256-rank All-to-All's synthesis).
  std::vector<std::vector<ChunkId>> towards(static_cast<size_t>(p) * p);
  for (int r = 0; r < p; ++r)
    for (ChunkId ch : blocks[r]) towards[static_cast<size_t>(r) * p + c.needed_by(ch)].push_back(ch);
  Steps st{b};
  for (int round = 1; round < p; ++round)
    for (int j = 0; j + round < p; ++j) {
      st.begin();  // records no sends: a step waits for the previous step's arrivals only
      for (int i = 0; i < p; ++i) {
        const int origin = wrap(i - (round - 1), p), dest = wrap(origin + round + j, p);
        const NodeId from = order[i], to = order[wrap(i + 1, p)];
        const std::vector<TransferId> deps = st.deps(from);
        for (ChunkId ch : towards[static_cast<size_t>(rank_of[order[origin]]) * p + rank_of[order[dest]]])
          b.send(ch, from, to, Op::Copy, deps);
      }
    }
}

void ring(Builder& b, const Topology& t, const Collective& c, bool bidir, int channels) {
  if (c.kind == CollectiveKind::AllToAll) return ring_all_to_all(b, t, c);
  // Each phase moves every chunk p - 1 hops (more where NPUs relay): reserved up front, so a
  // large ring is not copied as it grows (4096 ranks: 34M transfers, 1.9 GB).
  const size_t phases = c.kind == CollectiveKind::AllReduce ? 2 : 1;
  if (c.kind == CollectiveKind::AllGather || c.kind == CollectiveKind::ReduceScatter || c.kind == CollectiveKind::AllReduce)
    b.reserve(phases * static_cast<size_t>(c.num_ranks() - 1) * static_cast<size_t>(c.num_chunks()));
  if (channels != 1 && (c.kind == CollectiveKind::Broadcast || c.kind == CollectiveKind::Reduce) &&
      channel_chains(b, t, c, bidir, channels))
    return;
  std::vector<NodeId> order = ring_order(t, c.ranks);
  std::vector<int> position(t.num_npus(), -1);
  for (int i = 0; i < static_cast<int>(order.size()); ++i) position[order[i]] = i;
  const Blocks by_rank = rank_blocks(c);
  Blocks cw(order.size()), ccw(order.size());
  for (int r = 0; r < c.num_ranks(); ++r) {
    const auto& chunks = by_rank[r];
    const size_t half = bidir ? (chunks.size() + 1) / 2 : chunks.size();
    const int at = position[c.ranks[r]];
    cw[at].assign(chunks.begin(), chunks.begin() + static_cast<std::ptrdiff_t>(half));
    ccw[at].assign(chunks.begin() + static_cast<std::ptrdiff_t>(half), chunks.end());
  }
  auto both = [&](auto&& phase) {
    phase(cw, 1);
    if (bidir) phase(ccw, -1);
  };
  switch (c.kind) {
    case CollectiveKind::AllGather:
      both([&](const Blocks& bl, int dir) { ring_all_gather(b, order, bl, dir); });
      break;
    case CollectiveKind::ReduceScatter:
      both([&](const Blocks& bl, int dir) { ring_reduce_scatter(b, order, bl, dir); });
      break;
    case CollectiveKind::AllReduce:
      both([&](const Blocks& bl, int dir) { ring_reduce_scatter(b, order, bl, dir); });
      both([&](const Blocks& bl, int dir) { ring_all_gather(b, order, bl, dir); });
      break;
    case CollectiveKind::Broadcast:
    case CollectiveKind::Reduce: {
      // The chain starts at the root and runs around the ring (the other way for the second half).
      const int r0 = position[c.ranks[c.root]], p = static_cast<int>(order.size());
      std::vector<NodeId> fwd, bwd;
      for (int i = 0; i < p; ++i) {
        fwd.push_back(order[(r0 + i) % p]);
        bwd.push_back(order[wrap(r0 - i, p)]);
      }
      const std::vector<ChunkId> chunks = all_chunks(c);
      const size_t half = bidir ? (chunks.size() + 1) / 2 : chunks.size();
      const bool reduce = c.kind == CollectiveKind::Reduce;
      ring_chain(b, fwd, {chunks.begin(), chunks.begin() + static_cast<std::ptrdiff_t>(half)}, reduce);
      if (bidir && half < chunks.size())
        ring_chain(b, bwd, {chunks.begin() + static_cast<std::ptrdiff_t>(half), chunks.end()}, reduce);
      break;
    }
    default: break;
  }
}

void direct(Builder& b, const Collective& c) {
  const Blocks blocks = rank_blocks(c);
  const int p = c.num_ranks();
  switch (c.kind) {
    case CollectiveKind::AllGather: direct_exchange(b, c.ranks, blocks, false); break;
    case CollectiveKind::ReduceScatter: direct_exchange(b, c.ranks, blocks, true); break;
    case CollectiveKind::AllReduce:
      direct_exchange(b, c.ranks, blocks, true);
      direct_exchange(b, c.ranks, blocks, false);
      break;
    case CollectiveKind::AllToAll: {  // pairwise: at step s, rank r sends rank r+s its data (MPI)
      Steps st{b};
      for (int s = 1; s < p; ++s) {
        st.begin();
        std::map<NodeId, std::vector<TransferId>> sent;
        for (int r = 0; r < p; ++r) {
          const std::vector<TransferId> deps = st.deps(c.ranks[r]);
          for (ChunkId ch : blocks[r])
            if (c.needed_by(ch) == (r + s) % p)
              { b.send(ch, c.ranks[r], c.ranks[(r + s) % p], Op::Copy, deps); sent[c.ranks[r]].push_back(b.first_hop()); }
        }
        for (auto& [v, ids] : sent) st.record(v, ids);
      }
      break;
    }
    case CollectiveKind::Gather:
      for (int s = 1; s < p; ++s) {
        const int r = (c.root + s) % p;
        for (ChunkId ch : blocks[r]) b.send(ch, c.ranks[r], c.ranks[c.root], Op::Copy);
      }
      break;
    case CollectiveKind::Scatter:
      for (int s = 1; s < p; ++s) {
        const int r = (c.root + s) % p;
        for (ChunkId ch = 0; ch < c.num_chunks(); ++ch)
          if (c.needed_by(ch) == r) b.send(ch, c.ranks[c.root], c.ranks[r], Op::Copy);
      }
      break;
    default: break;
  }
}

void rhd(Builder& b, const Collective& c) {
  const int p = c.num_ranks();
  Steps st{b};
  if (c.kind != CollectiveKind::AllReduce) {
    if (!power_of_two(p))
      throw NotApplicable(fmt::format("recursive halving-doubling {} needs a power-of-two rank count, not {}",
                                      to_string(c.kind), p));
    if (c.kind == CollectiveKind::ReduceScatter) rhd_reduce_scatter(b, c.ranks, rank_blocks(c), st);
    else rhd_all_gather(b, c.ranks, rank_blocks(c), st);
    return;
  }
  // MPICH: with p' the largest power of two <= p and r = p - p', ranks 2i < 2r hand their data to
  // 2i + 1, the p' others run halving-doubling on p' blocks, and the results go back.
  int pp = 1;
  while (pp * 2 <= p) pp *= 2;
  const int r = p - pp;
  const std::vector<ChunkId> chunks = all_chunks(c);
  std::vector<NodeId> group;
  st.begin();
  for (int i = 0; i < 2 * r; i += 2) {
    std::vector<TransferId> sent;
    for (ChunkId ch : chunks) { b.send(ch, c.ranks[i], c.ranks[i + 1], Op::Reduce); sent.push_back(b.first_hop()); }
    st.record(c.ranks[i], sent);
  }
  for (int i = 0; i < p; ++i)
    if (i >= 2 * r || i % 2 == 1) group.push_back(c.ranks[i]);
  const Blocks blocks = split(chunks, pp);
  rhd_reduce_scatter(b, group, blocks, st);
  rhd_all_gather(b, group, blocks, st);
  st.begin();
  for (int i = 0; i < 2 * r; i += 2) {
    std::vector<TransferId> deps = st.deps(c.ranks[i + 1]);
    for (ChunkId ch : chunks) b.send(ch, c.ranks[i + 1], c.ranks[i], Op::Copy, deps);
  }
}

void dbt(Builder& b, const Collective& c) {
  const int p = c.num_ranks();
  if (c.kind == CollectiveKind::AllReduce) {
    // Two complementary trees (complementary_positions): leaves of one are inner nodes of the
    // other. Each carries half the chunks.
    const std::vector<int> parent = binary_tree(p);
    const std::vector<ChunkId> chunks = all_chunks(c);
    const size_t half = (chunks.size() + 1) / 2;
    const std::vector<int> second = complementary_positions(parent);
    std::vector<NodeId> shifted(p);
    for (int i = 0; i < p; ++i) shifted[i] = c.ranks[second[i]];
    trees_all_reduce(b, {{c.ranks, parent, {chunks.begin(), chunks.begin() + static_cast<std::ptrdiff_t>(half)}, 0},
                         {shifted, parent, {chunks.begin() + static_cast<std::ptrdiff_t>(half), chunks.end()}, 1}});
    return;
  }
  Steps st{b};
  binomial(b, c.ranks, c.root, all_chunks(c), c.kind == CollectiveKind::Reduce, st);
}

// NCCL's tree All-Reduce: per channel, a double binary tree across servers whose nodes are the
// servers' head GPUs (channel c's head is GPU c of every server, so each channel crosses the
// network on its own NIC), and a chain from the head through the server's other GPUs. Half of a
// channel's chunks go up and down each of the two trees. On a topology without servers every NPU
// is a server of one, and the channels' trees are rotated.
void nccl_tree(Builder& b, const Topology& t, const Collective& c, int channels) {
  std::vector<std::vector<NodeId>> servers = topo::servers_of(t, c.ranks);
  if (servers.empty())
    for (NodeId v : c.ranks) servers.push_back({v});
  const int count = static_cast<int>(servers.size()), g = static_cast<int>(servers[0].size());
  if (channels == 0) channels = g;
  const std::vector<int> up = binary_tree(count);
  const std::vector<int> second = complementary_positions(up);
  const std::vector<ChunkId> chunks = all_chunks(c);
  const int n = static_cast<int>(chunks.size());
  std::vector<TreeJob> jobs;
  for (int ch = 0; ch < channels; ++ch) {
    const std::vector<ChunkId> mine(chunks.begin() + static_cast<std::ptrdiff_t>(static_cast<int64_t>(n) * ch / channels),
                                    chunks.begin() + static_cast<std::ptrdiff_t>(static_cast<int64_t>(n) * (ch + 1) / channels));
    if (mine.empty()) continue;
    const int head = ch % g;
    const int rotate = g == 1 ? 2 * ch : 0;  // flat: each channel's trees over a rotated order
    for (int tree = 0; tree < 2; ++tree) {
      // The first tree puts server i at position i, the second as complementary_positions does (leaves
      // of one are inner nodes of the other); the channel's servers are rotated by `rotate`.
      std::vector<NodeId> group;
      std::vector<int> parent;
      std::vector<int> head_at(count);  // group index of each tree position's head
      for (int pos = 0; pos < count; ++pos) {
        const auto& server = servers[((tree == 0 ? pos : second[pos]) + count - rotate % count) % count];
        head_at[pos] = static_cast<int>(group.size());
        for (int k = 0; k < g; ++k) {
          group.push_back(server[(head + k) % g]);
          parent.push_back(k == 0 ? -1 : static_cast<int>(group.size()) - 2);
        }
      }
      for (int pos = 0; pos < count; ++pos)
        if (up[pos] >= 0) parent[head_at[pos]] = head_at[up[pos]];
      const size_t half = (mine.size() + 1) / 2;
      const std::vector<ChunkId> part = tree == 0 ? std::vector<ChunkId>(mine.begin(), mine.begin() + static_cast<std::ptrdiff_t>(half))
                                                  : std::vector<ChunkId>(mine.begin() + static_cast<std::ptrdiff_t>(half), mine.end());
      if (!part.empty()) jobs.push_back({group, parent, part, 2 * ch + tree});
    }
  }
  trees_all_reduce(b, jobs);
}

// NCCL's NVLS All-Reduce: every rank reduces each chunk into a reduce-capable switch linked to all
// of them (the switch's accumulator starts empty), which sends every reduced chunk back to every
// rank.
void nvls(Builder& b, const Topology& t, const Collective& c) {
  NodeId hub = -1;
  std::vector<LinkId> up(c.num_ranks(), -1), down(c.num_ranks(), -1);
  for (NodeId s = t.num_npus(); s < t.num_nodes() && hub < 0; ++s) {
    if (!t.node(s).can_reduce) continue;
    bool all = true;
    for (int r = 0; r < c.num_ranks() && all; ++r) {
      up[r] = down[r] = -1;
      for (LinkId l : t.out_links(c.ranks[r]))
        if (t.link(l).dst == s && up[r] < 0) up[r] = l;
      for (LinkId l : t.in_links(c.ranks[r]))
        if (t.link(l).src == s && down[r] < 0) down[r] = l;
      all = up[r] >= 0 && down[r] >= 0;
    }
    if (all) hub = s;
  }
  if (hub < 0)
    throw NotApplicable("no reduce-capable switch is linked to every rank (mark an NVSwitch `reduce: true` in the "
                        "topology file, as NVLink SHARP switches are)");
  for (ChunkId ch = 0; ch < c.num_chunks(); ++ch) {
    std::vector<TransferId> reduced;
    for (int r = 0; r < c.num_ranks(); ++r)
      reduced.push_back(b.send_on(ch, c.ranks[r], hub, {up[r]}, Op::Reduce));
    for (int r = 0; r < c.num_ranks(); ++r) b.send_on(ch, hub, c.ranks[r], {down[r]}, Op::Copy, reduced);
  }
}

void bruck(Builder& b, const Collective& c) {
  const int p = c.num_ranks();
  const Blocks blocks = rank_blocks(c);
  Steps st{b};
  // After step i, member r holds blocks r .. r + 2^(i+1) - 1; at step i it sends its first
  // min(2^i, p - 2^i) blocks to r - 2^i.
  for (int dist = 1; dist < p; dist *= 2) {
    st.begin();
    const int count = std::min(dist, p - dist);
    std::map<NodeId, std::vector<TransferId>> sent;
    for (int r = 0; r < p; ++r) {
      std::vector<TransferId> deps = st.deps(c.ranks[r]);
      for (int j = 0; j < count; ++j)
        for (ChunkId ch : blocks[(r + j) % p])
          { b.send(ch, c.ranks[r], c.ranks[wrap(r - dist, p)], Op::Copy, deps); sent[c.ranks[r]].push_back(b.first_hop()); }
    }
    for (auto& [v, ids] : sent) st.record(v, ids);
  }
}

void hierarchical(Builder& b, const Topology& t, const Collective& c, std::vector<BaselineKind> per_dim) {
  // Coordinates of every NPU, first dimension fastest: from the topology's dimensions (NPU ids in
  // mixed radix), or from detected servers (position in the server, then the server).
  std::vector<int> levels = t.levels();
  std::vector<int64_t> slot_of(t.num_npus());  // NPU -> its mixed-radix index
  if (levels.size() >= 2) {
    for (NodeId v = 0; v < t.num_npus(); ++v) slot_of[v] = v;
  } else {
    const std::vector<std::vector<NodeId>> servers = topo::detect_servers(t);
    if (servers.empty())
      throw NotApplicable("the topology has no dimensions and no servers (NPUs joined by faster links than the "
                          "rest): generate it with ' x ' between specs, load an ASTRA-sim network.yml, or give a "
                          "topology file `dimensions`");
    levels = {static_cast<int>(servers[0].size()), static_cast<int>(servers.size())};
    for (size_t s = 0; s < servers.size(); ++s)
      for (size_t k = 0; k < servers[s].size(); ++k)
        slot_of[servers[s][k]] = static_cast<int64_t>(s * servers[s].size() + k);
  }
  if (c.num_ranks() != t.num_npus())
    throw NotApplicable("hierarchical runs over every NPU of the topology, not a subset");
  std::vector<NodeId> npu_at(t.num_npus());
  for (NodeId v = 0; v < t.num_npus(); ++v) npu_at[slot_of[v]] = v;
  const size_t dims = levels.size();
  if (per_dim.empty()) per_dim.assign(dims, BaselineKind::Ring);
  if (per_dim.size() == 1) per_dim.assign(dims, per_dim[0]);
  if (per_dim.size() != dims)
    throw Error(fmt::format("hierarchical names {} algorithms for {} dimensions", per_dim.size(), dims));
  // Coordinate d of the NPU at mixed-radix index x.
  auto coord = [&](int64_t x, size_t d) {
    for (size_t e = 0; e < d; ++e) x /= levels[e];
    return static_cast<int>(x % levels[d]);
  };
  std::vector<int64_t> stride(dims, 1);
  for (size_t d = 1; d < dims; ++d) stride[d] = stride[d - 1] * levels[d - 1];
  Steps st{b};
  // Phase over dimension d on every line: member j's block is the chunks whose owner agrees with
  // the line on dimensions before d and has coordinate j in d.
  auto phase = [&](size_t d, bool reduce) {
    st.begin();
    const int p = levels[d];
    if (per_dim[d] == BaselineKind::Rhd && !power_of_two(p))
      throw NotApplicable(fmt::format("dimension {} has {} NPUs: halving-doubling needs a power of two", d + 1, p));
    for (int64_t base = 0; base < t.num_npus(); ++base) {
      if (coord(base, d) != 0) continue;
      std::vector<NodeId> line(p);
      for (int j = 0; j < p; ++j) line[j] = npu_at[base + j * stride[d]];
      Blocks blocks(p);
      for (ChunkId ch = 0; ch < c.num_chunks(); ++ch) {
        const int64_t owner = slot_of[c.ranks[c.origin(ch)]];
        bool same = true;
        for (size_t e = 0; e < d && same; ++e) same = coord(owner, e) == coord(base, e);
        if (same) blocks[coord(owner, d)].push_back(ch);
      }
      // Each member starts the phase once everything of the previous phase has arrived at it.
      for (int j = 0; j < p; ++j) b.gate(line[j], st.deps(line[j]));
      switch (per_dim[d]) {
        case BaselineKind::Ring: {
          // The line's natural order is a ring on a Ring dimension; otherwise find one.
          std::vector<NodeId> order = ring_order(t, line);
          std::vector<int> pos(t.num_npus(), -1);
          for (int j = 0; j < p; ++j) pos[order[j]] = j;
          Blocks placed(p);
          for (int j = 0; j < p; ++j) placed[pos[line[j]]] = blocks[j];
          Steps inner{b};
          ring_steps(b, order, placed, 1, reduce, &inner);
          break;
        }
        case BaselineKind::Direct: direct_exchange(b, line, blocks, reduce); break;
        case BaselineKind::Rhd: {
          Steps inner{b};
          if (reduce) rhd_reduce_scatter(b, line, blocks, inner);
          else rhd_all_gather(b, line, blocks, inner);
          break;
        }
        default: break;
      }
      b.clear_gates();
    }
  };
  const bool rs = c.kind == CollectiveKind::ReduceScatter || c.kind == CollectiveKind::AllReduce;
  const bool ag = c.kind == CollectiveKind::AllGather || c.kind == CollectiveKind::AllReduce;
  if (rs)
    for (size_t d = 0; d < dims; ++d) phase(d, true);
  if (ag)
    for (size_t d = dims; d-- > 0;) phase(d, false);
}

}  // namespace

std::optional<RingPlan> ring_plan(const BaselineSpec& spec, const topo::Topology& t, const Collective& c,
                                  Bytes chunk_bytes, LinkModel model, Bandwidth reduce_bandwidth) {
  if (spec.kind != BaselineKind::Ring && spec.kind != BaselineKind::BidirRing) return std::nullopt;
  if (c.kind != CollectiveKind::AllGather && c.kind != CollectiveKind::ReduceScatter && c.kind != CollectiveKind::AllReduce)
    return std::nullopt;
  if (reduce_bandwidth < 0) throw Error(fmt::format("negative reduction bandwidth ({} B/s)", reduce_bandwidth));
  c.validate(t);
  if (chunk_bytes < 1) throw Error("chunk size must be at least 1 byte");
  return plan_ring(t, c, chunk_bytes, model, reduce_bandwidth, spec.kind == BaselineKind::BidirRing, spec.channels,
                   spec.name());
}

Algorithm make_baseline(const BaselineSpec& spec, const topo::Topology& t, const Collective& c, Bytes chunk_bytes,
                        LinkModel model, Bandwidth reduce_bandwidth, bool timed) {
  if (reduce_bandwidth < 0) throw Error(fmt::format("negative reduction bandwidth ({} B/s)", reduce_bandwidth));
  c.validate(t);
  if (chunk_bytes < 1) throw Error("chunk size must be at least 1 byte");
  if (!supports(spec.kind, c.kind))
    throw NotApplicable(fmt::format("{} has no {} algorithm", to_string(spec.kind), to_string(c.kind)));
  // All-to-Allv: ring and direct (pairwise) move each rank's blocks whatever their sizes; Bruck and
  // the per-dimension compositions assume equal blocks.
  if (c.uneven() && spec.kind != BaselineKind::Ring && spec.kind != BaselineKind::Direct)
    throw NotApplicable(fmt::format("{} has no all-to-allv (uneven) algorithm; ring and direct have", to_string(spec.kind)));
  // An All-Reduce in C chunks in all (fewer than one per rank, or not a multiple): the trees and
  // NVLS take any chunks; the others give each rank its block.
  if (c.all_reduce_chunks > 0 && spec.kind != BaselineKind::Dbt && spec.kind != BaselineKind::Tree &&
      spec.kind != BaselineKind::Nvls)
    throw NotApplicable(fmt::format("{} gives every rank a block of the all-reduce: it needs k chunks per NPU, not {} "
                                    "chunks in all",
                                    spec.name(), c.all_reduce_chunks));
  if (auto plan = ring_plan(spec, t, c, chunk_bytes, model, reduce_bandwidth)) {
    Algorithm a = plan->materialize(t);
    if (timed) time(t, a);
    return a;
  }
  Builder b(t, c, chunk_bytes, model, spec.name());
  switch (spec.kind) {
    case BaselineKind::Ring: ring(b, t, c, false, spec.channels); break;
    case BaselineKind::BidirRing: ring(b, t, c, true, spec.channels); break;
    case BaselineKind::Direct: direct(b, c); break;
    case BaselineKind::Rhd: rhd(b, c); break;
    case BaselineKind::Dbt: dbt(b, c); break;
    case BaselineKind::Tree: nccl_tree(b, t, c, spec.channels); break;
    case BaselineKind::Bruck: bruck(b, c); break;
    case BaselineKind::Nvls: nvls(b, t, c); break;
    case BaselineKind::Hierarchical: hierarchical(b, t, c, spec.per_dimension); break;
  }
  return b.finish(reduce_bandwidth, timed);
}

}  // namespace tenet::synth
