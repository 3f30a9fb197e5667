#include "synth/plans/planned.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "synth/bounds/lower_bound.hpp"
#include "synth/cost/timing.hpp"
#include "synth/memo.hpp"
#include "synth/plans/broadcast_server_plan.hpp"
#include "synth/plans/gather_order.hpp"
#include "synth/plans/pipeline_calibration.hpp"
#include "synth/plans/pipeline_variants.hpp"
#include "synth/plans/pipelines.hpp"
#include "synth/plans/rail_deal.hpp"
#include "synth/plans/rail_messages.hpp"
#include "synth/plans/server_plan.hpp"
#include "synth/ten/spread_matcher.hpp"
#include "synth/ten/way_matcher.hpp"
#include "synth/tuning.hpp"

namespace tenet::synth::detail {

namespace {

// Of `count` ways (way_at(i): way i), those that chunks take (`taken`: each chunk's, renumbered
// into the result), each once and at its fluid share of the links for the chunks it carries
// (set_fluid_rates): an idle way at its full rate would make the links it crosses look shared.
template <typename WayAt>
std::vector<ServerWay> ways_at_their_shares(const topo::Topology& t, LinkModel model, size_t count,
                                            WayAt&& way_at, std::vector<ChannelId>& taken) {
  std::vector<int> index(count, -1);
  std::vector<ServerWay> ways;
  std::vector<double> load;
  for (ChannelId& w : taken) {
    int& mine = index[static_cast<size_t>(w)];
    if (mine < 0) {
      mine = static_cast<int>(ways.size());
      ways.push_back(way_at(w));
      load.push_back(0);
    }
    load[static_cast<size_t>(mine)] += 1;
    w = mine;
  }
  set_fluid_rates(t, model, ways, load);
  return ways;
}

// synthesize_plan for one collective: its forward problem on `ft_` (the topology, or its reverse
// for the reversed plans), followed by the method asked for.
class Planned {
 public:
  Planned(const topo::Topology& t, const Collective& c, Bytes chunk_bytes, const SynthOptions& o,
          bool last_first, int variant)
      : t_(t),
        c_(c),
        chunk_bytes_(chunk_bytes),
        o_(o),
        last_first_(last_first),
        variant_(variant),
        plan_(plan_for(c.kind)),
        forward_(c) {
    forward_.kind = forward_kind(c.kind);
    if (plan_.reversed)
      reversed_ = o.memo ? o.memo->reversed.of(t)
                         : std::make_shared<const topo::Topology>(topo::reversed(t));
  }

  // The flow plan's pipelines of variant `v`, predicted (pipeline_prediction); nothing where they
  // do not apply.
  std::optional<PipelinePrediction> predict(int v) {
    const bool broadcast = forward_.kind == CollectiveKind::Broadcast;
    if (plan_.shape == Shape::Route || (!broadcast && forward_.kind != CollectiveKind::AllGather) ||
        forward_.num_ranks() != ft().num_npus() || !plan_trees(broadcast))
      return std::nullopt;
    const std::optional<Streamed> s = streamed(v, broadcast);
    if (!s) return std::nullopt;
    return pipeline_prediction(s->fill, s->dealt, packing_->trees.size());
  }

  // The matcher's schedule as a run chose it: the channels it was matched on (channel i: each's
  // ends, route in ft()'s links and rate, 0 for its route's full rate: a ServerWay each) and its
  // transfers on them, before they were built.
  struct Kept {
    std::vector<ServerWay> channels;
    RawList raw;
  };

  // Where `keep` is given, the matcher's schedule is kept in it where the method is the plain
  // matcher, the matcher on the flow plan's trees or on the server plan, over an All-Gather's
  // forward problem.
  std::optional<Algorithm> run(Method method, double work_budget,
                               std::optional<Kept>* keep = nullptr) {
    if (method == Method::Matcher) return plain_matcher(work_budget, keep);
    // The flow plan of routed chunks: ways spread as the flow optimum spreads.
    if (plan_.shape == Shape::Route) {
      if (method == Method::ServerPlan) return flat_routed_matcher();
      if (method != Method::PlanMatcher) return std::nullopt;
      return ways_matcher();
    }
    const bool broadcast = forward_.kind == CollectiveKind::Broadcast;
    if ((!broadcast && forward_.kind != CollectiveKind::AllGather) ||
        forward_.num_ranks() != ft().num_npus())
      return std::nullopt;
    if (method == Method::ServerPlan && broadcast)
      return broadcast_server_plan(t_, ft(), plan_, c_, forward_, chunk_bytes_, o_);
    if (method == Method::ServerPlan) return server_plan_matcher(broadcast ? nullptr : keep);
    if (!plan_trees(broadcast)) return std::nullopt;
    std::vector<std::tuple<NodeId, NodeId, std::vector<LinkId>>> ways;
    std::set<std::tuple<NodeId, NodeId, std::vector<LinkId>>> distinct;
    for (const PackedTree& tr : packing_->trees)
      for (NodeId v = 0; v < ft().num_npus(); ++v)
        for (const auto& route : tr.routes[v])
          if (distinct.emplace(tr.parent[v], v, route).second)
            ways.emplace_back(tr.parent[v], v, route);
    g_.emplace(ft(), chunk_bytes_, o_.link_model, ways);
    if (method == Method::PlanPipeline) return pipelines(broadcast);
    return tree_matcher(broadcast, broadcast ? nullptr : keep);
  }

