#include "synth/plans/all_reduce.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "synth/bounds/lower_bound.hpp"
#include "synth/cost/timing.hpp"
#include "synth/memo.hpp"
#include "synth/plans/pipeline_calibration.hpp"
#include "synth/plans/pipeline_variants.hpp"
#include "synth/plans/planned.hpp"
#include "synth/tuning.hpp"

namespace tenet::synth::detail {
namespace {

// The Reduce-Scatter `first` and the All-Gather `second` as one All-Reduce over `c`, timed: each
// chunk's All-Gather waits for its own reduction, or, `in_turn`, each NPU sends its own chunks'
// All-Gather once every reduction into it has arrived. Such a send waits for the reductions into
// its NPU that end last: first as the halves were timed alone, then, joined again while one of them
// ends after a send it should precede, as timed together (the All-Gather's traffic slows the
// reductions down; each round adds the one that ends last, at most kInTurnRounds times), and where
// that ends after the two one after the other, also after the reduction that ends last of all.
// `serial` sets Algorithm::serial_channels. With `to_beat` positive (not in turn), a joined
// algorithm whose floor (synth::time_floor) is at least `to_beat` is not timed: its claimed time is
// that floor and `*floored` says so; `*floor` receives the floor wherever one was computed.
Algorithm join_all_reduce(const topo::Topology& t, const Collective& c, Algorithm first,
                          const Algorithm& second, bool serial, bool in_turn = false,
                          Time to_beat = -1, bool* floored = nullptr, Time* floor = nullptr) {
  const auto offset = static_cast<TransferId>(first.size());
  // Per NPU, the reductions into it its own All-Gather sends wait for.
  std::vector<std::vector<TransferId>> waits(static_cast<size_t>(t.num_nodes()));
  // Per NPU, the reduction into it that ends last in `a` (-1: none).
  auto last_into = [&](const Algorithm& a) {
    std::vector<TransferId> last(waits.size(), -1);
    for (TransferId i = 0; i < offset; ++i) {
      TransferId& l = last[static_cast<size_t>(a[i].dst)];
      if (l < 0 || a[i].end > a[l].end) l = i;
    }
    return last;
  };
  // Adds those to `waits`: whether any was not there yet.
  auto add = [&](const std::vector<TransferId>& last) {
    bool added = false;
    for (size_t v = 0; v < waits.size(); ++v)
      if (last[v] >= 0 && std::find(waits[v].begin(), waits[v].end(), last[v]) == waits[v].end()) {
        waits[v].push_back(last[v]);
        added = true;
      }
    return added;
  };
  if (in_turn) add(last_into(first));
  // The spreading phase in channels of its own, so that a port does not hold its first sends back
  // until the reduction phase's last ones there have gone.
  int channels = 0;
  for (const Transfer& x : first.transfers()) channels = std::max(channels, x.channel + 1);
  auto own = [&](TransferId i) {
    const Transfer& x = second[i];
    return x.src == second.collective.ranks[second.collective.origin(x.chunk)];
  };
  auto join = [&] {
    // A chunk's All-Gather leaves its owner after every reduction into it there: listed before it,
    // they are its implicit data dependencies (algorithm.hpp). (Listing them on each send from the
    // owner made N^3 dependencies on a switch.)
    Algorithm a = in_turn ? first : std::move(first);  // joined once unless in turn
    a.collective = c;
    a.serial_channels = serial;
    std::vector<TransferId> deps;
    for (TransferId i = 0; i < static_cast<TransferId>(second.size()); ++i) {
      const Transfer& x = second[i];
      deps.clear();
      for (TransferId d : second.deps(i)) deps.push_back(d + offset);
      if (in_turn && own(i))
        for (TransferId w : waits[static_cast<size_t>(x.src)]) deps.push_back(w);
      std::sort(deps.begin(), deps.end());
      a.add(x.chunk, x.src, x.dst, second.route(i), Op::Copy, deps, -1, -1, second.rate(i),
            static_cast<uint16_t>(std::min(65535, x.channel + channels)), false, x.count);
    }
    if (time_unless_floored(t, a, in_turn ? -1 : to_beat, floor)) *floored = true;
    return a;
  };
  Algorithm a = join();
  for (int round = 0; in_turn && round < kInTurnRounds; ++round) {
    // Whether some NPU sends one of its own chunks before a reduction into it has arrived.
    const std::vector<TransferId> last = last_into(a);
    std::vector<Time> sends(waits.size(), std::numeric_limits<Time>::max());
    for (TransferId i = 0; i < static_cast<TransferId>(second.size()); ++i)
      if (own(i)) {
        Time& first_send = sends[static_cast<size_t>(second[i].src)];
        first_send = std::min(first_send, a[offset + i].start);
      }
    bool early = false;
    for (size_t v = 0; v < waits.size(); ++v)
      early = early || (last[v] >= 0 && sends[v] < a[last[v]].end);
    if (!early || !add(last)) break;
    a = join();
  }
  // Where the halves in turn end after the halves one after the other (each as timed alone: their
  // traffic slowed each other more than it overlapped) and `serial` is each one's own, every NPU's
  // own sends wait for the reduction that ends last of all, as timed alone: nothing of the
  // All-Gather moves before the Reduce-Scatter has ended, each then takes its time alone, and the
  // faster is kept. (Where `serial` is not one half's, that half's time joined is not its own:
  // joined_in_turn also joins with the other setting.)
  if (in_turn && first.claimed_time > 0 && second.claimed_time > 0 &&
      first.serial_channels == serial && second.serial_channels == serial &&
      a.claimed_time > first.claimed_time + second.claimed_time) {
    TransferId end = -1;
    for (TransferId i = 0; i < offset; ++i)
      if (end < 0 || first[i].end > first[end].end) end = i;
    for (std::vector<TransferId>& w : waits) w.assign(1, end);
    Algorithm after = join();
    if (after.claimed_time < a.claimed_time) a = std::move(after);
  }
  return a;
}

// The halves joined in turn (join_all_reduce), the joined channels serial where `first`'s are;
// where `second`'s differ, also timed as `second`'s, and the faster kept. Where `first` sends on
// channel 0 alone (never serial: algorithm.hpp), as an answer reversed in time does, its setting
// does not time it: it takes `second`'s, joined once, each half timed as alone.
Algorithm joined_in_turn(const topo::Topology& t, const Collective& c, Algorithm first,
                         const Algorithm& second) {
  if (std::all_of(first.transfers().begin(), first.transfers().end(),
                  [](const Transfer& x) { return x.channel == 0; }))
    first.serial_channels = second.serial_channels;
  const bool serial = first.serial_channels;
  if (serial == second.serial_channels)
    return join_all_reduce(t, c, std::move(first), second, serial, /*in_turn=*/true);
  Algorithm a = join_all_reduce(t, c, first, second, serial, /*in_turn=*/true);
  Algorithm b = join_all_reduce(t, c, std::move(first), second, !serial, /*in_turn=*/true);
  if (b.claimed_time < a.claimed_time) return b;
  return a;
}

// `a`, an answer over k chunks per NPU, over `factor` k: each of its chunks `factor` consecutive
// ones of a `factor`-th of its bytes (chunk c of rank r = c / k is chunks c f .. c f + f - 1 of
// rank c f / (k f) = r), each transfer carrying the same bytes as a message of `factor` times its
// chunks, on the same route at the same rate and the same times. Nothing where its chunk bytes do
// not divide, or a message would carry over kMaxChunksPerTransfer chunks.
std::optional<Algorithm> refined(const Algorithm& a, int factor) {
  if (factor == 1) return a;
  if (a.chunk_bytes % factor != 0 || a.collective.all_reduce_chunks != 0) return std::nullopt;
  std::vector<TransferSpec> specs;
  specs.reserve(a.size());
  for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id) {
    TransferSpec& x = specs.emplace_back(a.spec(id));
    if (static_cast<int64_t>(x.count) * factor > kMaxChunksPerTransfer) return std::nullopt;
    x.chunk *= factor;
    x.count = static_cast<uint16_t>(x.count * factor);
  }
  Algorithm r = with_transfers(a, specs);
  r.collective.chunks_per_npu *= factor;
  r.chunk_bytes /= factor;
  return r;
}

}  // namespace

