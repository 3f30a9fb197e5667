// Internal to synth/baselines: the baseline families, one function each, which make_baseline
// (registry.cpp) dispatches to. Each lists the family's logical sends on a Builder; what each
// family runs is summarized in baselines.hpp and detailed at its definition.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "synth/baselines/baselines.hpp"
#include "synth/baselines/builder.hpp"
#include "synth/ir/ring_plan.hpp"

namespace tenet::synth::detail {

// ring and bidir-ring (ring.cpp): rings, channel rings and chains, and the ring All-to-All.
void ring(Builder& b, const Topology& t, const Collective& c, bool bidir, int channels);
// The ring Reduce-Scatter, All-Gather or All-Reduce as a plan (ring.cpp); nullopt where the ring
// needs NPUs to relay. `memo`, when given, keeps its channel rings (BaselineMemo).
std::optional<RingPlan> plan_ring(const Topology& t, const Collective& c, Bytes chunk_bytes,
                                  LinkModel model, Bandwidth reduce_bandwidth, bool bidir,
                                  int channels, const std::string& name,
                                  BaselineMemo* memo = nullptr);
// direct (direct.cpp): every pair talks directly (All-to-All, Gather and Scatter each pair's data
// as messages, send_runs; the Reduce-Scatter and All-Gather exchange chunk by chunk, which
// pipelines its two phases).
void direct(Builder& b, const Collective& c);
// oneshot (oneshot.cpp): every rank sends its input to every other, which reduces it.
void oneshot(Builder& b, const Collective& c);
// rhd (rhd.cpp): recursive halving-doubling.
void rhd(Builder& b, const Collective& c);
// dbt (trees.cpp): double binary tree All-Reduce, binomial-tree Broadcast and Reduce.
void dbt(Builder& b, const Collective& c);
// tree (trees.cpp): NCCL's tree All-Reduce.
void nccl_tree(Builder& b, const Topology& t, const Collective& c, int channels);
// nvls (nvls.cpp): in-network All-Reduce through a reduce-capable switch.
void nvls(Builder& b, const Topology& t, const Collective& c);
// The reduce-capable switch nvls reduces through: the first linked to every rank both ways (each
// rank's first link up to it and down from it in `up` and `down`, where given), or -1 where none
// is; and what to say then.
NodeId nvls_hub(const Topology& t, const Collective& c, std::vector<LinkId>* up = nullptr,
                std::vector<LinkId>* down = nullptr);
inline constexpr const char* kNoNvlsHub =
    "no reduce-capable switch is linked to every rank (mark an NVSwitch `reduce: true` in the "
    "topology file, as NVLink SHARP switches are)";
// blink (blink.cpp): Blink's All-Reduce over packed spanning trees.
void blink(Builder& b, const Topology& t, const Collective& c);
// bruck (bruck.cpp): Bruck All-Gather.
void bruck(Builder& b, const Collective& c);
// hierarchical (hierarchical.cpp): dimension by dimension, an algorithm per dimension.
void hierarchical(Builder& b, const Topology& t, const Collective& c,
                  std::vector<BaselineKind> per_dim);

}  // namespace tenet::synth::detail