  // The schedule another Planned kept for the same forward problem on the reverse of ft(), each
  // link of its channels turned into its twin (topo::twin_links of ft(), which is its own
  // reverse): the same schedule on ft(), taking the same time.
  Algorithm mirrored(Kept kept, const std::vector<LinkId>& twin) const {
    for (ServerWay& w : kept.channels)
      for (LinkId& l : w.route) l = twin[static_cast<size_t>(l)];
    const ChannelGraph g(ft(), chunk_bytes_, o_.link_model, kept.channels);
    return build(t_, g, std::move(kept.raw), plan_, c_, chunk_bytes_, o_);
  }

 private:
  const topo::Topology& ft() const { return plan_.reversed ? *reversed_ : t_; }

  // The flow plan's trees (packing_), whether some arc stands for several routes (routed_), and
  // each chunk's tree dealt by copies (tree_of_); false where no plan was found.
  bool plan_trees(bool broadcast) {
    const NodeId root = broadcast ? forward_.ranks[forward_.root] : -1;
    packing_ = (o_.memo ? o_.memo->plans : own_plans_).of(ft(), root);
    if (!packing_) return false;
    routed_ = any_routed();
    tree_of_ = deal([&](int i, int j, const std::vector<int>& dealt) {
      return int64_t{dealt[i] + 1} * packing_->trees[j].copies <
             int64_t{dealt[j] + 1} * packing_->trees[i].copies;
    });
    return true;
  }

  // The matcher alone; nothing when its work is over `work_budget` (0: none).
  std::optional<Algorithm> plain_matcher(double work_budget, std::optional<Kept>* keep) const {
    if (work_budget > 0 && least_matcher_work(ft(), forward_) > work_budget) return std::nullopt;
    ChannelGraph g(ft(), chunk_bytes_, o_.link_model, o_.ecmp_routes, routes_of(o_));
    if (work_budget > 0 && matcher_work(g, forward_) > work_budget) return std::nullopt;
    RawList raw = run_forward(ft(), g, forward_, o_);
    if (keep && plan_.shape == Shape::Spread) *keep = kept(channels_of(g), raw);
    return build(t_, g, std::move(raw), plan_, c_, chunk_bytes_, o_);
  }

  // `g`'s channels, each at its route's full rate (as its graph made them, ServerWay::rate 0).
  static std::vector<ServerWay> channels_of(const ChannelGraph& g) {
    std::vector<ServerWay> out;
    out.reserve(g.size());
    for (size_t id = 0; id < g.size(); ++id) {
      const Channel& c = g[static_cast<ChannelId>(id)];
      const std::span<const LinkId> route = g.route(c);
      out.push_back({c.src, c.dst, std::vector<LinkId>(route.begin(), route.end()), 0});
    }
    return out;
  }
  // A schedule to keep: `channels` and a copy of `raw` (build takes the list).
  static Kept kept(std::vector<ServerWay> channels, const RawList& raw) {
    return Kept{std::move(channels), raw.copy()};
  }

  // The matcher along ways spread like the multicommodity-flow optimum (routed collectives), its
  // channels at full rate or each at its share of the links (shared_ways), the faster.
  Algorithm ways_matcher() const {
    ChannelGraph g(ft(), chunk_bytes_, o_.link_model, o_.ecmp_routes, routes_of(o_));
    std::vector<ChunkId> chunks;
    std::vector<std::array<NodeId, 2>> ends;
    std::vector<int> round_of;
    for (ChunkId ch = 0; ch < forward_.num_chunks(); ++ch) {
      const NodeId from = forward_.ranks[forward_.origin(ch)],
                   to = forward_.ranks[forward_.needed_by(ch)];
      if (from == to) continue;
      chunks.push_back(ch);
      ends.push_back({from, to});
      round_of.push_back(ch % forward_.chunks_per_npu);
    }
    const double horizon =
        std::max<double>(1,
                         static_cast<double>(
                             lower_bound(ft(), forward_, chunk_bytes_, bounds_of(o_)).bandwidth)) /
        static_cast<double>(kPicosPerSecond);
    ChunkWays spread = flow_ways(ft(), g, ends, round_of, chunk_bytes_, horizon);
    std::optional<Algorithm> shared = shared_ways(chunks, spread, g);
    WayMatcher r(ft(), g, o_, std::move(chunks), std::move(spread));
    Algorithm a = build(t_, g, r.run(), plan_, c_, chunk_bytes_, o_);
    a.method = "matcher on ways spread like the flow optimum";
    a.provenance.producer = Producer::FlowWaysMatcher;
    // (Timed here to choose; the caller times the one returned.)
    if (shared && model_time(t_, *shared) < model_time(t_, a)) return std::move(*shared);
    return a;
  }