std::optional<Algorithm> answers_in_turn(const topo::Topology& t, const Collective& c,
                                         const Algorithm& rs, const Algorithm& ag) {
  const int k = std::max(rs.collective.chunks_per_npu, ag.collective.chunks_per_npu);
  if (k % rs.collective.chunks_per_npu != 0 || k % ag.collective.chunks_per_npu != 0)
    return std::nullopt;
  std::optional<Algorithm> first = refined(rs, k / rs.collective.chunks_per_npu);
  // (The All-Gather is only read: refined only where its count is the coarser.)
  std::optional<Algorithm> finer;
  if (ag.collective.chunks_per_npu != k) finer = refined(ag, k / ag.collective.chunks_per_npu);
  const Algorithm* second = ag.collective.chunks_per_npu == k ? &ag : finer ? &*finer : nullptr;
  if (!first || !second || first->chunk_bytes != second->chunk_bytes ||
      first->protocol != second->protocol || first->link_model != second->link_model ||
      first->reduce_bandwidth != second->reduce_bandwidth)
    return std::nullopt;
  Collective joined = c;
  joined.chunks_per_npu = k;
  Algorithm a = joined_in_turn(t, joined, std::move(*first), *second);
  a.method = fmt::format("the halves' own answers in turn (Reduce-Scatter: {}; All-Gather: {})",
                         rs.method, ag.method);
  a.provenance = rs.provenance;
  a.provenance.halves_in_turn = a.provenance.halves_answers = true;
  a.provenance.all_gather = ag.provenance.pipeline;
  a.provenance.full_rate_drain = 0;  // (each half's, if any, is in its own words)
  a.provenance.tail_spread = 0;
  return a;
}

