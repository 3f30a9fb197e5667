#include "synth/baselines/families.hpp"

#include <map>
#include <vector>

#include "synth/baselines/builder.hpp"

namespace tenet::synth::detail {

void direct(Builder& b, const Collective& c) {
  const Blocks blocks = rank_blocks(c);
  const int p = c.num_ranks();
  switch (c.kind) {
    case CollectiveKind::AllGather:
      direct_exchange(b, c.ranks, blocks, false);
      break;
    case CollectiveKind::ReduceScatter:
      direct_exchange(b, c.ranks, blocks, true);
      break;
    case CollectiveKind::AllReduce:
      direct_exchange(b, c.ranks, blocks, true);
      direct_exchange(b, c.ranks, blocks, false);
      break;
    case CollectiveKind::AllToAll: {  // pairwise: at step s, rank r sends rank r+s its data (MPI)
      Steps st{b};
      for (int s = 1; s < p; ++s) {
        st.begin();
        std::map<NodeId, std::vector<TransferId>> sent;
        for (int r = 0; r < p; ++r) {
          std::vector<ChunkId> to_peer;
          for (ChunkId ch : blocks[r])
            if (c.needed_by(ch) == (r + s) % p) to_peer.push_back(ch);
          send_runs(b, to_peer, c.ranks[r], c.ranks[(r + s) % p], Op::Copy, st.deps(c.ranks[r]),
                    &sent[c.ranks[r]]);
        }
        for (auto& [v, ids] : sent) st.record(v, ids);
      }
      break;
    }
    case CollectiveKind::Gather:
      for (int s = 1; s < p; ++s) {
        const int r = (c.root + s) % p;
        send_runs(b, blocks[r], c.ranks[r], c.ranks[c.root], Op::Copy, {});
      }
      break;
    case CollectiveKind::Scatter:
      for (int s = 1; s < p; ++s) {
        const int r = (c.root + s) % p;
        std::vector<ChunkId> to_rank;
        for (ChunkId ch = 0; ch < c.num_chunks(); ++ch)
          if (c.needed_by(ch) == r) to_rank.push_back(ch);
        send_runs(b, to_rank, c.ranks[c.root], c.ranks[r], Op::Copy, {});
      }
      break;
    default:
      break;
  }
}

}  // namespace tenet::synth::detail