  // The same ways, each channel a chunk takes at its fluid share of the links for the chunks it
  // carries (set_fluid_rates), as a flat plan's ways are: the channels' rates then fit every link
  // at once, and a link's ways pay their per-step costs side by side where full-rate transfers
  // take it one after another and leave it idle between them. Nothing under `hold`.
  std::optional<Algorithm> shared_ways(const std::vector<ChunkId>& chunks, const ChunkWays& spread,
                                       const ChannelGraph& g) const {
    if (o_.link_model != LinkModel::Pipelined) return std::nullopt;
    // Where no two channels the chunks take share a link (direct links: a torus, a mesh), each
    // already has its links to itself: the same schedule.
    std::vector<char> used(g.size(), 0), crossed(ft().num_links(), 0);
    bool shared = false;
    for (ChannelId c : spread.ways)
      if (!used[static_cast<size_t>(c)]) {
        used[static_cast<size_t>(c)] = 1;
        for (LinkId l : g.route(g[c])) {
          shared = shared || crossed[l] != 0;
          crossed[l] = 1;
        }
      }
    if (!shared) return std::nullopt;
    ChunkWays taken = spread;
    std::vector<ServerWay> ways = ways_at_their_shares(
        ft(), o_.link_model, g.size(),
        [&](ChannelId c) {
          const auto route = g.route(g[c]);
          return ServerWay{g[c].src, g[c].dst, std::vector<LinkId>(route.begin(), route.end()), 0};
        },
        taken.ways);
    ChannelGraph fluid(ft(), chunk_bytes_, o_.link_model, std::move(ways));
    WayMatcher r(ft(), fluid, o_, chunks, std::move(taken));
    Algorithm a = build(t_, fluid, r.run(), plan_, c_, chunk_bytes_, o_);
    a.method = "matcher on ways spread like the flow optimum, each at its share of the links";
    a.provenance.producer = Producer::FlowWaysMatcher;
    return a;
  }

  // Routed chunks on a flat server plan (a switched fabric that forms no servers or pods): each
  // chunk straight from its source to its destination over the plan's way for the pair, every way
  // at its fluid share of the links for the chunks it carries (set_fluid_rates), so that the N - 1
  // ways out of an NPU pay their per-step costs side by side and the ways' rates fit every link at
  // once: each pair's chunks go as messages (messages_on_their_ways; under `hold`, where the ways
  // keep their full rates, the matcher orders them). Nothing where the plan is not flat.
  std::optional<Algorithm> flat_routed_matcher() const {
    // (Over pods or servers no plan is made for routed chunks: plan_groups, before planning.)
    if (plan_groups(ft()).size() != static_cast<size_t>(ft().num_npus())) return std::nullopt;
    const detail::ServerPlans::Plan kept = server_plan_of(ft(), chunk_bytes_, o_);
    const std::optional<ServerPlan>& servers = *kept;
    if (!servers || !servers->flat()) return std::nullopt;
    std::vector<ChunkId> chunks;
    ChunkWays taken;
    taken.offset.push_back(0);
    for (ChunkId ch = 0; ch < forward_.num_chunks(); ++ch) {
      const NodeId from = forward_.ranks[forward_.origin(ch)],
                   to = forward_.ranks[forward_.needed_by(ch)];
      if (from == to) continue;
      const int w = servers->way_between(from, to);
      if (w < 0) return std::nullopt;
      chunks.push_back(ch);
      taken.ways.push_back(w);
      taken.offset.push_back(static_cast<int64_t>(taken.ways.size()));
    }
    std::vector<ServerWay> ways = ways_at_their_shares(
        ft(), o_.link_model, servers->ways().size(),
        [&](ChannelId w) { return servers->ways()[static_cast<size_t>(w)]; }, taken.ways);
    ChannelGraph g(ft(), chunk_bytes_, o_.link_model, std::move(ways));
    RawList raw;
    if (o_.link_model == LinkModel::Pipelined) {
      raw = messages_on_their_ways(g, chunks, taken.ways);
    } else {
      WayMatcher r(ft(), g, o_, std::move(chunks), std::move(taken));
      raw = r.run();
    }
    Algorithm a = build(t_, g, std::move(raw), plan_, c_, chunk_bytes_, o_);
    a.method = fmt::format(
        "a flat server plan ({} NPUs, each pair's chunks straight to their destination, every "
        "way at its share of the links)",
        servers->servers().size());
    a.provenance.producer = Producer::ServerPlanMatcher;
    return a;
  }

