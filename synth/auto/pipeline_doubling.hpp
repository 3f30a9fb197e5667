// What the flow plan's pipelines doubling their chunks alone past the flat search
// (chunk_search.cpp, double_plans) reads from the counts before: each variant's times and floors
// there, which of them fall behind, the time at which a count ends the doubling whatever it is, and
// where its own times, following fill and steps, end it.
#pragma once

#include <cstdint>
#include <map>

#include "synth/synthesizer.hpp"
#include "topo/units.hpp"

namespace tenet::synth::detail {

// Each variant's floor in `floors`, else its time in `times` (PipelineOptions::floors_before).
std::map<int, Time> least_known(const std::map<int, Time>& times,
                                const std::map<int, Time>& floors);

// The pipeline variants' times (on_variant), timings (on_timed) and floors (on_floor) at each
// count the search made.
struct SearchedVariants {
  std::map<int, std::map<int, Time>> times, timed, floors;
  // What a count's floors_before are: at the largest count made below it, each variant's floor,
  // else its time.
  std::map<int, Time> floors_before(int count) const;
  // The variants timed at `count`, with their times (none where it was not made).
  std::map<int, Time> timed_at(int count) const;
};

// The variants that variant_falls_behind the fastest of them at the last count (`last`: the
// variants timed there, with their times; `before`: those timed at the count before it), as bits.
// Timings alone: a floor reported in a time's place is under it (as `before` it makes the gain look
// smaller, as the fastest the others look further behind), a prediction either side of it. Not an
// All-Reduce's halves in turn, each alone (nor among the fastest), nor the split ones: their fill,
// four chunk times a level, loses at the smaller counts and they catch up at larger ones
// (random-fabric:33 All-Gather of 256 MiB: split 1.30x the fastest at 256 chunks per NPU, losing
// ground, and the fastest at 1024).
uint64_t variants_falling_behind(const std::map<int, Time>& last,
                                 const std::map<int, Time>& before);

// What one method's doubling alone (double_plans) hears of the pipeline variants over its counts:
// their times at the last count (floors and predictions of the untimed too), their timings there
// and at the count before, which decide the variants left out of the counts after
// (variants_falling_behind; a bit each), and their floors (PipelineOptions::floors_before). Only
// the pipelines' doubling (`pipelines`) reads them; the server plan's runs with none left out.
class DoublingVariants {
 public:
  // `searched`, the search's, must outlive this; `largest` is its last count.
  DoublingVariants(const SearchedVariants& searched, int largest, bool pipelines)
      : searched_(searched), largest_(largest), pipelines_(pipelines) {}
  DoublingVariants(const DoublingVariants&) = delete;
  DoublingVariants& operator=(const DoublingVariants&) = delete;
  // `p`'s hooks report here (while this lives).
  void listen(PipelineOptions& p);
  // Whether a variant reported at the last count.
  bool reported() const { return !times_.empty(); }
  // Sets `p` for count `k`: the variants left out (from the doubling's second count on: the
  // search's last count stands as the count before its first, whose times at one or two chunks
  // per tree swing with the fill), the kVariantsPast fastest alone where `fastest_alone` (past
  // kPipelineAllVariantsTransfers) and a count reported, and the floors before (at the first
  // count, the search's at its last). The last count's reports then start over.
  void before(int k, bool fastest_alone, PipelineOptions& p);

 private:
  const SearchedVariants& searched_;
  int largest_;
  bool pipelines_;
  std::map<int, Time> times_, timed_, timed_before_, floors_, floors_before_;
  uint64_t out_ = 0;
};

// The pipelines' times at their doubling's own counts, each made, where per-step costs are charged:
// where four counts in a row follow fill and steps, the model ends the doubling
// (model_ends_doubling). Not the search's counts before: there the pipelines ran beside other
// ways, their variants not yet left out, and their times did not go on into the doubling's where
// measured (docs/tuning.md, kPipelinesModelTrust).
class DoublingModel {
 public:
  explicit DoublingModel(bool applies) : applies_(applies) {}
  // Count `k` made at `now`: whether the model ends the doubling there (`fastest`: the fastest of
  // every way so far).
  bool ends_at(int k, Time now, Time fastest);

 private:
  bool applies_;
  std::map<int, Time> times_;
};

// Whether a doubling alone past the search (the pipelines', the plain matcher's) that made `now`
// after `before` (its count before, or the time its gain is measured from) is worth another: where
// its gain, gained again, would beat `fastest` (the fastest of every way so far) by more than
// kDoublingGain, as each count gains less than the one before. Where `now` is the fastest, where
// it gained about that much.
bool doubling_promises(Time now, Time before, Time fastest);

// The least time at or over which the pipelines' count ends their doubling (double_plans),
// whatever it is: over kPipelinesContend of `fastest` (neither contending nor far), and past the
// doubling's first count (`last` made, `trend` the time its gain is measured from) its gain,
// gained again, no nearer than kDoublingGain under `fastest` (not promising either). A variant
// whose floor is at or over it need not be timed (PipelineOptions::floored_at).
Time doubling_stops_at(Time fastest, Time last, Time trend);

// Whether the pipelines' doubling goes on past a count that cannot win (its time unknown: what
// stands for it, `stands`, is their likely time, left unmade on a prediction, or a floor under
// it), far from the bound: where the next count may still beat `fastest` by more than
// kDoublingGain, both as `stands`, gained again as it gained on `trend` (doubling_promises), and
// halved over the bound's bandwidth term `bandwidth` (as times go, a doubling at most halves that
// part: search_chunks), the larger of the two. Far from the bound their times may fall steeply
// from count to count, so the next count may win though this one does not (docs/tuning.md,
// kPipelinesPersist).
bool doubling_goes_past(Time stands, Time trend, Time fastest, Time bandwidth);

}  // namespace tenet::synth::detail
