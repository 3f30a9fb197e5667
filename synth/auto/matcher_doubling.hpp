// The plain matcher doubling its chunks alone past the flat chunk search's last count
// (chunk_search.cpp): where one of its variants made the fastest answer at that count, the
// matcher may keep gaining from more chunks after the search stops making its other ways.
#pragma once

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "synth/auto/count_leave_outs.hpp"
#include "synth/synthesizer.hpp"
#include "topo/topology.hpp"

namespace tenet::synth::detail {

// A variant of the plain matcher as the portfolio runs it, with the words and the provenance it
// gives the algorithm it made, and the run of the portfolio's it is.
struct MatcherVariant {
  SynthOptions options;
  std::string label;
  Provenance made_by;
  MatcherRun run = MatcherRun::Scarce;
};

// `fastest`, or `first` where that is positive and less: the time to beat once the search's rival
// made first was made (PortfolioOptions::rival_first; -1: not made).
inline Time under_first(Time fastest, Time first) {
  return first > 0 ? std::min(first, fastest) : fastest;
}

// The doubling of one flat search: its topology, options (`quiet`: without progress and baselines,
// as its counts ran), size, what its counts predict (CountLeaveOuts) and whether an answer is at
// its bound.
struct MatcherDoubling {
  const topo::Topology& t;
  const SynthOptions& o;
  const SynthOptions& quiet;
  Bytes total_bytes;
  const CountLeaveOuts& leave_outs;
  const std::function<bool(const Algorithm&)>& at_bound;

  // The plain matcher's variants as the portfolio ran them, where one of them made `best` at the
  // largest count tried (`largest`), `auto` chose and `best` is not at the bound; else none.
  std::vector<MatcherVariant> winning_variants(const ChunkingResult& best, int largest) const;

  // `variants` doubling from 2 `largest` while the fastest of them (their times are not smooth)
  // promises to beat the fastest so far by more than kDoublingGain (doubling_promises), up to the
  // pipelines' transfer budget; `matcher_last` their time at `largest`, `next_count` the seconds
  // the search's last count took. Where the rival made first was made (`first` positive:
  // under_first) and is the faster, it is the time to beat, and the doubling starts only where
  // the search's gain at its last count, gained again, beats it. Where another way beat
  // `matcher_last` past the search (the plans' doubling), a variant starts only where its own last
  // gain in the search, gained again, beats the fastest.
  void run(Collective c, int largest, double next_count, Time matcher_last,
           const std::vector<MatcherVariant>& variants, ChunkingResult& best, Time first) const;
};

}  // namespace tenet::synth::detail
