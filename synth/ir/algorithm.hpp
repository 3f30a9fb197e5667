// The algorithm IR: the one representation every producer (synthesizer, baselines, importers)
// emits and every consumer (verifier, timing, exporters, simulator) reads.
//
// An algorithm is a collective, the topology it was made for (by fingerprint), a chunk size and a
// list of transfers. A transfer moves one chunk from a source node to a destination node along a
// route of links, either copying it into the destination or reducing it into the destination's
// copy. Interior nodes of a route only forward: switches, or NPUs the topology marks as routers.
// An NPU that relays does so explicitly, receiving in one transfer and sending in another.
// Endpoints are NPUs, or switches the topology marks reduce-capable (in-network reduction).
//
// Order: transfers are listed in dependency order; a transfer may depend only on transfers listed
// before it. Besides its explicit dependencies, a transfer's data dependency is implicit: it reads
// its chunk at its source as left by the transfers listed before it, so it starts after every
// earlier-listed arrival of that chunk at that source. Transfers that leave over the same first
// link use it in list order. Times (picoseconds) are optional; synth::time assigns them under the
// link model.
//
// Messages: a transfer may carry several chunks at once (`count`: chunks chunk .. chunk + count -
// 1, one message of count x chunk_bytes, as MSCCL's `cnt` and a runtime's single send of a
// contiguous buffer). It is one step: it pays its route's per-step cost once, reads every chunk it
// carries at its source as left by the transfers listed before it, and delivers each to its
// destination. A reduction of it reduces each chunk as it arrives (as an MSCCL rrc step reduces
// what streams in, and as reductions of separate chunks overlap): its data is usable a chunk's
// reduction after its last byte arrived.
//
// Input: a transfer may instead send its source's own input (`from_input`): the chunk as the
// collective's precondition puts it there (a rank's own contribution to a reduced chunk, or a chunk
// it starts with), whatever has arrived since; it has no implicit data dependency. This is how a
// chunk is reduced independently in several places: in a one-shot All-Reduce every rank sends its
// input to every other, and each reduces all of them into its own copy (replicated reduction). A
// node that sends its input keeps it beside its copy (an out-of-place input buffer; an in-place
// runtime sends it before anything is reduced into it).
//
// Channel: transfers that leave over the same first link in the same channel are served in list
// order; different channels are independent queues sharing the links (NCCL's and MSCCL's
// channels). Default 0. A channel's transfers may be under way at once (the next is served once
// the last has started), or, where the algorithm says its channels are serial
// (`serial_channels`), one at a time: the next is served once the last has left the link (its
// last byte is out), as an MSCCL threadblock sends, and as a stream at a fixed rate never goes
// faster than its rate. Channel 0 is never serial.
//
// Rate: a transfer moves at a rate of bytes per second, by default (0) the narrowest bandwidth on
// its route; a producer may set a lower one (two rings sharing one link at half rate each). Under
// the pipelined model a link carries any set of concurrent transfers whose rates sum to at most
// its bandwidth, so a 100 GB/s spine carries four 25 GB/s NIC streams at once.
//
// Reductions: an algorithm may say how fast its destinations reduce (`reduce_bandwidth`). A reduced
// chunk is then usable at its destination chunk_bytes / reduce_bandwidth after it arrived: what
// depends on it (explicitly, or by reading the chunk there) waits for that, and the collective
// ends when its last arrival is usable. Reductions of different chunks overlap (as a collective's
// reduction kernels do, and as ASTRA-sim runs a custom collective's COMP nodes). 0: reductions
// take no time.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "synth/ir/collective.hpp"
#include "synth/ir/provenance.hpp"
#include "topo/topology.hpp"
#include "topo/units.hpp"

