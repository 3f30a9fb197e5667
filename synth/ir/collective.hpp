// The collectives Tenet knows: their names, their pre- and postconditions (which chunk, carrying
// which ranks' contributions, sits on which rank before and after), and NCCL's bus-bandwidth
// factors (nccl-tests, doc/PERFORMANCE.md).
//
// Chunks, for P ranks and k chunks per NPU (c is a chunk id):
//   All-Gather, Gather     P*k chunks; chunk c is rank c/k's data.      Before: on rank c/k.
//                          After: All-Gather on every rank, Gather on the root.
//   Scatter                P*k chunks, all the root's data.             Before: on the root.
//                          After: chunk c on rank c/k.
//   Broadcast              k chunks of the root's data.                 After: on every rank.
//   Reduce-Scatter         P*k chunks.  Before: every rank holds every chunk with its own
//                          contribution. After: rank c/k holds chunk c reduced over all ranks.
//   All-Reduce             P*k chunks, as Reduce-Scatter, but every rank ends with every chunk
//                          reduced over all ranks. Or C chunks in all (all_reduce_chunks): an
//                          All-Reduce needs no chunk per rank, and with C < P it is not Omega(P^2)
//                          transfers (trees, and the composition per level of
//                          synth/groups/composed.hpp).
//   Reduce                 k chunks; after, the root holds each reduced over all ranks.
//   All-to-All             P*P*k chunks; chunk c = (s*P + d)*k + j is rank s's data for rank d.
//                          Before: on rank s. After: on rank d.
//   All-to-Allv            (uneven; pair_units set) rank s sends rank d u(s,d) units of data, a
//                          unit being k chunks: the pairs' chunks follow each other, pair (s, d)
//                          in row-major order, u(s,d)*k chunks each. Before on s, after on d.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "topo/topology.hpp"

namespace tenet::synth {

using ChunkId = int32_t;

enum class CollectiveKind {
  AllGather,
  ReduceScatter,
  AllReduce,
  Broadcast,
  Reduce,
  Gather,
  Scatter,
  AllToAll,
};

inline constexpr std::array kAllCollectives{
    CollectiveKind::AllGather, CollectiveKind::ReduceScatter, CollectiveKind::AllReduce,
    CollectiveKind::Broadcast, CollectiveKind::Reduce,        CollectiveKind::Gather,
    CollectiveKind::Scatter,   CollectiveKind::AllToAll,
};

// "all-gather", "reduce-scatter", ... Parsing also accepts "allgather", "all_gather", "AllGather".
std::string_view to_string(CollectiveKind k);
CollectiveKind parse_collective(std::string_view name);

// A process group's NPUs from a list of items joined by commas: `5` (one NPU), `0-7` (a range,
// both ends included), `0-1023:8` (every 8th of a range). In the order given. Throws tenet::Error
// naming the item for anything else, an NPU outside 0..npus-1, an NPU named twice, or fewer than
// two NPUs.
std::vector<topo::NodeId> parse_ranks(std::string_view list, int npus);
// The inverse, shortest first: runs of three or more at one step as `a-b` or `a-b:step`, the rest
// one by one ("0-7", "0-1016:8", "0,5,9").
std::string format_ranks(const std::vector<topo::NodeId>& ranks);

// Whether the collective has a root (broadcast, reduce, gather, scatter).
bool is_rooted(CollectiveKind k);
// busbw = algbw * factor for n ranks: All-Reduce 2(n-1)/n; Reduce-Scatter, All-Gather and
// All-to-All (n-1)/n; the rooted ones 1.
double bus_bandwidth_factor(CollectiveKind k, int ranks);
// Whether the collective combines contributions (Reduce-Scatter, All-Reduce, Reduce).
bool reduces(CollectiveKind k);
// Whether each chunk is needed by one rank only, so that it is routed rather than spread
// (All-to-All, Scatter, Gather).
bool one_destination(CollectiveKind k);

struct Collective {
  CollectiveKind kind = CollectiveKind::AllGather;
  std::vector<topo::NodeId> ranks;  // rank r is NPU ranks[r]; distinct NPUs
  int chunks_per_npu = 1;           // k >= 1 (All-to-Allv: chunks per unit)
  int root = 0;                     // a rank; used by the rooted collectives only
  // All-Reduce only: when positive, the buffer is cut into this many chunks in all, whatever the
  // rank count (chunks_per_npu then plays no part in the chunks). 0: P*k chunks.
  int all_reduce_chunks = 0;
  // All-to-Allv: units rank s sends rank d at [s * P + d] (the diagonal 0), and their running sum
  // (unit_offset[i] = units of the pairs before pair i; P*P + 1 entries). Empty otherwise. Set
  // both with set_pair_units.
  std::vector<int32_t> pair_units;
  std::vector<int64_t> unit_offset;

