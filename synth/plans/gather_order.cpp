#include "synth/plans/gather_order.hpp"

#include <algorithm>
#include <limits>
#include <numeric>
#include <vector>

namespace tenet::synth::detail {

bool gather_as_reduced(const Algorithm& reduced, Algorithm& gathered) {
  const Collective& c = gathered.collective;
  const ChunkId chunks = c.num_chunks();
  if (reduced.collective.num_chunks() != chunks) return false;
  if (c.chunks_per_npu < 2) return true;  // (one chunk per owner: nothing to rename)
  auto owner = [&](ChunkId ch) { return c.ranks[c.origin(ch)]; };
  // Per chunk: the place of the last reduction into its owner, and of its owner's first send.
  std::vector<TransferId> reduced_at(static_cast<size_t>(chunks), -1);
  std::vector<TransferId> sent_at(static_cast<size_t>(chunks),
                                  std::numeric_limits<TransferId>::max());
  for (TransferId i = 0; i < static_cast<TransferId>(reduced.size()); ++i) {
    const Transfer& x = reduced[i];
    for (ChunkId ch = x.chunk; ch < x.chunk + x.count; ++ch)
      if (x.dst == owner(ch)) reduced_at[ch] = i;
  }
  for (TransferId i = static_cast<TransferId>(gathered.size()) - 1; i >= 0; --i) {
    const Transfer& x = gathered[i];
    for (ChunkId ch = x.chunk; ch < x.chunk + x.count; ++ch)
      if (x.src == owner(ch)) sent_at[ch] = i;
  }
  // Chunk `ch` of `gathered` becomes as[ch]. Each owner's chunks are consecutive
  // (Collective::origin); ties keep their order.
  std::vector<ChunkId> as(static_cast<size_t>(chunks));
  std::vector<ChunkId> by_reduction, by_send;
  for (ChunkId from = 0; from < chunks;) {
    ChunkId to = from + 1;
    while (to < chunks && c.origin(to) == c.origin(from)) ++to;
    by_reduction.resize(static_cast<size_t>(to - from));
    std::iota(by_reduction.begin(), by_reduction.end(), from);
    by_send = by_reduction;
    std::stable_sort(by_reduction.begin(), by_reduction.end(),
                     [&](ChunkId a, ChunkId b) { return reduced_at[a] < reduced_at[b]; });
    std::stable_sort(by_send.begin(), by_send.end(),
                     [&](ChunkId a, ChunkId b) { return sent_at[a] < sent_at[b]; });
    for (size_t i = 0; i < by_send.size(); ++i) as[by_send[i]] = by_reduction[i];
    from = to;
  }
  // A message's chunks, renamed, must still be consecutive: it carries the least of them on.
  std::vector<ChunkId> first(gathered.size());
  for (TransferId i = 0; i < static_cast<TransferId>(gathered.size()); ++i) {
    const Transfer& x = gathered[i];
    const auto [low, high] =
        std::minmax_element(as.begin() + x.chunk, as.begin() + x.chunk + x.count);
    if (*high - *low != x.count - 1) return false;
    first[i] = *low;
  }
  for (TransferId i = 0; i < static_cast<TransferId>(gathered.size()); ++i)
    gathered.set_chunk(i, first[i]);
  return true;
}

}  // namespace tenet::synth::detail