bool waves_apply(const topo::Topology& t, const Collective& c, Bytes chunk_bytes,
                 const SynthOptions& o) {
  if (c.kind != CollectiveKind::AllReduce || c.chunks_per_npu < 2 || c.all_reduce_chunks != 0 ||
      c.uneven() || transfer_estimate(c) > kWavesTransferBudget)
    return false;
  const LowerBound b = lower_bound(t, c, chunk_bytes, bounds_of(o));
  return static_cast<double>(b.steering) >= kWavesFrom * static_cast<double>(b.bandwidth);
}

std::string in_waves_words(int waves) {
  return fmt::format(
      ", in {} waves (its Reduce-Scatter and All-Gather of one chunk per NPU, each wave's "
      "All-Gather beside the next wave's Reduce-Scatter)",
      waves);
}

namespace {

// The matcher's All-Reduce of c.chunks_per_npu = k chunks per NPU as k waves: its Reduce-Scatter
// and All-Gather of one chunk per NPU (of the same chunk size) made once, the j-th wave carrying
// each rank's j-th chunk. Listed wave by wave, each wave's All-Gather (in channels of its own)
// before the next wave's Reduce-Scatter: it leaves each owner once that wave's reductions are in,
// while the next wave's go on beside it. Where Reduce-Scatter then All-Gather holds an NPU's links
// twice as long as the bound (a mesh's corners send every contribution out, then take the whole
// result in: LowerBound::steering over kWavesFrom of the bandwidth term), the waves overlap the one
// with the other. Timed unless its floor is at least `to_beat` (then it claims that floor). Nothing
// where the matcher's work is over `work_budget`, or where a half sends messages (their chunks
// follow each other in one wave, not in all of them).
std::optional<Algorithm> in_waves(const topo::Topology& t, const Collective& c, Bytes chunk_bytes,
                                  const SynthOptions& o, double work_budget, Time to_beat) {
  const int k = c.chunks_per_npu;
  Collective rs = c, ag = c;
  rs.kind = CollectiveKind::ReduceScatter;
  ag.kind = CollectiveKind::AllGather;
  rs.chunks_per_npu = ag.chunks_per_npu = 1;
  std::optional<Algorithm> first =
      synthesize_plan(t, rs, chunk_bytes, o, Method::Matcher, false, work_budget);
  if (!first) return std::nullopt;
  std::optional<Algorithm> second =
      synthesize_plan(t, ag, chunk_bytes, o, Method::Matcher, /*last_first=*/false, work_budget);
  if (!second || first->has_messages() || second->has_messages()) return std::nullopt;
  int channels = 0;
  for (const Transfer& x : first->transfers()) channels = std::max(channels, x.channel + 1);
  Algorithm a = with_transfers(*first, {});
  a.collective = c;
  size_t pooled = 0;  // route links and dependencies of one wave (one pool: Algorithm::reserve)
  for (const Algorithm* half : {&*first, &*second})
    for (TransferId i = 0; i < static_cast<TransferId>(half->size()); ++i)
      pooled += half->route(i).size() + half->deps(i).size();
  const auto waves = static_cast<size_t>(k);
  a.reserve(waves * (first->size() + second->size()), waves * pooled, 0);
  std::vector<TransferId> deps;
  // Wave j of `half`: chunk r becomes r k + j (rank r's j-th); the All-Gather sends the owner's
  // reduced copy, not its input.
  auto put = [&](const Algorithm& half, int j, int channel_offset, bool gather) {
    const auto offset = static_cast<TransferId>(a.size());
    for (TransferId i = 0; i < static_cast<TransferId>(half.size()); ++i) {
      const Transfer& x = half[i];
      deps.clear();
      for (TransferId d : half.deps(i)) deps.push_back(d + offset);
      a.add(x.chunk * k + j, x.src, x.dst, half.route(i), x.op, deps, -1, -1, half.rate(i),
            static_cast<uint16_t>(std::min(65535, x.channel + channel_offset)),
            !gather && x.from_input, x.count);
    }
  };
  for (int j = 0; j < k; ++j) {
    put(*first, j, 0, false);
    put(*second, j, channels, true);
  }
  time_unless_floored(t, a, to_beat);
  a.provenance = Provenance(Producer::Matcher);
  a.provenance.waves = k;
  return a;
}

}  // namespace

