#include "synth/baselines/families.hpp"

#include <fmt/format.h>

#include <vector>

#include "synth/baselines/builder.hpp"

namespace tenet::synth::detail {

void rhd(Builder& b, const Collective& c) {
  const int p = c.num_ranks();
  Steps st{b};
  if (c.kind != CollectiveKind::AllReduce) {
    if (!power_of_two(p))
      throw NotApplicable(
          fmt::format("recursive halving-doubling {} needs a power-of-two rank count, not {}",
                      to_string(c.kind), p));
    if (c.kind == CollectiveKind::ReduceScatter)
      rhd_reduce_scatter(b, c.ranks, rank_blocks(c), st);
    else
      rhd_all_gather(b, c.ranks, rank_blocks(c), st);
    return;
  }
  // MPICH: with p' the largest power of two <= p and r = p - p', ranks 2i < 2r hand their data to
  // 2i + 1, the p' others run halving-doubling on p' blocks, and the results go back.
  int pp = 1;
  while (pp * 2 <= p) pp *= 2;
  const int r = p - pp;
  const std::vector<ChunkId> chunks = all_chunks(c);
  std::vector<NodeId> group;
  st.begin();
  for (int i = 0; i < 2 * r; i += 2) {
    std::vector<TransferId> sent;
    send_runs(b, chunks, c.ranks[i], c.ranks[i + 1], Op::Reduce, {}, &sent);
    st.record(c.ranks[i], sent);
  }
  for (int i = 0; i < p; ++i)
    if (i >= 2 * r || i % 2 == 1) group.push_back(c.ranks[i]);
  const Blocks blocks = split(chunks, pp);
  rhd_reduce_scatter(b, group, blocks, st);
  rhd_all_gather(b, group, blocks, st);
  st.begin();
  for (int i = 0; i < 2 * r; i += 2) {
    send_runs(b, chunks, c.ranks[i + 1], c.ranks[i], Op::Copy, st.deps(c.ranks[i + 1]));
  }
}

}  // namespace tenet::synth::detail
