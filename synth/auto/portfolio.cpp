#include "synth/auto/portfolio.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "synth/auto/baseline_floors.hpp"
#include "synth/bounds/lower_bound.hpp"
#include "synth/cost/timing.hpp"
#include "synth/memo.hpp"
#include "synth/plans/all_reduce.hpp"
#include "synth/plans/pipeline_variants.hpp"
#include "synth/plans/server_plan.hpp"
#include "synth/plans/symmetric.hpp"
#include "synth/plans/tree_packing.hpp"
#include "synth/ten/forward.hpp"
#include "synth/tuning.hpp"
#include "topo/analysis.hpp"
#include "topo/limits.hpp"

namespace tenet::synth::detail {

// Whether `a` is within `factor` of its lower bound.
bool within_bound(const topo::Topology& t, const Algorithm& a, double factor, BoundMemo* memo) {
  const Time bound = lower_bound(t, a.collective, a.chunk_bytes, memo).coarse;
  return static_cast<double>(a.claimed_time) <= factor * static_cast<double>(bound);
}

double matcher_figure(const topo::Topology& t, const Collective& c, Bytes chunk, BoundMemo* memo) {
  const LowerBound b = lower_bound(t, c, chunk, memo);
  if (!t.charges_steps() || t.num_links() == 0 || chunk <= 0) return static_cast<double>(b.coarse);
  Time step = std::numeric_limits<Time>::max();
  Bandwidth narrowest = std::numeric_limits<Bandwidth>::max();
  for (const topo::Link& l : t.links()) {
    step = std::min(step, l.step);
    narrowest = std::min(narrowest, l.bandwidth);
  }
  const double per_chunk = static_cast<double>(step) / static_cast<double>(kPicosPerSecond) *
                           static_cast<double>(narrowest) / static_cast<double>(chunk);
  const Time figure = b.steering > 0 ? b.steering : b.bandwidth;
  return std::max(static_cast<double>(b.coarse), static_cast<double>(figure) * (1 + per_chunk));
}

bool within_valid_bound(const topo::Topology& t, const Algorithm& a, double factor,
                        BoundMemo* memo) {
  const Time bound = lower_bound(t, a.collective, a.chunk_bytes, memo).total;
  return static_cast<double>(a.claimed_time) <= factor * static_cast<double>(bound);
}

namespace {

// Whether `k` spreads its chunks (to every rank, or reduces them from every rank): the collectives
// a flow plan's trees or a server plan carry.
bool spreads(CollectiveKind k) {
  return k == CollectiveKind::AllGather || k == CollectiveKind::ReduceScatter ||
         k == CollectiveKind::AllReduce || k == CollectiveKind::Broadcast ||
         k == CollectiveKind::Reduce;
}

// What the matcher choosing `choice` made.
Provenance matcher_provenance(MatcherChoice choice) {
  Provenance p(Producer::Matcher);
  p.choice = choice;
  return p;
}

constexpr std::string_view kLeftOut = "auto leaves the plain matcher out";

// A floor of any schedule the matchers make of routed chunks (the plain matcher's, under either
// model, and the ways spread like the flow optimum): each of their transfers carries one chunk at
// its route's full rate r (at least the topology's narrowest link) and holds r of each link of its
// route for the route's largest per-step cost s plus b / r (docs/model.md), r s + b of the
// capacity of its sender's out-link and of its receiver's in-link. Every chunk leaves its source
// in a transfer of its own and enters its destination in one: an NPU's chunks out (in) take at
// least that many times r s + b, s the least step of its out-links (in-links), over its egress
// (ingress) bandwidth; the most of any NPU. Where steps cost microseconds and chunks are small it
// is many times a flat plan's time, whose ways pay their steps side by side.
Time routed_matcher_floor(const topo::Topology& t, const Collective& c, Bytes chunk_bytes) {
  const int n = t.num_npus();
  std::vector<int64_t> out(n, 0), in(n, 0);
  for (ChunkId ch = 0; ch < c.num_chunks(); ++ch) {
    const topo::NodeId from = c.ranks[c.origin(ch)], to = c.ranks[c.needed_by(ch)];
    if (from == to) continue;
    ++out[from];
    ++in[to];
  }
  const Bandwidth narrowest = narrowest_link(t);
  double most = 0;  // ps
  for (topo::NodeId v = 0; v < n; ++v)
    for (const auto& [chunks, links, bandwidth] :
         {std::tuple{out[v], t.out_links(v), topo::egress_bandwidth(t, v)},
          std::tuple{in[v], t.in_links(v), topo::ingress_bandwidth(t, v)}}) {
      if (chunks == 0 || bandwidth <= 0) continue;
      const double held = least_step_hold(t, links, narrowest) +
                          static_cast<double>(chunk_bytes);  // bytes of capacity per transfer
      most = std::max(most, static_cast<double>(chunks) * held / static_cast<double>(bandwidth) *
                                static_cast<double>(kPicosPerSecond));
    }
  return static_cast<Time>(
      std::min(most, static_cast<double>(std::numeric_limits<Time>::max() / 2)));
}

// synthesize_once's portfolio for one collective and chunk size: each step runs the methods that
// apply and keeps the fastest result (ties to the first) in `best_`.
class Portfolio {
 public:
  // `to_retime`: this portfolio runs under hold for run_under_hold, which re-times its answer
  // under the pipelined model.
  Portfolio(const topo::Topology& t, const Collective& c, Bytes chunk_bytes, const SynthOptions& o,
            bool to_retime = false)
      : t_(t),
        c_(c),
        chunk_bytes_(chunk_bytes),
        o_(o),
        any_(o.method == Method::Auto),
        to_retime_(to_retime),
        scarce_run_(to_retime ? MatcherRun::ScarceUnderHold : MatcherRun::Scarce),
        quiet_(o) {
    quiet_.progress = nullptr;
    quiet_.portfolio.on_plan = nullptr;  // this portfolio reports its own plans alone
    quiet_.portfolio.on_matcher = nullptr;
  }