Time joined_prediction(const PipelinePrediction& reduced, const PipelinePrediction& gathered) {
  const Time apart = std::min(reduced.end - reduced.first, gathered.end - gathered.first);
  return std::max(reduced.end + gathered.first, reduced.first + gathered.end) +
         static_cast<Time>(kHalvesShare * static_cast<double>(apart));
}

namespace {

// An All-Reduce by one method, as its Reduce-Scatter then its All-Gather joined (each chunk's
// All-Gather waits only for its own reduction): the method's one way (all_reduce_halves), or the
// flow plan's pipelines variant by variant, each in both halves (a half fastest alone may join
// worse than the same variant in both). The fastest joined is kept (best).
class JoinedHalves {
 public:
  JoinedHalves(const topo::Topology& t, const Collective& c, Bytes chunk_bytes,
               const SynthOptions& o, Method planned, double work_budget)
      : t_(t),
        c_(c),
        chunk_bytes_(chunk_bytes),
        o_(o),
        planned_(planned),
        work_budget_(work_budget),
        rs_(c),
        ag_(c),
        half_(o) {
    rs_.kind = CollectiveKind::ReduceScatter;
    ag_.kind = CollectiveKind::AllGather;
  }
  // (The halves' progress calls back into this object.)
  JoinedHalves(const JoinedHalves&) = delete;
  JoinedHalves& operator=(const JoinedHalves&) = delete;

  const Collective& reduce_scatter() const { return rs_; }
  const Collective& all_gather() const { return ag_; }
  // The fastest so far (a floor or a prediction standing for the method where floored_best).
  std::optional<Algorithm>& best() { return best_; }
  bool floored_best() const { return floored_best_; }