  // Makes this an All-to-Allv with the given P x P unit matrix (row = source). Throws
  // tenet::Error for a matrix of the wrong size, a negative entry, traffic from a rank to itself,
  // or no traffic at all.
  void set_pair_units(std::vector<int32_t> units);
  bool uneven() const { return !pair_units.empty(); }
  // All-to-Allv: units rank r sends in all; the most any rank sends; units in all.
  int64_t units_sent(int r) const;
  int64_t most_units_sent() const;
  int64_t total_units() const { return unit_offset.empty() ? 0 : unit_offset.back(); }

  // Over every NPU of `t`, ranks in NPU order.
  static Collective over_all(const topo::Topology& t, CollectiveKind kind, int chunks_per_npu = 1,
                             int root = 0);

  int num_ranks() const { return static_cast<int>(ranks.size()); }
  int num_chunks() const;
  // num_chunks() in 64 bits, for the check that it fits (validate: at most 2^31 - 1).
  int64_t wide_chunks() const;
  // The rank whose data the chunk is (for the reductions: the rank that owns the chunk at the end
  // of a Reduce-Scatter; the root for Reduce and Broadcast and Scatter).
  int origin(ChunkId c) const;
  // Before the collective: does rank r hold chunk c? (With its own contribution for the
  // reductions, with the origin's data otherwise.)
  bool initially_holds(int rank, ChunkId c) const;
  // After: must rank r hold chunk c (reduced over every rank, for the reductions)?
  bool finally_needs(int rank, ChunkId c) const;
  // The one rank that needs chunk c at the end, or -1 when every rank does.
  int needed_by(ChunkId c) const;

  // Bytes per chunk for a collective of `total` bytes, NCCL's convention for `total`: the output
  // per rank for All-Gather and Gather, the input per rank for Reduce-Scatter and Scatter, the
  // buffer for All-Reduce, Broadcast and Reduce, and what each rank sends for All-to-All (for
  // All-to-Allv: the bytes of one unit). Rounded up to whole bytes.
  int64_t chunk_bytes_for(int64_t total) const;
  // chunk_bytes_for(total), for a chunk count the user chose: throws tenet::Error when `total` is
  // fewer bytes than pieces(), whose chunks rounded up to a byte would make the collective larger
  // than `total` (its time and bound with it). The error says the most chunks per NPU that size
  // takes.
  int64_t whole_chunk_bytes_for(int64_t total) const;
  // How many chunks a collective of that size is cut into (chunk_bytes x pieces() is its size).
  int64_t pieces() const;

  // Throws tenet::Error unless the ranks are distinct NPUs of `t`, there are at least two, the
  // root is a rank, chunks_per_npu >= 1, all_reduce_chunks is 0 or (for an All-Reduce) positive,
  // and an All-to-Allv's matrix fits its ranks.
  void validate(const topo::Topology& t) const;
  std::string describe()
      const;  // "all-gather over 8 ranks, 2 chunks per NPU", "all-reduce over 8 ranks in 4 chunks"
  // All-to-Allv: the pair (s * P + d) chunk c belongs to.
  int64_t pair_of(ChunkId c) const;
};

}  // namespace tenet::synth
