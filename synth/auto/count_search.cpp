// The chunk-count search itself (best_chunking, search_chunks in synth/synthesizer.hpp): 1, 2, 4,
// ... chunks per NPU, each count made by the caller, with the rules that end it (synth/tuning.hpp);
// what `auto` makes at each count is synth/auto/chunk_search.cpp's.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <utility>

#include "synth/auto/deadline.hpp"
#include "synth/baselines/baselines.hpp"
#include "synth/synthesizer.hpp"
#include "synth/tuning.hpp"
#include "topo/limits.hpp"
#include "topo/units.hpp"

namespace tenet::synth {

ChunkingResult best_chunking(Collective c, Bytes total_bytes, int max_chunks_per_npu,
                             const ChunkMaker& make, int first,
                             const std::function<bool(const Algorithm&)>& enough,
                             int64_t transfer_budget, Time to_beat, Bytes min_chunk,
                             const Deadline* deadline) {
  Made<ChunkingResult> r = search_chunks(std::move(c), total_bytes, max_chunks_per_npu, make, first,
                                         enough, transfer_budget, to_beat, min_chunk, deadline);
  if (const NotMade* why = std::get_if<NotMade>(&r)) throw NotApplicable(why->why);
  return std::move(std::get<ChunkingResult>(r));
}

namespace {

// Times made at three counts in a row, k/4, k/2 and k (the last three tried, none a floor), still
// falling, fit T(k) = A + B/k + C k: a pipeline's fill falling with its chunks, its per-step costs
// rising with them. Where the fall slows (C > 0; B > 0 then follows from the fall) and the fit's
// bandwidth term A is at least `bound` (the lower bound's, 0: none), T(2k) = T(k) - B/(2k) + C k;
// otherwise nothing. An A under the bound is no time any algorithm takes: the times are the
// fastest method's at each count, and where the fastest changes from count to count they follow
// no one curve (docs/tuning.md, "The slowing fall").
std::optional<Time> turn_ahead(const std::vector<ChunkingResult::Try>& tried, Time bound) {
  if (tried.size() < 3) return std::nullopt;
  const ChunkingResult::Try& x = tried[tried.size() - 3];
  const ChunkingResult::Try& y = tried[tried.size() - 2];
  const ChunkingResult::Try& z = tried.back();
  for (const ChunkingResult::Try* t : {&x, &y, &z})
    if (t->floor || t->alone) return std::nullopt;
  if (y.chunks_per_npu != 2 * x.chunks_per_npu || z.chunks_per_npu != 2 * y.chunks_per_npu)
    return std::nullopt;
  if (!(x.time > y.time && y.time > z.time)) return std::nullopt;
  const auto t1 = static_cast<double>(x.time), t2 = static_cast<double>(y.time),
             t3 = static_cast<double>(z.time);
  const double c = 4.0 / 3.0 * ((t1 - t2) - 2 * (t2 - t3));  // C k
  const double b = (t2 - t3) + c / 2;                        // B / k
  if (!(c > 0) || t3 - b - c < static_cast<double>(bound)) return std::nullopt;
  return static_cast<Time>(t3 - b / 2 + c);
}

// Where search_chunks' counts stop, and what a count can still reach as times go.
struct CountLimits {
  Bytes total_bytes = 0;
  int max_chunks_per_npu = 0;
  Bytes min_chunk = 0;
  int64_t transfer_budget = 0;
  Time bound = 0;        // a lower bound on every count's time (0: none)
  double per_chunk = 1;  // transfers per chunk of the last algorithm made (relays' hops, ...)

