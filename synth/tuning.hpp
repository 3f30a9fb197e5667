// The synthesizer's tuning constants, in one place. Each trades the time a search takes against
// how close its result comes to the lower bound; what each one was measured against, and why it has
// its value, is in docs/tuning.md. A change that moves one is a quality change: run the `quality`
// tests and the benchmarks (docs/benchmarks.md).
#pragma once

#include <cstddef>
#include <cstdint>

#include "topo/units.hpp"

namespace tenet::synth {

// ---- The chunk-count search (synthesize_auto_chunks, best_chunking) ----------------------------

// The search stops before an algorithm would pass about this many transfers
// (SynthOptions::portfolio.chunk_transfers).
inline constexpr int64_t kAutoChunkTransferBudget = int64_t{1} << 23;
// Below this many transfers an algorithm tries every count (its times need not fall steadily).
inline constexpr int64_t kAutoChunkCheapTransfers = int64_t{1} << 15;
// ... but tenet's own flat search stops at two counts in a row that gain nothing from this many
// transfers on: its plans (and a matcher that was fastest at its last count) go on doubling alone
// after it.
inline constexpr int64_t kFlatSearchCheapTransfers = int64_t{1} << 10;
// From this many transfers on, a count more than kChunkSearchTurn slower than the fastest, found at
// the count just before, ends the search: the times have turned, and the next count costs twice
// this one to build (nvcluster:16x8 All-Reduce of 64 MiB: 400.8 us at 8 chunks per NPU, 427.1 at
// 16 with 520,192 transfers, then 576.7 at 32, 8.3 s of its 13.9).
inline constexpr int64_t kAutoChunkTurnTransfers = int64_t{1} << 18;
inline constexpr double kChunkSearchTurn = 0.02;
// In the flat search of tenet's own methods (not the baselines'), below kAutoChunkTurnTransfers, a
// count more than this slower than the fastest found at the count before, which had gained on the
// counts before it, ends the search: the times fell to a least and turned.
inline constexpr double kChunkSearchSteepTurn = 0.05;
// A count within this of the lower bound ends the search: no other can gain more.
inline constexpr double kChunkSearchSlack = 2e-3;
// The smallest chunk `-k auto` cuts where per-step costs are charged (past one chunk per NPU):
// NCCL halves a ring's chunk no further than about this (its LL128 floor).
inline constexpr int64_t kMinChunkBytes = int64_t{16} << 10;
// Routed collectives (All-to-All, Scatter, Gather) end their search within this of the bound.
inline constexpr double kRoutedEnough = 1.005;

// ---- The answer's drain at full rate (synth/plans/full_rate_drain.hpp) ---------------------

// The fractions of the run whose transfers drain_at_full_rate tries at their routes' full rate,
// shortest first; its hill climb starts at kDrainTailsFirst and goes one way while it gains.
inline constexpr double kDrainTails[] = {0.01, 0.02, 0.03, 0.05, 0.08};
inline constexpr int kDrainTailsFirst = 2;
// A tail is tried only where its floor may beat the fastest so far by more than this (auto builds
// only what may beat the best so far by more than 0.5 %).
inline constexpr double kDrainGain = 0.005;
// Over this many transfers the answer's drain is not tried (each step times the whole answer).
inline constexpr int64_t kDrainTransferBudget = int64_t{1} << 20;

// ---- The answer's last deliveries listed again (synth/plans/tail_spread.hpp) --------------------

// The fractions of the run from whose start spread_tail lists its deliveries again, shortest first:
// each is scheduled (no timing), and the one whose schedule ends soonest is timed. Shorter ones
// than kDrainTails: the list scheduling gains on the trees' last hops, and loses to them where it
// schedules much of the run (docs/tuning.md).
inline constexpr double kSpreadTails[] = {0.005, 0.01, 0.015, 0.02, 0.03, 0.05, 0.08};
// Tried from the shortest on, the longer tails stop after this many in a row that end no sooner
// than the soonest so far.
inline constexpr int kSpreadTailsPast = 2;

// ---- The flow plan's pipelines past the search (synth/auto/chunk_search.cpp) --------------------

// Beyond the search's last count, the pipelines double alone up to about this many transfers.
inline constexpr int64_t kPipelineTransferBudget = int64_t{1} << 19;
// Past it, their kVariantsPast fastest variants at the last count go on alone up to this many.
inline constexpr int64_t kPipelineFastestTransferBudget = int64_t{1} << 20;
inline constexpr size_t kVariantsPast = 4;
// Past this many transfers, a count runs only those kVariantsPast (where the count before ran),
// and a count that does not gain ends the doubling.
inline constexpr int64_t kPipelineAllVariantsTransfers = int64_t{1} << 16;
// A variant over this of the count's fastest variant, its last doubling's gain, gained again,
// short of that fastest, is left out of the counts after (CountLeaveOuts::variant_falls_behind;
// docs/tuning.md); one over kMatcherFar of it whatever it gained.
inline constexpr double kPipelineVariantBehind = 1.01;
// After a count that gained nothing, one more doubling, unless already within this of the bound.
inline constexpr double kDoublingEnough = 1.005;
// After a count that gained, another only where its gain, gained again, would beat the fastest by
// more than this: auto builds only what may beat the best so far by more than 0.5 %.
inline constexpr double kDoublingGain = 0.005;
// The pipelines' times at the search's last four counts follow fill and steps (fill_and_steps)
// where the model's time at the last from the three before is within this of the one made: its
// next count then says whether their doubling alone can win (CountLeaveOuts::cannot_win).
inline constexpr double kPipelinesModelTrust = 0.005;
// Over this of the bound, the pipelines try their split variants and go on to their budget.
inline constexpr double kPipelinesPersist = 1.03;
// ... while their last count is within this of the fastest,
inline constexpr double kPipelinesContend = 1.1;
// ... and while their times still jump from count to count, or their chunks are at least this.
inline constexpr Bytes kPipelinesPersistChunk = 4096;
// Where a method doubling alone beats the search's fastest by less than this, the search's fastest
// is finished too (ChunkingResult::runner_up): the finishing passes may gain more on its tail than
// on the answer's (docs/tuning.md).
inline constexpr double kRunnerUpNear = 1.02;
// A run of the plain matcher over this of the fastest at a count, its last doubling's gain, gained
// again, short of it, is left out of the counts after (docs/tuning.md).
inline constexpr double kMatcherContend = 1.3;
// ... and one over this of it whatever it gained: a doubling at most halves a count's time
// (search_chunks), so at the next count it cannot beat the fastest (docs/tuning.md).
inline constexpr double kMatcherFar = 2;
// Past the first count, where the search's fastest is within this of the lower bound, the
// matchers are left out: none could beat it by more (auto builds only what may beat the best so
// far by more than 0.5 %), and they are the costliest methods.
inline constexpr double kMatcherGain = 0.005;
// Where the caller learns across sizes (PortfolioOptions::across_sizes, the simulator), a way of
// `auto` whose fastest at a size was over kAcrossSizesBehind of the answer there is left out at
// the sizes within kAcrossSizesRange of it, either way (synth/auto/size_history.hpp,
// docs/tuning.md).
inline constexpr double kAcrossSizesBehind = 1.2;
inline constexpr double kAcrossSizesRange = 10;
// The server plan is left out of a count where staggered_estimate, scaled by how the plan's time at
// half the count compared with its estimate there (trusted within kServerPlanTrust), is over this
// of the fastest so far: it is not predicted to gain 0.5 % (docs/tuning.md).
inline constexpr double kServerPlanBehind = 0.995;
inline constexpr double kServerPlanTrust = 0.05;
// Over unequal rails, how far the server plan's deal may go from even shares towards the rails'
// proportions: each tried, the one that leaves the busiest link least loaded kept
// (synth/plans/rail_deal.hpp, docs/tuning.md).
inline constexpr double kRailDealSteps[] = {0.25, 0.5, 0.75, 1.0};
// What a server plan's rail messages shrink by from one to the next, where the rails pay steps
// (synth/plans/rail_messages.hpp, docs/tuning.md).
inline constexpr double kRailMessageShrink = 0.9;
// An All-Reduce's pipelines over this of the bound count one half's transfers against the budgets.
inline constexpr double kHalvesOver = 1.02;
// An All-Reduce's halves run in turn where together they end over this of the RS+AG figure
// (LowerBound::coarse).
inline constexpr double kInTurnOver = 1.02;
// The matcher's All-Reduce also runs in waves (synth/plans/all_reduce.cpp, in_waves) where the
// Reduce-Scatter plus All-Gather figure (LowerBound::steering) is at least this of the bound's
// bandwidth term (meshes: 1.5-1.94; tori, switches, clusters of servers: 1.0-1.13) ...
inline constexpr double kWavesFrom = 1.25;
// ... and its count is at most this many transfers (the waves are as many again to time).
inline constexpr int64_t kWavesTransferBudget = int64_t{1} << 21;
// An All-Reduce's chunk search also joins its halves' own answers where its answer ends over this
// of the halves-in-turn figure (PortfolioOptions::halves_answers).
inline constexpr double kHalvesAnswersOver = 1.02;
// An All-Reduce's halves' answers (a Reduce-Scatter's All-Gather's answer reversed, likewise) are
// made before its pipelines double alone (instead of their doubling) where the pipelines' time at
// the search's largest count is within this of the fastest (PortfolioOptions::rival_first).
// Farther, the pipelines seldom win, and the halves are left to the search's end, where its answer
// is the pipelines' (halves_may_win): docs/synthesis.md.
inline constexpr double kHalvesFirstNear = 1.2;
// How many times the halves in turn are joined again at most (join_all_reduce).
inline constexpr int kInTurnRounds = 8;
// A pipeline variant is made only where this of its predicted end (pipeline_prediction) is under
// the time to beat: on the 261-case matrix, timed variants end at 0.69 to 1.7 times it (1 % under
// 0.80, median 1.00) (docs/tuning.md).
inline constexpr double kPipelinePredictedSure = 0.65;
// ... or, where the plan's trees stream c chunks each on average, 1 - kPipelinePredictionFill / c
// where that is more, up to kPipelinePredictedSureMost: the prediction leaves out about a fill of a
// few chunk times per tree (PipelineCalibration::uncalibrated; the measured ratios:
// docs/tuning.md).
inline constexpr double kPipelinePredictionFill = 6.4;
inline constexpr double kPipelinePredictedSureMost = 0.88;
// ... and an All-Reduce's (its halves joined, kHalvesShare of the shorter half's stream added;
// timed variants end at 0.72 to 3.1 times it, 1 % under 0.78) (docs/tuning.md).
inline constexpr double kAllReducePredictedSure = 0.7;
// ... or, for a variant made at a count before in the same chunk search, this of its own ratio
// there, made over predicted, where that is more (PipelineCalibration; docs/tuning.md).
inline constexpr double kPipelineCalibratedSure = 0.9;
// ... taken from counts where the trees stream at least this many chunks each on average.
inline constexpr double kPipelineCalibratedFrom = 8;
inline constexpr double kHalvesShare = 0.5;
// In lanes, a chunk goes at its tree's rate times its lane, but at least this share of it.
inline constexpr double kLeastLane = 0.5;

// ---- The flow plan's trees (synth/plans/flow_plans.cpp, box_rails.cpp) --------------------------

// Boxes on rails (synth/plans/box_rails.hpp) are the flow plan where their fluid rate comes within
// this of the All-Gather cut bound (ForestColl's MI250 x2: 3.2 %; x4 and up: at it).
inline constexpr double kBoxesOnRailsNear = 0.05;
// ... on up to this many NPUs (ForestColl's MI250 x16, 256 GCDs: 768 trees of 256 NPUs, 6.7 s of
// CPU for a whole All-Gather command); their trees' routes grow as the NPUs squared.
inline constexpr int kBoxesOnRailsMostNpus = 256;
// A rail takes every least-cost route through switches (topo::Router), up to this many, in equal
// parts (a leaf-spine's spines, as ECMP spreads a flow).
inline constexpr int kMostRailRoutes = 8;

// ---- The `auto` portfolio (synth/auto/portfolio.cpp) -------------------------------------------

// Baselines larger than this many transfers are built only where the synthesized result is more
// than kPortfolioSlack above the bound.
inline constexpr int64_t kPortfolioTransferBudget = int64_t{1} << 18;
inline constexpr double kPortfolioSlack = 5e-3;
// A symmetric schedule is the answer at the bound, and, when large, within this of it.
inline constexpr double kSymmetricEnough = 1.02;
// Blink's trees (the blink baseline) race in `auto` up to this many ranks: their chunks fill each
// tree through its height, which grows with the ranks (a 32x32 torus: never the fastest, and its
// race doubled the command's CPU). `--algo blink` builds them at any size.
inline constexpr int kBlinkPortfolioRanks = 256;
// ... and its chunk search there stops before about this many transfers (each count's timing is
// most of the search; past it a doubling gains about 1 %).
inline constexpr int64_t kBlinkTransferBudget = int64_t{1} << 21;
// An All-Reduce's Blink trees are searched first, and where they end under this of the
// Reduce-Scatter + All-Gather figure (LowerBound::coarse), tenet's own search is not made.
inline constexpr double kTreesFirstBelow = 0.9;
// The plain matcher on routed collectives only up to this many chunk-destinations.
inline constexpr int64_t kRoutedMatcherWork = int64_t{1} << 26;
// A server plan's matcher: at most this many bitset words scanned.
inline constexpr int64_t kServerPlanWork = int64_t{1} << 32;
// A flat server plan's ways choose among up to this many equal-cost routes a pair (the greedy
// placement in plan_servers), not SynthOptions::ecmp_routes: on a leaf-spine those are the same
// first spines for every pair.
inline constexpr int kFlatPlanRoutes = 64;

// ---- Groups (synth/groups/) --------------------------------------------------------------------

// A team relay within kRelayEnough of the bound is the answer; its chunk search ends within
// kRelayClose, or once doubling gains less than kRelayGain.
inline constexpr double kRelayEnough = 1.05;
inline constexpr double kRelayClose = 1.02;
inline constexpr double kRelayGain = 1.005;
// A relay's slices are synthesized up to this many transfers, else made by the baselines within
// kRelayBaselineTie of the fastest alone.
inline constexpr int64_t kRelaySubSynthesisTransfers = 4096;
inline constexpr double kRelayBaselineTie = 1.01;
// An All-Reduce over servers is also composed per level where the flat search ends over this of
// the bound, and only composed where flat synthesis passes kFlatTransferCap transfers.
inline constexpr double kComposeAbove = 1.10;
inline constexpr int64_t kFlatTransferCap = int64_t{1} << 26;
// Compositions larger than this use only the rail level fastest alone.
inline constexpr int64_t kComposeEveryRailLevel = int64_t{1} << 20;

// ---- Memory estimates and the simulator ---------------------------------------------------------

// About what a run holds per transfer, for the memory check (topo::check_memory), on the low side.
inline constexpr uint64_t kSimBytesPerTransfer = 120;
inline constexpr uint64_t kSynthBytesPerTransfer = 52;
// The transfer limit of an automatic chunk choice inside a simulation (tenet sim -k auto).
inline constexpr int64_t kSimAutoChunkTransfers = int64_t{1} << 15;
// What verifying an answer and writing its files take per transfer, on the high side: the share of
// `tenet synth --time-limit` kept back from the searches (at one chunk per NPU's transfers), and
// per chunk moved, from a first count given up for a quick answer (GiveUp).
inline constexpr double kFinishSecondsPerTransfer = 1e-6;
// Sends a matcher makes between two give-up points (GiveUp, synth/auto/deadline.hpp), besides one
// every hundredth of its deliveries: a flat plan's first instant matches a million sends before
// any arrives (leafspine:32x32's All-Gather half: 1.3 s without a point).
inline constexpr int64_t kGiveUpMatches = int64_t{1} << 14;
// Under a deadline, the least a chunk count is expected to take per transfer it will make (beside
// twice what the count before took): a first count that a baseline answered quickly says little of
// the next, where the matchers run (`switch:1024` All-Reduce of 1 GiB: 1 chunk per NPU, 2.1 M
// transfers, in about 1 s; 2 chunks per NPU, 4.2 M transfers, in 8 s).
inline constexpr double kSearchSecondsPerTransfer = 1e-6;

}  // namespace tenet::synth
