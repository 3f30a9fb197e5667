#include "synth/bounds/lower_bound.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <tuple>
#include <utility>

#include <boost/pending/disjoint_sets.hpp>

#include "synth/bounds/bound_memo_state.hpp"
#include "synth/bounds/group_bounds.hpp"
#include "topo/analysis.hpp"
#include "topo/bounds.hpp"
#include "topo/cut_words.hpp"

namespace tenet::synth {
namespace {

using detail::all_to_all_distance_bound;
using detail::flow_bound;
using detail::FlowTerm;
using detail::group_cut_bound;
using detail::island_widths;

// Past this many sources, farthest() samples them (kFarthestSamples, evenly spaced, and the one a
// sweep back from the farthest destination finds): a search per source grows as the square of
// the NPUs, a large share of a large cluster's synthesis. The farthest pair found is still a
// lower bound on the latency; on regular fabrics (every source equally far from its farthest
// destination) it is the exact one.
constexpr size_t kExactFarthestSources = 4096;
constexpr size_t kFarthestSamples = 64;

// Each link's per-step cost, in link order, where `counted` (else none): what the bound memo's keys
// add to the topology's fingerprint, which leaves the steps out.
std::vector<Time> link_steps(const topo::Topology& t, bool counted) {
  std::vector<Time> steps;
  if (counted)
    for (const topo::Link& l : t.links()) steps.push_back(l.step);
  return steps;
}

// The largest latency distance from any of `from` to any of `to` (through any nodes).
Time farthest_uncached(const topo::Topology& t, const std::vector<topo::NodeId>& from,
                       const std::vector<topo::NodeId>& to) {
  // Every NPU to every NPU: the diameter (sampled the same way past kExactFarthestSources), which
  // skips Dijkstra when latencies are uniform.
  if (static_cast<int>(from.size()) == t.num_npus() && static_cast<int>(to.size()) == t.num_npus())
    return topo::npu_diameter(t, static_cast<int>(kExactFarthestSources)).latency;
  Time worst = 0;
  topo::NodeId worst_to = to.front();
  auto from_source = [&](topo::NodeId s) {
    const std::vector<Time> d = topo::latency_distances(t, s);
    for (topo::NodeId v : to)
      if (d[v] > worst) worst = d[v], worst_to = v;
  };
  if (from.size() <= kExactFarthestSources) {
    for (topo::NodeId s : from) from_source(s);
    return worst;
  }
  for (size_t i = 0; i < kFarthestSamples; ++i)
    from_source(from[i * from.size() / kFarthestSamples]);
  // The sweep: the source farthest from the farthest destination found, searched too.
  const std::vector<Time> back = topo::latency_distances(topo::reversed(t), worst_to);
  topo::NodeId far = from.front();
  for (topo::NodeId s : from)
    if (back[s] > back[far]) far = s;
  from_source(far);
  return worst;
}

}  // namespace

BoundMemo::BoundMemo() : state_(std::make_unique<State>()) {}
BoundMemo::~BoundMemo() = default;

namespace {

// farthest_uncached, the last answer kept in `memo` (when given).
Time farthest(BoundMemo::State* memo, const topo::Topology& t,
              const std::vector<topo::NodeId>& from, const std::vector<topo::NodeId>& to) {
  if (!memo) return farthest_uncached(t, from, to);
  BoundMemo::State::Farthest& kept = memo->farthest;
  {
    std::lock_guard lock(memo->mutex);
    if (kept.latency >= 0 && kept.fingerprint == t.fingerprint() && kept.from == from &&
        kept.to == to)
      return kept.latency;
  }
  const Time d = farthest_uncached(t, from, to);
  std::lock_guard lock(memo->mutex);
  kept = {t.fingerprint(), from, to, d};
  return d;
}

// topo::allgather_cut_bound (`root` < 0) or topo::broadcast_cut_bound from `root` over `m`, on `t`
// or on its reverse, kept in `memo` (when given): the cut does not depend on the bytes, which a
// chunk-count search changes at every count.
topo::CutBound cut_bound(BoundMemo::State* memo, const topo::Topology& t, bool reversed,
                         const std::vector<topo::NodeId>& m, topo::NodeId root = -1,
                         bool large_root_side = false) {
  auto make = [&](const topo::Topology& on) {
    return root < 0 ? topo::allgather_cut_bound(on, m)
                    : topo::broadcast_cut_bound(on, root, m, large_root_side);
  };
  auto made = [&] { return reversed ? make(topo::reversed(t)) : make(t); };
  if (!memo) return made();
  BoundMemo::State::CutKey key{t.fingerprint(), root >= 0, reversed, large_root_side, root, m};
  {
    std::lock_guard lock(memo->mutex);
    if (auto it = memo->cuts.find(key); it != memo->cuts.end()) return it->second;
  }
  topo::CutBound cut = made();
  std::lock_guard lock(memo->mutex);
  if (memo->cuts.size() >= kBoundMemoEntries) memo->cuts.clear();
  return memo->cuts.try_emplace(std::move(key), std::move(cut)).first->second;
}

// Per node, whether it is in `set` (`complement`: whether it is not).
std::vector<char> flags(const topo::Topology& t, const std::vector<topo::NodeId>& set,
                        bool complement = false) {
  std::vector<char> in(t.num_nodes(), complement ? 1 : 0);
  for (topo::NodeId v : set) in[v] = complement ? 0 : 1;
  return in;
}

// The nodes not in `set`.
std::vector<topo::NodeId> complement(const topo::Topology& t,
                                     const std::vector<topo::NodeId>& set) {
  const std::vector<char> in = flags(t, set);
  std::vector<topo::NodeId> out;
  for (topo::NodeId v = 0; v < t.num_nodes(); ++v)
    if (!in[v]) out.push_back(v);
  return out;
}

// What a transfer pays per step at least (topo::Link::step; synth::route_cost charges a route
// the largest step of its links). With steps ascending s1 < s2 < ... < sL: any transfer pays at
// least s1; a chain of transfers from u to v pays at least the least s_j such that the links of
// step at most s_j join u and v (taken both ways: a looser join, so still a bound), since some
// transfer of the chain crosses a link of step s_j or more. Past kStepLevels distinct steps only
// s1 is used.
class StepNeed {
 public:
  StepNeed() = default;  // steps not charged: nothing
  explicit StepNeed(const topo::Topology& t) {
    for (const topo::Link& l : t.links()) levels_.push_back(l.step);
    std::sort(levels_.begin(), levels_.end());
    levels_.erase(std::unique(levels_.begin(), levels_.end()), levels_.end());
    if (levels_.size() > kStepLevels) levels_.erase(levels_.begin() + 1, levels_.end());
    for (size_t j = 0; j + 1 < levels_.size(); ++j) {
      boost::disjoint_sets_with_storage<> joined(t.num_nodes());
      for (const topo::Link& l : t.links())
        if (l.step <= levels_[j]) joined.union_set(l.src, l.dst);
      std::vector<int> component(t.num_nodes());
      for (topo::NodeId v = 0; v < t.num_nodes(); ++v)
        component[v] = static_cast<int>(joined.find_set(v));
      component_.push_back(std::move(component));
    }
  }
  // What every transfer pays.
  Time least() const { return levels_.empty() ? 0 : levels_.front(); }
  // The distinct steps it tells apart, ascending (with the topology, all it depends on).
  const std::vector<Time>& levels() const { return levels_; }
  // Whether some pair pays more than least().
  bool uneven() const { return !component_.empty(); }
  // What a chain of transfers from u to v pays.
  Time between(topo::NodeId u, topo::NodeId v) const {
    for (size_t j = 0; j < component_.size(); ++j)
      if (component_[j][u] == component_[j][v]) return levels_[j];
    return levels_.empty() ? 0 : levels_.back();
  }