  // A flat plan's routed chunks (chunks[i] on channel way[i], a pair's chunks consecutive) as
  // messages: each channel's run of consecutive chunks in messages of at most
  // kMaxChunksPerTransfer, one after another from the start. Its channels' rates fit every link at
  // once, so none waits for another, and a single hop gains nothing from pipelining: a message pays
  // its per-step cost once for all its chunks, where a chunk at a time pays it per chunk (an
  // All-to-Allv's pair of 8 units: 8 steps).
  RawList messages_on_their_ways(const ChannelGraph& g, const std::vector<ChunkId>& chunks,
                                 const std::vector<ChannelId>& way) const {
    std::vector<Raw> sent;
    std::vector<Time> free(g.size(), 0);  // per channel, when its last message is through
    for (size_t i = 0; i < chunks.size();) {
      const ChannelId c = way[i];
      size_t j = i + 1;
      while (j < chunks.size() && way[j] == c && chunks[j] == chunks[j - 1] + 1 &&
             j - i < static_cast<size_t>(kMaxChunksPerTransfer))
        ++j;
      const Channel& ch = g[c];
      const auto count = static_cast<Bytes>(j - i);
      // The channel's per-step cost and latency, around the message's bytes at its rate.
      const Time step = ch.occupancy - transfer_time(chunk_bytes_, ch.rate);
      const Time occupancy = step + transfer_time(count * chunk_bytes_, ch.rate);
      const Time start = free[static_cast<size_t>(c)];
      free[static_cast<size_t>(c)] = start + occupancy;
      sent.push_back({.chunk = chunks[i],
                      .channel = c,
                      .dep = -1,
                      .queue = 0,
                      .more = static_cast<uint16_t>(count - 1),
                      .start = start,
                      .end = start + occupancy + (ch.duration - ch.occupancy),
                      .rate = ch.pinned ? ch.rate : 0});
      i = j;
    }
    // In start order, as build() reads a forward list.
    std::stable_sort(sent.begin(), sent.end(),
                     [](const Raw& x, const Raw& y) { return x.start < y.start; });
    RawList raw;
    for (const Raw& r : sent) raw.push_back(r);
    return raw;
  }

  // The matcher on a cluster's server plan: each chunk from its root along the plan's way to each
  // NPU; where its servers form pods (relayed_over_pods), also relayed over them, the faster kept,
  // and its schedule in `keep` where given. Nothing where there is no server plan, or its matching
  // would scan too much.
  std::optional<Algorithm> server_plan_matcher(std::optional<Kept>* keep) const {
    const detail::ServerPlans::Plan plan = server_plan_of(ft(), chunk_bytes_, o_);
    const std::optional<ServerPlan>& servers = *plan;
    // A match scans at most a bitset of chunks of its way.
    const int64_t words = (forward_.num_chunks() + 63) / 64;
    if (!servers || transfer_estimate(forward_) * words > kServerPlanWork) return std::nullopt;
    Matched a = match_on(*servers, keep != nullptr);
    if (const std::optional<ServerPlan> relayed =
            relayed_over_pods(ft(), *servers, o_.link_model)) {
      Matched b = match_on(*relayed, keep != nullptr);
      // (Timed here to choose, where match_on did not already; the caller times the one
      // returned.)
      auto time = [&](const Matched& m) {
        return m.timed ? *m.timed : model_time(t_, m.algorithm);
      };
      if (time(b) < time(a)) a = std::move(b);
    }
    if (keep) *keep = std::move(a.kept);
    return std::move(a.algorithm);
  }

  // What match_on made, its model time where it was timed there to choose, and its schedule where
  // asked to keep it.
  struct Matched {
    Algorithm algorithm;
    std::optional<Time> timed;
    std::optional<Kept> kept;
  };

