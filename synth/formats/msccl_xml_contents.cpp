// The MSCCL program run on its buffers (msccl_xml_import.hpp), in the order the import replays
// (check_order makes it the only outcome): what every slot holds and every message carries is a
// chunk summed over the contributions of a set of ranks. A step reads what its slots hold, a
// receive gets what its send read or reduced, and a reduction requires both sides to be the same
// chunk (a partial sum added to another chunk's slot is wrong data) with no rank in both (counted
// twice). At the end every output slot must hold its chunk, summed over every rank for the
// reducing collectives.
#include <fmt/format.h>

#include <map>

#include "synth/formats/msccl_xml_import.hpp"
#include "synth/ir/rank_set.hpp"

namespace tenet::synth::detail {
namespace {

constexpr ChunkId kNoData = -1;  // never written
constexpr ChunkId kSpoilt = -2;  // made by a step already reported (a read of nothing, ...)

// What a slot holds or a message carries.
struct Data {
  ChunkId chunk = kNoData;
  RankSet from;  // whose contributions it sums
};

class Run {
 public:
  explicit Run(Import& in) : in_(in), slots_(in.p), written_by_(in.p) {
    for (int r = 0; r < in.p; ++r)
      for (const auto& [slot, chunk] : in.holds[r]) slots_[r][slot] = {chunk, RankSet::single(r)};
  }

  void step(size_t i) {
    const XmlStep& x = in_.steps[i];
    const StepEffect e = effect_of(x.type);
    if (x.type == StepType::Nop) return;
    const std::vector<Data> received =
        e.receives ? carried_.at(in_.partner.at(i)) : std::vector<Data>();
    std::vector<Data> out(x.cnt);  // every slot is read before any is written
    for (int j = 0; j < x.cnt; ++j) {
      if (x.type == StepType::Reduce)
        out[j] =
            reduce(x, read(x, x.dst, j, x.dst_in_bounds), read(x, x.src, j, x.src_in_bounds),
                   {x.dst.buf, x.dst.off + j}, fmt::format("{}[{}]", x.src.buf, x.src.off + j));
      else if (e.receives && e.reduces)
        out[j] =
            reduce(x, read(x, x.src, j, x.src_in_bounds), received[j], {x.src.buf, x.src.off + j},
                   fmt::format("what gpu {} sent", in_.steps[in_.partner.at(i)].gpu));
      else if (e.receives)
        out[j] = received[j];
      else
        out[j] = read(x, x.src, j, x.src_in_bounds);
    }
    if (e.writes_dst)
      for (int j = 0; j < x.cnt; ++j) write(x, x.dst, j, x.dst_in_bounds, out[j]);
    if (e.sends) {
      // What a rank sends of its own input alone, in a reducing collective: the IR's transfer
      // sends its source's input (Transfer::from_input), whatever has arrived there since.
      const CollectiveKind kind = in_.a.collective.kind;
      if (kind == CollectiveKind::AllReduce || kind == CollectiveKind::ReduceScatter)
        for (int j = 0; j < x.cnt; ++j)
          if (out[j].chunk >= 0 && out[j].from == RankSet::single(x.gpu))
            in_.input_sent.insert({i, j});
      carried_[i] = std::move(out);
    }
  }

  // The output buffers against the collective's postcondition.
  void check_output() {
    const int p = in_.p, k = in_.k;
    for (int r = 0; r < p; ++r) switch (in_.a.collective.kind) {
        case CollectiveKind::AllReduce:
          for (int c = 0; c < in_.per_loop; ++c) expect(r, {in_.in_place ? 'i' : 'o', c}, c, true);
          break;
        case CollectiveKind::AllGather:
          for (int c = 0; c < in_.per_loop; ++c) expect(r, {'o', c}, c, false);
          break;
        case CollectiveKind::ReduceScatter:
          for (int j = 0; j < k; ++j) expect(r, {'o', j}, r * k + j, true);
          break;
        case CollectiveKind::AllToAll:
          for (int s = 0; s < p; ++s)
            for (int j = 0; j < k; ++j) expect(r, {'o', s * k + j}, (s * p + r) * k + j, false);
          break;
        default:
          break;
      }
    flush();
  }

 private:
  Data read(const XmlStep& x, Slot s, int j, bool in_bounds) {
    if (!in_bounds) return {kSpoilt, {}};  // reported by check_bounds
    auto it = slots_[x.gpu].find(in_.canon(x.gpu, {s.buf, s.off + j}));
    if (it != slots_[x.gpu].end() && it->second.chunk != kNoData) return it->second;
    // The runtime would move whatever the buffer holds.
    in_.problem(ImportProblemKind::SlotWrong, x,
                fmt::format("reads {}[{}], which holds no data at that point", s.buf, s.off + j));
    return {kSpoilt, {}};
  }