namespace tenet::synth {

using TransferId = int32_t;
using topo::LinkId;
using topo::NodeId;

enum class Op : uint8_t {
  Copy,    // the destination's copy becomes the chunk as sent
  Reduce,  // the destination's copy becomes its reduction with the chunk as sent
};

// How a transfer of b bytes at rate r over a route occupies its links (see docs/design.md):
//   Pipelined: rate-shared. The transfer holds r of every link of its route for b / r and
//              arrives the summed latency after its last byte leaves. A link carries concurrent
//              transfers whose rates sum to at most its bandwidth. A sender's port (a transfer's
//              first link) admits its transfers in list order; see link_admission.hpp.
//              Where every transfer runs at its links' full bandwidth this is plain back-to-back
//              streaming.
//   Hold:      every link of the route is busy, for one transfer alone, for the whole transfer,
//              latency + b / r (the public TACOS code's model, kept for side-by-side comparison).
enum class LinkModel : uint8_t { Pipelined, Hold };

std::string_view to_string(Op op);
std::string_view to_string(LinkModel m);
LinkModel parse_link_model(std::string_view name);

// 40 bytes: an N-rank All-Gather holds N^2 of them (16.8M on a 64x64 torus). A transfer's route and
// then its dependencies lie in the algorithm's pool from `pool_begin` on, up to the next
// transfer's; its rate, where any transfer has one, in a list beside.
struct Transfer {
  ChunkId chunk = 0;
  NodeId src = 0, dst = 0;
  uint32_t pool_begin = 0;
  // A sender's port serves each channel's transfers in list order; channels (NCCL's, MSCCL's) are
  // independent queues that share the links by capacity.
  uint16_t channel = 0;
  uint16_t route_size = 0;
  Op op = Op::Copy;
  bool from_input = false;    // sends the source's input, not its copy (above)
  uint16_t count = 1;         // the chunks it carries: chunk .. chunk + count - 1 (above)
  Time start = -1, end = -1;  // -1 until timed
};
static_assert(sizeof(Transfer) == 40);

// The most chunks one transfer carries.
inline constexpr int kMaxChunksPerTransfer = 65535;

// A transfer with its route and dependencies held by value: for building and editing.
struct TransferSpec {
  ChunkId chunk = 0;
  NodeId src = 0, dst = 0;
  Op op = Op::Copy;
  std::vector<LinkId> route;
  std::vector<TransferId> deps;
  Time start = -1, end = -1;
  Bandwidth rate = 0;
  uint16_t channel = 0;
  bool from_input = false;
  uint16_t count = 1;
  bool operator==(const TransferSpec&) const = default;
};

class Algorithm {
 public:
  std::string name;       // producer: "tenet", "ring", ...
  std::string method;     // how the producer made it, in words (informational)
  Provenance provenance;  // the same, typed (synth/ir/provenance.hpp)
  Collective collective;
  uint64_t topology_fingerprint = 0;  // Topology::fingerprint() of the topology it was made for
  std::string topology_name;          // informational
  Bytes chunk_bytes = 0;
  LinkModel link_model = LinkModel::Pipelined;
  Time claimed_time = -1;          // the producer's collective time, or -1
  Bandwidth reduce_bandwidth = 0;  // B/s a destination reduces a received chunk at; 0: no time
  bool serial_channels = false;    // a channel (other than 0) sends one transfer at a time (above)
  // Every transfer pays its route's per-step cost (topo::Link::step; synth/cost/timing.hpp): set
  // from Topology::charges_steps when made, and recorded in files (older files have none: false).
  bool step_costs = false;
  // The runtime protocol it runs (topo::Protocol, one of its topology's), or empty: the links as
  // they are. Timed on the topology under it (synth/cost/protocol_view.hpp); recorded in files.
  std::string protocol;

  // How long a reduction of one chunk takes (0 when reductions take no time).
  Time reduction_time() const {
    return reduce_bandwidth > 0 ? transfer_time(chunk_bytes, reduce_bandwidth) : 0;
  }
  // When transfer `id`'s data is usable at its destination, given the time `end` it arrived: a
  // reduction's time later for a reduction (of its last chunk, above). `reduction` is
  // reduction_time(), computed once by callers.
  Time usable_at(TransferId id, Time end, Time reduction) const {
    return transfers_[id].op == Op::Reduce ? end + reduction : end;
  }
  // The bytes transfer `id` moves: its chunks (count x chunk_bytes).
  Bytes bytes(TransferId id) const { return chunk_bytes * transfers_[id].count; }
  // Some transfer carries more than one chunk.
  bool has_messages() const;

  TransferId add(ChunkId chunk, NodeId src, NodeId dst, std::span<const LinkId> route,
                 Op op = Op::Copy, std::span<const TransferId> deps = {}, Time start = -1,
                 Time end = -1, Bandwidth rate = 0, uint16_t channel = 0, bool from_input = false,
                 uint16_t count = 1);
  TransferId add(const TransferSpec& t) {
    return add(t.chunk, t.src, t.dst, t.route, t.op, t.deps, t.start, t.end, t.rate, t.channel,
               t.from_input, t.count);
  }