  // The matcher on server plan `servers`; its schedule kept where `keep`.
  Matched match_on(const ServerPlan& servers, bool keep) const {
    // Unequal rails: the chunks dealt over them, each way at its fluid share of what the deal
    // gives it (the overhead model of staggered_ways assumes equal rails, and direct ones).
    const int k = forward_.chunks_per_npu;
    const RailDeal deal(ft(), servers, k);
    std::vector<ServerWay> ways;
    if (deal.even()) {
      ways = staggered_ways(ft(), servers, k, chunk_bytes_, o_.link_model);
    } else {
      ways = servers.ways();
      set_fluid_rates(ft(), o_.link_model, ways, deal.loads());
    }
    ChannelGraph g(ft(), chunk_bytes_, o_.link_model, ways);
    SpreadMatcher s(ft(), g, forward_.num_chunks(), o_);
    for (ChunkId ch = 0; ch < forward_.num_chunks(); ++ch) {
      const int origin = forward_.origin(ch);
      const NodeId root = forward_.ranks[origin];
      s.hold(root, ch);
      for (NodeId v = 0; v < ft().num_npus(); ++v)
        if (v != root) {
          s.need(v, ch);
          s.allow(deal.way(root, ch - origin * k, v), ch);
        }
    }
    RawList raw = s.run();
    // Where the rails pay steps and every root's chunks enter each server on one rail way, also
    // the rails in messages (rail_messages.hpp), the faster kept. (Timed here to choose; the
    // caller times the one returned.)
    std::optional<RawList> sent;
    if (rail_messages_apply(ft(), servers, deal.even(), o_))
      sent = rail_messages(g, servers, raw, kRailMessageShrink);
    std::optional<RawList> raw_kept, sent_kept;  // (build takes the lists)
    if (keep) {
      raw_kept = raw.copy();
      if (sent) sent_kept = sent->copy();
    }
    std::optional<Algorithm> in_messages;
    if (sent) in_messages = build(t_, g, std::move(*sent), plan_, c_, chunk_bytes_, o_);
    Algorithm a = build(t_, g, std::move(raw), plan_, c_, chunk_bytes_, o_);
    std::optional<Time> timed;
    bool messages = false;
    if (in_messages) {
      const Time sent_time = model_time(t_, *in_messages), raw_time = model_time(t_, a);
      messages = sent_time < raw_time;
      timed = messages ? sent_time : raw_time;
    }
    if (messages) a = std::move(*in_messages);
    a.provenance.producer = Producer::ServerPlanMatcher;
    const size_t count = servers.servers().size(), per = servers.servers()[0].size();
    a.method =
        servers.flat()
            ? fmt::format(
                  "matcher on a flat server plan ({} NPUs, each to every other directly, every "
                  "way at its share of the links)",
                  count)
        : servers.pods()
            ? fmt::format(
                  "matcher on a server plan over pods ({} groups of {} NPUs behind switches: "
                  "each chunk to each other pod once, then inside it)",
                  count, per)
        : servers.relayed()
            ? fmt::format(
                  "matcher on a server plan ({} servers of {}: rails, once into each other pod "
                  "of servers and on inside it, then NVSwitch)",
                  count, per)
            : fmt::format("matcher on a server plan ({} servers of {}: rails, then NVSwitch)",
                          count, per);
    if (messages) a.method += ", the rails in messages shrinking to one chunk at the end";
    std::optional<Kept> chosen;
    if (keep)
      chosen = Kept{std::move(ways), messages ? std::move(*sent_kept) : std::move(*raw_kept)};
    return {std::move(a), timed, std::move(chosen)};
  }

  // The chunks of each root go to its trees in proportion to their copies, as seats to parties by
  // Jefferson's (D'Hondt's) method: each next chunk to the tree whose (chunks + 1) / copies is
  // least, which makes the slowest tree's chunks / copies (its time at its fluid rate) least. A
  // tree of one copy among hundreds may get none: rounding to it would make it the slowest.
  // Each chunk in turn to the first of its root's trees that none is `before`, given how many
  // each was dealt so far (before(i, j, dealt): tree i goes before tree j).
  template <typename Before>
  std::vector<int> deal(Before&& before) const {
    const ChunkId chunks = forward_.num_chunks();
    std::vector<std::vector<int>> trees_of(ft().num_npus());
    for (size_t i = 0; i < packing_->trees.size(); ++i)
      trees_of[packing_->trees[i].root].push_back(static_cast<int>(i));
    std::vector<int> dealing(chunks, -1), dealt(packing_->trees.size(), 0);
    for (ChunkId ch = 0; ch < chunks; ++ch) {
      int best = -1;
      for (int i : trees_of[forward_.ranks[forward_.origin(ch)]])
        if (best < 0 || before(i, best, dealt)) best = i;
      dealing[ch] = best;
      ++dealt[best];
    }
    return dealing;
  }
  // The pipelines also deal by when a chunk would arrive (pipeline_fill): each next chunk of a
  // root to the tree where it would reach the tree's last NPU the earliest, at its fill plus a
  // chunk time at the tree's rate per chunk dealt before. Jefferson's method is that where the fill
  // is one chunk time; where a level costs a chunk time at a thin tree's own rate (four, split) and
  // trees are deep, thin and deep trees take fewer chunks and the trees end together. The
  // search's variants deal so alone (docs/tuning.md, "The pipelines' dealing").
  std::vector<int> deal_by_arrival(const PipelineFill& fill) const {
    return deal([&](int i, int j, const std::vector<int>& dealt) {
      return fill.last[i] + dealt[i] * fill.chunk_time[i] <
             fill.last[j] + dealt[j] * fill.chunk_time[j];
    });
  }

