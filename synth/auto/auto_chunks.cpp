// synthesize_auto_chunks (synth/synthesizer.hpp): the flat chunk search (chunk_search.hpp), and the
// composition per level (composed_search.hpp) in its place on clusters of servers too large for it,
// or beside it where it ends short of the bound; the answer's drain at full rate; beside a
// Reduce-Scatter's pipelines on a topology that is its own reverse, its All-Gather's answer
// reversed in time; and beside an All-Reduce's answer, its halves' own answers joined in turn
// (PortfolioOptions::halves_answers).
#include <fmt/format.h>

#include <optional>
#include <span>
#include <utility>
#include <variant>
#include <vector>

#include "synth/auto/chunk_search.hpp"
#include "synth/auto/composed_search.hpp"
#include "synth/auto/portfolio.hpp"
#include "synth/auto/size_history.hpp"
#include "synth/bounds/lower_bound.hpp"
#include "synth/groups/composed.hpp"
#include "synth/memo.hpp"
#include "synth/plans/all_reduce.hpp"
#include "synth/plans/full_rate_drain.hpp"
#include "synth/plans/reversed_answer.hpp"
#include "synth/plans/tail_spread.hpp"
#include "synth/synthesizer.hpp"
#include "synth/tuning.hpp"

namespace tenet::synth {

using namespace detail;

ChunkingResult synthesize_auto_chunks(const topo::Topology& t, Collective c, Bytes total_bytes,
                                      const SynthOptions& o, int max_chunks_per_npu) {
  Made<ChunkingResult> r =
      try_synthesize_auto_chunks(t, std::move(c), total_bytes, o, max_chunks_per_npu);
  if (const NotMade* why = std::get_if<NotMade>(&r)) throw NotApplicable(why->why);
  return std::move(std::get<ChunkingResult>(r));
}

namespace {

Made<ChunkingResult> searched(const topo::Topology& t, Collective c, Bytes total_bytes,
                              const SynthOptions& o, int max_chunks_per_npu) {
  const bool servers = composed_servers(t, c).has_value();
  if (o.method == SynthMethod::Composed ||
      (o.method == SynthMethod::Auto && servers && flat_out_of_reach(c)))
    return composed_auto_chunks(t, c, total_bytes, o, max_chunks_per_npu);  // says why where none
  Made<ChunkingResult> flat = flat_auto_chunks(t, c, total_bytes, o, max_chunks_per_npu);
  if (std::holds_alternative<NotMade>(flat)) return flat;
  ChunkingResult& best = std::get<ChunkingResult>(flat);
  // Where the flat search ends short of the bound (a cluster too large for more than one chunk
  // per NPU), the composition may do better.
  // (Not where it lost by far at a size near this one: PortfolioOptions::across_sizes.)
  const bool learn = learns_across_sizes(o);
  const Way composition = Way::of(SynthMethod::Composed);
  if (o.method == SynthMethod::Auto && servers && c.all_reduce_chunks == 0 &&
      !within_bound(t, best.algorithm, kComposeAbove, bounds_of(o)) &&
      !(o.deadline && o.deadline->reached()) &&
      !(learn && o.memo->sizes.loses(t, c, total_bytes, composition))) {
    Made<ChunkingResult> made_composed =
        composed_auto_chunks(t, c, total_bytes, o, max_chunks_per_npu, best.algorithm.claimed_time);
    if (ChunkingResult* composed = made(made_composed)) {
      const Time composed_time = composed->algorithm.claimed_time;
      best.tried.insert(best.tried.end(), composed->tried.begin(), composed->tried.end());
      if (composed_time < best.algorithm.claimed_time) {
        best.algorithm = std::move(composed->algorithm);
        best.chunks_per_npu = composed->chunks_per_npu;
      }
      if (learn)
        o.memo->sizes.record(t, c, total_bytes, {{composition, composed_time}},
                             best.algorithm.claimed_time);
    }
  }
  return flat;
}

}  // namespace

namespace {

// Whether the halves' own answers of the All-Reduce `c` may apply at all
// (PortfolioOptions::halves_answers): `auto` chose and nothing stopped the search.
bool halves_apply(const Collective& c, const SynthOptions& o) {
  return c.kind == CollectiveKind::AllReduce && c.all_reduce_chunks == 0 && !c.uneven() &&
         o.portfolio.halves_answers && o.method == SynthMethod::Auto &&
         !(o.deadline && o.deadline->reached());
}

// The halves-in-turn figure (synth::halves_in_turn_bound) of the All-Reduce answer `a` where `a`
// ends over kHalvesAnswersOver of it (a bound on a Reduce-Scatter then an All-Gather; each NPU's
// in turn may end a little under it).
std::optional<HalvesInTurn> halves_may_beat(const topo::Topology& t, const Algorithm& a,
                                            const SynthOptions& o) {
  std::optional<HalvesInTurn> h =
      halves_in_turn_bound(t, a.collective, a.chunk_bytes, a.step_costs, bounds_of(o));
  if (!h ||
      static_cast<double>(a.claimed_time) <= kHalvesAnswersOver * static_cast<double>(h->total()))
    return std::nullopt;
  return h;
}

// The figure of halves_may_beat where the halves alone can also do what `a` cannot: `a` is the
// flow plan's pipelines (whose drain at full rate re-rates the All-Gather's tail alone, where each
// half searched alone drains its own), the links differ both ways (not `twin`: no
// topo::twin_links, each half may take a method of its own), or the answers' tails are listed
// again (PortfolioOptions::tail_spread): the Reduce-Scatter's own answer lists its first
// reductions again too (spread_head), where `a`'s finishing passes reach only its copies after its
// last reduction. Elsewhere the halves' answers mirror each other, and the whole's search joins
// them by each method.
std::optional<HalvesInTurn> halves_may_win(const topo::Topology& t, const Collective& c,
                                           const Algorithm& a, const SynthOptions& o, bool twin) {
  if (!halves_apply(c, o)) return std::nullopt;
  if (a.provenance.producer != Producer::FlowPlanPipelines && twin && !o.portfolio.tail_spread)
    return std::nullopt;
  return halves_may_beat(t, a, o);
}

// An answer's drain at full rate (each try a timing of it) and its last deliveries listed again
// (spread_tail: a timing), where the options have them. A Reduce-Scatter's first reductions are
// finished instead, through its reverse in time where the topology is its own reverse
// (spread_head: its reverse drained and listed again, reversed back), then its own tail drained.
void finish(const topo::Topology& t, Algorithm& a, const SynthOptions& o) {
  const bool head = a.collective.kind == CollectiveKind::ReduceScatter;
  if (head && o.portfolio.tail_spread)
    if (const std::optional<std::vector<LinkId>> twins = topo::twin_links(t))
      spread_head(t, a, *twins, o.portfolio.full_rate_drain, o.deadline);
  if (o.portfolio.full_rate_drain) drain_at_full_rate(t, a, o.deadline);
  if (!head && o.portfolio.tail_spread) spread_tail(t, a, o.deadline);
}

// `r`'s answer finished (finish), and beside it its runner-up (ChunkingResult::runner_up), where
// it has one and time is left: the faster finished is the answer.
void finish_answer(const topo::Topology& t, ChunkingResult& r, const SynthOptions& o) {
  finish(t, r.algorithm, o);
  if (!r.runner_up) return;
  Algorithm other = std::move(*r.runner_up);
  r.runner_up.reset();
  if (o.deadline && o.deadline->reached()) return;
  finish(t, other, o);
  if (other.claimed_time < r.algorithm.claimed_time) {
    r.chunks_per_npu = other.collective.chunks_per_npu;
    r.algorithm = std::move(other);
  }
}

// The All-Gather answer `ag` (made at `chunks_per_npu`) reversed in time into a Reduce-Scatter
// (reduce_scatter_reversed, over `twins`), as a chunk search's result, its method saying so.
std::optional<ChunkingResult> reversed_answer(const topo::Topology& t, const Algorithm& ag,
                                              int chunks_per_npu, std::span<const LinkId> twins) {
  std::optional<Algorithm> reversed = reduce_scatter_reversed(t, ag, twins);
  if (!reversed) return std::nullopt;
  reversed->method = fmt::format("the All-Gather's answer reversed in time ({})", reversed->method);
  ChunkingResult out;
  out.algorithm = std::move(*reversed);
  out.chunks_per_npu = chunks_per_npu;
  return out;
}

// A Reduce-Scatter `c`'s All-Gather's answer (its search, finished) reversed in time
// (reduce_scatter_reversed, over `twins`: the topology is its own reverse). The flow plan's
// pipelines plan a Reduce-Scatter's streams as its own, not as the All-Gather's mirror, so their
// head is not their All-Gather's tail, and their finishing passes do not reach it (spread_head
// finds no tail to list again in their reverse); the All-Gather's answer finished reverses in its
// time. Nothing where the All-Gather's search made nothing.
std::optional<ChunkingResult> gathered_reversed(const topo::Topology& t, const Collective& c,
                                                Bytes total_bytes, const SynthOptions& o,
                                                int max_chunks_per_npu,
                                                std::span<const LinkId> twins) {
  Collective ag = c;
  ag.kind = CollectiveKind::AllGather;
  Made<ChunkingResult> gathered = searched(t, ag, total_bytes, o, max_chunks_per_npu);
  ChunkingResult* g = made(gathered);
  if (!g) return std::nullopt;
  finish_answer(t, *g, o);
  return reversed_answer(t, g->algorithm, g->chunks_per_npu, twins);
}

// A Reduce-Scatter's All-Gather's answer reversed (gathered_reversed), made at most once, where
// `auto` chooses, the tails are listed again and the topology is its own reverse (`twins`): on
// demand from its search before the flow plan's pipelines double alone
// (PortfolioOptions::rival_first), else where they are its answer.
struct Mirror {
  std::optional<std::vector<LinkId>> twins;
  bool asked = false;
  std::optional<ChunkingResult> answer;

