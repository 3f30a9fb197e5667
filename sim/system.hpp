// The system layer: runs a Chakra ET workload (one graph per rank, rank r on NPU r) on a simulated
// network and reports the iteration.
//
// Per rank, a node starts once its data and control dependencies are done. COMP nodes take their
// duration_micros, or a roofline of num_ops against peak_flops and tensor_size against memory
// bandwidth (1 ns without SimConfig::roofline); MEM_LOAD / MEM_STORE take tensor_size over memory
// bandwidth; compute and memory nodes of a rank run one at a time (one compute stream), in the
// order they became ready (with SimConfig::remote_memory, MEM nodes queue at their remote memory
// instead). COMP nodes marked `is_cpu_op` are host operators: they run their duration_micros (1 ns
// for 0, no roofline) on the rank's CPU stream, one at a time, beside the GPU's (as ASTRA-sim's
// hardware resource model runs them). INVALID nodes finish at once. COMM_SEND / COMM_RECV pair by
// (tag, source, destination, size) in order; a message takes the topology's route and both ends
// finish when it has arrived. COMM_COLL nodes (comm_type, comm_size; the ranks of `tenet_ranks`
// when given, else every rank) meet in order per group: when every member has reached its k-th
// collective of that group, the group's algorithm (a baseline or the synthesizer, cached per
// collective, group and size) replays on the network, and every member finishes when it is done.
// Communication is not otherwise limited: any number of messages and collectives may be in flight
// per rank unless SimConfig::max_in_flight says otherwise.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "chakra/et.hpp"
#include "sim/collective_engine.hpp"
#include "sim/network.hpp"
#include "synth/ir/collective.hpp"
#include "topo/topology.hpp"

namespace tenet::synth {
class AlgorithmCache;
class Deadline;
}  // namespace tenet::synth

