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
          const std::vector<TransferId> deps = st.deps(c.ranks[r]);
          for (ChunkId ch : blocks[r])
            if (c.needed_by(ch) == (r + s) % p) {
              b.send(ch, c.ranks[r], c.ranks[(r + s) % p], Op::Copy, deps);
              sent[c.ranks[r]].push_back(b.first_hop());
            }
        }
        for (auto& [v, ids] : sent) st.record(v, ids);
      }
      break;
    }
    case CollectiveKind::Gather:
      for (int s = 1; s < p; ++s) {
        const int r = (c.root + s) % p;
        for (ChunkId ch : blocks[r]) b.send(ch, c.ranks[r], c.ranks[c.root], Op::Copy);
      }
      break;
    case CollectiveKind::Scatter:
      for (int s = 1; s < p; ++s) {
        const int r = (c.root + s) % p;
        for (ChunkId ch = 0; ch < c.num_chunks(); ++ch)
          if (c.needed_by(ch) == r) b.send(ch, c.ranks[c.root], c.ranks[r], Op::Copy);
      }
      break;
    default:
      break;
  }
}

}  // namespace tenet::synth::detail
