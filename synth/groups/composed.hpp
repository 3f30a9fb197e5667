// An All-Reduce composed per level on a cluster of servers (hierarchical synthesis):
//
//   1. Reduce-Scatter inside every server: GPU i of each server ends with slice i of the buffer
//      (k chunks) reduced over its server;
//   2. All-Reduce of slice i across the servers, among the GPUs i of every server (rail i), on k
//      chunks in all (Collective::all_reduce_chunks);
//   3. All-Gather inside every server.
//
// With G NPUs per server the buffer is C = G*k chunks, so the composition has about 2*G*k
// transfers per NPU (k(G-1) per server phase, about 2k across): a 32,768-NPU All-Reduce, which at
// one chunk per rank needs over 10^9 transfers, needs 16.8M at k = 32.
//
// Each level's algorithm is made once, for the first server (phases 1 and 3) and the first rail
// (phase 2), and renamed for the others (synth/groups/group_map.hpp; made again where no renaming
// is found). The server levels run in loops of one chunk per NPU, so that slice chunk q is reduced
// (and gathered) early for small q and the next level can start on it. The levels are listed one
// after another: a transfer reads its chunk at its source as left by the transfers listed before
// it (the IR's implicit data dependency), so each chunk's phase starts where it is ready, chunk by
// chunk, with no barrier. Each phase's channels are its own
// (queues of their own on the links they share), so a server's All-Gather of early chunks does not
// wait behind its Reduce-Scatter of late ones. The whole is then timed as one.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "synth/ir/algorithm.hpp"
#include "topo/topology.hpp"

namespace tenet::synth {

// The servers (topo::detect_servers) an All-Reduce `c` composes over: when `c` is an All-Reduce
// whose ranks are exactly the NPUs of the servers (topo::servers_of). Nothing otherwise. `joined`,
// when given, receives the bandwidth that joins a server: its NVSwitch's, not its NICs'. A server's
// levels are made in its part of the cluster through such links alone (group_part's
// min_bandwidth): a server's Reduce-Scatter has no business in the fabric behind its NICs.
std::optional<std::vector<std::vector<topo::NodeId>>> composed_servers(const topo::Topology& t,
                                                                       const Collective& c,
                                                                       Bandwidth* joined = nullptr);

// The levels of a composition, made once: for the first server (composed_servers' first) and the
// first rail (GPU 0 of every server).
struct ComposedLevels {
  // Over the first server's NPUs in order, one chunk per NPU (chunk i is slice i: NPU i's).
  Algorithm reduce_scatter, all_gather;
  // An All-Reduce over the first rail in L chunks (its collective's chunks, ids 0..L-1; L divides
  // k): the dbt or tree baselines on L = k chunks in all, which pipeline themselves, or a flat
  // algorithm on one chunk per rank, L = the rail's ranks, repeated k / L times.
  Algorithm across;
};

// Makes a level's algorithm on `t` for a collective a renaming could not serve: the first level's
// collective over another server or rail. It may throw tenet::Error.
using LevelMaker = std::function<Algorithm(const Collective& level)>;

// Whether `across` can be the level across the servers: none of its transfers sends its source's
// input (Transfer::from_input). There a rank's contribution is its partial from the servers'
// Reduce-Scatter, which no input stands for; sent as the partial it is, such a transfer waits for
// and carries what the level's own transfers brought before it in the list (an exchange of
// partials, oneshot's, then counts the other rank twice).
bool composes_across(const Algorithm& across);

// `c` composed per level with k chunks per NPU inside the servers (G*k chunks in all, of
// `chunk_bytes` each), timed under `model`. The server levels run k times, loop q taking chunk q of
// every slice (slice i's chunks are i*k .. i*k + k - 1), as NCCL's ring runs its loops; the rail
// level k / L times. Nothing when `c` does not compose (composed_servers), L does not divide k, a
// level sends to or from an NPU outside its server or rail (the phases would then share slots), or
// a rail's level does not compose across (composes_across).
std::optional<Algorithm> compose_all_reduce(const topo::Topology& t, const Collective& c, int k,
                                            Bytes chunk_bytes, LinkModel model,
                                            const ComposedLevels& levels, const LevelMaker& remake);

}  // namespace tenet::synth
