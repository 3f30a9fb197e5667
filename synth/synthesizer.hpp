// The TEN synthesizer: a link-chunk matcher on the time-expanded network.
//
// Time advances from event to event (arrivals, links becoming free). At each event, every channel
// that may have become useful (one of its links freed, or its source received a chunk) is matched
// with the best chunk its source holds and its destination still needs. A channel is a direct
// NPU-to-NPU link, or a least-cost route through switches (several when equal-cost routes exist).
// Work per event is proportional to the channels touched and the chunk words they compare, never
// to N^2 pairs; who-holds-what is a bitset per NPU.
//
// All-Gather and Broadcast spread chunks (non-member NPUs on shortest paths between members act as
// relays). Scatter and All-to-All route each chunk to its one destination: along shortest paths
// (the plain matcher), or along ways chosen beforehand to spread the load over the links as the
// multicommodity-flow optimum does (plan-matcher; see topo/flow_bound.hpp).
// Reduce-Scatter, Reduce and Gather are All-Gather, Broadcast and Scatter synthesized on the
// reversed topology and reversed in time (sends become reductions). All-Reduce is Reduce-Scatter
// followed by All-Gather, each chunk's All-Gather starting as soon as it is reduced.
//
// The result is timed by synth::time, so its claimed time is exactly the timing model's.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "synth/auto/deadline.hpp"
#include "synth/ir/algorithm.hpp"
#include "synth/ir/outcome.hpp"
#include "synth/tuning.hpp"
#include "topo/topology.hpp"

