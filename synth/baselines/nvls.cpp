#include "synth/baselines/families.hpp"

#include <vector>

#include "synth/baselines/builder.hpp"

namespace tenet::synth::detail {

NodeId nvls_hub(const Topology& t, const Collective& c, std::vector<LinkId>* up,
                std::vector<LinkId>* down) {
  std::vector<LinkId> u(c.num_ranks(), -1), d(c.num_ranks(), -1);
  for (NodeId s = t.num_npus(); s < t.num_nodes(); ++s) {
    if (!t.node(s).can_reduce) continue;
    bool all = true;
    for (int r = 0; r < c.num_ranks() && all; ++r) {
      u[r] = d[r] = -1;
      for (LinkId l : t.out_links(c.ranks[r]))
        if (t.link(l).dst == s && u[r] < 0) u[r] = l;
      for (LinkId l : t.in_links(c.ranks[r]))
        if (t.link(l).src == s && d[r] < 0) d[r] = l;
      all = u[r] >= 0 && d[r] >= 0;
    }
    if (!all) continue;
    if (up) *up = std::move(u);
    if (down) *down = std::move(d);
    return s;
  }
  return -1;
}

// NCCL's NVLS All-Reduce: every rank reduces each chunk into a reduce-capable switch linked to all
// of them (the switch's accumulator starts empty), which sends every reduced chunk back to every
// rank.
void nvls(Builder& b, const Topology& t, const Collective& c) {
  std::vector<LinkId> up, down;
  const NodeId hub = nvls_hub(t, c, &up, &down);
  if (hub < 0) throw NotApplicable(kNoNvlsHub);
  for (ChunkId ch = 0; ch < c.num_chunks(); ++ch) {
    std::vector<TransferId> reduced;
    for (int r = 0; r < c.num_ranks(); ++r)
      reduced.push_back(b.send_on(ch, c.ranks[r], hub, {up[r]}, Op::Reduce));
    for (int r = 0; r < c.num_ranks(); ++r)
      b.send_on(ch, hub, c.ranks[r], {down[r]}, Op::Copy, reduced);
  }
}

}  // namespace tenet::synth::detail