  Made<Algorithm> run() {
    std::optional<Algorithm> answer;
    if (std::optional<NotMade> why = try_symmetric(answer)) return std::move(*why);
    if (answer) return std::move(*answer);
    routed_ = one_destination(c_.kind);
    // The plain matcher compares, at every match, the destinations of the chunks waiting at an NPU:
    // for large routed collectives (512 NPUs: 2^27 chunk-destinations) the ways spread like the
    // flow optimum are both better and far cheaper, and are the only ones built.
    matcher_affordable_ =
        !routed_ || static_cast<int64_t>(c_.num_chunks()) * c_.num_ranks() <= kRoutedMatcherWork;
    // Where the plain matcher's work is over SynthOptions::portfolio.matcher_work, `auto` leaves it
    // to the plans, else to the baselines (below); --method matcher runs it whatever it costs.
    server_plan_ = server_plan_applies(t_, c_);
    // (Beside a server plan, flat or over servers, the plain matcher gets a budget of its own.)
    servers_ = server_plan_ && !topo::detect_servers(t_).empty();
    matcher_budget_ =
        server_plan_ ? std::min(o_.portfolio.matcher_work, o_.portfolio.matcher_work_beside_servers)
        : symmetric_
            ? std::min(o_.portfolio.matcher_work, o_.portfolio.matcher_work_beside_symmetric)
            : o_.portfolio.matcher_work;
    if (flat_plan_first()) return std::move(*best_);
    run_matcher();
    if (any_ && o_.link_model == LinkModel::Pipelined && mixed_speeds(t_) && !out_of_time() &&
        !left_out(MatcherRun::UnderHold) && !routed_matchers_lose())
      run_under_hold();
    run_plans();
    // Nothing made without the scarce matcher (no plan applies here): it runs after all, unless
    // it could not beat the search's fastest anyway, or a plan that applies was left out too,
    // predicted not to win, where the baselines race at their own counts (the count makes
    // nothing, below: every way that applies is predicted to lose here).
    if (!best_ && !symmetric_ && left_out(scarce_run_) && !o_.portfolio.matchers_at_figure &&
        !every_way_left_out())
      run_matcher(/*even_left_out=*/true);
    if (!out_of_time()) run_random_matchers();
    if (best_ && routed_matchers_lost_ && !best_->provenance.matcher_left_out) {
      best_->method += fmt::format(
          " (auto leaves the matchers out: one chunk a step at full rate, they take at least {})",
          format_time(*routed_floor_));
      best_->provenance.matcher_left_out = true;
    }
    if (best_ && matcher_over_budget_ && (server_plan_ || beside_symmetric_) &&
        !best_->provenance.matcher_left_out) {
      best_->method += fmt::format(" ({} beside {}: --method matcher runs it)", kLeftOut,
                                   servers_       ? "a server plan on a cluster this large"
                                   : server_plan_ ? "a server plan on a switched fabric this large"
                                                  : "a symmetric schedule here");
      best_->provenance.matcher_left_out = true;
    }
    if (!best_ && matcher_over_budget_) {
      if (o_.portfolio.baselines_raced && !symmetric_)
        return NotMade{fmt::format(
            "method {}: every method that applies was left out at {} chunks per NPU (the plain "
            "matcher over its budget), and the baselines race at their own counts",
            to_string(o_.method), c_.chunks_per_npu)};
      fall_back_to_baselines();
    }
    consider_symmetric();
    if (!best_ && every_way_left_out())
      return NotMade{fmt::format(
          "method auto: nothing made at {} chunks per NPU: every method that applies was left "
          "out, predicted not to win, and the baselines race at their own counts",
          c_.chunks_per_npu)};
    if (!best_ && any_ && o_.portfolio.matchers_at_figure)
      return NotMade{fmt::format(
          "method auto: nothing made at {} chunks per NPU: no plan applies and the plain "
          "matcher's answer would take at least the search's fastest so far",
          c_.chunks_per_npu)};
    if (!best_)
      return NotMade{fmt::format(
          "method {}: no flow plan for this collective on this topology (tree plans cover "
          "All-Gather, Reduce-Scatter, All-Reduce, Broadcast and Reduce over every NPU, up to {} "
          "NPUs, and "
          "need every switch split off completely, which fails on some irregular fabrics; "
          "server plans cover All-Gather, Reduce-Scatter, All-Reduce, Broadcast and Reduce over "
          "every NPU of a cluster of equal servers (NPUs joined by their fastest links), and "
          "All-Gather, Reduce-Scatter and All-Reduce over every NPU that switches join without "
          "servers (flat, or over the switches' pods); "
          "All-to-All, Scatter and Gather have plan-matcher, and over every NPU that switches join "
          "without servers or pods a flat server plan)",
          to_string(o_.method), PackingOptions{}.max_npus)};
    return std::move(*best_);
  }