  size_t size() const { return transfers_.size(); }
  const Transfer& operator[](TransferId id) const { return transfers_[id]; }
  const std::vector<Transfer>& transfers() const { return transfers_; }
  std::span<const LinkId> route(TransferId id) const {
    const Transfer& t = transfers_[id];
    return {pool_.data() + t.pool_begin, t.route_size};
  }
  std::span<const TransferId> deps(TransferId id) const {
    const Transfer& t = transfers_[id];
    const size_t end = static_cast<size_t>(id) + 1 < transfers_.size()
                           ? transfers_[id + 1].pool_begin
                           : pool_.size();
    return {pool_.data() + t.pool_begin + t.route_size, end - t.pool_begin - t.route_size};
  }
  // Bytes per second; 0: the narrowest bandwidth on the route.
  Bandwidth rate(TransferId id) const { return rates_.empty() ? 0 : rates_[id]; }
  TransferSpec spec(TransferId id) const;
  void set_times(TransferId id, Time start, Time end) {
    transfers_[id].start = start;
    transfers_[id].end = end;
  }
  void set_rate(TransferId id, Bandwidth rate);
  void set_channel(TransferId id, uint16_t channel) { transfers_[id].channel = channel; }
  // (The caller keeps the chunks it carries in range: chunk + count within the collective's.)
  void set_chunk(TransferId id, ChunkId chunk) { transfers_[id].chunk = chunk; }
  bool has_rates() const;    // some transfer sets its own rate
  bool sends_input() const;  // some transfer sends its source's input (from_input)
  // Renames the nodes and links every transfer names: node n becomes nodes[n], link l links[l]
  // (for a topology of the same shape: synth/groups/group_map.hpp). Every named one must have a
  // name.
  void rename(std::span<const NodeId> nodes, std::span<const LinkId> links);
  void clear_times();
  void reserve(size_t transfers, size_t route_links, size_t deps);

  bool fully_timed() const;  // every transfer has start and end
  Time makespan()
      const;  // the latest end (its data usable: reductions included), 0 when empty; needs times

 private:
  std::vector<Transfer> transfers_;
  std::vector<int32_t> pool_;     // per transfer, its route's links then its dependencies
  std::vector<Bandwidth> rates_;  // per transfer, or empty while every rate is 0
};

// An algorithm with no transfers yet: its producer's name, `c` on `t` (fingerprint and name), the
// chunk size and the link model set, and step costs as `t` charges them.
Algorithm empty_algorithm(std::string name, const topo::Topology& t, const Collective& c,
                          Bytes chunk_bytes, LinkModel model);

// A copy of `a` whose transfers are `specs` (for editing: mutation tests, importers).
Algorithm with_transfers(const Algorithm& a, const std::vector<TransferSpec>& specs);

// A place per transfer and chunk it carries, in a flat table of size() places (a chain per
// (node, chunk) that a transfer joins for each chunk it carries): transfer id's chunk c is at
// index(id, c). Where no transfer carries several chunks, a transfer's place is its id and no
// table is kept beside (8 B a transfer: 134 MB on a 64x64 torus All-Gather). `a` outlives it.
class CarriedChunks {
 public:
  explicit CarriedChunks(const Algorithm& a);
  size_t size() const { return base_.empty() ? a_.size() : base_.back(); }
  size_t index(TransferId id, ChunkId c) const {
    return base_.empty() ? static_cast<size_t>(id)
                         : base_[static_cast<size_t>(id)] + static_cast<size_t>(c - a_[id].chunk);
  }

 private:
  const Algorithm& a_;
  std::vector<size_t> base_;  // per transfer, its first place; empty where every count is 1
};

// `a` with every transfer of several chunks split into one transfer per chunk, in its place and
// its queue, untimed (each now pays its own step): for a composition that renames chunks so that
// a message's chunks no longer follow each other. What depended on the message depends on its
// last piece, which arrives last (one queue, one route, one rate, listed in order).
Algorithm split_messages(const Algorithm& a);

}  // namespace tenet::synth
