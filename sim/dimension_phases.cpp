#include "sim/dimension_phases.hpp"

#include <algorithm>
#include <optional>

#include "synth/baselines/baselines.hpp"

namespace tenet::sim::detail {

namespace {

using synth::CollectiveKind;
using synth::TransferId;

// The dimension along which `a` moves NPU `src`'s data to `dst`: the one coordinate (mixed radix,
// first dimension fastest) in which they differ; nothing when they differ in several.
std::optional<int> dimension_between(const std::vector<int>& levels, topo::NodeId src,
                                     topo::NodeId dst) {
  std::optional<int> found;
  for (size_t d = 0; d < levels.size(); ++d) {
    if (src % levels[d] != dst % levels[d]) {
      if (found) return std::nullopt;
      found = static_cast<int>(d);
    }
    src /= levels[d];
    dst /= levels[d];
  }
  return found;
}

}  // namespace

std::vector<DimensionPhase> dimension_phases(const synth::Algorithm& a, const topo::Topology& t) {
  const CollectiveKind kind = a.collective.kind;
  if (kind != CollectiveKind::ReduceScatter && kind != CollectiveKind::AllGather &&
      kind != CollectiveKind::AllReduce && kind != CollectiveKind::AllToAll)
    return {};
  // Only the hierarchical baseline runs its dimensions in turn: another algorithm whose transfers
  // each move along one dimension (a ring snaking through a torus) interleaves them.
  if (a.provenance.producer != synth::Producer::Baseline ||
      synth::parse_baseline(a.provenance.baseline).kind != synth::BaselineKind::Hierarchical)
    return {};
  const std::vector<int>& levels = t.levels();
  if (a.collective.num_ranks() != t.num_npus()) return {};
  std::vector<int> used;  // the dimensions of more than one NPU, ascending
  for (size_t d = 0; d < levels.size(); ++d)
    if (levels[d] > 1) used.push_back(static_cast<int>(d));
  if (used.size() < 2) return {};

  // The phases in the order a piece runs them: (dimension, reduces or not; the last dimension of
  // an All-Reduce does both in one phase).
  struct Key {
    int dimension;
    bool both;
    bool reduce;
  };
  std::vector<Key> keys;
  const int last = used.back();
  if (kind == CollectiveKind::ReduceScatter)
    for (int d : used) keys.push_back({d, false, true});
  if (kind == CollectiveKind::AllToAll)
    for (int d : used) keys.push_back({d, true, false});
  if (kind == CollectiveKind::AllGather)
    for (auto d = used.rbegin(); d != used.rend(); ++d) keys.push_back({*d, false, false});
  if (kind == CollectiveKind::AllReduce) {
    for (int d : used)
      if (d != last) keys.push_back({d, false, true});
    keys.push_back({last, true, true});
    for (auto d = used.rbegin(); d != used.rend(); ++d)
      if (*d != last) keys.push_back({*d, false, false});
  }

  const auto transfers = static_cast<TransferId>(a.size());
  std::vector<int> phase_of(a.size());
  for (TransferId id = 0; id < transfers; ++id) {
    const synth::Transfer& x = a[id];
    const std::optional<int> d = dimension_between(levels, x.src, x.dst);
    if (!d) return {};
    const bool reduce = x.op == synth::Op::Reduce;
    const auto k = std::find_if(keys.begin(), keys.end(), [&](const Key& key) {
      return key.dimension == *d && (key.both || key.reduce == reduce);
    });
    if (k == keys.end()) return {};
    phase_of[id] = static_cast<int>(k - keys.begin());
  }

  // Each phase's transfers, in the algorithm's order, with the dependencies inside the phase (the
  // ones on earlier phases are met by running the phases in turn).
  std::vector<std::vector<synth::TransferSpec>> specs(keys.size());
  std::vector<TransferId> index(a.size());
  for (TransferId id = 0; id < transfers; ++id) {
    std::vector<synth::TransferSpec>& phase = specs[phase_of[id]];
    index[id] = static_cast<TransferId>(phase.size());
    synth::TransferSpec s = a.spec(id);
    s.deps.clear();
    for (TransferId dep : a.deps(id))
      if (phase_of[dep] == phase_of[id]) s.deps.push_back(index[dep]);
    s.start = s.end = -1;
    phase.push_back(std::move(s));
  }
  std::vector<DimensionPhase> phases;
  for (size_t k = 0; k < keys.size(); ++k)
    if (!specs[k].empty())
      phases.push_back({keys[k].dimension, synth::with_transfers(a, specs[k])});
  return phases;
}

PieceQueues::PieceQueues(size_t pieces, std::vector<int> dimension_of_phase, int active,
                         bool newest_first, Run run, std::function<void()> finished)
    : pieces_(pieces),
      dimension_of_phase_(std::move(dimension_of_phase)),
      active_(std::max(1, active)),
      newest_first_(newest_first),
      run_(std::move(run)),
      finished_(std::move(finished)) {
  const int dims =
      dimension_of_phase_.empty()
          ? 0
          : *std::max_element(dimension_of_phase_.begin(), dimension_of_phase_.end()) + 1;
  waiting_.resize(dims);
  running_.assign(dims, 0);
}

void PieceQueues::start() {
  if (pieces_ == 0 || dimension_of_phase_.empty()) {
    finished_();
    return;
  }
  // Sys::schedule moves the pieces to their first queue one by one, each started as it arrives
  // when the queue has room.
  for (size_t piece = 0; piece < pieces_; ++piece) {
    enqueue(piece, 0);
    fill(dimension_of_phase_[0]);
  }
}

// Behind the waiting pieces of higher priority (insert_stream: priorities only grow under LIFO,
// only fall under FIFO).
void PieceQueues::enqueue(size_t piece, size_t phase) {
  std::vector<Waiting>& queue = waiting_[dimension_of_phase_[phase]];
  auto at = std::find_if(queue.begin(), queue.end(), [&](const Waiting& w) {
    return newest_first_ ? w.piece < piece : w.piece > piece;
  });
  queue.insert(at, {piece, phase});
}

void PieceQueues::fill(int dimension) {
  std::vector<Waiting>& queue = waiting_[dimension];
  while (running_[dimension] < active_ && !queue.empty()) {
    const Waiting w = queue.front();
    queue.erase(queue.begin());
    ++running_[dimension];
    run_(w.piece, w.phase, [this, w, dimension] {
      --running_[dimension];
      const size_t next = w.phase + 1;
      // proceed_to_next_vnet_baseline: into the next queue, then the old queue refills, then
      // the new one.
      if (next < dimension_of_phase_.size()) enqueue(w.piece, next);
      fill(dimension);
      if (next < dimension_of_phase_.size())
        fill(dimension_of_phase_[next]);
      else if (++done_ == pieces_)
        finished_();
    });
  }
}

}  // namespace tenet::sim::detail
