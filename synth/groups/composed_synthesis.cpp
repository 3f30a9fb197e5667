#include "synth/groups/composed_synthesis.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "synth/baselines/baselines.hpp"
#include "synth/cost/timing.hpp"
#include "synth/groups/composed.hpp"
#include "synth/groups/group_map.hpp"
#include "synth/tuning.hpp"

namespace tenet::synth::detail {
namespace {

// A rail's All-Reduce in a composition per level (synth/groups/composed.hpp), and how to make it
// over another rail.
struct RailLevel {
  Algorithm first;
  std::function<Algorithm(const Collective&)> make;
};

// The ways a rail's All-Reduce of k chunks may go: the trees (dbt, tree) on the k chunks in all,
// made in the rail's part of the cluster (its NPUs, their NVSwitches, its rail switch: the routes
// the rail uses); and, where the k chunks split evenly among the rail's ranks, flat synthesis on
// one chunk per rank (method auto, baselines included), repeated.
std::vector<RailLevel> rail_levels(const topo::Topology& t, const Collective& rail, int k,
                                   Bytes chunk_bytes, const SynthOptions& o,
                                   const SynthOptions& inner) {
  std::vector<RailLevel> out;
  const int p = rail.num_ranks();
  if (k % p == 0) {
    auto make = [&t, chunk_bytes, inner](const Collective& lc) {
      return synthesize(t, lc, chunk_bytes, inner);
    };
    Collective flat = rail;
    flat.chunks_per_npu = 1;
    // (Not one whose ranks send their inputs, oneshot's: composes_across.)
    if (Algorithm a = make(flat); composes_across(a)) out.push_back({std::move(a), make});
  }
  for (BaselineKind b : {BaselineKind::Dbt, BaselineKind::Tree}) {
    auto try_make = [&t, chunk_bytes, spec = BaselineSpec{b, {}}, model = o.link_model,
                     reduce = o.reduce_bandwidth](const Collective& lc) -> Made<Algorithm> {
      const std::optional<GroupPart> part = group_part(t, lc);
      Made<Algorithm> a =
          part ? try_baseline(spec, part->topology, part->collective, chunk_bytes, model, reduce)
               : try_baseline(spec, t, lc, chunk_bytes, model, reduce);
      Algorithm* made_here = made(a);
      if (!made_here) return a;
      if (part) *made_here = part->lift(std::move(*made_here), t, lc.ranks);
      made_here->method = "baseline " + spec.name();
      made_here->provenance = Provenance::of_baseline(spec.name());
      return a;
    };
    // Made again for the other rails (a renaming that fails): does not apply there either, where it
    // did not here, only by a fault of the renaming; synthesize_composed's boundary says so.
    auto make = [try_make](const Collective& lc) {
      Made<Algorithm> a = try_make(lc);
      if (const NotMade* why = std::get_if<NotMade>(&a)) throw NotApplicable(why->why);
      return std::move(std::get<Algorithm>(a));
    };
    Collective trees = rail;
    trees.all_reduce_chunks = k;
    Made<Algorithm> first = try_make(trees);
    if (Algorithm* a = made(first)) out.push_back({std::move(*a), make});
  }
  return out;
}

}  // namespace

// The servers `c` composes over (composed_servers), or why there are none.
Made<std::vector<std::vector<topo::NodeId>>> servers_to_compose(const topo::Topology& t,
                                                                const Collective& c,
                                                                Bandwidth* joined) {
  if (auto servers = composed_servers(t, c, joined)) return std::move(*servers);
  return NotMade{c.all_reduce_chunks > 0
                     ? fmt::format("an all-reduce in {} chunks in all is made per level on a "
                                   "cluster of servers (method "
                                   "composed), or by the dbt, tree and nvls baselines",
                                   c.all_reduce_chunks)
                     : std::string("method composed makes an all-reduce over every NPU of two or "
                                   "more servers (NPUs joined by "
                                   "their fastest links)")};
}

// `c` composed per level (SynthMethod::Composed, or an All-Reduce given in chunks in all).
namespace {

// synthesize_composed, whose levels' makers may throw NotApplicable.
Made<Algorithm> compose(const topo::Topology& t, const Collective& c, Bytes chunk_bytes,
                        const SynthOptions& o) {
  Bandwidth joined = 0;
  Made<std::vector<std::vector<topo::NodeId>>> found = servers_to_compose(t, c, &joined);
  if (const NotMade* why = std::get_if<NotMade>(&found)) return *why;
  const auto& servers = std::get<std::vector<std::vector<topo::NodeId>>>(found);
  const int g = static_cast<int>(servers.front().size());
  if (c.all_reduce_chunks > 0 && c.all_reduce_chunks % g != 0)
    return NotMade{fmt::format(
        "a composition per level cuts the buffer into {} slices (one per NPU of a server): "
        "{} chunks in all do not split into them",
        g, c.all_reduce_chunks)};
  const int k = c.all_reduce_chunks > 0 ? c.all_reduce_chunks / g : c.chunks_per_npu;
  SynthOptions inner = part_options(o);  // the mates are busy with their own slices
  inner.method = SynthMethod::Auto;
  // A server's levels in its part through the links that join it (its NVSwitch, not the fabric
  // behind its NICs: on a fat tree that part held every switch, and its flow plans took 80 % of
  // the time), else on the whole topology.
  auto in_server = [&](const Collective& sc) {
    if (const std::optional<GroupPart> part = group_part(t, sc, joined))
      return part->lift(synthesize(part->topology, part->collective, chunk_bytes, inner), t,
                        sc.ranks);
    return synthesize(t, sc, chunk_bytes, inner);
  };
  auto server_level = [&](CollectiveKind kind) {
    Collective sc;
    sc.kind = kind;
    sc.ranks = servers.front();
    return in_server(sc);
  };
  ComposedLevels levels{
      server_level(CollectiveKind::ReduceScatter), server_level(CollectiveKind::AllGather), {}};
  Collective rail;
  rail.kind = CollectiveKind::AllReduce;
  for (const auto& server : servers) rail.ranks.push_back(server.front());
  std::vector<RailLevel> ways = rail_levels(t, rail, k, chunk_bytes, o, inner);
  if (ways.empty())
    return NotMade{
        fmt::format("no algorithm for the all-reduce across servers ({})", rail.describe())};
  Collective whole = c;
  whole.all_reduce_chunks = g * k;
  if (transfer_estimate(whole) > kComposeEveryRailLevel) {
    // The way fastest alone over all k chunks (a flat one runs k / ranks times).
    auto total = [&](const RailLevel& w) {
      return static_cast<double>(w.first.claimed_time) * k / w.first.collective.num_chunks();
    };
    auto fastest = std::min_element(
        ways.begin(), ways.end(),
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
    std::optional<Algorithm> a =
        compose_all_reduce(t, c, k, chunk_bytes, o.link_model, levels, remake);
    if (!a || (best && a->claimed_time >= best->claimed_time)) continue;
    a->provenance = Provenance(Producer::Composed);
    a->method = fmt::format(
        "composed: Reduce-Scatter in each server by {}; All-Reduce across servers, GPU by GPU, "
        "by {}; All-Gather in each server by {}",
        label(levels.reduce_scatter), label(levels.across), label(levels.all_gather));
    best = std::move(a);
  }
  if (!best)
    return NotMade{
        "a level's algorithm relays through NPUs outside its server or rail: no composition"};
  set_reduce_bandwidth(t, *best, o.reduce_bandwidth);
  return std::move(*best);
}

}  // namespace

Made<Algorithm> synthesize_composed(const topo::Topology& t, const Collective& c, Bytes chunk_bytes,
                                    const SynthOptions& o) {
  // The levels are made by synthesize() and the baselines, which say "does not apply" by
  // NotApplicable: here, the composition's boundary, it becomes the value.
  try {
    return compose(t, c, chunk_bytes, o);
  } catch (const NotApplicable& e) {
    return NotMade{e.message()};
  }
}

}  // namespace tenet::synth::detail
