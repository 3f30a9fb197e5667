#include "synth/baselines/families.hpp"

#include <algorithm>
#include <map>
#include <vector>

#include "synth/baselines/builder.hpp"

namespace tenet::synth::detail {

void bruck(Builder& b, const Collective& c) {
  const int p = c.num_ranks();
  const Blocks blocks = rank_blocks(c);
  Steps st{b};
  // After step i, member r holds blocks r .. r + 2^(i+1) - 1; at step i it sends its first
  // min(2^i, p - 2^i) blocks to r - 2^i.
  for (int dist = 1; dist < p; dist *= 2) {
    st.begin();
    const int count = std::min(dist, p - dist);
    std::map<NodeId, std::vector<TransferId>> sent;
    for (int r = 0; r < p; ++r) {
      // The step's blocks as messages: consecutive ids but where they wrap past the last rank.
      std::vector<ChunkId> chunks;
      for (int j = 0; j < count; ++j)
        chunks.insert(chunks.end(), blocks[(r + j) % p].begin(), blocks[(r + j) % p].end());
      send_runs(b, chunks, c.ranks[r], c.ranks[wrap(r - dist, p)], Op::Copy, st.deps(c.ranks[r]),
                &sent[c.ranks[r]]);
    }
    for (auto& [v, ids] : sent) st.record(v, ids);
  }
}

}  // namespace tenet::synth::detail