  // Variant `variant` of the pipelines (-1: the method's one way), joined, into best() where
  // faster.
  void run(int variant) {
    const Time to_beat = best_ && !floored_best_ ? best_->claimed_time : o_.to_beat;
    // (Nor where it is at or over the caller's PipelineOptions::floored_at: untimed, it makes no
    // difference to the caller.)
    const Time stop = o_.pipelines.floored_at;
    Time floor_over = stop <= 0 ? to_beat : to_beat > 0 ? std::min(to_beat, stop) : stop;
    if (!floor_may_decide(o_.pipelines, variant, floor_over)) floor_over = -1;
    if (lost_with_twin(variant, to_beat) || predicted_to_lose(variant, to_beat)) return;
    if (o_.progress) half_.progress = [this](double f) { o_.progress(f / 2); };
    std::optional<Algorithm> first, second;
    if (planned_ != Method::PlanPipeline) {
      std::tie(first, second) =
          all_reduce_halves(t_, rs_, ag_, chunk_bytes_, half_, planned_, work_budget_);
      if (!first || !second) return;
    } else {
      first = synthesize_plan(t_, rs_, chunk_bytes_, half_, planned_, false, work_budget_, variant);
      if (!first) return;
      if (o_.progress) half_.progress = [this](double f) { o_.progress(0.5 + f / 2); };
      second =
          synthesize_plan(t_, ag_, chunk_bytes_, half_, planned_, /*last_first=*/true, 0, variant);
      if (!second) return;
    }
    give_up_point(o_.give_up);  // (joining and timing a million transfers is a second)
    const bool serial = first->serial_channels;
    // A variant that cannot beat the fastest so far, or what the caller has
    // (SynthOptions::to_beat), is not timed (it reports its floor).
    bool floored = false;
    Time floor = -1;
    Algorithm a = join_all_reduce(t_, c_, std::move(*first), *second, serial, false, floor_over,
                                  &floored, &floor);
    if (floor >= 0 && variant >= 0 && o_.pipelines.on_floor) o_.pipelines.on_floor(variant, floor);
    a.method = second->method;
    a.provenance = second->provenance;
    if (variant >= 0 && o_.pipelines.on_variant) o_.pipelines.on_variant(variant, a.claimed_time);
    if (variant >= 0 && !floored && o_.pipelines.on_timed)
      o_.pipelines.on_timed(variant, a.claimed_time);
    // (A floor is at most its time: its ratio under the variant's own, the margin no narrower.)
    if (planned_ == Method::PlanPipeline && o_.pipelines.calibration && o_.memo)
      if (const auto& [reduced, gathered] = predicted(variant); reduced && gathered)
        if (const TreePacking* trees = o_.memo->plans.of(t_); trees && !trees->trees.empty())
          o_.pipelines.calibration->record(
              variant, true, a.claimed_time, joined_prediction(*reduced, *gathered),
              static_cast<double>(ag_.num_chunks()) / static_cast<double>(trees->trees.size()),
              floored);
    if (floored) floored_at_[variant] = a.claimed_time;
    keep(std::move(a), floored, stop);
  }

 private:
  // Each half's prediction per variant; a variant streams as its twin of the other pacing
  // (Planned::streamed: the shape and speed-up alone), so they share one. Where the topology is
  // its own reverse (topo::twin_links) the halves share one too: the Reduce-Scatter's trees are
  // the All-Gather's (FlowPlans), each link renamed to its twin, of the same bandwidth, latency and
  // step, so their fills are the same.
  using Halves = std::pair<std::optional<PipelinePrediction>, std::optional<PipelinePrediction>>;
  const Halves& predicted(int variant) {
    const PipelineVariant pv = pipeline_variant(variant);
    const auto key = std::make_tuple(pv.shape.lanes, pv.shape.split, pv.shape.serial, pv.sped_up);
    auto it = predictions_.find(key);
    if (it == predictions_.end()) {
      if (!own_reverse_) own_reverse_ = topo::twin_links(t_).has_value();
      std::optional<PipelinePrediction> reduced =
          predict_pipeline(t_, rs_, chunk_bytes_, half_, variant);
      std::optional<PipelinePrediction> gathered =
          *own_reverse_ ? reduced : predict_pipeline(t_, ag_, chunk_bytes_, half_, variant);
      it = predictions_.emplace(key, Halves(std::move(reduced), std::move(gathered))).first;
    }
    return it->second;
  }

  // A paced variant whose unpaced twin's floor could not beat the time to beat cannot either
  // (unpaced_twin): not made, it reports that floor, the least its own could be.
  bool lost_with_twin(int variant, Time to_beat) const {
    const std::optional<int> twin =
        planned_ == Method::PlanPipeline ? unpaced_twin(variant) : std::nullopt;
    if (!twin) return false;
    const auto lost = floored_at_.find(*twin);
    if (lost == floored_at_.end() || to_beat <= 0 || lost->second < to_beat) return false;
    if (o_.pipelines.on_variant) o_.pipelines.on_variant(variant, lost->second);
    return true;
  }