  void write(const XmlStep& x, Slot s, int j, bool in_bounds, Data d) {
    if (!in_bounds) return;
    const Slot at = in_.canon(x.gpu, {s.buf, s.off + j});
    slots_[x.gpu][at] = std::move(d);
    written_by_[x.gpu][at] = {x.tb, x.s};
  }

  // `other` (described by `what`) reduced with `mine`, which step x read from its slot `at`.
  Data reduce(const XmlStep& x, const Data& mine, const Data& other, Slot at,
              const std::string& what) {
    if (mine.chunk < 0 || other.chunk < 0) return {kSpoilt, {}};
    if (mine.chunk != other.chunk) {
      in_.problem(ImportProblemKind::ReduceMismatch, x,
                  fmt::format("reduces {} (chunk {}) with {}[{}], which holds chunk {}: the sum "
                              "of two different chunks",
                              what, other.chunk, at.buf, at.off, mine.chunk));
      return {kSpoilt, {}};
    }
    if (const int twice = mine.from.first_common(other.from); twice >= 0) {
      in_.problem(
          ImportProblemKind::DoubleCount, x,
          fmt::format("reduces {} (chunk {}, contributions {}) with {}[{}] (contributions "
                      "{}): counts rank {} twice",
                      what, other.chunk, other.from.str(), at.buf, at.off, mine.from.str(), twice));
      return {kSpoilt, {}};
    }
    Data sum = mine;
    sum.from.add(other.from);
    return sum;
  }

  // Output slot `s` of gpu r must hold chunk `want`, summed over every rank when `reduced`.
  void expect(int r, Slot s, ChunkId want, bool reduced) {
    const Slot at = in_.canon(r, s);
    auto it = slots_[r].find(at);
    const Data held = it == slots_[r].end() ? Data{} : it->second;
    int tb = -1, step = -1;
    std::string by;
    if (auto w = written_by_[r].find(at); w != written_by_[r].end()) {
      std::tie(tb, step) = w->second;
      by = fmt::format(" (last written by tb {} step {})", tb, step);
    }
    std::string what;
    if (held.chunk == kNoData && it == slots_[r].end()) {
      empty(r, s, want);  // reported with the run of untouched slots it belongs to
      return;
    }
    flush();
    if (held.chunk == kNoData)
      what = fmt::format("ends holding no data (only what was never written), not chunk {}", want);
    else if (held.chunk == kSpoilt)
      what = fmt::format("ends holding what a problem above spoilt{}, not chunk {}", by, want);
    else if (held.chunk != want)
      what = fmt::format("ends holding chunk {}{}, not chunk {}", held.chunk, by, want);
    else if (reduced && !held.from.is_range(0, in_.p))
      what = fmt::format("ends holding chunk {} summed over ranks {}{}, missing ranks {}", want,
                         held.from.str(), by, held.from.missing_from(in_.p).str());
    if (!what.empty())
      in_.result.problems.push_back({ImportProblemKind::SlotWrong, r, tb, step,
                                     fmt::format("gpu {}: {}[{}] {}", r, s.buf, s.off, what)});
  }

  // Output slots nothing ever wrote, one problem per run of consecutive slots (a program that
  // declares a million chunks and moves none is one problem per GPU, not a million).
  struct Untouched {
    int gpu = -1;
    Slot first;
    int count = 0;
    ChunkId want = 0;  // the first slot's chunk
  };
  void empty(int r, Slot s, ChunkId want) {
    if (run_.count > 0 && run_.gpu == r && run_.first.buf == s.buf &&
        run_.first.off + run_.count == s.off) {
      ++run_.count;
      return;
    }
    flush();
    run_ = {r, s, 1, want};
  }
  void flush() {
    if (run_.count == 0) return;
    const Untouched& u = run_;
    in_.result.problems.push_back(
        {ImportProblemKind::SlotWrong, u.gpu, -1, -1,
         u.count == 1 ? fmt::format("gpu {}: {}[{}] ends holding no data, not chunk {}", u.gpu,
                                    u.first.buf, u.first.off, u.want)
                      : fmt::format("gpu {}: {}[{}..{}] end holding no data ({} slots, not their "
                                    "chunks from {} on)",
                                    u.gpu, u.first.buf, u.first.off, u.first.off + u.count - 1,
                                    u.count, u.want)});
    run_.count = 0;
  }

  Untouched run_;
  Import& in_;
  std::vector<std::map<Slot, Data>> slots_;  // per GPU
  std::vector<std::map<Slot, std::pair<int, int>>>
      written_by_;                               // slot -> (tb, s) of its last write
  std::map<size_t, std::vector<Data>> carried_;  // sending step -> what it sent
};

}  // namespace

void check_contents(Import& in) {
  Run run(in);
  for (size_t i : in.order) run.step(i);
  run.check_output();
}

}  // namespace tenet::synth::detail
