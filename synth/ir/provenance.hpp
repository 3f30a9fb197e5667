// What produced an algorithm, as a type. Algorithm::method says the same in words, for people;
// code and tests branch on this, never on those words. It lives in memory only: an algorithm read
// from a file has Producer::Unknown (its "method" text, when the file has one, is kept as text).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace tenet::synth {

enum class Producer : uint8_t {
  Unknown,            // not said (read from a file, or made by hand)
  Matcher,            // the TEN link-chunk matcher on the topology's channels
  FlowPlanMatcher,    // the matcher along the flow plan's trees
  FlowWaysMatcher,    // the matcher along ways spread like the multicommodity-flow optimum
  ServerPlanMatcher,  // the matcher on a cluster's server plan
  FlowPlanPipelines,  // the flow plan's trees as pipelines at their fluid rates
  Symmetric,          // one rank's schedule moved to every NPU
  Composed,           // an All-Reduce composed per level over a cluster of servers
  TeamRelay,          // a group whose idle server mates (or mirrors) carry slices of its data
  Baseline,           // a baseline; Provenance::baseline names it
};
std::string_view to_string(Producer p);

// How the matcher chose among the chunks a channel could carry (Producer::Matcher).
enum class MatcherChoice : uint8_t {
  Scarce,          // the scarcest (ChunkPriority::Scarce and the others chosen by name)
  Random,          // at random among the scarcest
  RandomYielding,  // at random among the scarcest, slow links yielding the last ones
};

// How the flow plan's pipelines streamed (Producer::FlowPlanPipelines); see
// synth/plans/pipelines.hpp.
struct PipelineTraits {
  int trees = 0;  // trees of the flow plan
  int per = 0;    // trees per NPU (per root for a Broadcast or Reduce)
  bool per_root = false;
  bool sped_up = false;  // faster than the plan's rates where links have room
  bool lanes = false;
  bool paced = false;
  bool serial = false;  // a chunk of a stream at a time
  int split = 1;        // chunks of a stream at once, each at 1/split of its rate
  bool dealt_by_arrival = false;
  bool messages = false;  // streams send several chunks at a time (Transfer::count)
  bool operator==(const PipelineTraits&) const = default;
};

struct Provenance {
  Provenance() = default;
  explicit Provenance(Producer p) : producer(p) {}
  // A baseline's: Producer::Baseline and its spec.
  static Provenance of_baseline(std::string spec) {
    Provenance p(Producer::Baseline);
    p.baseline = std::move(spec);
    return p;
  }

  Producer producer = Producer::Unknown;
  MatcherChoice choice = MatcherChoice::Scarce;
  bool under_hold = false;        // the matcher's `hold` schedule, re-timed under `pipelined`
  bool matcher_left_out = false;  // `auto` left the plain matcher out: its work was over budget, or
                                  // (routed chunks) its floor over the answer
  bool in_group_part = false;     // made in a group's part of the topology and renamed back
  bool rail_trees = false;        // a Broadcast's server plan: double binary trees on the rails
  bool mirrors = false;         // a team relay through mirrors in other servers (else server mates)
  bool halves_in_turn = false;  // an All-Reduce's halves one after the other (pipelines', or
                                // halves_answers)
  // An All-Reduce as its Reduce-Scatter's and All-Gather's own answers in turn
  // (detail::answers_in_turn): the rest is the Reduce-Scatter's provenance, `all_gather` the
  // All-Gather's pipeline traits.
  bool halves_answers = false;
  int waves = 0;  // the matcher's All-Reduce as this many waves of one chunk per NPU, else 0
  // The transfers that start in this last fraction of the run at their routes' full rate
  // (synth/plans/full_rate_drain.hpp), else 0.
  double full_rate_drain = 0;
  // The deliveries of this last fraction of the run listed again, earliest arrival first
  // (synth/plans/tail_spread.hpp), else 0.
  double tail_spread = 0;
  PipelineTraits pipeline, all_gather;  // halves in turn: the Reduce-Scatter's, the All-Gather's
  std::string baseline;  // Producer::Baseline: its spec ("ring", "ring:4", "hierarchical:...")
  bool operator==(const Provenance&) const = default;
};

// The pipelines' traits in words: "3 trees, 2 per NPU, at their fluid rates, in lanes, paced".
std::string describe(const PipelineTraits& p);

// What made an algorithm named `name`, in a few words for a table: the producer's name
// ("server-plan matcher"), "baseline ring" where `name` chose a baseline (tenet's portfolio),
// "halves' own answers" for an All-Reduce of those (Provenance::halves_answers), and "" where it
// says nothing more than `name` (a baseline by its own name, or unknown).
std::string method_of(const Provenance& p, std::string_view name);

}  // namespace tenet::synth