 private:
  // `a` in place of `best_` when faster, saying what made it (`method` in words, `made_by` typed).
  void consider(std::optional<Algorithm> a, std::string method, Provenance made_by) {
    if (a) set_reduce_bandwidth(t_, *a, o_.reduce_bandwidth);
    // (The matcher's All-Reduce in waves says so, once: synthesize_with.)
    if (a && a->provenance.waves > 0 && made_by.producer == Producer::Matcher &&
        made_by.waves == 0) {
      made_by.waves = a->provenance.waves;
      method += in_waves_words(made_by.waves);
    }
    if (a && (!best_ || a->claimed_time < best_->claimed_time)) {
      best_ = std::move(*a);
      best_->method = std::move(method);
      best_->provenance = std::move(made_by);
    }
  }
  // The same, saying what `a` says of itself.
  void consider_made(std::optional<Algorithm> a) {
    if (!a) return;
    std::string method = a->method;
    Provenance made_by = a->provenance;
    consider(std::move(a), std::move(method), std::move(made_by));
  }

  // On a topology that looks the same from every NPU, one rank's schedule moved to every NPU
  // (synth/plans/symmetric.hpp): N times less work than the matcher on every link. At the bound
  // (or near it, for a large algorithm: kSymmetricEnough) it is the answer, returned; else the
  // others run too and the fastest is kept (ties to the others): it waits in `symmetric_`, timed
  // but not written out for every NPU until it is kept (consider_symmetric).
  // Why not, where the symmetric method alone was asked for and does not apply.
  std::optional<NotMade> try_symmetric(std::optional<Algorithm>& answer) {
    if (!(any_ || o_.method == Method::Symmetric)) return std::nullopt;
    std::string why;
    symmetric_ = plan_symmetric(t_, c_, chunk_bytes_, o_.link_model, &why, o_.reduce_bandwidth);
    if (!symmetric_ && !any_) return NotMade{fmt::format("method symmetric: {}", why)};
    if (!symmetric_) return std::nullopt;
    const double ratio =
        static_cast<double>(symmetric_->time()) /
        static_cast<double>(lower_bound(t_, c_, chunk_bytes_, bounds_of(o_)).coarse);
    const bool large = static_cast<int64_t>(symmetric_->transfers()) > kPortfolioTransferBudget;
    if (!any_ || ratio <= 1 + kChunkSearchSlack || (large && ratio <= kSymmetricEnough)) {
      answer = symmetric_->algorithm();
      set_reduce_bandwidth(t_, *answer, o_.reduce_bandwidth);
      symmetric_.reset();
    }
    return std::nullopt;
  }

  // The symmetric schedule waiting, kept where it is faster than the fastest so far (ties to the
  // others, as consider keeps them), written out only then.
  void consider_symmetric() {
    if (symmetric_ && (!best_ || symmetric_->time() < best_->claimed_time))
      consider_made(symmetric_->algorithm());
    symmetric_.reset();
  }

  // Whether the scarce matcher and a plan that applies were both left out here (leave_out,
  // leave_out_server_plan, ...), predicted not to win, where the caller races the baselines.
  bool every_way_left_out() const {
    return any_ && o_.portfolio.baselines_raced && plans_left_out_ && left_out(scarce_run_);
  }

