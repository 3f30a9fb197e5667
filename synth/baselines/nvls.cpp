#include "synth/baselines/families.hpp"

#include <vector>

#include "synth/baselines/builder.hpp"

namespace tenet::synth::detail {

// NCCL's NVLS All-Reduce: every rank reduces each chunk into a reduce-capable switch linked to all
// of them (the switch's accumulator starts empty), which sends every reduced chunk back to every
// rank.
void nvls(Builder& b, const Topology& t, const Collective& c) {
  NodeId hub = -1;
  std::vector<LinkId> up(c.num_ranks(), -1), down(c.num_ranks(), -1);
  for (NodeId s = t.num_npus(); s < t.num_nodes() && hub < 0; ++s) {
    if (!t.node(s).can_reduce) continue;
    bool all = true;
    for (int r = 0; r < c.num_ranks() && all; ++r) {
      up[r] = down[r] = -1;
      for (LinkId l : t.out_links(c.ranks[r]))
        if (t.link(l).dst == s && up[r] < 0) up[r] = l;
      for (LinkId l : t.in_links(c.ranks[r]))
        if (t.link(l).src == s && down[r] < 0) down[r] = l;
      all = up[r] >= 0 && down[r] >= 0;
    }
    if (all) hub = s;
  }
  if (hub < 0)
    throw NotApplicable(
        "no reduce-capable switch is linked to every rank (mark an NVSwitch `reduce: true` in the "
        "topology file, as NVLink SHARP switches are)");
  for (ChunkId ch = 0; ch < c.num_chunks(); ++ch) {
    std::vector<TransferId> reduced;
    for (int r = 0; r < c.num_ranks(); ++r)
      reduced.push_back(b.send_on(ch, c.ranks[r], hub, {up[r]}, Op::Reduce));
    for (int r = 0; r < c.num_ranks(); ++r)
      b.send_on(ch, hub, c.ranks[r], {down[r]}, Op::Copy, reduced);
  }
}

}  // namespace tenet::synth::detail