  // A variant predicted (joined_prediction) no faster than the fastest so far, or what the caller
  // has or found elsewhere (PipelineOptions::predicted_against), by kAllReducePredictedSure, is
  // not made; it reports its likely time (the halves' summed, over that time to beat). (Where the
  // run keeps its flow plans: else each prediction would pack them again.)
  bool predicted_to_lose(int variant, Time to_beat) {
    const Time against = predicted_against(under_callers(to_beat, o_.to_beat), o_.pipelines);
    // (Its own ratio at the counts before, where it was made then: PipelineCalibration.)
    const double sure =
        PipelineCalibration::sure(o_.pipelines.calibration, variant, true, kAllReducePredictedSure);
    if (planned_ != Method::PlanPipeline || !o_.pipelines.predicted || against <= 0 || !o_.memo)
      return false;
    const auto& [reduced, gathered] = predicted(variant);
    if (!reduced || !gathered ||
        sure * static_cast<double>(joined_prediction(*reduced, *gathered)) <
            static_cast<double>(against))
      return false;
    // (Over the time to beat where there is one: standing for this method, it cannot replace
    // what the caller has.)
    const Time likely =
        std::max(reduced->likely + gathered->likely, to_beat > 0 ? to_beat : against);
    if (stand_in_unmade(t_, c_, chunk_bytes_, o_, variant, likely, best_)) floored_best_ = true;
    return true;
  }

  // `a`, joined (`floored`: its claimed time is its floor), into best() where it stands for the
  // method: the fastest timed; or, before any is timed, a floor over what the caller has or over
  // its floored_at `stop`, then the least such floor (the least any variant here may take, as the
  // count's floor says).
  void keep(Algorithm a, bool floored, Time stop) {
    if (floored && !best_ && (o_.to_beat > 0 || stop > 0)) {
      // Only a floor over what the caller has, or over its floored_at: it stands for this method,
      // so said.
      if (o_.floored) *o_.floored = true;
      best_ = std::move(a);
      floored_best_ = floor_stands_ = true;
    } else if (floored && floor_stands_) {
      best_->claimed_time = std::min(best_->claimed_time, a.claimed_time);
    } else if (!floored && (!best_ || floored_best_ || a.claimed_time < best_->claimed_time)) {
      best_ = std::move(a);
      floored_best_ = floor_stands_ = false;
    }
  }