 private:
  static constexpr size_t kStepLevels = 8;
  std::vector<Time> levels_;                 // the distinct steps, ascending
  std::vector<std::vector<int>> component_;  // per level but the last: each node's component
};

// The least step of the links from `inside` nodes to the others (0 when there are none): no byte
// crosses them before it (a transfer holds its share of its route for its step, then moves its
// bytes at its rate; every transfer crossing them starts at 0 or later and pays at least their
// least step). With the links' summed bandwidth C, B bytes across end no earlier than step + B/C.
Time least_step_out(const topo::Topology& t, const std::vector<char>& inside, bool steps) {
  if (!steps) return 0;
  std::optional<Time> least;
  for (const topo::Link& l : t.links())
    if (inside[l.src] && !inside[l.dst]) least = std::min(least.value_or(l.step), l.step);
  return least.value_or(0);
}

// The farthest pair from `from` to `to` (distinct nodes) counting what it pays per step, where
// `plain` is their farthest() latency: at least `plain` plus the least step, and for pairs that
// only links of larger steps join, their latency
// distance plus that step (StepNeed), searched from up to kSteppedSources of `from`, evenly spaced:
// each pair found is a bound, so a sample is too.
constexpr size_t kSteppedSources = 16;
Time farthest_paying_uncached(const topo::Topology& t, const StepNeed& need, Time plain,
                              const std::vector<topo::NodeId>& from,
                              const std::vector<topo::NodeId>& to) {
  Time worst = plain;
  const bool some_pair = from.size() > 1 || to.size() > 1 || from.front() != to.front();
  if (!some_pair || (need.least() == 0 && !need.uneven())) return worst;
  worst += need.least();
  if (!need.uneven()) return worst;
  const size_t sources = std::min(from.size(), kSteppedSources);
  for (size_t i = 0; i < sources; ++i) {
    const topo::NodeId s = from[i * from.size() / sources];
    const std::vector<Time> d = topo::latency_distances(t, s);
    for (topo::NodeId v : to)
      if (v != s && d[v] >= 0) worst = std::max(worst, d[v] + need.between(s, v));
  }
  return worst;
}

// farthest_paying_uncached, the last answer kept in `memo` (when given): a chunk-count search asks
// at every count, and the searches from its sources do not depend on the bytes.
Time farthest_paying(BoundMemo::State* memo, const topo::Topology& t, const StepNeed& need,
                     Time plain, const std::vector<topo::NodeId>& from,
                     const std::vector<topo::NodeId>& to) {
  if (!memo) return farthest_paying_uncached(t, need, plain, from, to);
  std::vector<Time> steps = link_steps(t, need.uneven());  // (under one step, the levels say all)
  BoundMemo::State::Paying& kept = memo->paying;
  {
    std::lock_guard lock(memo->mutex);
    if (kept.latency >= 0 && kept.fingerprint == t.fingerprint() && kept.plain == plain &&
        kept.levels == need.levels() && kept.link_steps == steps && kept.from == from &&
        kept.to == to)
      return kept.latency;
  }
  const Time d = farthest_paying_uncached(t, need, plain, from, to);
  std::lock_guard lock(memo->mutex);
  kept = {t.fingerprint(), need.levels(), std::move(steps), from, to, plain, d};
  return d;
}

// A summed bandwidth, clamped to what a Bandwidth holds, in words.
std::string format_sum(Int128 bw) {
  return format_bandwidth(
      static_cast<Bandwidth>(std::min<Int128>(bw, std::numeric_limits<Bandwidth>::max())));
}

// Where the islands an arrivals bound counts take in unequal amounts, which take in what, in the
// topology's names, the most common amount last: " (350 GB/s into server0/npu0; 400 GB/s into each
// of the other 15)". Up to kNamedIslands named per amount; an island of several nodes by its first
// and how many more. Empty where they all take in the same.
std::string unequal_intakes(const topo::Topology& t, boost::disjoint_sets_with_storage<>& islands,
                            const std::vector<char>& endpoint, const std::vector<Int128>& in) {
  constexpr size_t kNamedIslands = 3;
  const int n = t.num_nodes();
  std::vector<std::vector<topo::NodeId>> nodes(n);  // per island: its nodes, in id order
  for (topo::NodeId v = 0; v < n; ++v) nodes[islands.find_set(v)].push_back(v);
  std::map<Int128, std::vector<int>> by_intake;  // per amount taken in: the islands
  for (int i = 0; i < n; ++i)
    if (endpoint[i] && in[i] > 0) by_intake[in[i]].push_back(i);
  if (by_intake.size() < 2) return "";
  auto most = std::max_element(
      by_intake.begin(), by_intake.end(),
      [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
  auto name = [&](int i) {
    const std::string first = t.node(nodes[i].front()).name;
    return nodes[i].size() == 1 ? first : fmt::format("{} and {} more", first, nodes[i].size() - 1);
  };
  std::vector<std::string> parts;
  for (const auto& [bw, ids] : by_intake) {
    if (bw == most->first) continue;
    std::vector<std::string> names;
    for (size_t j = 0; j < std::min(ids.size(), kNamedIslands); ++j) names.push_back(name(ids[j]));
    if (ids.size() > kNamedIslands)
      names.push_back(fmt::format("{} more", ids.size() - kNamedIslands));
    parts.push_back(fmt::format("{} into {}{}", format_sum(bw), ids.size() > 1 ? "each of " : "",
                                fmt::join(names, ", ")));
  }
  parts.push_back(
      fmt::format("{} into each of the other {}", format_sum(most->first), most->second.size()));
  return fmt::format(" ({})", fmt::join(parts, "; "));
}

// The latency past a cut. A cut bound's time, B bytes over the C bytes per second of the links
// leaving a set S, is the earliest the last of them can end crossing; its data still has to travel
// on. Fix a destination v outside S that needs all B bytes: Broadcast and All-Gather, any member
// outside (the data of the root, or of S's members); Reduce, the root (the contributions of a
// member inside S); Reduce-Scatter, the destinations outside S (one member inside S contributes to
// each of their chunks). For each chunk, the last transfer that carries it (or that member's share
// of it) across the cut towards v is a transfer of its own (a transfer moves one chunk). Together
// they move B bytes over links of C bytes per second from time 0, so the last of them ends its
// crossing no earlier than B / C; its data reaches v no earlier than d(S, v) later, the latency
// distance from the nearest node of S: a route arrives its whole latency after its last byte
// leaves (hold: the same, the links held longer), and an NPU that relays sends on after the
// arrival. So T >= B / C + d(S, v). Broadcast, All-Gather and Reduce take the farthest such v;
// Reduce-Scatter the nearest destination outside S (the last chunk to cross can be its).
// `inside` flags S's nodes; 0 when no target is outside S or reachable from it.
Time past_cut(const topo::Topology& t, const std::vector<char>& inside,
              std::span<const topo::NodeId> targets, bool nearest) {
  std::vector<topo::NodeId> set;
  for (topo::NodeId v = 0; v < t.num_nodes(); ++v)
    if (inside[v]) set.push_back(v);
  if (set.empty()) return 0;
  const std::vector<Time> d = topo::latency_distances_from(t, set);
  std::optional<Time> best;
  for (topo::NodeId v : targets)
    if (!inside[v] && d[v] >= 0)
      best = !best ? d[v] : nearest ? std::min(*best, d[v]) : std::max(*best, d[v]);
  return best.value_or(0);
}
// All-Reduce of `buffer` bytes. Every rank ends with every byte's sum of all P contributions:
// - Cuts: for a set X holding some ranks but not all, X's ranks need the other side's
//   contributions to every byte and the other side X's, so `buffer` bytes cross the cut each way.
//   The narrowest such cut is the narrowest from or to any one rank r0 (a cut either holds r0 or
//   not): the Broadcast cut bound from r0 and the Reduce cut bound to r0 (topo/bounds.hpp) of the
//   whole buffer. An All-Reduce is at least a Broadcast and a Reduce of it.
// - Arrivals: group the nodes into islands and count, for each byte, the messages that enter an
//   island. Everyone knowing the sum of contributions held in g islands takes at least 2(g - 1)
//   of them (one-way gossip: at least g - 1 until some island first holds the sum, then one more
//   into each other island that holds a rank); every message ends at a transfer's endpoint (an
//   NPU, or a switch that reduces), so islands without one are never entered and left out. The
//   messages share the islands' incoming links: T >= 2(g - 1) buffer / their summed ingress. The
//   islands tried: each node alone, and the components of the links at least b wide for each
//   width b (servers joined by NVLink, apart across their NICs).
// Neither assumes a Reduce-Scatter then an All-Gather: trees of reductions (a line's reduce to
// the middle and back) and in-network reduction are bounded too.
// With per-step costs, each term adds the least step of the links its bytes cross (least_step_out):
// those leaving the cut's set, or entering the islands.
struct Term {
  Time bandwidth = 0, step = 0;
  std::string label;
  std::vector<topo::NodeId> cut;  // the cut's set (its out-links carry the bytes), if a cut
  std::string limit;              // else what limits it, in words (LowerBound::limit)
};
// The islands all_reduce_bandwidth counts (see there), per width of the links joining them: how
// many hold a rank, their summed ingress into NPUs and reducing switches, the least step of those
// links (where `steps`) and the limit in words. They do not depend on the bytes.
std::vector<BoundMemo::State::Islands> arrival_islands_uncached(const topo::Topology& t,
                                                                const std::vector<topo::NodeId>& m,
                                                                bool steps) {
  const int n = t.num_nodes();
  std::vector<char> member(n, 0);
  for (topo::NodeId v : m) member[v] = 1;
  // A switch that does not reduce and links to one node alone (a rail's leaf seen from one server)
  // only ever returns that node's own bytes, unless the node routes: its links into the node
  // carry no message (a transfer's ends differ, and only routers pass traffic through).
  std::vector<char> dead_end(t.num_links(), 0);
  for (topo::NodeId s = 0; s < n; ++s) {
    if (t.node(s).kind == topo::NodeKind::Npu || t.node(s).can_reduce) continue;
    std::set<topo::NodeId> neighbours;
    for (topo::LinkId l : t.out_links(s)) neighbours.insert(t.link(l).dst);
    for (topo::LinkId l : t.in_links(s)) neighbours.insert(t.link(l).src);
    if (neighbours.size() == 1 && !t.node(*neighbours.begin()).router)
      for (topo::LinkId l : t.out_links(s)) dead_end[l] = 1;
  }
  std::vector<Bandwidth> widths = island_widths(t);
  widths.push_back(std::numeric_limits<Bandwidth>::max());  // no link joins: each node alone
  std::vector<BoundMemo::State::Islands> out;
  for (size_t w = 1; w < widths.size(); ++w) {  // the narrowest width joins everything
    boost::disjoint_sets_with_storage<> islands(n);
    for (const topo::Link& l : t.links())
      if (l.bandwidth >= widths[w]) islands.union_set(l.src, l.dst);
    std::vector<char> holds_rank(n, 0), endpoint(n, 0);
    std::vector<Int128> in(n, 0);
    for (topo::NodeId v = 0; v < n; ++v) {
      const auto i = islands.find_set(v);
      holds_rank[i] |= member[v];
      endpoint[i] |= t.node(v).kind == topo::NodeKind::Npu || t.node(v).can_reduce;
    }
    std::optional<Time> least_step;  // of the links counted
    for (topo::LinkId id = 0; id < t.num_links(); ++id)
      if (const topo::Link& l = t.link(id);
          !dead_end[id] && islands.find_set(l.src) != islands.find_set(l.dst)) {
        in[islands.find_set(l.dst)] += l.bandwidth;
        if (endpoint[islands.find_set(l.dst)])
          least_step = std::min(least_step.value_or(l.step), l.step);
      }
    int64_t g = 0;
    Int128 ingress = 0;
    for (int i = 0; i < n; ++i) {
      g += holds_rank[i];
      if (endpoint[i]) ingress += in[i];
    }
    if (g < 2 || ingress == 0) continue;
    const std::string into = format_sum(ingress);
    out.push_back(
        {g, ingress, steps ? least_step.value_or(0) : 0,
         (w + 1 < widths.size()
              ? fmt::format("{} islands of links of {} or more hold the ranks: every byte enters "
                            "them 2 x ({} - 1) times, through {} in all into their NPUs and "
                            "reducing switches",
                            g, format_bandwidth(widths[w]), g, into)
              : fmt::format("{} nodes hold the ranks: every byte enters them 2 x ({} - 1) times, "
                            "through {} in all into the NPUs and reducing switches",
                            g, g, into)) +
             unequal_intakes(t, islands, endpoint, in)});
  }
  return out;
}

// arrival_islands_uncached, kept in `memo` (when given).
std::vector<BoundMemo::State::Islands> arrival_islands(BoundMemo::State* memo,
                                                       const topo::Topology& t,
                                                       const std::vector<topo::NodeId>& m,
                                                       bool steps) {
  if (!memo) return arrival_islands_uncached(t, m, steps);
  BoundMemo::State::ArrivalsKey key{t.fingerprint(), link_steps(t, steps), m};
  {
    std::lock_guard lock(memo->mutex);
    if (auto it = memo->arrivals.find(key); it != memo->arrivals.end()) return it->second;
  }
  std::vector<BoundMemo::State::Islands> islands = arrival_islands_uncached(t, m, steps);
  std::lock_guard lock(memo->mutex);
  if (memo->arrivals.size() >= kBoundMemoEntries) memo->arrivals.clear();
  return memo->arrivals.try_emplace(std::move(key), std::move(islands)).first->second;
}

Term all_reduce_bandwidth(BoundMemo::State* memo, const topo::Topology& t,
                          const std::vector<topo::NodeId>& m, Bytes buffer, bool steps) {
  const topo::NodeId r0 = m.front();
  const topo::CutBound from_cut = cut_bound(memo, t, false, m, r0);
  const topo::CutBound to_cut = cut_bound(memo, t, true, m, r0);
  Term cut{from_cut.time(buffer), 0, "cut bound (every byte both ways)", from_cut.set, {}};
  cut.step = least_step_out(t, flags(t, from_cut.set), steps);
  // The reversed cut's links lead into its set.
  if (const Time into = to_cut.time(buffer),
      into_step = least_step_out(t, flags(t, to_cut.set, true), steps);
      into + into_step > cut.bandwidth + cut.step) {
    cut.bandwidth = into, cut.step = into_step;
    cut.cut = complement(t, to_cut.set);
  }
  Term arrivals{0, 0, "arrivals bound", {}, {}};
  for (const BoundMemo::State::Islands& i : arrival_islands(memo, t, m, steps)) {
    const Int128 bytes = Int128{2} * (i.holding - 1) * buffer;
    const Time time =
        static_cast<Time>(std::min<Int128>((bytes * kPicosPerSecond + i.ingress - 1) / i.ingress,
                                           std::numeric_limits<Time>::max() / 2));
    if (time + i.step > arrivals.bandwidth + arrivals.step) {
      arrivals.bandwidth = time, arrivals.step = i.step;
      arrivals.limit = i.limit;
    }
  }
  return arrivals.bandwidth + arrivals.step > cut.bandwidth + cut.step ? arrivals : cut;
}

}  // namespace

namespace {

// What the farthest pair's latency is followed by (LowerBound::latency_bytes), kept in `b` and
// returned: `bytes` that depend on the pair's one end must enter the other after that latency.
// Say u and v are the pair, d their latency, and v needs `bytes` that each depend on u's data (an
// All-Reduce's whole result; a rank's share in an All-Gather or a Reduce-Scatter; the root's
// buffer in a Broadcast, every member's in a Reduce; a member's share in a Gather or a Scatter).
// None of them can leave a node before u's data has reached it, so none is on a link into v
// before d, and the links into v carry them at most at their summed bandwidth: the last enters at
// d + bytes over it at least. Over the nodes that may be v (`to`), the widest of those sums: a
// bound whichever of them is v.
Time bytes_after_latency(const topo::Topology& t, const std::vector<topo::NodeId>& to, Bytes bytes,
                         LowerBound& b) {
  Bandwidth widest = 0;
  for (topo::NodeId v : to) widest = std::max(widest, topo::ingress_bandwidth(t, v));
  b.latency_bytes = widest > 0 ? transfer_time(bytes, widest) : 0;
  return b.latency_bytes;
}

// The All-to-Allv's terms of `b` (k_bytes: a unit): each rank's own links, the farthest pair that
// exchanges anything (`far`: its latency, paying its steps), and the flow bound.
template <typename Far>
void uneven_terms(BoundMemo::State* memo, const topo::Topology& t, const Collective& c,
                  Bytes k_bytes, Far&& far, LowerBound& b) {
  const int p = c.num_ranks();
  const std::vector<topo::NodeId>& m = c.ranks;
  for (int r = 0; r < p; ++r) {
    Int128 out = 0, in = 0;
    for (int d = 0; d < p; ++d) {
      out += c.pair_units[static_cast<size_t>(r) * p + d];
      in += c.pair_units[static_cast<size_t>(d) * p + r];
    }
    const Bandwidth bin = topo::ingress_bandwidth(t, m[r]), bout = topo::egress_bandwidth(t, m[r]);
    auto bytes = [&](Int128 units) {
      return static_cast<Bytes>(std::min<Int128>(units * k_bytes, Int128{1} << 62));
    };
    if (in > 0) b.bandwidth = std::max(b.bandwidth, transfer_time(bytes(in), bin));
    if (out > 0) b.bandwidth = std::max(b.bandwidth, transfer_time(bytes(out), bout));
  }
  b.label = "ingress/egress bound";
  for (int r = 0; r < p; ++r) {  // the farthest pair that exchanges anything
    std::vector<topo::NodeId> to;
    for (int d = 0; d < p; ++d)
      if (c.pair_units[static_cast<size_t>(r) * p + d] > 0) to.push_back(m[d]);
    if (!to.empty()) b.latency = std::max(b.latency, far({m[r]}, to));
  }
  if (FlowTerm flow = flow_bound(memo, t, c, k_bytes); flow.time > b.bandwidth) {
    b.bandwidth = flow.time;
    b.label = std::move(flow.label);
    b.limit = std::move(flow.limit);
  }
}

// The terms of `b` for the collectives without a cut of their own (All-to-All, Gather, Scatter):
// the bytes each member must receive and send over its own links, path lengths, the group cut and
// the flow bound; `far` as for uneven_terms.
template <typename Far>
void member_terms(BoundMemo::State* memo, const topo::Topology& t, const Collective& c,
                  Bytes k_bytes, Far&& far, LowerBound& b) {
  const int p = c.num_ranks();
  const std::vector<topo::NodeId>& m = c.ranks;
  const std::vector<topo::NodeId> root{m[c.root]};
  // Bytes each member must receive and send.
  auto need = [&](int r, bool receive) -> Bytes {
    const bool is_root = r == c.root;
    switch (c.kind) {
      case CollectiveKind::Gather:
        return receive ? (is_root ? (p - 1) * k_bytes : 0) : (is_root ? 0 : k_bytes);
      case CollectiveKind::Scatter:
        return receive ? (is_root ? 0 : k_bytes) : (is_root ? (p - 1) * k_bytes : 0);
      default:
        return (p - 1) * k_bytes;  // All-to-All, both ways
    }
  };
  for (int r = 0; r < p; ++r) {
    Bandwidth in = topo::ingress_bandwidth(t, m[r]), out = topo::egress_bandwidth(t, m[r]);
    if (need(r, true) > 0) b.bandwidth = std::max(b.bandwidth, transfer_time(need(r, true), in));
    if (need(r, false) > 0) b.bandwidth = std::max(b.bandwidth, transfer_time(need(r, false), out));
  }
  b.label = "ingress/egress bound";
  if (c.kind == CollectiveKind::Scatter) {
    b.latency = far(root, m) + bytes_after_latency(t, m, k_bytes, b);
  } else if (c.kind == CollectiveKind::Gather) {
    b.latency = far(m, root) + bytes_after_latency(t, root, k_bytes, b);
  } else {
    b.latency = far(m, m);
    // Path lengths: on multi-hop topologies far above what the NPUs' own links allow.
    const auto [distance, label] = all_to_all_distance_bound(t, m, k_bytes);
    if (distance > b.bandwidth) {
      b.bandwidth = distance;
      b.label = label;
    }
  }
  if (const Time cut = group_cut_bound(t, c, k_bytes); cut > b.bandwidth) {
    b.bandwidth = cut;
    b.label = "group cut bound";
  }
  // Every bound above is the flow LP's dual at some link weights; the LP's own (or the best
  // multiplicative weights find) is at least as high where it is solved exactly.
  if (FlowTerm flow = flow_bound(memo, t, c, k_bytes); flow.time > b.bandwidth) {
    b.bandwidth = flow.time;
    b.label = std::move(flow.label);
    b.limit = std::move(flow.limit);
  }
}

LowerBound compute(BoundMemo::State* memo, const topo::Topology& t, const Collective& c,
                   Bytes chunk_bytes, bool steps) {
  LowerBound b;
  const StepNeed need = steps ? StepNeed(t) : StepNeed();
  // The farthest pair's latency, and the same paying its steps (LowerBound::latency).
  Time plain_latency = 0;
  auto far = [&](const std::vector<topo::NodeId>& from, const std::vector<topo::NodeId>& to) {
    const Time plain = farthest(memo, t, from, to);
    plain_latency = std::max(plain_latency, plain);
    return farthest_paying(memo, t, need, plain, from, to);
  };
  const int p = c.num_ranks();
  const Bytes k_bytes = static_cast<Bytes>(c.chunks_per_npu) * chunk_bytes;  // one rank's share
  const std::vector<topo::NodeId>& m = c.ranks;
  const std::vector<topo::NodeId> root{m[c.root]};
  switch (c.kind) {
    case CollectiveKind::AllGather: {
      const topo::CutBound cut = cut_bound(memo, t, false, m);
      b.bandwidth = cut.time(p * k_bytes);
      b.step = least_step_out(t, flags(t, cut.set), steps);
      b.limit = topo::describe_cut(t, cut.set);
      b.past_the_cut = true;
      b.cut_latency = past_cut(t, flags(t, cut.set), m, false);
      b.latency = far(m, m) + bytes_after_latency(t, m, k_bytes, b);
      b.label = "cut bound";
      break;
    }
    case CollectiveKind::ReduceScatter: {  // the cut around the complement of the reversed bound's
                                           // set
      const topo::CutBound cut = cut_bound(memo, t, true, m);
      b.bandwidth = cut.time(p * k_bytes);
      b.step = least_step_out(t, flags(t, cut.set, true), steps);
      b.limit = topo::describe_cut(t, complement(t, cut.set));
      b.past_the_cut = true;
      b.cut_latency = past_cut(t, flags(t, cut.set, true), m, true);
      b.latency = far(m, m) + bytes_after_latency(t, m, k_bytes, b);
      b.label = "cut bound (reversed)";
      break;
    }
    case CollectiveKind::AllReduce: {
      const Bytes buffer =
          static_cast<Bytes>(c.num_chunks()) * chunk_bytes;  // P*k chunks, or C in all
      Term term = all_reduce_bandwidth(memo, t, m, buffer, steps);
      b.bandwidth = term.bandwidth, b.step = term.step, b.label = std::move(term.label);
      b.limit = term.cut.empty() ? std::move(term.limit) : topo::describe_cut(t, term.cut);
      // What the synthesizer's search thresholds were tuned against (coarse, below): the
      // Reduce-Scatter plus All-Gather figure, a bound on that family of algorithms only.
      b.steering =
          cut_bound(memo, t, true, m).time(buffer) + cut_bound(memo, t, false, m).time(buffer);
      b.latency = far(m, m) + bytes_after_latency(t, m, buffer, b);
      break;
    }
    case CollectiveKind::Broadcast: {
      const topo::CutBound cut = cut_bound(memo, t, false, m, root.front());
      b.bandwidth = cut.time(k_bytes);
      b.step = least_step_out(t, flags(t, cut.set), steps);
      b.limit = topo::describe_cut(t, cut.set);
      b.latency = far(root, m) + bytes_after_latency(t, m, k_bytes, b);
      b.past_the_cut = true;
      b.cut_latency = past_cut(t, flags(t, cut.set), m, false);
      // The root alone is a cut too; where it is as narrow, the farthest member is past it (its
      // latency: the step was paid before the last byte crossed).
      if (topo::egress_bandwidth(t, root.front()) == cut.out_bandwidth)
        b.cut_latency = std::max(b.cut_latency, plain_latency);
      b.label = "cut bound (from the root)";
      break;
    }
    case CollectiveKind::Reduce: {  // the cut around the complement of the reversed bound's set
      const topo::CutBound cut =
          cut_bound(memo, t, true, m, root.front(), /*large_root_side=*/true);
      b.bandwidth = cut.time(k_bytes);
      b.step = least_step_out(t, flags(t, cut.set, true), steps);
      b.limit = topo::describe_cut(t, complement(t, cut.set));
      b.latency = far(m, root) + bytes_after_latency(t, root, k_bytes, b);
      b.past_the_cut = true;
      b.cut_latency = past_cut(t, flags(t, cut.set, true), root, false);
      // Each member alone is a cut too; where one is as narrow, its way to the root is past it.
      const std::vector<Time> to_root = topo::latency_distances_from(t, root, /*reversed=*/true);
      for (topo::NodeId v : m)
        if (v != root.front() && to_root[v] >= 0 &&
            topo::egress_bandwidth(t, v) == cut.out_bandwidth)
          b.cut_latency = std::max(b.cut_latency, to_root[v]);
      b.label = "cut bound (to the root)";
      break;
    }
    case CollectiveKind::AllToAll:
      if (c.uneven()) {
        uneven_terms(memo, t, c, k_bytes, far, b);
        break;
      }
      [[fallthrough]];
    default:
      member_terms(memo, t, c, k_bytes, far, b);
  }
  // The bounds without a cut of their own (ingress/egress, distance, group, flow) bound every
  // link's bytes by its bandwidth over the time after its own step: the least step anywhere.
  if (c.kind != CollectiveKind::AllGather && c.kind != CollectiveKind::ReduceScatter &&
      c.kind != CollectiveKind::AllReduce && c.kind != CollectiveKind::Broadcast &&
      c.kind != CollectiveKind::Reduce)
    b.step = need.least();
  // Every other bound: the last byte still crosses a link, at least the cheapest.
  Time cheapest = std::numeric_limits<Time>::max();
  for (const topo::Link& l : t.links()) cheapest = std::min(cheapest, l.latency);
  if (t.num_links() == 0) cheapest = 0;
  b.cut_latency = std::max(b.cut_latency, cheapest);
  b.total = std::max(b.bandwidth + b.step + b.cut_latency, b.latency);
  b.coarse = std::max((b.steering > 0 ? b.steering : b.bandwidth) + cheapest, plain_latency);
  return b;
}

}  // namespace

LowerBound lower_bound(const topo::Topology& t, const Collective& c, Bytes chunk_bytes,
                       BoundMemo* memo) {
  return lower_bound(t, c, chunk_bytes, t.charges_steps(), memo);
}

namespace {

LowerBound bound_as_described(const topo::Topology& t, const Collective& c, Bytes chunk_bytes,
                              bool steps, BoundMemo* memo) {
  c.validate(t);
  if (!memo) return compute(nullptr, t, c, chunk_bytes, steps);
  BoundMemo::State& state = memo->state();
  BoundMemo::State::Last& last = state.last;
  const uint64_t fingerprint = t.fingerprint();
  std::vector<Time> charged = link_steps(t, steps);
  {
    std::lock_guard lock(state.mutex);
    if (last.chunk_bytes == chunk_bytes && last.fingerprint == fingerprint && last.steps == steps &&
        last.link_steps == charged && last.collective.kind == c.kind &&
        last.collective.root == c.root && last.collective.chunks_per_npu == c.chunks_per_npu &&
        last.collective.all_reduce_chunks == c.all_reduce_chunks &&
        last.collective.ranks == c.ranks && last.collective.pair_units == c.pair_units)
      return last.bound;
  }
  LowerBound b = compute(&state, t, c, chunk_bytes, steps);
  std::lock_guard lock(state.mutex);
  last = {fingerprint, steps, std::move(charged), c, chunk_bytes, b};
  return b;
}

}  // namespace

LowerBound lower_bound(const topo::Topology& t, const Collective& c, Bytes chunk_bytes, bool steps,
                       BoundMemo* memo) {
  LowerBound least = bound_as_described(t, c, chunk_bytes, steps, memo);
  // Where algorithms may run protocols (topo::Protocol), each one runs the links as described or
  // under one of them: the least of those bounds holds for all.
  if (steps && !t.applied())
    for (const topo::Protocol& p : t.protocols()) {
      LowerBound b = bound_as_described(t.under(p), c, chunk_bytes, steps, memo);
      if (b.total < least.total) {
        least = std::move(b);
        least.protocol = p.name;
      }
    }
  return least;
}

std::optional<HalvesInTurn> halves_in_turn_bound(const topo::Topology& t, const Collective& c,
                                                 Bytes chunk_bytes, bool steps, BoundMemo* memo) {
  if (c.kind != CollectiveKind::AllReduce || c.all_reduce_chunks > 0) return std::nullopt;
  Collective half = c;
  half.kind = CollectiveKind::ReduceScatter;
  LowerBound reduce_scatter = lower_bound(t, half, chunk_bytes, steps, memo);
  half.kind = CollectiveKind::AllGather;
  return HalvesInTurn{std::move(reduce_scatter), lower_bound(t, half, chunk_bytes, steps, memo)};
}

bool HalvesInTurn::above(const LowerBound& bound) const {
  constexpr double kAbove = 1.001;
  return static_cast<double>(reduce_scatter.bandwidth + all_gather.bandwidth) >
         kAbove * static_cast<double>(bound.bandwidth);
}

std::string describe(const HalvesInTurn& h) {
  return fmt::format("{} ({}) + {} ({})", format_time(h.reduce_scatter.total),
                     describe(h.reduce_scatter), format_time(h.all_gather.total),
                     describe(h.all_gather));
}

std::string describe_limit(const HalvesInTurn& h) {
  const std::string& rs = h.reduce_scatter.limit;
  const std::string& ag = h.all_gather.limit;
  if (rs.empty() && ag.empty()) return "";
  if (rs == ag) return fmt::format("both halves: {}", rs);
  return fmt::format("Reduce-Scatter: {}; All-Gather: {}", rs.empty() ? "-" : rs,
                     ag.empty() ? "-" : ag);
}

std::string describe(const LowerBound& b) {
  const std::string terms =
      fmt::format("{} {}{} + {} latency{}", b.label, format_time(b.bandwidth),
                  b.step > 0 ? fmt::format(" + {} step", format_time(b.step)) : std::string(),
                  format_time(b.cut_latency), b.past_the_cut ? " past the cut" : "");
  const std::string under = b.protocol.empty() ? "" : fmt::format(" (in {})", b.protocol);
  if (b.total == b.bandwidth + b.step + b.cut_latency) return terms + under;
  const std::string bytes = b.latency_bytes > 0
                                ? fmt::format(" + {} for what depends on it to enter an NPU",
                                              format_time(b.latency_bytes))
                                : std::string();
  return fmt::format("latency{} of the farthest pair that must communicate{}{}; {} is less",
                     b.step > 0 ? " and steps" : "", bytes, under, terms);
}

}  // namespace tenet::synth