  // The flow plan's trees as pipelines: `variant_`, or every variant that applies, the fastest
  // kept.
  std::optional<Algorithm> pipelines(bool broadcast) {
    auto run = [&](int v) { run_variant(v, broadcast); };
    if (variant_ >= 0)
      run(variant_);
    else
      for_each_pipeline_variant(t_, c_, chunk_bytes_, o_, best_, run);
    if (floored_best_ && o_.floored) *o_.floored = true;
    return std::move(best_);
  }

  // Lanes differ from shares only where an arc stands for several routes.
  bool any_routed() const {
    for (const PackedTree& tr : packing_->trees)
      for (const auto& routes : tr.routes)
        if (routes.size() > 1) return true;
    return false;
  }

  // The chunks each of the plan's trees streams, on average.
  double chunks_per_tree() const {
    return static_cast<double>(forward_.num_chunks()) /
           static_cast<double>(std::max<size_t>(1, packing_->trees.size()));
  }

  // What pipeline variant `v` streams: its trees, how fast, each chunk's tree.
  struct Streamed {
    PipelineVariant pv;
    const TreePacking& trees;
    StreamSpeedup speedup;
    PipelineFill fill;        // as dealt by arrival, or by copies
    std::vector<int> dealt;   // per chunk, its tree
    bool by_arrival = false;  // dealt by arrival (deal_by_arrival), not by copies (tree_of_)
  };
  // Nothing where `v` is the same as another (lanes where no arc has several routes; sped up where
  // no stream can go faster).
  std::optional<Streamed> streamed(int v, bool broadcast) {
    PipelineVariant pv = pipeline_variant(v);
    // Where steps are charged, streams send messages (PipelineShape::messages).
    pv.shape.messages = ft().charges_steps();
    const bool lanes = pv.shape.lanes;
    if (lanes && !routed_) return std::nullopt;
    if (lanes && pv.shape.serial && !narrowed_) narrowed_ = drop_thin_lanes(ft(), *packing_);
    const TreePacking& trees = lanes && pv.shape.serial ? *narrowed_ : *packing_;
    StreamSpeedup speedup(ft(), trees, lanes, pv.sped_up);
    if (pv.sped_up && !speedup.any()) return std::nullopt;  // the same as at the plan's rates
    // Dealt by arrival: it is the dealing by copies where a level costs one chunk time, and gains
    // where the fill is longer (split, sped up). A variant asked for alone (an All-Reduce's
    // halves, timed joined) deals by arrival where split (a level costs four chunk times) or sped
    // up, else by copies.
    const bool by_arrival = variant_ < 0 || pv.shape.split > 1 || pv.sped_up;
    const int per_root = broadcast ? forward_.num_chunks() : forward_.chunks_per_npu;
    PipelineFill fill = pipeline_fill(ft(), trees, chunk_bytes_, pv.shape, speedup, per_root);
    std::vector<int> dealt = by_arrival ? deal_by_arrival(fill) : tree_of_;
    return Streamed{pv, trees, std::move(speedup), std::move(fill), std::move(dealt), by_arrival};
  }

  // Whether variant `v`, so `predicted` (pipeline_prediction), is left unmade
  // (PipelineOptions::predicted): where kPipelinePredictedSure of its predicted end (or its own
  // calibrated share: PipelineCalibration) is at least the fastest variant made so far or the
  // caller's time to beat (SynthOptions::to_beat), the less (under_callers), or the fastest the
  // caller found elsewhere (PipelineOptions::predicted_against). It reports its
  // likely time; where nothing was made before, it stands as an algorithm of no transfers claiming
  // that (over the caller's time to beat, which it so cannot replace), and says so
  // (SynthOptions::floored).
  bool skipped(int v, const PipelinePrediction& predicted) {
    if (!o_.pipelines.predicted) return false;
    const Time to_beat = best_ && !predicted_best_ ? best_->claimed_time : o_.to_beat;
    const Time against = predicted_against(under_callers(to_beat, o_.to_beat), o_.pipelines);
    const double sure = PipelineCalibration::sure(
        o_.pipelines.calibration, v, false, PipelineCalibration::uncalibrated(chunks_per_tree()));
    if (against <= 0 || sure * static_cast<double>(predicted.end) < static_cast<double>(against))
      return false;
    const Time likely = std::max(predicted.likely, to_beat > 0 ? to_beat : against);
    if (stand_in_unmade(t_, c_, chunk_bytes_, o_, v, likely, best_)) predicted_best_ = true;
    return true;
  }

