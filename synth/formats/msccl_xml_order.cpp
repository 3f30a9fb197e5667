// The MSCCL runtime's buffers and order (msccl_xml_import.hpp): every access within its buffer's
// declared size, and every two accesses of a slot, one of them a write, ordered.
//
// Thread blocks run concurrently; the runtime orders two steps only by a thread block's own order,
// a depid/deps dependency, and a receive completing after its matching send, and chains of those
// (through other GPUs too). A read must follow the slot's last write, and a write the last write
// and every read since: then, by induction, every two conflicting accesses are ordered, and the
// order the import replays (one topological order of those edges) is the only outcome.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "synth/formats/msccl_xml_import.hpp"

namespace tenet::synth::detail {
namespace {

// "o[9]", or "o[3..4]" for a count of 2.
std::string range_name(Slot s, int cnt) {
  return cnt == 1 ? fmt::format("{}[{}]", s.buf, s.off)
                  : fmt::format("{}[{}..{}]", s.buf, s.off, int64_t{s.off} + cnt - 1);
}

const char* size_name(char buf) {
  return buf == 'i' ? "i_chunks" : buf == 'o' ? "o_chunks" : "s_chunks";
}

// One access of a slot by a step: the slot as the replay names it (in place, input and output are
// one buffer) and as the step wrote it.
struct Access {
  Slot slot, named;
  bool write;
};

std::vector<Access> accesses_of(const Import& in, const XmlStep& x) {
  const StepEffect e = effect_of(x.type);
  std::vector<Access> out;
  for (int j = 0; j < x.cnt; ++j) {
    auto add = [&](Slot s, bool write) {
      const Slot named{s.buf, s.off + j};
      out.push_back({in.canon(x.gpu, named), named, write});
    };
    if (e.reads_src && x.src_in_bounds) add(x.src, false);
    if (e.reads_dst && x.dst_in_bounds) add(x.dst, false);
    if (e.writes_dst && x.dst_in_bounds) add(x.dst, true);
  }
  return out;
}

// Which steps of a GPU the runtime runs before a later one: a search back from the later step
// over the edges before it (Import::before), no further back than the earliest step asked about
// (in.order places every step after all it follows), stopping once every thread block asked
// about has been reached at or past the step asked about (a thread block runs its steps in order).
class Precedence {
 public:
  explicit Precedence(const Import& in) : in_(in), seen_(in.steps.size(), 0) {}

  // For each of `earlier` (steps of x's GPU placed before x), whether it completes before x starts.
  std::vector<bool> before(size_t x, const std::vector<size_t>& earlier) {
    const XmlStep& sx = in_.steps[x];
    std::map<int, int> need;  // thread block -> the latest step asked about in it
    size_t earliest = in_.position[x];
    for (size_t a : earlier)
      if (in_.steps[a].tb != sx.tb) {
        int& s = need.try_emplace(in_.steps[a].tb, in_.steps[a].s).first->second;
        s = std::max(s, in_.steps[a].s);
        earliest = std::min(earliest, in_.position[a]);
      }
    std::map<int, int> reached = search(x, need, earliest);
    std::vector<bool> out;
    for (size_t a : earlier) {
      const XmlStep& sa = in_.steps[a];
      auto it = reached.find(sa.tb);
      out.push_back(sa.tb == sx.tb || (it != reached.end() && it->second >= sa.s));
    }
    return out;
  }

 private:
  // Per thread block of x's GPU, the latest step found to complete before x (breadth first, so
  // that a direct dependency is found at once).
  std::map<int, int> search(size_t x, const std::map<int, int>& need, size_t earliest) {
    std::map<int, int> reached;
    if (need.empty()) return reached;
    ++stamp_;
    size_t missing = need.size();
    std::vector<size_t> queue(in_.before[x].begin(), in_.before[x].end());
    const int gpu = in_.steps[x].gpu;
    for (size_t q = 0; q < queue.size() && missing > 0; ++q) {
      const size_t y = queue[q];
      if (seen_[y] == stamp_ || in_.position[y] < earliest) continue;
      seen_[y] = stamp_;
      const XmlStep& sy = in_.steps[y];
      if (sy.gpu == gpu) {
        auto [it, added] = reached.try_emplace(sy.tb, sy.s);
        const int was = added ? -1 : it->second;
        it->second = std::max(it->second, sy.s);
        if (auto n = need.find(sy.tb);
            n != need.end() && was < n->second && it->second >= n->second)
          --missing;
      }
      queue.insert(queue.end(), in_.before[y].begin(), in_.before[y].end());
    }
    return reached;
  }