  // The transfers count `at` is expected to make: its estimate, or as many per chunk as the last.
  double estimate(const Collective& at) const {
    return std::max(static_cast<double>(transfer_estimate(at)), per_chunk * at.num_chunks());
  }
  // Whether count `at`, past the first, is past where the search stops: chunks of less than a
  // byte (which would round up to one, a larger collective than asked), more pieces than bytes,
  // chunks under `min_chunk`, more chunks than asked for, or over the transfer budget.
  bool past(const Collective& at) const {
    const Bytes chunk = at.chunk_bytes_for(total_bytes);
    return at.chunks_per_npu > max_chunks_per_npu || chunk < 1 || at.pieces() > total_bytes ||
           chunk < min_chunk || estimate(at) > static_cast<double>(transfer_budget);
  }
  // Whether `at` is the last count the limits allow: the count after it is past them.
  bool last(const Collective& at) const {
    Collective after = at;
    after.chunks_per_npu *= 2;
    return past(after);
  }
  // As times go, a doubling at most halves a count's time over `bound`: from `at` (a count)
  // taking `time` (or at least that), whether no count the budget allows can beat `beat`. At
  // bound + 2^j x (beat - bound) or more, the next j counts cannot.
  bool none_ahead_beats(const Collective& at, Time time, Time beat) const {
    const Time under = std::clamp<Time>(bound, 0, beat);
    Collective next = at;
    for (Time left = time; left >= beat && next.chunks_per_npu <= max_chunks_per_npu;
         left = under + (left - under) / 2)
      next.chunks_per_npu *= 2;
    return next.chunks_per_npu > max_chunks_per_npu ||
           estimate(next) > static_cast<double>(transfer_budget);
  }
};

}  // namespace

Made<ChunkingResult> search_chunks(
    Collective c, Bytes total_bytes, int max_chunks_per_npu, const ChunkMaker& make, int first,
    const std::function<bool(const Algorithm&)>& enough, int64_t transfer_budget, Time to_beat,
    Bytes min_chunk, const Deadline* deadline, const std::function<Time(const Collective&)>& rival,
    double steep_turn, Time bound,
    const std::function<Time(const Collective&, const Algorithm&)>& last_rival) {
  ChunkingResult best;
  std::optional<Time> rival_time;  // asked once (`rival`), the less of it and `last_rival`'s
  bool asked_last = false;
  double last_seconds = 0;  // what the last count took
  bool have = false;
  int worse = 0;
  Time previous = -1;           // the time at the last count (half this one)
  bool previous_floor = false;  // whether `previous` is a floor (CannotBeat), not a time
  Time least_floor = -1;        // the lowest floor so far (CannotBeat)
  // Broadcast and Reduce cut the root's data alone (k chunks, not k per rank): they may go as far
  // as an All-Gather over the group would in chunks (a Broadcast down a few hops wants hundreds).
  if (c.kind == CollectiveKind::Broadcast || c.kind == CollectiveKind::Reduce)
    max_chunks_per_npu = static_cast<int>(
        std::min<int64_t>(topo::kMaxChunksPerNpu, int64_t{max_chunks_per_npu} * c.num_ranks()));
  CountLimits limits{total_bytes, max_chunks_per_npu, min_chunk, transfer_budget, bound};
  for (int k = first; k <= max_chunks_per_npu; k *= 2) {
    c.chunks_per_npu = k;
    const Bytes chunk = c.chunk_bytes_for(total_bytes);
    if (chunk < 1 || (k > first && limits.past(c))) break;
    // Whether this count would end past the deadline.
    auto ends_late = [&] {
      return deadline && deadline->reached(std::max(
                             2 * last_seconds, kSearchSecondsPerTransfer * limits.estimate(c)));
    };
    // Whether the count before (at least `previous`) says that no count from this one on can beat
    // `beat`, as times go.
    auto none_from_here_beats = [&](Time beat) {
      Collective before = c;
      before.chunks_per_npu = k / 2;
      return beat > 0 && previous >= 0 && limits.none_ahead_beats(before, previous, beat);
    };
    if (k > first && ends_late()) break;
    // The rival is asked before the first large count after the first is made: where no count
    // from here can beat it, none is made. (Its time is something that runs anyway: a count that
    // cannot beat it cannot be the answer.)
    if (rival && to_beat <= 0 && !rival_time && have && k > first &&
        transfer_estimate(c) > kAutoChunkCheapTransfers) {
      rival_time = rival(c);
      if (none_from_here_beats(*rival_time)) break;
    }
    // The last rival is asked once, with the fastest so far, before the last count the limits
    // allow: what it names is made anyway, so where this count cannot beat it, as times go, it is
    // not made; nor where its making took the time left (the deadline asked again).
    if (last_rival && to_beat <= 0 && !asked_last && have && k > first && limits.last(c)) {
      asked_last = true;
      const Time late = last_rival(c, best.algorithm);
      if (late > 0 && (!rival_time || *rival_time <= 0 || late < *rival_time)) rival_time = late;
      if (none_from_here_beats(late) || ends_late()) break;
    }
    Algorithm a;
    Time now;
    size_t transfers;
    bool floor = false;
    const auto began = Deadline::Clock::now();
    ChunkMade outcome = make(c, chunk);
    last_seconds = seconds_since(began);
    // A count past the first that makes nothing ends the search with what it has.
    if (NotMade* why = std::get_if<NotMade>(&outcome)) {
      if (k > first && (have || least_floor >= 0)) break;
      return std::move(*why);
    }
    if (const CannotBeat* e = std::get_if<CannotBeat>(&outcome)) {
      now = e->floor;
      transfers = e->transfers;
      floor = true;
      best.tried.push_back(
          {k, e->predicted && e->likely > 0 ? e->likely : now, std::nullopt, true, e->predicted});
    } else {
      a = std::move(std::get<Algorithm>(outcome));
      now = a.claimed_time;
      transfers = a.size();
      best.tried.push_back({k, now, std::nullopt});
    }
    limits.per_chunk = static_cast<double>(transfers) / std::max(1, c.num_chunks());
    const bool large = transfer_estimate(c) > kAutoChunkCheapTransfers;
    // A rival's time stands for to_beat from the first large count after the first (asked above).
    const Time beat = to_beat > 0 ? to_beat : rival_time.value_or(-1);
    // (A time then a floor extrapolate to less than the times would, so still to a bound; a
    // floor then a time, to more: not together.)
    const bool hopeless = beat > 0 && previous >= 0 &&
                          (previous_floor == floor || !previous_floor) && large &&
                          2.0 * static_cast<double>(now) - static_cast<double>(previous) >=
                              static_cast<double>(beat);  // (a floor may be 2^63 - 1 ps)
    previous = now;
    previous_floor = floor;
    // A time gains on the fastest time, a floor on the lowest floor: times and floors fall and rise
    // with the chunks as times go (above), so either rising says that no count ahead beats what
    // the search has, or to_beat.
    // (A floor at or over the fastest time gains nothing.)
    const bool gained = floor ? (least_floor < 0 || now < least_floor) &&
                                    !(have && now >= best.algorithm.claimed_time)
                              : !have || now < best.algorithm.claimed_time;
    // Whether this count is over `f` slower than the fastest.
    auto over = [&](double f) {
      return static_cast<double>(now) > (1 + f) * static_cast<double>(best.algorithm.claimed_time);
    };
    if (gained) {
      worse = 0;
      if (floor) {
        least_floor = now;
      } else {
        best.algorithm = std::move(a);
        best.chunks_per_npu = k;
        have = true;
        if (enough && enough(best.algorithm)) break;
      }
    } else if (++worse >= 2 &&
               (transfer_estimate(c) > kAutoChunkCheapTransfers ||
                (steep_turn > 0 && transfer_estimate(c) > kFlatSearchCheapTransfers))) {
      break;  // small algorithms try every count: their times need not fall steadily; tenet's
              // flat search stops from kFlatSearchCheapTransfers (its plans, and a matcher that
              // was fastest at its last count, double alone after it)
    } else if (static_cast<double>(transfers) * 2 > static_cast<double>(transfer_budget) / 4) {
      break;  // large ones stop at the first count that does not help
    } else if (have && best.chunks_per_npu * 2 == k &&
               (static_cast<int64_t>(transfers) >= kAutoChunkTurnTransfers
                    ? over(kChunkSearchTurn)
                    : steep_turn > 0 && best.chunks_per_npu > first && over(steep_turn))) {
      break;  // the times turned up past the fastest (a floor there: its time too), and the next
              // count costs twice this one; below kAutoChunkTurnTransfers, only where asked
              // (`steep_turn`) and the times had fallen to the fastest (a first count's fastest
              // may be a lucky one)
    }
    if (hopeless) break;
    // A large next count predicted slower than the fastest, this count's (turn_ahead), is not
    // made.
    if (have && best.chunks_per_npu == k &&
        limits.per_chunk * 2 * static_cast<double>(c.num_chunks()) > kAutoChunkTurnTransfers) {
      const std::optional<Time> ahead = turn_ahead(best.tried, bound);
      if (ahead && *ahead > best.algorithm.claimed_time) break;
    }
    // When the counts the budget allows cannot beat to_beat, or the rival, the search is over.
    if (beat > 0 && large && limits.none_ahead_beats(c, now, beat)) break;
  }
  if (!have && least_floor >= 0)
    return NotMade{fmt::format("no chunk count beats {}", format_time(to_beat))};
  return best;
}

}  // namespace tenet::synth
