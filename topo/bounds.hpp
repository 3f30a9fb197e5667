// Lower bounds on collective time, from the topology alone.
//
// All-Gather cut bound (as ForestColl states it): with N member NPUs and
// an All-Gather output of M bytes, every set S of nodes that holds some but not all members must
// let the data of its members out through its outgoing links, so
//   T* = (M/N) * max over S of |S ∩ members| / B+(S),
// switches counting as nodes. The per-NPU ingress bound (N-1)/N * M / B_in(v) is the special case
// S = all but v, and can be far too optimistic (two islands joined by one slow link).
// Reduce-Scatter has the same bound on the reversed topology.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "topo/topology.hpp"

namespace tenet::topo {

// A bound of the form (M/N) * members_inside / out_bandwidth, kept as integers so that its time
// for any size is exact to the picosecond.
// How far allgather_cut_bound searched the sets.
enum class CutSearch : uint8_t {
  Exact,    // every set
  Islands,  // the one-node sets and the islands of wide links only (the exact search's work is
            // past kCutSearchWork): still a bound, maybe not the largest
};

struct CutBound {
  std::vector<NodeId> set;      // S, the critical node set (sorted ids)
  int members_inside = 0;       // |S ∩ members|
  Bandwidth out_bandwidth = 0;  // B+(S), bytes per second
  int num_members = 0;          // N
  CutSearch search = CutSearch::Exact;

  // The bound for an All-Gather whose output is `output_bytes` per NPU, rounded up to the ps.
  Time time(Bytes output_bytes) const;
  // Bytes per second per unit of M: how fast a set can drain; for comparisons.
  double ratio() const { return static_cast<double>(members_inside) / out_bandwidth; }
};

// Hao-Orlin's work, nodes x arcs, past which allgather_cut_bound does not run it: its time grows
// faster than the topology (ring:20000, 1.2e9, took 4.3 s; hypercube:65536 36 s).
inline constexpr int64_t kCutSearchWork = int64_t{1} << 28;

// The cut bound, by parametric min-cut (Dinkelbach iterations over LEMON's Hao-Orlin, with a
// per-member Preflow fallback when the cheapest cut cuts off only non-members). Past
// kCutSearchWork the sets tried are the one-node sets ({u}, all but v) and the islands of wide
// links (for each of the widest bandwidths b, every component C of the links at least b wide: C,
// and all but C), in time linear in the links; `search` says which.
// `members` defaults to all NPUs. Needs at least two members. `max_work` is the budget (lower it
// to see what the islands find).
CutBound allgather_cut_bound(const Topology& t, std::span<const NodeId> members = {},
                             int64_t max_work = kCutSearchWork);

// The ingress bound: the member whose incoming bandwidth is the smallest.
CutBound allgather_ingress_bound(const Topology& t, std::span<const NodeId> members = {});

// The Broadcast cut bound: every member v must get all M bytes from `root` across every set S with
// root in S and v outside, so T* = M / min over v of mincut(root, v) (Edmonds: the bound is
// reachable by packing arborescences). The result has members_inside = num_members = 1, so that
// time(M) is M / B+(S). Reduce has the same bound on the reversed topology. `members` defaults to
// all NPUs and must hold the root and one other member. Of the cuts equally narrow, `set` is the
// one Hao-Orlin (or Preflow) finds, or with `large_root_side` one whose root side holds as many
// nodes as a tie-break finds (Reduce's bound measures the latency from the other side's nodes to
// the root: the fewer, the farther; synth/bounds/lower_bound.cpp).
CutBound broadcast_cut_bound(const Topology& t, NodeId root, std::span<const NodeId> members = {},
                             bool large_root_side = false);

}  // namespace tenet::topo