  // Whether `auto` leaves the matcher's run out (PortfolioOptions::leave_out).
  bool left_out(MatcherRun run) const {
    return any_ && (o_.portfolio.leave_out >> static_cast<unsigned>(run) & 1U) != 0;
  }
  // `a`, what the matcher's run made, to whoever asked (PortfolioOptions::on_matcher); under hold,
  // re-timed as it would run (run_under_hold).
  void report(MatcherRun run, const std::optional<Algorithm>& a) const {
    if (!a || !o_.portfolio.on_matcher) return;
    if (!to_retime_) return o_.portfolio.on_matcher(run, a->claimed_time);
    Algorithm pipelined = *a;
    pipelined.link_model = LinkModel::Pipelined;
    time(t_, pipelined);
    o_.portfolio.on_matcher(run, pipelined.claimed_time);
  }

  // Whether `auto` has an answer and its deadline has come (SynthOptions::deadline): the methods
  // not begun are left out.
  bool out_of_time() const { return any_ && best_ && o_.deadline && o_.deadline->reached(); }

  // The plain matcher (within its work budget under `auto`), unless left out (`even_left_out`: all
  // the same).
  void run_matcher(bool even_left_out = false) {
    const bool lose = routed_matchers_lose();
    routed_matchers_lost_ = routed_matchers_lost_ || lose;
    if (((any_ && matcher_affordable_) || o_.method == Method::Matcher) &&
        (even_left_out || !left_out(scarce_run_)) && !lose) {
      std::optional<Algorithm> a =
          synthesize_with(t_, c_, chunk_bytes_, o_, Method::Matcher, any_ ? matcher_budget_ : 0);
      matcher_over_budget_ = !a;
      report(scarce_run_, a);
      consider(std::move(a), "matcher", matcher_provenance(MatcherChoice::Scarce));
    }
    beside_symmetric_ = symmetric_.has_value();
    if (matcher_over_budget_) consider_symmetric();
  }

  // The best schedule under hold, re-timed: the pipelined model is never more constrained, so this
  // keeps pipelined results no worse than hold ones. Without the flow plan's pipelines: a
  // pipeline's transfers are the same under either model, and run_plans builds and times every
  // variant under the pipelined model it is judged by (only which split variants are tried
  // depends on the times). The matchers' schedules do depend on the model: they run.
  // Nothing made under hold (the plain matcher over its budget, and no symmetric schedule): it
  // adds nothing, and the rest of the portfolio decides.
  void run_under_hold() {
    SynthOptions hold = o_;
    hold.link_model = LinkModel::Hold;
    hold.progress = nullptr;
    hold.portfolio.random_choice =
        false;  // run under pipelined below, where it is timed as it will run
    hold.portfolio.on_plan = nullptr;  // its plans' times are under hold
    // (It reports its scarce matcher, re-timed, and leaves it out where asked: ScarceUnderHold; its
    // fastest, re-timed, is this run's time, below.)
    hold.to_beat = -1;  // a time under pipelined: no floor under hold compares with it
    hold.pipelines.predicted_against = -1;
    // (Its pipeline variants' times and floors are under hold: not the caller's to keep or read.)
    hold.pipelines.on_variant = nullptr;
    hold.pipelines.on_floor = nullptr;
    hold.pipelines.on_timed = nullptr;
    hold.pipelines.floors_before = nullptr;
    hold.floored = nullptr;
    // Its answer is the matcher's schedule under hold, or nothing: the baselines it would fall
    // back to are this portfolio's caller's to race, under the pipelined model.
    hold.portfolio.baselines_raced = true;
    Made<Algorithm> under_hold = Portfolio(t_, c_, chunk_bytes_, hold, true).run();
    if (std::holds_alternative<NotMade>(under_hold)) return;
    Algorithm& a = std::get<Algorithm>(under_hold);
    a.link_model = LinkModel::Pipelined;
    // Timed only where it may count. Its floor (synth::time_floor) over the fastest made here (the
    // symmetric schedule waiting included): never kept (ties go to the others), left out. At or
    // over the chunk search's time to beat (SynthOptions::to_beat): kept as that floor, untimed,
    // and said so (SynthOptions::floored), as the matcher's are.
    Time fastest = best_ ? best_->claimed_time : -1;
    if (symmetric_ && (fastest < 0 || symmetric_->time() < fastest)) fastest = symmetric_->time();
    const Time floor = time_floor(t_, a);
    if (fastest >= 0 && floor > fastest) {
      if (o_.portfolio.on_matcher) o_.portfolio.on_matcher(MatcherRun::UnderHold, floor);
      return;
    }
    if (o_.to_beat > 0 && floor >= o_.to_beat) {
      a.claimed_time = floor;
      if (o_.floored) *o_.floored = true;
    } else {
      time(t_, a);
    }
    if (o_.portfolio.on_matcher) o_.portfolio.on_matcher(MatcherRun::UnderHold, a.claimed_time);
    std::string method = a.method + std::string(kUnderHold);
    Provenance made_by = a.provenance;
    made_by.under_hold = true;
    consider(std::move(a), std::move(method), std::move(made_by));
  }