  const Import& in_;
  std::vector<uint32_t> seen_;  // the search that last visited each step
  uint32_t stamp_ = 0;
};

// A slot's last write and the reads since.
struct SlotUse {
  std::optional<size_t> writer;
  std::vector<size_t> readers;
};

// An earlier access that step x's access must follow.
struct Conflict {
  size_t step;
  Access access;  // x's
  bool earlier_writes;
};

std::vector<Conflict> conflicts_of(size_t x, const std::vector<Access>& accesses,
                                   std::map<Slot, SlotUse>& use) {
  std::vector<Conflict> out;
  for (const Access& ac : accesses) {
    const SlotUse& u = use[ac.slot];
    if (u.writer && *u.writer != x) out.push_back({*u.writer, ac, true});
    if (ac.write)
      for (size_t r : u.readers)
        if (r != x) out.push_back({r, ac, false});
  }
  return out;
}

void record(size_t x, const std::vector<Access>& accesses, std::map<Slot, SlotUse>& use) {
  for (const Access& ac : accesses)
    if (!ac.write) use[ac.slot].readers.push_back(x);
  for (const Access& ac : accesses)
    if (ac.write) use[ac.slot] = {x, {}};
}

}  // namespace

void check_bounds(Import& in) {
  for (XmlStep& x : in.steps) {
    const StepEffect e = effect_of(x.type);
    const BufferSizes& sizes = in.sizes[x.gpu];
    auto check = [&](Slot s, const char* verb) {
      const bool ok = s.off >= 0 && int64_t{s.off} + x.cnt <= sizes.of(s.buf);
      if (!ok)
        in.problem(ImportProblemKind::OutOfBounds, x,
                   fmt::format("{} {}, outside its buffer: gpu {} declares {}={}", verb,
                               range_name(s, x.cnt), x.gpu, size_name(s.buf), sizes.of(s.buf)));
      return ok;
    };
    if (e.reads_src) x.src_in_bounds = check(x.src, "reads");
    if (e.reads_dst || e.writes_dst)
      x.dst_in_bounds = check(x.dst, e.writes_dst ? "writes" : "reads");
  }
}

void check_order(Import& in) {
  Precedence precedence(in);
  std::vector<std::map<Slot, SlotUse>> use(in.p);
  for (size_t x : in.order) {
    const XmlStep& sx = in.steps[x];
    const std::vector<Access> accesses = accesses_of(in, sx);
    if (accesses.empty()) continue;
    const std::vector<Conflict> conflicts = conflicts_of(x, accesses, use[sx.gpu]);
    if (!conflicts.empty()) {
      std::vector<size_t> earlier;
      for (const Conflict& c : conflicts) earlier.push_back(c.step);
      const std::vector<bool> ordered = precedence.before(x, earlier);
      std::set<size_t> reported;  // one problem per pair of steps
      for (size_t i = 0; i < conflicts.size(); ++i) {
        const Conflict& c = conflicts[i];
        if (ordered[i] || !reported.insert(c.step).second) continue;
        const XmlStep& sa = in.steps[c.step];
        in.problem(ImportProblemKind::Unordered, sx,
                   fmt::format("{} {}, which tb {} step {} {}, and nothing orders the two steps "
                               "(thread blocks run concurrently: only a thread block's own order, "
                               "depid/deps and a send before its receive order steps)",
                               c.access.write ? "writes" : "reads", range_name(c.access.named, 1),
                               sa.tb, sa.s, c.earlier_writes ? "writes" : "reads"));
      }
    }
    record(x, accesses, use[sx.gpu]);
  }
}

}  // namespace tenet::synth::detail