  // Pipeline variant `v` (pipeline_variant), into best_ when faster.
  void run_variant(int v, bool broadcast) {
    // A paced variant whose unpaced twin's floor could not beat the fastest so far cannot either
    // (unpaced_twin): not made, it reports that floor, the least its own could be.
    if (const std::optional<int> twin = variant_ < 0 ? unpaced_twin(v) : std::nullopt)
      if (const auto lost = floored_.find(*twin);
          lost != floored_.end() && best_ && lost->second >= best_->claimed_time) {
        if (o_.pipelines.on_variant) o_.pipelines.on_variant(v, lost->second);
        return;
      }
    std::optional<Streamed> s = streamed(v, broadcast);
    if (!s) return;
    const PipelineVariant& pv = s->pv;
    const bool lanes = pv.shape.lanes, paced = pv.paced, sped_up = pv.sped_up;
    const int split = pv.shape.split;
    const TreePacking& streamed = s->trees;
    const StreamSpeedup& speedup = s->speedup;
    const std::vector<int>& dealt = s->dealt;
    // (A variant asked for alone, an All-Reduce's half, is predicted joined: all_reduce.hpp.)
    const std::optional<PipelinePrediction> predicted =
        variant_ < 0 ? std::optional(pipeline_prediction(s->fill, dealt, packing_->trees.size()))
                     : std::nullopt;
    if (predicted && skipped(v, *predicted)) return;
    // In messages, each tree's chunks consecutive.
    const std::vector<int> blocked =
        pv.shape.messages ? block_dealing(dealt, streamed) : std::vector<int>();
    const std::vector<int>& dealing = pv.shape.messages ? blocked : dealt;
    std::vector<int32_t> pace;
    RawList raw = plan_pipeline(ft(), *g_, streamed, dealing, chunk_bytes_, last_first_, pv.shape,
                                speedup, paced ? &pace : nullptr);
    Algorithm a =
        build(t_, *g_, std::move(raw), plan_, c_, chunk_bytes_, o_, paced ? &pace : nullptr);
    a.serial_channels = pv.shape.serial;
    if (variant_ < 0) {
      // A variant whose floor (synth::time_floor: one pass, no contention timed) is no faster
      // than the fastest so far cannot replace it, and one at or over the caller's
      // PipelineOptions::floored_at makes no difference to it: it is not timed, and reports its
      // floor. The first so left stands for the count until a variant is timed (floored_best_).
      const Time stop = o_.pipelines.floored_at;
      const Time mark = !best_     ? stop
                        : stop > 0 ? std::min(stop, best_->claimed_time)
                                   : best_->claimed_time;
      if (floor_may_decide(o_.pipelines, v, mark)) {
        const Time floor = time_floor(t_, a);
        if (o_.pipelines.on_floor) o_.pipelines.on_floor(v, floor);
        if ((best_ && floor >= best_->claimed_time) || (stop > 0 && floor >= stop)) {
          PipelineCalibration::record(o_.pipelines.calibration, v, false, floor, predicted->end,
                                      chunks_per_tree(), /*floor=*/true);
          if (o_.pipelines.on_variant) o_.pipelines.on_variant(v, floor);
          floored_[v] = floor;
          if (!best_) {
            best_ = unmade_pipelines(t_, c_, chunk_bytes_, o_.link_model, floor);
            best_->method =
                "flow-plan pipelines (none timed: each floor at or over the mark asked)";
            predicted_best_ = floored_best_ = true;
          } else if (floored_best_) {  // (the least floor: the least the count may take)
            best_->claimed_time = std::min(best_->claimed_time, floor);
          }
          return;
        }
      }
      time(t_, a);
      PipelineCalibration::record(o_.pipelines.calibration, v, false, a.claimed_time,
                                  predicted->end, chunks_per_tree());
    }
    const PipelineTraits traits{.trees = static_cast<int>(packing_->trees.size()),
                                .per = packing_->k,
                                .per_root = broadcast,
                                .sped_up = sped_up,
                                .lanes = lanes,
                                .paced = paced,
                                .serial = pv.shape.serial,
                                .split = split,
                                .dealt_by_arrival = s->by_arrival && dealt != tree_of_,
                                .messages = a.has_messages()};
    a.provenance = Provenance(Producer::FlowPlanPipelines);
    a.provenance.pipeline = traits;
    a.method = fmt::format("flow-plan pipelines ({})", describe(traits));
    if (variant_ < 0 && o_.pipelines.on_variant) o_.pipelines.on_variant(v, a.claimed_time);
    if (variant_ < 0 && o_.pipelines.on_timed) o_.pipelines.on_timed(v, a.claimed_time);
    if (!best_ || a.claimed_time < best_->claimed_time) {
      best_ = std::move(a);
      predicted_best_ = floored_best_ = false;
    }
  }

  // The matcher along the flow plan's trees.
  Algorithm tree_matcher(bool broadcast, std::optional<Kept>* keep) const {
    const ChunkId chunks = forward_.num_chunks();
    SpreadMatcher s(ft(), *g_, chunks, o_);
    for (ChunkId ch = 0; ch < chunks; ++ch) {
      s.hold(forward_.ranks[forward_.origin(ch)], ch);
      const PackedTree& tr = packing_->trees[tree_of_[ch]];
      for (NodeId v = 0; v < ft().num_npus(); ++v) {
        if (v == tr.root) continue;
        s.need(v, ch);
        for (const auto& route : tr.routes[v]) s.allow(g_->find(tr.parent[v], v, route), ch);
      }
    }
    RawList raw = s.run();
    if (keep) *keep = kept(channels_of(*g_), raw);
    Algorithm a = build(t_, *g_, std::move(raw), plan_, c_, chunk_bytes_, o_);
    a.provenance.producer = Producer::FlowPlanMatcher;
    a.method = fmt::format("matcher on a flow plan ({} trees, {} per {})", packing_->trees.size(),
                           packing_->k, broadcast ? "root" : "NPU");
    return a;
  }