  // Under `auto`, whether the matchers' schedules of routed chunks (the plain matcher's, under
  // either model, and the ways') cannot beat the fastest so far, by their floor
  // (routed_matcher_floor): then none of them is run.
  bool routed_matchers_lose() {
    if (!any_ || !routed_ || !best_) return false;
    if (!routed_floor_) routed_floor_ = routed_matcher_floor(t_, c_, chunk_bytes_);
    return *routed_floor_ >= best_->claimed_time;
  }

  // Whether `a` (or a time) is over kMatcherGain (0.5 %) above the lower bound.
  bool short_of(const Algorithm& a) { return short_of(a.claimed_time); }
  bool short_of(Time time) {
    if (!bound_) bound_ = lower_bound(t_, c_, chunk_bytes_, bounds_of(o_)).coarse;
    return static_cast<double>(time) > (1 + kMatcherGain) * static_cast<double>(*bound_);
  }

  // Under `auto`, a flat server plan (switches join NPUs that form no servers) runs before the
  // matcher, and within short_of's 0.5 % of the bound it is the answer: nothing else can beat it by
  // more (as the plans are left out beside a matcher that close; past the first count the chunk
  // search leaves the matchers out where its fastest is that close, kMatcherGain). On such a
  // fabric the matcher's channels are every pair's routes, and its work grows with them
  // (leafspine:16x16's All-Reduce of 64 MiB: 9 s a count, where the plan is 1.0023x the bound at
  // one chunk per NPU). Whether it is the answer.
  bool flat_plan_first() {
    if (!any_ || !server_plan_ || servers_ || to_retime_ || o_.portfolio.leave_out_server_plan)
      return false;
    run_plan(Method::ServerPlan);
    server_plan_run_ = true;
    // (At or over SynthOptions::to_beat its time may be a floor: not how near it comes.)
    if (!best_ || short_of(*best_) || (o_.to_beat > 0 && best_->claimed_time >= o_.to_beat))
      return false;
    best_->method += fmt::format(
        " ({} beside a switched fabric's server plan within 0.5 % of the bound: "
        "--method matcher runs it)",
        kLeftOut);
    best_->provenance.matcher_left_out = true;
    return true;
  }

  // Method `m` with options `o`, against the fastest so far: a result whose floor
  // (synth::time_floor) is no faster than best_ cannot replace it, so it is not timed
  // (SynthOptions::to_beat; its reported time is then that floor). It replaces best_ where faster;
  // a floor that does (under the caller's own to_beat) says so to the caller, as before.
  // `*predicted` is set where the result was left unmade on a prediction of its time
  // (SynthOptions::predicted), as the caller's own (o.predicted) is.
  std::optional<Algorithm> made_against_best(const SynthOptions& o, Method m, bool* predicted) {
    SynthOptions against = o;
    against.predicted = predicted;
    bool floored = false;
    if (best_) {
      against.to_beat =
          o.to_beat > 0 ? std::min(o.to_beat, best_->claimed_time) : best_->claimed_time;
      against.floored = &floored;
    }
    std::optional<Algorithm> a = synthesize_with(t_, c_, chunk_bytes_, against, m);
    if (*predicted && o.predicted) *o.predicted = true;
    if (floored && a && a->claimed_time < best_->claimed_time && o.floored) *o.floored = true;
    return a;
  }

  // Plan `m`, in place of best_ where faster, reported (PortfolioOptions::on_plan): a prediction
  // where it stands as an algorithm of no transfers claiming one (a variant made after another was
  // predicted replaces that stand-in, but leaves SynthOptions::predicted set).
  void run_plan(Method m) {
    bool predicted = false;
    std::optional<Algorithm> plan = made_against_best(quiet_, m, &predicted);
    if (plan && o_.portfolio.on_plan)
      o_.portfolio.on_plan(m, plan->claimed_time, predicted && plan->size() == 0);
    consider_made(std::move(plan));
  }