  Mirror(const topo::Topology& t, const Collective& c, const SynthOptions& o) {
    if (c.kind == CollectiveKind::ReduceScatter && o.method == SynthMethod::Auto &&
        o.portfolio.tail_spread)
      twins = topo::twin_links(t);
  }

  // The answer, made now unless asked before, where `fastest` (of `c`'s own search: a
  // composition's searches of its groups pass the hook on) is the pipelines' or, before they
  // double alone (`doubling`), over kPipelinesPersist of the bound: there they double to their
  // budget, at their costliest counts, which the answer spares where it beats them. Nothing where
  // it does not apply.
  const ChunkingResult* ask(const topo::Topology& t, const Collective& c, Bytes total_bytes,
                            const SynthOptions& o, int max_chunks_per_npu, const Algorithm& fastest,
                            bool doubling) {
    if (!asked && twins && fastest.collective.ranks == c.ranks &&
        (fastest.provenance.producer == Producer::FlowPlanPipelines ||
         (doubling && !within_bound(t, fastest, kPipelinesPersist, bounds_of(o)))) &&
        !(o.deadline && o.deadline->reached())) {
      asked = true;
      answer = gathered_reversed(t, c, total_bytes, o, max_chunks_per_npu, *twins);
    }
    return answer ? &*answer : nullptr;
  }
};

// The search's answer finished; a Reduce-Scatter's also against its All-Gather's answer reversed,
// where `mirror` is given (Mirror).
Made<ChunkingResult> drained(const topo::Topology& t, Collective c, Bytes total_bytes,
                             const SynthOptions& o, int max_chunks_per_npu,
                             Mirror* mirror = nullptr) {
  Made<ChunkingResult> r = searched(t, c, total_bytes, o, max_chunks_per_npu);
  ChunkingResult* best = made(r);
  if (!best) return r;
  const ChunkingResult* mirrored =
      mirror ? mirror->ask(t, c, total_bytes, o, max_chunks_per_npu, best->algorithm,
                           /*doubling=*/false)
             : nullptr;
  // (Once, on whatever way won.)
  finish_answer(t, *best, o);
  if (mirrored && mirrored->algorithm.claimed_time < best->algorithm.claimed_time) {
    std::vector<ChunkingResult::Try> tried = std::move(best->tried);
    *best = std::move(*mirror->answer);
    best->tried = std::move(tried);
  }
  return r;
}

// The All-Reduce `c`'s halves' own answers (their searches, drains and all) joined in turn: the
// All-Gather's first, and the Reduce-Scatter's only where the two may beat `fastest` by
// kDoublingGain, its time taken as the All-Gather's over its bound times its own bound (`h`: a
// prediction, not a floor: on links that differ both ways the halves may fare differently). Like
// with like: the All-Gather's time after its finishing passes (finish) where `fastest` is after
// its own (`finished`), else before them (a search's fastest so far).
// `twins`: the topology's (topo::twin_links), where it is its own reverse. Nothing where they were
// not all made.
std::optional<Algorithm> halves_joined(const topo::Topology& t, const Collective& c,
                                       Bytes total_bytes, const SynthOptions& o,
                                       int max_chunks_per_npu, const HalvesInTurn& h, Time fastest,
                                       bool finished,
                                       const std::optional<std::vector<LinkId>>& twins) {
  SynthOptions half = o;
  half.portfolio.rival_first = nullptr;
  // (The whole's search reported its fraction done; the halves keep it reported, so that a log
  // still gets its lines while they run.)
  if (o.progress) half.progress = [&o](double) { o.progress(1.0); };
  half.portfolio.chunk_transfers = o.portfolio.chunk_transfers / 2;  // (joined: the whole's)
  Collective rs = c, ag = c;
  rs.kind = CollectiveKind::ReduceScatter;
  ag.kind = CollectiveKind::AllGather;
  // Where the topology is its own reverse, the All-Gather's answer before its drain, for the
  // Reduce-Scatter's (below).
  Made<ChunkingResult> second = searched(t, ag, total_bytes, half, max_chunks_per_npu);
  if (!made(second)) return std::nullopt;
  std::optional<Algorithm> undrained;
  if (twins) undrained = made(second)->algorithm;
  // (Where `fastest` is before its finishing passes, the All-Gather's are run only where the
  // halves are made.)
  if (finished) finish_answer(t, *made(second), half);
  const double gathered = static_cast<double>(made(second)->algorithm.claimed_time);
  const double predicted = gathered + gathered * static_cast<double>(h.reduce_scatter.total) /
                                          static_cast<double>(h.all_gather.total);
  if (predicted >= (1 - kDoublingGain) * static_cast<double>(fastest) ||
      (o.deadline && o.deadline->reached()))
    return std::nullopt;
  if (!finished) finish_answer(t, *made(second), half);
  // The Reduce-Scatter's answer, on a topology that is its own reverse: the All-Gather's answer
  // finished, reversed in time (reversed_answer.hpp), where that takes the All-Gather's time (a
  // reversal keeps its one queue per port in the mirror of its twin's order); else the All-Gather's
  // answer before its finishing passes reversed, where that takes the All-Gather's time (its own
  // search plans the same trees, each link its twin), then finished as its own (its head through
  // its reverse, drained and listed again as the All-Gather's answer was: spread_head). Elsewhere
  // its own search.
  Made<ChunkingResult> first = NotMade{};
  if (twins)
    if (std::optional<ChunkingResult> mirrored =
            reversed_answer(t, made(second)->algorithm, made(second)->chunks_per_npu, *twins);
        mirrored && mirrored->algorithm.claimed_time <= made(second)->algorithm.claimed_time)
      first = std::move(*mirrored);
  if (undrained && !made(first))
    if (std::optional<ChunkingResult> mirrored =
            reversed_answer(t, *undrained, made(second)->chunks_per_npu, *twins);
        mirrored && mirrored->algorithm.claimed_time <= undrained->claimed_time) {
      finish(t, mirrored->algorithm, half);
      first = std::move(*mirrored);
    }
  // (Not against the All-Gather's answer reversed again: where the topology is its own reverse,
  // tried above.)
  if (!made(first)) first = drained(t, rs, total_bytes, half, max_chunks_per_npu);
  if (!made(first)) return std::nullopt;
  return answers_in_turn(t, c, made(first)->algorithm, made(second)->algorithm);
}

}  // namespace

Made<ChunkingResult> try_synthesize_auto_chunks(const topo::Topology& t, Collective c,
                                                Bytes total_bytes, const SynthOptions& o,
                                                int max_chunks_per_npu) {
  if (!o.memo) {  // the search's own (its halves' too), for as long as it lasts
    SynthMemo memo;
    SynthOptions with = o;
    with.memo = &memo;
    return try_synthesize_auto_chunks(t, std::move(c), total_bytes, with, max_chunks_per_npu);
  }
  // The halves' answers, made at most once: on a topology that is its own reverse, on demand
  // from the whole's search before its pipelines double alone (PortfolioOptions::rival_first),
  // where the fastest so far may be beaten (halves_may_beat); else after the search, where its
  // answer may be (halves_may_win).
  bool asked = false;
  std::optional<Algorithm> halves;
  std::optional<std::vector<LinkId>> twins;  // (asked only where the halves may be made)
  if (halves_apply(c, o)) twins = topo::twin_links(t);
  SynthOptions whole = o;
  whole.portfolio.rival_first = nullptr;
  if (twins)
    whole.portfolio.rival_first = [&](const Algorithm& fastest) -> const Algorithm* {
      // (Only for this All-Reduce: a composition's searches of its groups pass it on.)
      if (!asked && fastest.collective.ranks == c.ranks && !(o.deadline && o.deadline->reached()))
        if (const std::optional<HalvesInTurn> h = halves_may_beat(t, fastest, o)) {
          asked = true;
          halves = halves_joined(t, c, total_bytes, o, max_chunks_per_npu, *h, fastest.claimed_time,
                                 /*finished=*/false, twins);
        }
      return halves ? &*halves : nullptr;
    };
  // A Reduce-Scatter's All-Gather's answer reversed, made at most once (Mirror).
  Mirror mirror(t, c, o);
  if (mirror.twins)
    whole.portfolio.rival_first = [&](const Algorithm& fastest) -> const Algorithm* {
      const ChunkingResult* m =
          mirror.ask(t, c, total_bytes, o, max_chunks_per_npu, fastest, /*doubling=*/true);
      return m ? &m->algorithm : nullptr;
    };
  Made<ChunkingResult> r = drained(t, c, total_bytes, whole, max_chunks_per_npu, &mirror);
  ChunkingResult* best = made(r);
  if (!best) return r;
  if (!asked)
    if (const std::optional<HalvesInTurn> h =
            halves_may_win(t, c, best->algorithm, o, twins.has_value()))
      halves = halves_joined(t, c, total_bytes, o, max_chunks_per_npu, *h,
                             best->algorithm.claimed_time, /*finished=*/true, twins);
  if (halves && halves->claimed_time < best->algorithm.claimed_time) {
    best->chunks_per_npu = halves->collective.chunks_per_npu;
    best->algorithm = std::move(*halves);
  }
  return r;
}

}  // namespace tenet::synth