  const topo::Topology& t_;
  const Collective& c_;
  Bytes chunk_bytes_;
  const SynthOptions& o_;
  Method planned_;
  double work_budget_;
  Collective rs_, ag_;
  SynthOptions half_;
  std::optional<Algorithm> best_;
  bool floored_best_ = false;  // best_ is a floor over o.to_beat, not timed
  // ... and it claims the least of the floored variants' floors (the count's floor, not
  // necessarily its own; not a prediction's stand-in).
  bool floor_stands_ = false;
  std::map<std::tuple<bool, int, bool, bool>, Halves> predictions_;
  std::optional<bool> own_reverse_;  // (asked once, where a prediction is)
  std::map<int, Time> floored_at_;   // the variants left untimed by their floor, with that floor
};

// The flow plan's halves in turn (kPipelineInTurn), into `best` where faster: each its own fastest
// variant, each NPU's All-Gather starting once every reduction into it is done, so that neither
// half's streams crowd the other's out. The joined channels are serial where both halves' are,
// shared where neither's are, else timed both ways. On mixed speeds, where the pipelines together
// end over kInTurnOver of the RS+AG figure (LowerBound::coarse) (below it they may overlap where in
// turn they cannot; and each count in turn costs as much again), and where steps are not charged
// (with per-step costs they were never the fastest where measured: docs/tuning.md, kInTurnOver).
void pipelines_in_turn(const topo::Topology& t, const Collective& c, const Collective& rs,
                       const Collective& ag, Bytes chunk_bytes, const SynthOptions& o,
                       double work_budget, std::optional<Algorithm>& best) {
  const Method planned = Method::PlanPipeline;
  const bool asked = (o.pipelines.variants >> kPipelineInTurn & 1) != 0;
  if ((o.pipelines.left_out >> kPipelineInTurn & 1) != 0) return;
  const bool applies =
      mixed_speeds(t) && !t.charges_steps() &&
      (!best ||
       static_cast<double>(best->claimed_time) >
           kInTurnOver * static_cast<double>(lower_bound(t, c, chunk_bytes, bounds_of(o)).coarse));
  if (o.pipelines.variants != 0 ? !asked : !applies) return;
  // Each half its own variants, reported as kInTurnHalf[h] + v.
  auto alone = [&](int h) {
    SynthOptions a = o;
    a.progress = nullptr;
    // Each half's fastest variant is made, whatever the caller has: the halves join only here.
    a.to_beat = -1;
    a.pipelines.predicted_against = -1;
    a.pipelines.floored_at = -1;  // (a whole All-Reduce's: no half's)
    a.floored = nullptr;
    a.pipelines.variants = o.pipelines.variants >> kInTurnHalf[h] & kWholeVariants;
    a.pipelines.left_out = o.pipelines.left_out >> kInTurnHalf[h] & kWholeVariants;
    a.pipelines.floors_before = nullptr;  // (the whole's variants': not this half's)
    a.pipelines.on_floor = nullptr;
    a.pipelines.on_timed = nullptr;  // (the halves in turn are timed joined, below)
    if (o.pipelines.on_variant)
      a.pipelines.on_variant = [&o, h](int v, Time time) {
        o.pipelines.on_variant(kInTurnHalf[h] + v, time);
      };
    return a;
  };
  std::optional<Algorithm> first =
      synthesize_plan(t, rs, chunk_bytes, alone(0), planned, false, work_budget);
  if (!first) return;
  std::optional<Algorithm> second =
      synthesize_plan(t, ag, chunk_bytes, alone(1), planned, false, 0);
  if (!second) return;
  const std::string method =
      fmt::format("flow-plan pipelines, the halves in turn (Reduce-Scatter: {}; All-Gather: {})",
                  describe(first->provenance.pipeline), describe(second->provenance.pipeline));
  Provenance made_by(Producer::FlowPlanPipelines);
  made_by.halves_in_turn = true;
  made_by.pipeline = first->provenance.pipeline;
  made_by.all_gather = second->provenance.pipeline;
  Algorithm a = joined_in_turn(t, c, std::move(*first), *second);
  a.method = method;
  a.provenance = made_by;
  if (o.pipelines.on_variant) o.pipelines.on_variant(kPipelineInTurn, a.claimed_time);
  if (o.pipelines.on_timed) o.pipelines.on_timed(kPipelineInTurn, a.claimed_time);
  if (!best || a.claimed_time < best->claimed_time) best = std::move(a);
}

}  // namespace

// One method: the plain matcher, or the matcher on the flow plan. Nothing when the plan does not
// apply.
std::optional<Algorithm> synthesize_with(const topo::Topology& t, const Collective& c,
                                         Bytes chunk_bytes, const SynthOptions& o, Method planned,
                                         double work_budget) {
  if (c.kind != CollectiveKind::AllReduce) {
    std::optional<Algorithm> a = synthesize_plan(t, c, chunk_bytes, o, planned, false, work_budget);
    if (a && planned != Method::PlanPipeline) {  // the pipelines were timed to pick one
      // Not timed where its floor cannot beat what the caller has (SynthOptions::to_beat).
      if (time_unless_floored(t, *a, o.to_beat) && o.floored) *o.floored = true;
    }
    return a;
  }
  JoinedHalves joined(t, c, chunk_bytes, o, planned, work_budget);
  std::optional<Algorithm>& best = joined.best();
  if (planned != Method::PlanPipeline) {
    joined.run(-1);
    // The plain matcher's in waves too, where Reduce-Scatter then All-Gather cannot come near the
    // bound (in_waves); the faster kept, ties to the halves joined.
    if (planned == Method::Matcher && best && !joined.floored_best() &&
        waves_apply(t, c, chunk_bytes, o)) {
      SynthOptions quiet = o;
      quiet.progress = nullptr;  // (the halves joined reported it)
      if (std::optional<Algorithm> waved =
              in_waves(t, c, chunk_bytes, quiet, work_budget, best->claimed_time);
          waved && waved->claimed_time < best->claimed_time)
        best = std::move(waved);
    }
    return std::move(best);
  }
  for_each_pipeline_variant(t, c, chunk_bytes, o, best, [&](int v) { joined.run(v); });
  pipelines_in_turn(t, c, joined.reduce_scatter(), joined.all_gather(), chunk_bytes, o, work_budget,
                    best);
  return std::move(best);
}

}  // namespace tenet::synth::detail