  // The flow plan, where it applies and the matcher is not at the bound already; the server plan
  // first: it is cheap, and where it reaches the bound the trees are not needed.
  void run_plans() {
    const bool whole = spreads(c_.kind) && c_.num_ranks() == t_.num_npus();
    const bool trees = whole && t_.num_npus() <= PackingOptions{}.max_npus;
    for (Method m : {Method::ServerPlan, Method::PlanMatcher, Method::PlanPipeline}) {
      if (!(any_ || o_.method == m)) continue;
      if (m == Method::PlanPipeline && to_retime_) continue;
      // Under hold, not the server plan of an All-Gather, Reduce-Scatter or All-Reduce either:
      // where its rails pay to run at full rate they do under pipelined (staggered_ways), and
      // under hold its other ways (those inside a server, a flat plan's) hold whole links, paying
      // their steps in a row.
      if (m == Method::ServerPlan && to_retime_ && spreads(c_.kind) && !is_rooted(c_.kind))
        continue;
      const bool applies = routed_ || (m == Method::ServerPlan ? server_plan_ : trees);
      if (o_.method == SynthMethod::Auto &&
          ((m == Method::ServerPlan && o_.portfolio.leave_out_server_plan) ||
           (m == Method::PlanPipeline && o_.portfolio.leave_out_pipelines) ||
           (m == Method::PlanMatcher && o_.portfolio.leave_out_plan_matcher))) {
        plans_left_out_ = plans_left_out_ || applies;
        continue;
      }
      // (With the scarce matcher left out, predicted far behind the fastest: short of the bound.)
      if (any_ && (best_ || left_out(scarce_run_)) && !(applies && (!best_ || short_of(*best_))))
        continue;
      if (m == Method::ServerPlan && server_plan_run_) continue;
      if (m == Method::PlanMatcher && routed_matchers_lose()) continue;
      if (out_of_time()) return;
      run_plan(m);
    }
  }

  // On mixed speeds the scarce choice looks ahead along the fastest paths (pick_ahead), and every
  // slow link of a cut tends to pick the same chunks; a random choice among the scarcest, as TACOS
  // makes, spreads them over different ones. At the end a slow link's last transfer may arrive
  // after the fast ones would have brought everything, so it also runs with slow links yielding
  // the last chunks (SynthOptions::matcher.slow_links_yield). Where the plans have not reached the
  // bound, both run and the faster is kept.
  void run_random_matchers() {
    if (!(any_ && o_.portfolio.random_choice && !matcher_over_budget_ && matcher_affordable_ &&
          o_.matcher.priority == ChunkPriority::Scarce && mixed_speeds(t_) && best_ &&
          short_of(*best_) && !(symmetric_ && !short_of(symmetric_->time()))) ||
        routed_matchers_lose())
      return;
    SynthOptions random = quiet_;
    random.matcher.priority = ChunkPriority::Random;
    for (bool yield : {false, true}) {
      const MatcherRun run = yield ? MatcherRun::RandomYielding : MatcherRun::Random;
      if (left_out(run)) continue;
      random.matcher.slow_links_yield = yield;
      std::optional<Algorithm> a =
          synthesize_with(t_, c_, chunk_bytes_, random, Method::Matcher, matcher_budget_);
      report(run, a);
      consider(std::move(a), std::string(yield ? kRandomYieldingMatcher : kRandomMatcher),
               matcher_provenance(yield ? MatcherChoice::RandomYielding : MatcherChoice::Random));
    }
  }

  // Nothing made and the matcher left out: the fastest baseline, else the matcher after all.
  void fall_back_to_baselines() {
    auto method = [&](const BaselineSpec& spec) {
      return fmt::format("baseline {} ({} on a fabric this large: --method matcher runs it)",
                         spec.name(), kLeftOut);
    };
    auto baseline = [](const BaselineSpec& spec) {
      Provenance p = Provenance::of_baseline(spec.name());
      p.matcher_left_out = true;
      return p;
    };
    // Where two algorithms of this size may not fit in memory at once, each baseline is timed and
    // dropped, and the fastest made again.
    const uint64_t memory = topo::available_memory();
    const bool one_at_a_time =
        memory != 0 &&
        2 * kSynthBytesPerTransfer * static_cast<uint64_t>(transfer_estimate(c_)) > memory;
    std::optional<std::pair<Time, BaselineSpec>> fastest;
    for_each_baseline(t_, c_, [&](const BaselineSpec& spec) {
      Made<Algorithm> made_here = try_baseline(spec, t_, c_, chunk_bytes_, o_.link_model,
                                               o_.reduce_bandwidth, true, baselines_of(o_));
      if (!made(made_here)) return;
      Algorithm a = std::move(std::get<Algorithm>(made_here));
      a.name = "tenet";
      if (!one_at_a_time) return consider(std::move(a), method(spec), baseline(spec));
      set_reduce_bandwidth(t_, a, o_.reduce_bandwidth);
      if (!fastest || a.claimed_time < fastest->first) fastest = {a.claimed_time, spec};
    });
    if (fastest) {
      Algorithm a = make_baseline(fastest->second, t_, c_, chunk_bytes_, o_.link_model,
                                  o_.reduce_bandwidth, true, baselines_of(o_));
      a.name = "tenet";
      consider(std::move(a), method(fastest->second), baseline(fastest->second));
    }
    if (!best_)
      consider(synthesize_with(t_, c_, chunk_bytes_, o_, Method::Matcher), "matcher",
               matcher_provenance(MatcherChoice::Scarce));
  }