namespace tenet::synth {

class PipelineCalibration;  // synth/plans/pipeline_calibration.hpp

// Which chunk a channel carries when its source holds several its destination needs.
enum class ChunkPriority : uint8_t {
  Scarce,  // the one the fewest of the destination's other in-neighbours could deliver, then
           // the rarest: keeps every in-link of a destination stocked with chunks only it brings
  Rarest,  // the one the fewest NPUs hold (spreads diversity, as BitTorrent does)
  Random,  // at every match, a random one (seeded: reproducible) among the scarcest, as TACOS
           // picks at random: parallel slow links then carry different chunks. On mixed speeds
           // it replaces Scarce's look-ahead; `auto` tries it there beside Scarce
  Lowest,  // the lowest chunk id (a baseline for the measurements)
};
std::string_view to_string(ChunkPriority p);
ChunkPriority parse_chunk_priority(std::string_view name);

// How the synthesizer builds its schedule. Auto tries every way that applies and keeps the fastest.
enum class SynthMethod : uint8_t {
  Auto,
  Matcher,       // the link-chunk matcher alone (and, on mixed-speed links, its `hold` schedule
                 // re-timed)
  PlanMatcher,   // the matcher, routing every chunk along its tree of the flow plan (All-to-All,
                 // Scatter, Gather: along its way spread like the flow optimum)
  PlanPipeline,  // the flow plan's trees as pipelines at their fluid rates
  ServerPlan,    // the matcher on the hierarchical plan of a cluster of servers
                 // (synth/plans/server_plan.hpp)
  Composed,   // an All-Reduce over a cluster of servers composed per level: Reduce-Scatter in each
              // server, All-Reduce across servers GPU by GPU, All-Gather in each server
              // (synth/groups/composed.hpp); k chunks per NPU inside the servers, G*k in all
  Symmetric,  // on a topology that looks the same from every NPU (a torus, ring or hypercube,
              // servers on rails, a switch),
              // one rank's schedule on the links out of an NPU, moved to every other NPU
              // (synth/plans/symmetric.hpp): All-Gather, Reduce-Scatter, All-Reduce, All-to-All
              // over every NPU
};
std::string_view to_string(SynthMethod m);
SynthMethod parse_synth_method(std::string_view name);

// The matcher's own options (SynthMethod::Matcher, and wherever the matcher runs).
struct MatcherOptions {
  ChunkPriority priority = ChunkPriority::Scarce;
  // With priority Random: a slow channel leaves the last chunks its destination wants to faster
  // ones that hold them, once those would bring everything the destination still wants before its
  // own transfer arrived. On mixed speeds, where the plans fall short of the bound, `auto` runs
  // Random both ways beside Scarce.
  bool slow_links_yield = false;
};

// The flow plan's pipelines' options (SynthMethod::PlanPipeline).
struct PipelineOptions {
  // On mixed speeds, where their other variants end far from the bound: also with each stream's
  // chunks split, several at once at a fraction of its rate. The chunk search leaves them to the
  // counts past its own, where the pipelines double alone (at few chunks the split's longer fill
  // loses, and each is a timing of the whole algorithm).
  bool split = true;
  // Only the variants whose bits are set (bit v is variant v, an opaque number on_variant reports),
  // where they apply; 0: every variant that applies. The chunk search runs the kVariantsPast
  // fastest at the count before alone past kPipelineAllVariantsTransfers.
  uint64_t variants = 0;
  // The variants left out (bit v set: variant v is not made, whatever `variants` says): the chunk
  // search's doubling leaves out those falling behind the others (CountLeaveOuts::
  // variant_falls_behind).
  uint64_t left_out = 0;
  // A variant predicted (before it is made, from its trees' fill and the chunks dealt to them) to
  // end no faster than the fastest so far, or the caller's time to beat, by a margin
  // (kPipelinePredictedSure), is left unmade. False: every variant is made (to measure what the
  // prediction leaves out).
  bool predicted = true;
  // The fastest the caller found elsewhere (the chunk search's fastest at its counts before), or
  // -1. A variant predicted no faster than it, by the same margin, is left unmade too; unlike
  // SynthOptions::to_beat nothing made is floored against it (a count's times stay what they are,
  // which the search reads), it spares only the variants predicted to lose.
  Time predicted_against = -1;
  // Where set (by the chunk search's doubling: a time at or over which its count ends the doubling
  // whatever it is), a variant whose floor (synth::time_floor, at most its time) is at least this
  // is not timed: it reports that floor, as a variant floored against the fastest so far does.
  // Where no variant is timed, the least such floor stands for the count (SynthOptions::floored).
  // -1: none.
  Time floored_at = -1;
  // Where set (by the chunk search, at its counts and its doubling's), each variant's floor at the
  // count before (synth::time_floor, at most its time; on_floor), or its time there where no floor
  // was computed. A variant whose floor or time there was under what its floor would be held
  // against now (the fastest so far, or floored_at) is timed without a floor first: doubling the
  // chunks lowers a pipeline's floor (less fill), so its floor here would likely be under that mark
  // too, a pass over its transfers that decides nothing. (Either way the variant's time is at least
  // the mark where its floor is: only what a variant that loses reports differs, its time instead
  // of its floor.)
  const std::map<int, Time>* floors_before = nullptr;
  // Where set (by the chunk search, for all its counts), what each variant made against its
  // prediction at the counts before: the margin above follows it (PipelineCalibration).
  PipelineCalibration* calibration = nullptr;
  // Called with each variant and its time (its prediction where that left it unmade; its floor
  // where that shows it cannot be the fastest, untimed; an All-Reduce's, its halves joined; an
  // All-Reduce's halves in turn, each its own fastest, are a variant of their own, and each half's
  // own variants are reported, and asked for, as variants of their own too).
  std::function<void(int variant, Time time)> on_variant;
  // Called with each variant's floor wherever one was computed (timed afterwards or not).
  std::function<void(int variant, Time floor)> on_floor;
  // Called with each variant timed and its time (on_variant reports it too, beside the floors and
  // predictions of those left untimed): an All-Reduce's halves joined, or in turn, not each half's.
  std::function<void(int variant, Time time)> on_timed;
};

// The portfolio's runs of the plain matcher (synthesize_once), as the chunk search tells them
// apart: with the scarce choice, under `hold` (that portfolio's fastest, re-timed under the
// pipelined model), with the random choice, with it and slow links yielding, and the scarce choice
// alone under `hold` (re-timed; one of the methods that portfolio runs).
enum class MatcherRun : uint8_t { Scarce, UnderHold, Random, RandomYielding, ScarceUnderHold };
inline constexpr std::array kMatcherRuns{MatcherRun::Scarce, MatcherRun::UnderHold,
                                         MatcherRun::Random, MatcherRun::RandomYielding,
                                         MatcherRun::ScarceUnderHold};

// The `auto` policy's options (SynthMethod::Auto): which ways it also tries, and its budgets.
struct PortfolioOptions {
  // With priority Scarce, on mixed speeds where the plans fall short of the bound, also the
  // matcher with priority Random, slow links yielding and not (the faster kept).
  bool random_choice = true;
  // Also build every baseline that applies (with its channels as the topology feeds them) and
  // return the fastest when it beats the synthesized one: tenet is then never slower than any
  // baseline, and Algorithm::method says "baseline ring". The result keeps the name "tenet". Where
  // the baselines would be large (over kPortfolioTransferBudget transfers) and the synthesized
  // result is already within kPortfolioSlack of the lower bound (which no baseline can beat
  // without in-network reduction), they are not built.
  bool baselines = true;
  // For a group whose members each have idle server mates (a data-parallel group on one rail),
  // also the composition that borrows them (synth/groups/team_relay.hpp), kept when faster.
  bool team_relay = true;
  // With team_relay, a group inside one server (a tensor-parallel group) also borrows the next
  // server's NPUs through its NICs. The simulator turns it off: there every server runs its own
  // group at the same time.
  bool borrow_servers = true;
  // Chunk-count searches (synthesize_auto_chunks) stop before an algorithm would pass about this
  // many transfers (as made so far: relays and hand-overs included). The simulator, which builds
  // and replays many, sets kSimAutoChunkTransfers.
  int64_t chunk_transfers = kAutoChunkTransferBudget;
  // The plain matcher is left out where its work is over this many channel wakes (channels x the
  // deliveries per NPU, per phase): the plans run, else the baselines, and the method says so
  // (docs/tuning.md says why this many).
  double matcher_work = 4e8;
  // The same where a server plan applies (a cluster of equal servers, or a flat plan: switches
  // joining NPUs that form no servers): there the plans (the server plan, far cheaper, or the
  // trees) beat the plain matcher from 4 servers up, so the matcher gets only what it costs on
  // small clusters; on a fabric of single NPUs its channels are every pair's routes.
  double matcher_work_beside_servers = 2e7;
  // The same where a symmetric schedule applies (synth/plans/symmetric.hpp: a torus, ring,
  // hypercube, servers on rails) and is short of the bound: there it is about as good as the
  // matcher, at a fraction of its work.
  double matcher_work_beside_symmetric = 2e6;
  // Called with what each plan (the server plan, the matcher on the flow plan, its pipelines)
  // made at the portfolio's chunk size, where it made one (not under restarts: their seeds run
  // at once; a plan whose floor was no faster than the portfolio's fastest reports that floor,
  // untimed; one left unmade on a prediction of its time, standing as an algorithm of no
  // transfers, reports that prediction with `predicted` set): the chunk search predicts from it
  // whether a plan's doubling past the search can win (and passes its flat counts' reports on).
  std::function<void(SynthMethod method, Time time, bool predicted)> on_plan;
  // Called with what each run of the plain matcher made, as on_plan (the chunk search passes its
  // portfolios' reports on).
  std::function<void(MatcherRun run, Time time)> on_matcher;
  // Runs of the plain matcher `auto` leaves out (bit 1 << run): the chunk search predicts from
  // their times at smaller counts that they cannot win at this one.
  unsigned leave_out = 0;
  // Whether every run is left out as none can beat the search's fastest by 0.5 % (the matcher's
  // answer takes at least that: matcher_figure): where nothing else applies, the count makes
  // nothing, instead of the scarce matcher running after all.
  bool matchers_at_figure = false;
  // Whether `auto` leaves the server plan out: the chunk search predicts from its time at half the
  // count that it will not gain 0.5 % on the fastest at this one (kServerPlanBehind).
  bool leave_out_server_plan = false;
  // Whether `auto` leaves the flow plan's pipelines out: the chunk search predicts from their time
  // (or floor) at half the count that they cannot come within kPipelinesContend of the fastest at
  // this one.
  bool leave_out_pipelines = false;
  // Whether `auto` leaves the matcher on the flow plan out: the chunk search predicts from its
  // time at half the count, as for the plain matcher's runs (leave_out), that it cannot win.
  bool leave_out_plan_matcher = false;
  // Whether the caller races every baseline itself (the chunk search past its first count, which
  // races them afterwards, each at its own counts): where `auto` makes nothing here (its methods
  // left out, the plain matcher over its budget), it answers NotMade instead of building every
  // baseline at this count to return the fastest.
  bool baselines_raced = false;
  // Whether what the run learned at the sizes it synthesized before (SynthMemo::sizes) leaves out
  // the ways that lost by far at a size near this one (synth/auto/size_history.hpp). Set by the
  // simulator, which synthesizes a workload's sizes one after another; its answers then depend on
  // that order, so nothing that synthesizes sizes at once (a benchmark suite's algorithm rows) sets
  // it.
  bool across_sizes = false;
  // The server plan also sends its rails in messages that shrink towards the end, the faster kept
  // (synth/plans/rail_messages.hpp). Off for the MSCCL runtime's candidates (best_for_msccl): the
  // messages raise the search's pick, and every count below it is read back as the runtime runs it
  // (docs/synthesis.md, "The runtime targets").
  bool rail_messages = true;
  // The answer of a chunk search (synthesize_auto_chunks) drained at its routes' full rate, where
  // that is faster (synth/plans/full_rate_drain.hpp). Off for the MSCCL runtime's candidates: MSCCL
  // runs no rates.
  bool full_rate_drain = true;
  // The answer of a chunk search with its last deliveries listed again, earliest arrival first,
  // where that is faster (synth/plans/tail_spread.hpp: a collective that only copies, an
  // All-Reduce's copies after its reductions, a Reduce-Scatter's head through its reverse). Off for
  // the MSCCL runtime's candidates, as the drain.
  bool tail_spread = true;
  // An All-Reduce's answer of a chunk search set beside its Reduce-Scatter's and All-Gather's own
  // answers (their searches, drains and all) joined in turn (detail::answers_in_turn), the faster
  // kept, where `auto` chose, its answer ends over kHalvesAnswersOver of the halves-in-turn figure
  // (synth::halves_in_turn_bound), and the halves alone can do what it cannot: it is the
  // pipelines' (each half's search drains its own tail) or the links differ both ways (each half
  // takes a method of its own). Off in the simulator.
  bool halves_answers = true;
  // Where a plan or a matcher variant doubling alone past the chunk search's counts displaced the
  // search's fastest by less than kRunnerUpNear, that one finished too (ChunkingResult::runner_up:
  // the finishing passes may gain more on its tail), the faster kept.
  bool runner_up = true;
  // Set by the chunk search (synthesize_auto_chunks) on a topology that is its own reverse: the
  // search's rival made first, on demand (once) with the fastest answer so far. For an All-Reduce,
  // where halves_answers applies, its halves' answers joined in turn, asked before the search's
  // last count or before the flow plan's pipelines double alone past its counts (the pipelines'
  // All-Reduce joins its halves' pipelines at one count, where the halves' answers join each
  // half's best count, drained: where the latter are made anyway, the costliest counts of the
  // former need not be). For a Reduce-Scatter, where tail_spread applies, its All-Gather's answer
  // (that search, finished) reversed in time, asked before the pipelines double alone where the
  // fastest is theirs or over kPipelinesPersist of the bound (their head is not their All-Gather's
  // tail, which the finishing passes reach: the reversed answer often ends first, and then the
  // pipelines double no further). It
  // returns the rival (the caller keeps it for as long as the search lasts), which the counts
  // after must then beat, or nothing where none was made.
  std::function<const Algorithm*(const Algorithm& fastest)> rival_first;
};

class AlgorithmCache;  // synth/cache/algorithm_cache.hpp
struct SynthMemo;      // synth/memo.hpp

struct SynthOptions {
  SynthMethod method = SynthMethod::Auto;
  uint64_t seed = 1;
  // Seeds seed, seed+1, ...; run on all cores; the fastest wins (ties: lowest seed).
  int restarts = 1;
  LinkModel link_model = LinkModel::Pipelined;
  int ecmp_routes = 8;  // equal-cost routes through switches kept per NPU pair
  // How fast a destination reduces a received chunk (Algorithm::reduce_bandwidth; 0: no time). The
  // result is timed with it, and so is every candidate the portfolio compares; the matcher itself
  // schedules as if reductions took no time.
  Bandwidth reduce_bandwidth = 0;
  // Whether a baseline built by name (make_algorithm) comes timed; the simulator, which replays it
  // anyway, asks for it untimed (make_baseline's `timed`). The synthesizer's results are always
  // timed.
  bool time_baselines = true;
  MatcherOptions matcher;
  PipelineOptions pipelines;
  PortfolioOptions portfolio;
  // Called now and then with the fraction done (0..1), from the calling thread.
  std::function<void(double)> progress;
  // Where the synthesizer's results are kept across runs (owned by the caller; none: nothing
  // kept). make_algorithm and make_algorithm_auto_chunks (synth/producers.hpp) look a result up
  // before synthesizing and keep what they made.
  AlgorithmCache* cache = nullptr;
  // When to answer with the best found so far (owned by the caller; none: the whole search). The
  // searches check it between steps (synth/auto/deadline.hpp).
  const Deadline* deadline = nullptr;
  // Where the caller holds a quicker answer already: this step may be given up midway (its long
  // loops throw GivenUp once it is due; synth/auto/deadline.hpp). None: the step ends.
  const GiveUp* give_up = nullptr;
  // What the run keeps between its steps: flow plans and bounds (owned by the caller; none: each
  // top-level call keeps its own while it lasts). Decides nothing about the result.
  SynthMemo* memo = nullptr;
  // A time the caller already has (the chunk search's fastest so far; -1: none). The matcher's
  // algorithms (and an All-Reduce's joined halves) whose floor (synth::time_floor: one pass, no
  // contention) is no faster are not timed: their claimed time is that floor, and `*floored`
  // (where given) is set. A result at or over `to_beat` with `*floored` set is then only a floor:
  // no answer (the chunk search takes it as CannotBeat); one under it was timed.
  Time to_beat = -1;
  bool* floored = nullptr;
  // Set (where given) when a method was left unmade on a prediction of its time (the flow plan's
  // pipelines, PipelineOptions::predicted): the time it claims is that prediction, not a floor.
  bool* predicted = nullptr;
};

// Options for a part of a whole (a relay's sub-group, a composition's level): no idle mates to
// borrow (they carry their own parts), no progress, and nothing of the whole's search: its time to
// beat, its reports and the runs it leaves out are the whole's, not the part's.
inline SynthOptions part_options(SynthOptions o) {
  o.portfolio.team_relay = false;
  o.portfolio.on_plan = nullptr;
  o.portfolio.on_matcher = nullptr;
  o.portfolio.leave_out = 0;
  o.portfolio.matchers_at_figure = false;
  o.portfolio.leave_out_server_plan = false;
  o.portfolio.leave_out_pipelines = false;
  o.portfolio.leave_out_plan_matcher = false;
  o.portfolio.baselines_raced = false;
  o.progress = nullptr;
  o.to_beat = -1;
  o.pipelines.predicted_against = -1;
  o.pipelines.floored_at = -1;
  o.pipelines.variants = o.pipelines.left_out = 0;
  o.pipelines.floors_before = nullptr;
  o.pipelines.calibration = nullptr;
  o.pipelines.on_variant = nullptr;
  o.pipelines.on_floor = nullptr;
  o.pipelines.on_timed = nullptr;
  o.floored = nullptr;
  o.predicted = nullptr;
  return o;
}

// Synthesizes `c` on `t` with chunks of `chunk_bytes`. Throws tenet::Error for an invalid
// collective, or when some NPU cannot be reached through the channels, and NotApplicable (a
// tenet::Error) when the method asked for does not apply.
Algorithm synthesize(const topo::Topology& t, const Collective& c, Bytes chunk_bytes,
                     const SynthOptions& options = {});
// The same, with "does not apply" as a value (NotMade says why).
Made<Algorithm> try_synthesize(const topo::Topology& t, const Collective& c, Bytes chunk_bytes,
                               const SynthOptions& options = {});

struct ChunkingResult {
  Algorithm algorithm;
  int chunks_per_npu = 1;
  struct Try {
    int chunks_per_npu = 0;
    Time time = 0;
    std::optional<SynthMethod>
        alone;           // none: the whole search; else the one method tried alone at that count
    bool floor = false;  // `time` is a floor at or over the fastest then (CannotBeat), not timed
    // With `floor`: some method there was left unmade on a prediction, so `time` is the least
    // time predicted for a way there (CannotBeat::likely), not a proven floor.
    bool predicted = false;
  };
  std::vector<Try> tried;
  // The search's fastest before a plan or matcher variant doubling alone past its counts beat it
  // (another producer's answer), where within kRunnerUpNear of the answer: the finishing passes
  // (synthesize_auto_chunks) may gain far more on one way's tail than on another's, so it is
  // finished beside the answer and the faster kept. None elsewhere.
  std::optional<Algorithm> runner_up;
};
// Picks the chunks per NPU (1, 2, 4, ... up to max_chunks_per_npu) that minimizes the collective
// time for `total_bytes` (NCCL's size convention, see Collective::chunk_bytes_for): fewer chunks
// pay less latency, more chunks pipeline better (Broadcast and Reduce, whose k chunks are the
// root's alone, up to max_chunks_per_npu x the ranks, as many chunks as an All-Gather would have,
// at most topo::kMaxChunksPerNpu). Stops once doubling stops helping twice (unless the algorithm is
// still small: about kAutoChunkCheapTransfers transfers, where a lucky count can hide a better one
// further on), or when it would have more than about kAutoChunkTransferBudget
// (SynthOptions::portfolio.chunk_transfers; transfer_estimate, or the last count's transfers per
// chunk when more: relays' hops). An algorithm of over 1M transfers stops at the first count that
// does not help, and one of over kAutoChunkTurnTransfers at a count over kChunkSearchTurn slower
// than the fastest found at the count before (the times turned), or, where the next count would be
// over kAutoChunkTurnTransfers, at a count still the fastest whose three last times, still falling,
// fit B + F / k + S k with the next count's predicted over it (the fall slowing down as the
// per-step costs catch up). synthesize_auto_chunks also stops, for every method and baseline it
// searches, at the first count within kChunkSearchSlack of the lower bound (which holds for any
// count: no other can gain more), unless a node reduces in the network. An All-Reduce's RS+AG
// figure (LowerBound::coarse) is no bound for reductions down trees or over asymmetric links
// (lower_bound.hpp): there the matcher's and the baselines' counts stop at it all the same (more
// counts cost twice as much each and rarely get below it), and the flow plan's pipelines, which do,
// still go on to more chunks. These thresholds, and the others that measure a result against the
// bound, use LowerBound::coarse (the bound without the latency past the cut) they were tuned
// against. Beyond max_chunks_per_npu, the flow plan's pipelines, the server plan and, where one of
// them was the fastest at the last count, the plain matcher's variants double alone
// (synth/tuning.hpp: kPipelineTransferBudget and after). The `n` fastest of these pipeline variants
// (variant -> time, as SynthOptions::pipelines.on_variant reports them) as
// SynthOptions::pipelines.variants; where an All-Reduce's halves in turn are among them, with each
// half's own fastest variant.
uint64_t fastest_pipeline_variants(const std::map<int, Time>& times, size_t n);
// About how many transfers an algorithm for `c` has at least: every chunk crossing to every other
// rank (twice for All-Reduce), or to its one rank (All-to-All, Scatter, Gather).
int64_t transfer_estimate(const Collective& c);
// `c` as the composition per level makes it (SynthMethod::Composed): its chunks_per_npu k inside
// the servers, G*k chunks in all (Collective::all_reduce_chunks); `c` unchanged where it does not
// compose (synth/groups/composed.hpp: an All-Reduce over every NPU of two or more servers).
Collective composed_collective(const topo::Topology& t, Collective c);
// `c` as `options.method` synthesizes it at its chunks_per_npu: composed (composed_collective)
// where method composed does, or method auto would (an All-Reduce over servers too large to
// synthesize flat: over kFlatTransferCap transfers at one chunk per NPU); else `c`.
// Its transfer_estimate is what a run needs; its chunk_bytes_for, the chunk size for a total.
Collective as_synthesized(const topo::Topology& t, const Collective& c,
                          const SynthOptions& options);
// The same search for any producer `make(collective, chunk_bytes)`.
// `first`: the first count tried (then 2 x first, ...); `enough`, when given, ends the search at
// the first algorithm it accepts. `to_beat`, when positive, ends a search of large algorithms (over
// kAutoChunkCheapTransfers) once no count ahead can beat it as their times go: where a time is
// T(k) = A + B/k + C·k (a fixed part, a fill that shrinks with the chunks, a per-chunk cost), every
// count from 4k on takes at least A + 3C·k = 2·T(2k) - T(k), which two counts measure; and a
// doubling at most halves a time (T(2k) >= T(k)/2), so a count at 2^j x to_beat ends the search
// when the next j counts are all the budget allows.
// `make` returns, for a count, its algorithm; or CannotBeat when it proved the count no faster than
// `to_beat` without timing it (synth::time_floor): the search goes on with that count's floor in
// place of its time, never keeping it (floors are held to the same rules, among themselves); or
// NotMade when it does not apply, which ends the search. best_chunking throws NotApplicable when
// `make` made nothing (NotMade, or a floor at every count); search_chunks says so as a value.
// `deadline`, when given, ends the search before a count expected (twice the last count's time, or
// kSearchSecondsPerTransfer a transfer it will make, whichever is more) to end past it; the first
// count always runs.
struct CannotBeat {
  Time floor = 0;        // a lower bound on the count's time, at least to_beat
  size_t transfers = 0;  // how many transfers its algorithm had
  // `floor` stands partly on a prediction (SynthOptions::predicted): the count is not made, but
  // its time is not proven to be at least `floor`.
  bool predicted = false;
  // With `predicted`: the least time predicted for a way left unmade there (what the count would
  // likely have made), where one predicted less than `floor`; else -1. Reported (Try::time), not
  // searched on.
  Time likely = -1;
};
using ChunkMade = std::variant<Algorithm, CannotBeat, NotMade>;
using ChunkMaker = std::function<ChunkMade(const Collective&, Bytes)>;
ChunkingResult best_chunking(Collective c, Bytes total_bytes, int max_chunks_per_npu,
                             const ChunkMaker& make, int first = 1,
                             const std::function<bool(const Algorithm&)>& enough = {},
                             int64_t transfer_budget = kAutoChunkTransferBudget, Time to_beat = -1,
                             Bytes min_chunk = 0, const Deadline* deadline = nullptr);
// `min_chunk`: past the first count, no count whose chunks are smaller (min_chunk_of).
// `rival`, when given (with no `to_beat`), is asked once, before the first large count after the
// first is made (a large algorithm: over kAutoChunkCheapTransfers transfers), with the collective
// at that count: the time of something that will run anyway (a baseline the portfolio races
// afterwards), which from there ends the search as `to_beat` would: where no count the budget
// allows can beat it as times go (from the count before, that count is not made), or once two
// counts say that none ahead can (2·T(2k) - T(k) at least it). `steep_turn` (0: none): below
// kAutoChunkTurnTransfers too, a count more than this slower than the fastest, found at the count
// before past the first count, ends the search (tenet's own flat search: kChunkSearchSteepTurn); so
// do, from kFlatSearchCheapTransfers, two counts in a row that gain nothing on the fastest. `bound`
// (0: none), a lower bound on every count's time: a doubling at most halves a count's time over it,
// not its whole time (T(2k) - bound >= (T(k) - bound) / 2 where T(k) = B + F / k + S k and
// B >= bound), so fewer counts ahead can beat `to_beat`; and three times whose fit has B under it
// follow no one such curve, so they predict no turn of the times. `last_rival`, when given (with
// no `to_beat`), is asked once, with the collective at the last count the limits allow (the count
// after it past them: chunks, least chunk, transfer budget) and the fastest so far, before that
// count: the time of something made anyway (an All-Reduce's halves' answers,
// PortfolioOptions::rival_first; -1: nothing), which from there stands beside `rival` (the less
// of the two), and where the count before says that the last cannot beat it, the last is not made.
Made<ChunkingResult> search_chunks(
    Collective c, Bytes total_bytes, int max_chunks_per_npu, const ChunkMaker& make, int first = 1,
    const std::function<bool(const Algorithm&)>& enough = {},
    int64_t transfer_budget = kAutoChunkTransferBudget, Time to_beat = -1, Bytes min_chunk = 0,
    const Deadline* deadline = nullptr, const std::function<Time(const Collective&)>& rival = {},
    double steep_turn = 0, Time bound = 0,
    const std::function<Time(const Collective&, const Algorithm&)>& last_rival = {});
// The smallest chunk `-k auto` makes on `t`: kMinChunkBytes where `t` charges per-step costs
// (topo::Topology::charges_steps), else 1 B (the bytes-only model has no reason for one).
inline Bytes min_chunk_of(const topo::Topology& t) {
  return t.charges_steps() ? kMinChunkBytes : 1;
}
// An All-Reduce over a cluster of servers (synth/groups/composed.hpp) is also composed per level,
// at 1, 2, 4, ... chunks per NPU inside the servers, where the flat search ends over kComposeAbove
// x the bound, and kept when faster; where flat synthesis is out of reach (over kFlatTransferCap
// transfers at one chunk per NPU), only the composition is searched. The composition's tries say
// method "composed", with k its chunks per NPU inside the servers. A group's team relay
// (SynthOptions::portfolio.team_relay) within kRelayEnough of the bound ends the search once it is
// within kRelayClose or doubling the chunks gained less than kRelayGain.
ChunkingResult synthesize_auto_chunks(const topo::Topology& t, Collective c, Bytes total_bytes,
                                      const SynthOptions& options = {},
                                      int max_chunks_per_npu = 64);
// The same, with "does not apply" as a value (NotMade says why) where synthesize_auto_chunks throws
// NotApplicable.
Made<ChunkingResult> try_synthesize_auto_chunks(const topo::Topology& t, Collective c,
                                                Bytes total_bytes, const SynthOptions& options = {},
                                                int max_chunks_per_npu = 64);

// A baseline that applies to `c` but that synthesize_auto_chunks' portfolio does not race for its
// size alone (Blink's trees over more than kBlinkPortfolioRanks ranks; one-shot, or a ring
// All-to-All, over kAutoChunkTransferBudget transfers): `--algo` still builds it, at its cost.
struct BaselineLeftOut {
  enum class Why : uint8_t {
    Ranks,      // more ranks than it is raced over
    Transfers,  // more transfers than the portfolio's budget
  };
  std::string baseline;  // its --algo name
  Why why;
};
// The baselines left out of `c`'s portfolio on `t` for their size alone.
std::vector<BaselineLeftOut> baselines_left_out_for_size(const topo::Topology& t,
                                                         const Collective& c);

}  // namespace tenet::synth
