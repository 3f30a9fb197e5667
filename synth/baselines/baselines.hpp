// Baseline algorithms: what collective libraries run today, as producers of the same IR, on any
// topology, so that the verifier, timing, exporters and benchmarks treat them exactly like
// synthesized ones.
//
//   ring          All-Gather, Reduce-Scatter, All-Reduce; Broadcast and Reduce as a pipelined
//   chain.
//                 With channels, as NCCL: several rings over links of their own where the topology
//                 has them (synth/ring_channels.hpp: one per NIC/rail across servers, one per set
//                 of disjoint links otherwise), the chunks split among them in proportion to their
//                 rates, each pipelined. ring:1 is a single ring. All-to-All on one ring, store and
//                 forward, one message at a time (ASTRA-sim's native ring All-to-All).
//   bidir-ring    rings in pairs, one each way round (one pair with ring:1-style single rings: half
//                 the chunks each way; an odd chunk count gives the first one more)
//   direct        every pair talks directly: Reduce-Scatter by sending each block to its owner,
//                 All-Gather by sending one's block to everyone; pairwise All-to-All; flat Gather
//                 and Scatter
//   rhd           recursive halving-doubling (Rabenseifner): Reduce-Scatter and All-Gather for a
//                 power-of-two count, All-Reduce for any count (MPICH: the first 2r ranks pair up)
//   dbt           double binary tree All-Reduce (two complementary trees, half the chunks each,
//                 pipelined); binomial-tree Broadcast and Reduce
//   tree          NCCL's tree All-Reduce: a double binary tree across servers, a chain inside each
//                 server, per channel entering each server at another GPU (its own NIC); on a flat
//                 topology every NPU is its own server (then it is dbt with channels)
//   nvls          in-network All-Reduce (NCCL's NVLS on NVSwitch): every NPU reduces its chunks
//                 into a reduce-capable switch it is linked to, which sends the results back
//   oneshot       one-shot All-Reduce: every rank sends its input to every other rank, which
//                 reduces it into its own (a replicated reduction, Transfer::from_input): one
//                 message deep, for small buffers where every pair is linked or switched
//   bruck         Bruck All-Gather
//   blink         Blink's All-Reduce (Wang et al., MLSys 2020): spanning trees packed over the
//                 links between the ranks (each edge carries the reduction up one way and the
//                 broadcast down the other), each tree reducing its share of the chunks to its
//                 center and broadcasting it back, pipelined; over links between NPUs both ways,
//                 or through switches where those leave a rank out (up to 64 ranks)
//   hierarchical  multi-dimensional: Reduce-Scatter dimension by dimension, then All-Gather back,
//                 with an algorithm per dimension: hierarchical:ring,direct. Over the topology's
//                 dimensions, or, without any, over detected servers (topo::detect_servers) as
//                 NCCL does: Reduce-Scatter inside each server, All-Reduce across servers per rail
//                 (GPU i of every server), All-Gather inside each server
//
// Logical sends between NPUs that are not linked follow a route through switches and router
// NPUs, or else explicit relays through NPUs. A relay holds one copy per chunk, so a partial
// reduction cannot pass through an NPU that has its own contribution: such a baseline does not
// apply, and says why. Step-synchronous algorithms (halving-doubling, Bruck, binomial trees, the
// phases of hierarchical) start a step only when the previous one has arrived, and a node sends
// its steps in order, as their MPI implementations do.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "synth/ir/algorithm.hpp"
#include "synth/ir/outcome.hpp"
#include "synth/ir/ring_plan.hpp"
#include "topo/topology.hpp"

