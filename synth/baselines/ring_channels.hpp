// Rings for NCCL-like multi-channel baselines: several rings over the same NPUs, each on links of
// its own as far as the topology allows, each with the rate it can sustain.
//
// Like NCCL's graph search, channels are found one after another on the capacity the earlier ones
// left: a ring is a cycle through every member whose consecutive members are joined by a direct
// link or a least-cost route through switches, and its rate is the least capacity left on any
// link it uses. Two ways to find one:
//   - servers (topo::detect_servers): NPUs joined by their fastest links, behind a slower scale-out
//     network. Channel c visits every server in turn, entering at one GPU and leaving from another
//     whose NIC the previous channels have not used yet (NCCL: one channel per NIC/rail).
//   - otherwise a bounded depth-first search for the widest Hamiltonian cycle (fewest onward
//     choices first, Warnsdorff's rule), on direct links and switch routes, parallel links and
//     equal-cost routes being distinct choices.
// The search stops when no further ring fits, when the next would carry less than 1/16 of the
// first, or at 32 channels (NCCL's maximum). With a requested count larger than the rings found,
// rings are repeated and share their links at part rate (as NCCL's extra channels do).
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "topo/topology.hpp"
#include "topo/units.hpp"

namespace tenet::synth {

struct RingChannel {
  std::vector<topo::NodeId> order;                // the members in ring order
  std::vector<std::vector<topo::LinkId>> routes;  // routes[i]: order[i] -> order[i + 1 mod p]
  Bandwidth rate = 0;                             // what the channel moves at
};

inline constexpr int kMaxChannels = 32;

// Rings over `members` (at least 2): `wanted` channels, or 0 for as many as the topology feeds.
// With `both_ways`, each ring found is also run the other way round when its reverse fits
// (bidirectional rings). Empty when no ring over adjacent members exists (the caller falls back to
// relays) or there are more than kMaxSearchedNpus members.
std::vector<RingChannel> find_ring_channels(const topo::Topology& t,
                                            const std::vector<topo::NodeId>& members, int wanted,
                                            bool both_ways);
// The ways ring channels may take between `members` (each one's direct links and routes through
// switches to each other one), found at the first search and shared by the next: the searches one
// way and both ways round each start from every link's whole capacity. Where the members are
// whole servers, the rings go round them and only their ways are routed: inside each server and
// into the servers before and after it (the same rings as over `every_way`, found sooner: a
// 1024-NPU cluster's every pair was 2 s of route walks). Keeps a reference to `t`.
class RingWays {
 public:
  RingWays(const topo::Topology& t, std::vector<topo::NodeId> members, bool every_way = false);
  ~RingWays();
  RingWays(const RingWays&) = delete;
  RingWays& operator=(const RingWays&) = delete;

 private:
  friend std::vector<RingChannel> search_ring_channels(RingWays& ways, int wanted, bool both_ways);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One search of find_ring_channels: the rings found one way round, or both ways. Where asked one
// way for as many as fit (`wanted` 0), find_ring_channels searches both ways round too and keeps
// whichever fed more bandwidth: `search(b)` is its search, b saying both ways round (a memo's).
std::vector<RingChannel> search_ring_channels(RingWays& ways, int wanted, bool both_ways);
std::vector<RingChannel> find_ring_channels(
    int wanted, bool both_ways, const std::function<std::vector<RingChannel>(bool)>& search);
inline constexpr int kMaxSearchedNpus = 1024;

}  // namespace tenet::synth
