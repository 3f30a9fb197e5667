// The `auto` policy for one chunk count: every method that applies (symmetric, the matcher and its
// variants, the server plan, the flow plan's matcher and pipelines), then the baselines that may
// beat them, the fastest kept.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>

#include "synth/auto/baseline_floors.hpp"
#include "synth/baselines/baselines.hpp"
#include "synth/memo.hpp"
#include "synth/synthesizer.hpp"
#include "topo/topology.hpp"

namespace tenet::synth::detail {

// The matcher's variants as synthesize_once names them (the chunk search doubles the winning one
// alone past its last count: flat_auto_chunks).
inline constexpr std::string_view kRandomMatcher =
    "matcher (random choice among the scarcest chunks)";
inline constexpr std::string_view kRandomYieldingMatcher =
    "matcher (random choice among the scarcest chunks; slow links yield the last ones)";
inline constexpr std::string_view kUnderHold = " under hold, re-timed";
// Whether flat synthesis is out of reach for `c`: over kFlatTransferCap transfers at one chunk per
// NPU. An All-Reduce over servers is then composed per level only (synth/groups/composed.hpp).
bool flat_out_of_reach(Collective c);

// Whether `a` is within `factor` of its lower bound as the searches' thresholds take it
// (LowerBound::coarse: for an All-Reduce, the RS+AG figure).
bool within_bound(const topo::Topology& t, const Algorithm& a, double factor, BoundMemo* memo);
// What the plain matcher's answer for `c` at `chunk` takes at least, as the thresholds count
// (LowerBound::coarse), with its steps: each of its transfers carries one chunk c at its route's
// rate r, at least the topology's narrowest link, and holds each link for its step s too, so a
// link carries its bytes at most at B c / (c + s r): the figure's bandwidth term (for an
// All-Reduce the Reduce-Scatter plus All-Gather figure) times 1 + s r / c, at the least step.
double matcher_figure(const topo::Topology& t, const Collective& c, Bytes chunk, BoundMemo* memo);
// Whether `a` is within `factor` of the lower bound itself (LowerBound::total), which every
// algorithm keeps above: for trees of reductions, which go below the RS+AG figure.
bool within_valid_bound(const topo::Topology& t, const Algorithm& a, double factor,
                        BoundMemo* memo);

// Whether a server plan may apply: a spread over every NPU of a cluster of servers, or (not from a
// root) of NPUs that switches join without servers (flat_servers); routed chunks (All-to-All,
// Scatter, Gather) over every NPU of such a fabric, each straight to its destination.
bool server_plan_applies(const topo::Topology& t, const Collective& c);

// Every method that applies, the fastest kept (ties to the first): the plain matcher; on
// mixed-speed topologies the matcher under `hold` re-timed under the pipelined model (hold keeps
// slow links from taking chunks a faster way would bring, which the pipelined greedy misjudges);
// and the matcher on the flow plan.
Made<Algorithm> synthesize_once(const topo::Topology& t, const Collective& c, Bytes chunk_bytes,
                                const SynthOptions& o);

// Every baseline the portfolio builds for `c` on `t`, passed to `make` (which meets one that does
// not apply after all as try_baseline's NotMade). Direct, halving-doubling and Bruck talk to far
// ranks: where NPUs would relay for them (a torus), they multiply their transfers by the hop count
// and are never the fastest, so they are left out there.
void for_each_baseline(const topo::Topology& t, const Collective& c,
                       const std::function<void(const BaselineSpec&)>& make);

// Whether `spec`'s chunk search races tenet's answer for `c` with `deadline` (--time-limit) as it
// stands (a search's first count always runs): where its first count is small (at most
// kPortfolioTransferBudget transfers at one chunk per NPU: tenet's slow first count may lose to a
// quick baseline's, even past the limit) or expected to end before the limit (at least
// kSearchSecondsPerTransfer a transfer). A race left out is recorded as a stop
// (Deadline::stopped).
bool races_in_time(const BaselineSpec& spec, const Collective& c, const Deadline* deadline);

// Whether the baselines may still beat `best` by more than it costs to build them (see
// SynthOptions::portfolio.baselines).
bool portfolio_worth_it(const topo::Topology& t, const Collective& c, Bytes chunk_bytes,
                        const Algorithm& best, BoundMemo* memo);

// `candidate` in place of `best` when it is faster, as tenet's own, saying which baseline it is.
void keep_if_faster(Algorithm& best, Algorithm candidate, const BaselineSpec& spec);

// `faster` (made at `chunks_per_npu` chunks per NPU) as `r`'s answer, the answer it displaces kept
// as r.runner_up where none is kept yet: a method doubling alone past the search's counts
// displaces the search's fastest (ChunkingResult::runner_up; the flat search drops it where it is
// not near).
void displace_answer(ChunkingResult& r, Algorithm faster, int chunks_per_npu);

// After the doublings alone: r.runner_up (the search's fastest, where one displaced it) kept only
// where `wanted` (PortfolioOptions::runner_up), another producer made it and it is within
// kRunnerUpNear of r's answer.
void trim_runner_up(ChunkingResult& r, bool wanted);

}  // namespace tenet::synth::detail