namespace tenet::synth {

class BaselineMemo;  // synth/baselines/baseline_memo.hpp

enum class BaselineKind : uint8_t {
  Ring,
  BidirRing,
  Direct,
  Rhd,
  Dbt,
  Tree,
  Bruck,
  Hierarchical,
  Nvls,
  Oneshot,
  Blink
};

struct BaselineSpec {
  BaselineKind kind = BaselineKind::Ring;
  std::vector<BaselineKind> per_dimension;  // hierarchical only: ring, direct or rhd per level
  int channels = 0;          // ring, bidir-ring, tree: 0 = as many as the topology feeds
  std::string name() const;  // "ring", "ring:4", "hierarchical:ring,direct"
};

std::string_view to_string(BaselineKind k);
// "ring[:N|auto]", "bidir-ring[:N|auto]", "direct", "rhd", "dbt", "tree[:N|auto]", "bruck",
// "hierarchical[:a,b,...]", "nvls", "oneshot", "blink". N is the channel count (ring:1 is the
// single ring).
BaselineSpec parse_baseline(std::string_view text);
// Whether `kind` takes a channel count.
bool has_channels(BaselineKind kind);
const std::vector<BaselineKind>& all_baselines();
bool supports(BaselineKind b, CollectiveKind c);

// Thrown when a baseline cannot run the collective on the topology; the message says why.
class NotApplicable : public Error {
 public:
  using Error::Error;
};

// The baseline's algorithm, timed by synth::time, its reductions (if any) taking chunk_bytes /
// reduce_bandwidth each (0: no time; Algorithm::reduce_bandwidth). With `timed` false it is left
// untimed (no start or end, claimed_time -1): for a caller that replays it anyway, as the simulator
// does (timing a large ring costs about as much as building it). `memo`, when given, keeps what
// the families make that does not depend on the chunks, for the next build on the same topology
// (synth/baselines/baseline_memo.hpp): the same algorithm, made faster.
// Throws NotApplicable (try_baseline's NotMade) when the baseline cannot run `c` on `t`.
Algorithm make_baseline(const BaselineSpec& spec, const topo::Topology& t, const Collective& c,
                        Bytes chunk_bytes, LinkModel model = LinkModel::Pipelined,
                        Bandwidth reduce_bandwidth = 0, bool timed = true,
                        BaselineMemo* memo = nullptr);
// The same, with "does not apply" as a value: NotMade says why (the collective is not one the
// family has, its ranks do not fit it, or no route joins two of them). tenet::Error for bad input.
Made<Algorithm> try_baseline(const BaselineSpec& spec, const topo::Topology& t, const Collective& c,
                             Bytes chunk_bytes, LinkModel model = LinkModel::Pipelined,
                             Bandwidth reduce_bandwidth = 0, bool timed = true,
                             BaselineMemo* memo = nullptr);

// A floor of blink's All-Reduce time for `c` in chunks of `chunk_bytes`, with no transfer made:
// every chunk crosses each edge of its tree up and down, so the links a tree edge takes (a pair's
// direct links together, or each link of its route) carry the bytes of every chunk of every tree
// over that edge, and no faster than their bandwidth. The most of those loads over their
// bandwidth; nothing where blink does not apply (no All-Reduce, or its trees cannot join the
// ranks). `memo` as for try_baseline (the trees are the ones blink builds on).
std::optional<Time> blink_load_floor(const topo::Topology& t, const Collective& c,
                                     Bytes chunk_bytes, BaselineMemo* memo = nullptr);

// The ring or bidirectional ring (`spec`) Reduce-Scatter, All-Gather or All-Reduce as a plan
// (synth/ir/ring_plan.hpp): what make_baseline materializes, for a replay that computes transfers
// on demand (the simulator's: a 4096-rank ring holds its members, not its 33.5 million transfers).
// nullopt for other baselines and collectives, and where the ring needs NPUs to relay. `memo` as
// for try_baseline.
std::optional<RingPlan> ring_plan(const BaselineSpec& spec, const topo::Topology& t,
                                  const Collective& c, Bytes chunk_bytes,
                                  LinkModel model = LinkModel::Pipelined,
                                  Bandwidth reduce_bandwidth = 0, BaselineMemo* memo = nullptr);

// An order of `npus` around a ring that follows the topology: consecutive NPUs (and the last and
// the first) linked or joined through switches/routers when possible (a Hamiltonian cycle from
// the grid the generator recorded, or a bounded search), else an order that keeps neighbours
// close.
std::vector<NodeId> ring_order(const topo::Topology& t, const std::vector<NodeId>& npus);

// An in-order balanced binary tree over 0..p-1: the parent of each index, -1 for the root.
std::vector<int> binary_tree(int p);
// The second tree of a double binary tree: which member sits at each position of the same tree
// shape (`parent`, over positions 0..p-1; the first tree puts member i at position i). Members with
// the fewest children in the first tree take the positions with the most in the second (stable, so
// neighbours stay near): the inner nodes of one are leaves of the other, and no member has more
// than two children in both together.
std::vector<int> complementary_positions(const std::vector<int>& parent);

}  // namespace tenet::synth