  const topo::Topology& t_;
  const Collective& c_;
  Bytes chunk_bytes_;
  const SynthOptions& o_;
  bool last_first_;
  int variant_;
  ForwardPlan plan_;
  Collective forward_;
  std::shared_ptr<const topo::Topology> reversed_;  // o_.memo's, or its own
  const TreePacking* packing_ = nullptr;            // o_.memo's, or own_plans_'
  FlowPlans own_plans_;                             // where the run holds no memo
  std::vector<int> tree_of_;                        // per chunk, its tree (dealt by copies)
  std::optional<ChannelGraph> g_;                   // the channels of the plan's trees
  bool routed_ = false;                             // some arc stands for several routes
  std::optional<TreePacking> narrowed_;  // in serial channels, lanes with the thin ones dropped
  std::optional<Algorithm> best_;
  // best_ made of nothing, standing for the count: claiming a prediction (skipped) or ...
  bool predicted_best_ = false;
  bool floored_best_ = false;    // ... the least floor at or over PipelineOptions::floored_at
  std::map<int, Time> floored_;  // the variants left untimed by their floor, with that floor
};

}  // namespace

std::optional<Algorithm> synthesize_plan(const topo::Topology& t, const Collective& c,
                                         Bytes chunk_bytes, const SynthOptions& o, Method method,
                                         bool last_first, double work_budget, int variant) {
  give_up_point(o.give_up);
  return Planned(t, c, chunk_bytes, o, last_first, variant).run(method, work_budget);
}

std::pair<std::optional<Algorithm>, std::optional<Algorithm>> all_reduce_halves(
    const topo::Topology& t, const Collective& rs, const Collective& ag, Bytes chunk_bytes,
    const SynthOptions& o, Method method, double work_budget) {
  give_up_point(o.give_up);
  const std::optional<std::vector<LinkId>> twin =
      method == Method::PlanPipeline ? std::nullopt : topo::twin_links(t);
  std::optional<Planned::Kept> kept;
  std::optional<Algorithm> reduced =
      Planned(t, rs, chunk_bytes, o, false, -1).run(method, work_budget, twin ? &kept : nullptr);
  if (!reduced) return {};
  give_up_point(o.give_up);
  if (!kept)
    return {std::move(reduced),
            synthesize_plan(t, ag, chunk_bytes, o, method, /*last_first=*/true)};
  Algorithm gathered =
      Planned(t, ag, chunk_bytes, o, /*last_first=*/true, -1).mirrored(std::move(*kept), *twin);
  gathered.method = reduced->method;
  gathered.provenance = reduced->provenance;
  gather_as_reduced(*reduced, gathered);
  return {std::move(reduced), std::move(gathered)};
}

Time under_callers(Time fastest, Time to_beat) {
  if (fastest <= 0) return to_beat;
  return to_beat <= 0 ? fastest : std::min(fastest, to_beat);
}

Time predicted_against(Time to_beat, const PipelineOptions& o) {
  return under_callers(to_beat, o.predicted_against);  // (the least of the two set)
}

Algorithm unmade_pipelines(const topo::Topology& t, const Collective& c, Bytes chunk_bytes,
                           LinkModel model, Time likely) {
  Algorithm a = empty_algorithm("tenet", t, c, chunk_bytes, model);
  a.claimed_time = likely;
  a.provenance = Provenance(Producer::FlowPlanPipelines);
  a.method = "flow-plan pipelines (none made: predicted no faster than the time to beat)";
  return a;
}

bool stand_in_unmade(const topo::Topology& t, const Collective& c, Bytes chunk_bytes,
                     const SynthOptions& o, int variant, Time likely,
                     std::optional<Algorithm>& best) {
  if (o.pipelines.on_variant) o.pipelines.on_variant(variant, likely);
  if (best) return false;
  best = unmade_pipelines(t, c, chunk_bytes, o.link_model, likely);
  if (o.floored) *o.floored = true;
  if (o.predicted) *o.predicted = true;
  return true;
}

std::optional<PipelinePrediction> predict_pipeline(const topo::Topology& t, const Collective& c,
                                                   Bytes chunk_bytes, const SynthOptions& o,
                                                   int variant) {
  return Planned(t, c, chunk_bytes, o, /*last_first=*/false, variant).predict(variant);
}

}  // namespace tenet::synth::detail