namespace tenet::sim {

// Remote (expanded) memory, as ASTRA-sim's analytical remote-memory backend models it
// (`--remote-memory mem.json`): a MEM_LOAD / MEM_STORE node takes latency + tensor_size / bandwidth
// and a memory serves one request at a time, in arrival order; there is one memory per NPU, per
// node of `npus_per_node` NPUs, or one pool for all.
struct RemoteMemory {
  enum class Kind { PerNpu, PerNode, Pool };
  Kind kind = Kind::PerNpu;
  Time latency = 0;
  Bandwidth bandwidth = 0;  // B/s
  int npus_per_node = 1;    // Kind::PerNode
  int memory_of(int rank) const {
    return kind == Kind::Pool ? 0 : kind == Kind::PerNode ? rank / npus_per_node : rank;
  }
};

struct SimConfig {
  NetworkKind network = NetworkKind::Analytical;
  PacketConfig packet;         // for NetworkKind::Packet
  bool link_activity = false;  // keep per-link busy intervals (always with `trace`)
  double peak_flops = 312e12;  // per NPU, FLOP/s (A100 BF16 dense)
  // The share of peak_flops a COMP node's operations run at in the roofline: (0, 1]. 1 computes at
  // peak, as ASTRA-sim's roofline does; trained models reach well below it end to end (their
  // kernels wait on memory, launch and synchronize), which the printed MFU shows.
  double compute_efficiency = 1;
  // Whether COMP nodes without a duration take the roofline (num_ops at peak_flops, tensor_size at
  // memory_bandwidth). false: they take 1 ns, as ASTRA-sim replays every COMP node (its runtime, 1
  // ns for none: Workload::issue_replay upstream) where its system.json does not set
  // roofline-enabled.
  bool roofline = true;
  Bandwidth memory_bandwidth = 2'039'000'000'000;  // per NPU, B/s (A100 80 GB HBM2e)
  // The share of memory_bandwidth a COMP node's bytes (tensor_size) move at in the roofline: (0,
  // 1]. With compute_efficiency, the compute model's two kinds of kernel: matmuls, bound by their
  // operations, and elementwise kernels (no operations), bound by their bytes.
  double memory_efficiency = 1;
  // MEM nodes go to remote memory instead of the compute stream (local memory) when set.
  std::optional<RemoteMemory> remote_memory;
  // Producer per collective: "tenet" (the synthesizer) or a baseline name; default "tenet".
  std::map<synth::CollectiveKind, std::string> algorithms;
  // Several algorithm files for one collective (--coll all-reduce=a.json,all-reduce=b.json), each
  // made for one size: a call runs the one made for the size nearest its own (by ratio, as NCCL's
  // tuner and MSCCL's size ranges choose by size), rescaled to it (synth/cost/rescale.hpp), and
  // says so when it is not the same size.
  // Overrides `algorithms` for its kinds.
  std::map<synth::CollectiveKind, std::vector<std::string>> sized_files;
  // Chunks per NPU of every collective's algorithm; 0: auto (1, 2, 4, ... as `tenet synth -k auto`
  // picks them, per collective and size, up to about synth::kSimAutoChunkTransfers transfers).
  int chunks_per_npu = 4;
  // Groups of one shape (every tensor-parallel group of a rail cluster) run one algorithm, made for
  // the first and renamed for the others (synth/groups/group_map.hpp; same transfers over links of
  // the same properties, same time). false: every group's own (for comparison).
  bool rename_groups = true;
  // A ring or bidir-ring Reduce-Scatter, All-Gather or All-Reduce with a fixed chunk count replays
  // from its plan (synth/ir/ring_plan.hpp), its transfers computed as they go: the same times, in
  // memory for its members, not its p^2 transfers. false: materialized (for comparison).
  bool lazy_rings = true;
  // Communication operations (sends and collectives) a rank may have in flight at once; further
  // ones wait in the order they became ready. 0: no limit (ASTRA-sim runs one at a time: 1).
  int max_in_flight = 0;
  // What the endpoints add to every collective of a kind in dataset_splits (ASTRA-sim's
  // endpoint-delay and reductions through local memory for its native collectives; see
  // sim/collective_engine.hpp). Other kinds run as ASTRA-sim runs custom collectives, without them.
  // Default: nothing, so a collective takes exactly its algorithm's time.
  EndpointModel endpoints;
  // ASTRA-sim's dataset splits (preferred-dataset-splits, active-chunks-per-dimension): a
  // collective of these kinds runs as `splits` collectives of 1/splits of its size (in Chakra's
  // comm_size convention, at least one byte per NPU of the workload for all but All-Gather, as
  // Sys::determine_chunk_size upstream), at most `active` at once, in order; a hierarchical one
  // over several dimensions runs each piece's phases through per-dimension queues of `active`
  // (sim/dimension_phases.hpp). Absent kinds: one run.
  // Present kinds run their algorithm with one chunk per NPU, whatever chunks_per_npu says
  // (ASTRA-sim's native algorithms send each piece whole).
  struct Splits {
    int splits = 1;
    int active = 1;
    // Over several dimensions, which waiting piece a dimension runs next (scheduling-policy,
    // sim/dimension_phases.hpp): the newest (LIFO, as ASTRA-sim's examples set) or the oldest
    // (FIFO).
    bool newest_first = true;
  };
  std::map<synth::CollectiveKind, Splits> dataset_splits;
  // The whole workload's ranks when the files given hold only its first data-parallel replica
  // (Parallelism::first_replica_only): ranks from the files' count up to this one mirror it, each
  // reaching every collective when its present members do, so a collective over replicas runs
  // over all of them. That is the whole workload's run wherever the replicas are identical and do
  // not meet each other's traffic: on the analytical network, which does not share links (the
  // only network it is allowed on). 0: every rank has a file.
  int workload_ranks = 0;
  bool trace = false;                    // keep the per-node timeline
  std::function<void(double)> progress;  // called with the fraction of nodes done, now and then
  // Where synthesized algorithms are kept across runs (synth/cache/algorithm_cache.hpp; owned by
  // the caller), or none.
  synth::AlgorithmCache* cache = nullptr;
  // When the synthesizer answers with the best found so far (synth/auto/deadline.hpp; owned by
  // the caller), or none.
  const synth::Deadline* deadline = nullptr;
};

struct RankStats {
  Time finish = 0;
  Time compute = 0;        // busy time of the compute stream
  Time cpu = 0;            // busy time of the CPU stream (is_cpu_op nodes)
  Time communication = 0;  // time with any communication in flight
  Time exposed = 0;        // communication in flight while the compute stream is idle
};

enum class Stream { Compute, Cpu, Memory, Communication };

struct TraceSlice {
  int rank = 0;
  Stream stream = Stream::Compute;
  std::string name;
  Time start = 0, end = 0;
  // Communication: the bytes (a collective's in Tenet's convention, a message's), and for a
  // collective its group kind and what ran it (as CollectiveRow names them).
  Bytes bytes = 0;
  std::string group, algorithm, method;
  int chunks_per_npu = 0;
};

// The calls of one collective at one size in groups of one kind, run by one algorithm: a row of
// the per-collective breakdown (`tenet sim`'s table, its JSON `collective_rows`).
struct CollectiveRow {
  // The groups' kind as the workload names it (a collective's tenet_group: "tp", "dp", "ep"), or
  // else its ranks ("0-15").
  std::string group;
  int groups = 0;  // distinct groups the calls ran in
  synth::CollectiveKind kind{};
  Bytes bytes = 0;        // Tenet's (NCCL's) size convention
  std::string algorithm;  // the producer: "tenet", a baseline ("ring"), an algorithm file's name
  // What made it, where the producer says (synth::to_string(Producer): "flow-plan pipelines";
  // "baseline ring" where the synthesizer's portfolio chose one); empty otherwise.
  std::string method;
  int chunks_per_npu = 0;
  std::string protocol;  // the runtime protocol it runs (synth::Algorithm::protocol), or empty
  int calls = 0;
  // Summed over the calls: from the last member's arrival to the end (`time`), from the first
  // member's arrival to the last's (`wait`), and the part of `time` the members' compute streams
  // were idle (`exposed`, each call's mean over its members).
  Time time = 0, wait = 0, exposed = 0;
  // The link the algorithm keeps busiest, by its bytes over the link's bandwidth (of the first
  // group's algorithm), and that busy time summed over the calls.
  std::string busiest_link;
  Time busiest_busy = 0;
};

// Point-to-point messages by the receive's group kind (its tenet_group: "pp" in generated
// workloads; else "p2p"): how many, their bytes, the time they kept their receivers waiting (from
// the later of the send's and the receive's start to the message's arrival; nothing for a message
// that arrived before its receive started) summed, and the part of it the receiver's compute
// stream was idle (`tenet sim`'s per-group line, its JSON `message_rows`).
struct MessageRow {
  std::string group;
  int messages = 0;
  Bytes bytes = 0;
  Time wait = 0, exposed = 0;
};

struct SimResult {
  Time iteration = 0;  // the slowest rank's finish
  std::vector<RankStats> ranks;
  std::vector<Time> link_busy;
  NetworkReport network;  // per-link statistics; busy intervals when kept
  uint64_t events = 0;
  int collectives = 0;
  // Every collective that moved data (barriers aside), by collective, size, group kind and
  // algorithm, in the order first called.
  std::vector<CollectiveRow> collective_rows;
  std::vector<MessageRow> message_rows;  // by group kind, in the order first received
  // Algorithms the collectives ran: made (synthesized, built or read), renamed from one made for
  // another group of the same shape (synth/groups/group_map.hpp), and ring plans
  // (SimConfig::lazy_rings).
  int64_t algorithms_made = 0, algorithms_renamed = 0, ring_plans = 0;
  // The operations of every COMP node run (num_ops, over all ranks): the model's FLOPs.
  double flops = 0;
  std::vector<TraceSlice> trace;
  // What the user should know about how the run was made, one sentence each (e.g. an algorithm
  // file made for another size than the collective it ran).
  std::vector<std::string> warnings;
};

// Sets config.algorithms (and sized_files) from "all-reduce=ring,all-gather=tenet": a producer
// per collective, "tenet" or a baseline; a collective named again with algorithm files only
// ("all-reduce=ar-1MiB.json,all-reduce=ar-64MiB.json"), one file per size. Throws tenet::Error for
// a pair without '=', an unknown collective or baseline, or a collective named twice otherwise.
void choose_algorithms(const std::string& text, SimConfig& config);
// Whether a producer named in SimConfig::algorithms is an algorithm file (chakra::
// names_algorithm_file) rather than "tenet" or a baseline ("ring", "ring:4", ...): a name is a
// name even where a file or folder of that name lies in the working directory (the `tenet` binary
// itself, a build's tenet/ folder).
bool is_algorithm_file(const std::string& producer);

// Model FLOPs utilization: the COMP nodes' operations over what the ranks could compute at
// `peak_flops` in the iteration (0 for an empty one).
double model_flops_utilization(const SimResult& r, double peak_flops);

// Throws tenet::Error for an inconsistent workload: more ranks than NPUs, a peer or group member
// that is not a rank, a dependency on a node not in the rank's graph (sim/recorded_trace.hpp drops
// those from recorded traces), a dependency cycle, a node type or comm_type it cannot run, or nodes
// that can never run
// (a receive with no matching send, a collective some member never reaches): those are named.
SimResult simulate(const topo::Topology& t, const std::vector<chakra::EtFile>& workload,
                   const SimConfig& config, const std::string& name = "workload");

// About how many packets `--network packet` cuts for `workload` at `mtu` payload bytes per packet:
// each send's bytes, and what each rank of every collective sends at least (2 S (p - 1) / p for
// All-Reduce, S (p - 1) / p for the others, S in NCCL's size convention, p the group's ranks), over
// the MTU. An estimate from below: algorithms that relay chunks send more.
uint64_t estimate_packets(const std::vector<chakra::EtFile>& workload, Bytes mtu);
// Packets the packet network simulates per second on one core (measured: `./tenet.sh bench
// --benchmark_filter=Packet`), for estimates shown to users.
inline constexpr double kPacketsPerSecond = 7e6;

// The Tenet collective a Chakra comm_type names (REDUCE_SCATTER and REDUCE_SCATTER_BLOCK are both
// Reduce-Scatter); nothing for BARRIER and unknown types.
std::optional<synth::CollectiveKind> collective_of_comm_type(int64_t comm_type);

// Chakra's comm_size is what each rank puts in: its PyTorch converter sums a node's input tensors
// (src/converter/pytorch_node.py, PyTorchNode.comm_size), and ASTRA-sim's ring gathers comm_size
// bytes from every rank (astraccl/native_collectives/collective_algorithm/Ring.cc:
// final_data_size = data_size * nodes_in_ring). For All-Gather and Gather that is 1/p of the
// collective's size in Tenet's (NCCL's) convention, the output; for every other collective the two
// agree. These convert between them for a group of `ranks`.
inline bool comm_size_is_per_rank(synth::CollectiveKind kind) {
  return kind == synth::CollectiveKind::AllGather || kind == synth::CollectiveKind::Gather;
}
Bytes collective_bytes_of_comm_size(synth::CollectiveKind kind, Bytes comm_size, int ranks);
// Throws tenet::Error when an All-Gather or Gather of `bytes` does not split evenly over the ranks.
Bytes comm_size_of_collective_bytes(synth::CollectiveKind kind, Bytes bytes, int ranks);

// Chrome trace-event JSON (opens in Perfetto): a process per rank with a compute, a CPU and a
// remote-memory track, and as many communication tracks as the rank had operations in flight at
// once (slices on one track never overlap, so they nest correctly); a slice per node, a
// communication slice with `args` (bytes; a collective's group, algorithm, method and chunks per
// NPU); and a process for the network with a counter per link: the share of its bandwidth in use
// over time (the sum over its concurrent messages; above 1 where the analytical network overbooks
// it), when the network kept its busy intervals.
std::string trace_json(const SimResult& r);

}  // namespace tenet::sim