  const topo::Topology& t_;
  const Collective& c_;
  Bytes chunk_bytes_;
  const SynthOptions& o_;
  bool any_;
  bool to_retime_;         // run under hold to be re-timed: no pipelines (run_under_hold)
  MatcherRun scarce_run_;  // its scarce matcher's run: under hold where it runs under hold
  SynthOptions quiet_;     // o_ without progress
  std::optional<Algorithm> best_;
  std::optional<SymmetricSchedule> symmetric_;  // timed, waiting (try_symmetric)
  std::optional<Time> bound_;                   // the lower bound, once asked for
  bool routed_ = false, matcher_affordable_ = false, servers_ = false, server_plan_ = false;
  double matcher_budget_ = 0;
  bool matcher_over_budget_ = false, beside_symmetric_ = false;
  bool server_plan_run_ = false;       // before the matcher (flat_plan_first)
  bool plans_left_out_ = false;        // a plan that applies, left out on its prediction
  std::optional<Time> routed_floor_;   // routed_matcher_floor, once asked for
  bool routed_matchers_lost_ = false;  // the plain matcher was left out by it
};

}  // namespace

bool server_plan_applies(const topo::Topology& t, const Collective& c) {
  if (c.num_ranks() != t.num_npus()) return false;
  // Routed chunks: a flat plan only (Planned's flat_routed_matcher), every NPU a group of its own;
  // over pods (plan_groups) no plan is made for them.
  if (one_destination(c.kind))
    return flat_servers(t) && plan_groups(t).size() == static_cast<size_t>(t.num_npus());
  if (!spreads(c.kind)) return false;
  // A flat plan (no servers) for the collectives spread to or from every rank, not from a root.
  return !topo::detect_servers(t).empty() || (!is_rooted(c.kind) && flat_servers(t));
}

// Every method that applies, the fastest kept (ties to the first): the plain matcher; on
// mixed-speed topologies the matcher under `hold` re-timed under the pipelined model (hold keeps
// slow links from taking chunks a faster way would bring, which the pipelined greedy misjudges);
// and the matcher on the flow plan.
Made<Algorithm> synthesize_once(const topo::Topology& t, const Collective& c, Bytes chunk_bytes,
                                const SynthOptions& o) {
  return Portfolio(t, c, chunk_bytes, o).run();
}

namespace {

// Why for_each_baseline leaves a baseline out: Ranks or Transfers for its size alone
// (BaselineLeftOut::Why); Apart for anything else (it does not apply, cannot run under the
// topology's protocol, or is never the fastest, or the same as another, here).
enum class Skip : uint8_t { Apart, Ranks, Transfers };

// Why for_each_baseline leaves baseline `b` out for `c` on `t`, or nothing where it is built.
// `joined`: whether the ranks are joined pairwise, asked once where a baseline needs it.
std::optional<Skip> left_out_why(BaselineKind b, const topo::Topology& t, const Collective& c,
                                 std::optional<bool>& joined) {
  if (!supports(b, c.kind)) return Skip::Apart;
  // The hierarchical All-to-All is ASTRA-sim's native one (a store-and-forward ring per
  // dimension), there for `tenet sim --system` and `--algo hierarchical`; the portfolio keeps
  // the candidates it had (direct's exchange, the flat ring, the synthesizer).
  if (b == BaselineKind::Hierarchical && c.kind == CollectiveKind::AllToAll) return Skip::Apart;
  // Under a protocol the baseline cannot run (NCCL's NVLS in Simple only).
  if (t.applied() && t.applied()->excludes_producer(BaselineSpec{b, {}}.name())) return Skip::Apart;
  // NCCL's tree over NPUs that make no servers is one channel of the double binary tree over
  // the ranks in order: dbt's transfers exactly (listed before it, so it wins their ties).
  if (b == BaselineKind::Tree && topo::servers_of(t, c.ranks).empty()) return Skip::Apart;
  if (b == BaselineKind::Direct || b == BaselineKind::Rhd || b == BaselineKind::Bruck ||
      b == BaselineKind::Oneshot) {
    if (!joined) joined = topo::npus_joined_pairwise(t, c.ranks);
    if (!*joined) return Skip::Apart;
  }
  // Left out for their size alone (baselines_left_out_for_size), `--algo` builds them:
  // A ring All-to-All carries each chunk half way round on average: beyond the synthesizer's own
  // budget (512 NPUs: 67M transfers) it is not built.
  if (b == BaselineKind::Ring && c.kind == CollectiveKind::AllToAll &&
      static_cast<double>(c.num_chunks()) * c.num_ranks() / 2 >
          static_cast<double>(kAutoChunkTransferBudget))
    return Skip::Transfers;
  if (b == BaselineKind::Blink && c.num_ranks() > kBlinkPortfolioRanks) return Skip::Ranks;
  // One-shot sends each of its chunks (k in all) from every rank to every other.
  if (b == BaselineKind::Oneshot &&
      static_cast<double>(c.all_reduce_chunks > 0 ? c.all_reduce_chunks : c.chunks_per_npu) *
              c.num_ranks() * (c.num_ranks() - 1) >
          static_cast<double>(kAutoChunkTransferBudget))
    return Skip::Transfers;
  return std::nullopt;
}

}  // namespace

// Every baseline the portfolio builds for `c` on `t`, passed to `make` (which meets one that does
// not apply after all as try_baseline's NotMade). Direct, halving-doubling, Bruck and one-shot
// talk to far ranks: where NPUs would relay for them (a torus), they multiply their transfers by
// the hop count and are never the fastest (one-shot does not apply), so they are left out there.
void for_each_baseline(const topo::Topology& t, const Collective& c,
                       const std::function<void(const BaselineSpec&)>& make) {
  std::optional<bool> joined;
  for (BaselineKind b : all_baselines())
    if (!left_out_why(b, t, c, joined)) make(BaselineSpec{b, {}});
}

bool races_in_time(const BaselineSpec& spec, const Collective& c, const Deadline* deadline) {
  if (!deadline) return true;
  Collective one = c;
  one.chunks_per_npu = 1;
  int64_t transfers = transfer_estimate(one);
  // (Halving-doubling and Bruck: a message a rank and step, log P steps a phase.)
  if (spec.kind == BaselineKind::Rhd || spec.kind == BaselineKind::Bruck) {
    const int steps = std::bit_width(static_cast<unsigned>(c.num_ranks() - 1));  // ceil(log2 P)
    transfers = std::min(transfers, int64_t{2} * c.num_ranks() * std::max(1, steps));
  }
  return transfers <= kPortfolioTransferBudget ||
         !deadline->reached(kSearchSecondsPerTransfer * static_cast<double>(transfers));
}

// Whether the baselines may still beat `best` by more than it costs to build them (see
// SynthOptions::portfolio.baselines).
bool portfolio_worth_it(const topo::Topology& t, const Collective& c, Bytes chunk_bytes,
                        const Algorithm& best, BoundMemo* memo) {
  if (transfer_estimate(c) <= kPortfolioTransferBudget) return true;
  for (topo::NodeId v = 0; v < t.num_nodes(); ++v)
    if (t.node(v).can_reduce) return true;  // nvls may beat the RS+AG figure (LowerBound::coarse)
  // (The thresholds' figure, or the bound itself where its per-step costs make it higher.)
  const LowerBound bound = lower_bound(t, c, chunk_bytes, memo);
  return static_cast<double>(best.claimed_time) >
         static_cast<double>(std::max(bound.coarse, bound.total)) * (1 + kPortfolioSlack);
}

// `candidate` in place of `best` when it is faster, as tenet's own, saying which baseline it is.
void keep_if_faster(Algorithm& best, Algorithm candidate, const BaselineSpec& spec) {
  if (candidate.claimed_time >= best.claimed_time) return;
  candidate.method = "baseline " + spec.name();
  candidate.provenance = Provenance::of_baseline(spec.name());
  candidate.name = best.name;
  best = std::move(candidate);
}

void displace_answer(ChunkingResult& r, Algorithm faster, int chunks_per_npu) {
  if (!r.runner_up) r.runner_up = std::move(r.algorithm);  // (trimmed after the doublings)
  r.algorithm = std::move(faster);
  r.chunks_per_npu = chunks_per_npu;
}

void trim_runner_up(ChunkingResult& r, bool wanted) {
  if (r.runner_up &&
      (!wanted || r.runner_up->provenance.producer == r.algorithm.provenance.producer ||
       static_cast<double>(r.runner_up->claimed_time) >
           kRunnerUpNear * static_cast<double>(r.algorithm.claimed_time)))
    r.runner_up.reset();
}

}  // namespace tenet::synth::detail

namespace tenet::synth {

std::vector<BaselineLeftOut> baselines_left_out_for_size(const topo::Topology& t,
                                                         const Collective& c) {
  std::vector<BaselineLeftOut> out;
  std::optional<bool> joined;
  for (BaselineKind b : all_baselines()) {
    const std::optional<detail::Skip> why = detail::left_out_why(b, t, c, joined);
    if (why == detail::Skip::Ranks || why == detail::Skip::Transfers)
      out.push_back({BaselineSpec{b, {}}.name(), why == detail::Skip::Ranks
                                                     ? BaselineLeftOut::Why::Ranks
                                                     : BaselineLeftOut::Why::Transfers});
  }
  return out;
}

}  // namespace tenet::synth
