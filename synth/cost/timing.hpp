// Timing: the shared link cost model (docs/design.md) applied to an algorithm, on the topology
// under the protocol it runs (synth/cost/protocol_view.hpp).
//
// synth::time assigns every transfer its start and end: a transfer starts as soon as its explicit
// dependencies have ended, every earlier-listed arrival of its chunk at its source has ended (a
// reduction's data is usable its reduction time later, see Algorithm::reduce_bandwidth), the
// transfer listed before it with the same first link (its sender's port) has started, and every
// link of its route has its rate to spare (pipelined: rates of concurrent transfers sum to at most
// the link's bandwidth; hold: the link is free). Links further along a route (a switch's uplink)
// admit transfers from different senders by capacity in order of readiness: see
// synth/cost/link_admission.hpp for the exact rule, which the simulator's replay shares.
// Deterministic. When every route is a single link, one pass in list order,
// O((transfers + dependencies) log(concurrent transfers per link)); otherwise event by event,
// O(transfers log transfers).
#pragma once

#include <array>
#include <bit>
#include <span>
#include <vector>

#include "synth/ir/algorithm.hpp"
#include "topo/topology.hpp"

namespace tenet::synth {

class RingPlan;  // synth/ir/ring_plan.hpp

// A transfer of b bytes at rate r over a route, charged its per-step cost s (the largest
// topo::Link::step on its route, where steps are charged; else 0), holds r of each link of the
// route for s + b / r (pipelined; under hold, the link whole for s + b / r + latency) and arrives
// the route's latency after its last byte leaves: the alpha-beta cost of one step, with the
// alpha paid while the step holds its share of the links (docs/model.md).
struct RouteCost {
  Time occupancy = 0;        // how long each link of the route is held
  Time duration = 0;         // from start to arrival
  Time step = 0;             // the per-step cost charged (within occupancy and duration)
  Bandwidth bottleneck = 0;  // the narrowest bandwidth on the route
  Bandwidth rate = 0;        // what the transfer moves at: its own rate, or the bottleneck
  Time latency = 0;          // summed over the route
};
// `rate` 0 means the bottleneck; `steps`: charge the per-step cost (Algorithm::step_costs).
// Throws tenet::Error for an empty route, a link id out of range, or a rate that is negative or
// above the route's bottleneck.
RouteCost route_cost(const topo::Topology& t, std::span<const LinkId> route, Bytes bytes,
                     LinkModel model, bool steps, Bandwidth rate = 0);
// route_cost for many transfers of one chunk size, fast: per-link bandwidth and latency in flat
// arrays, and the serialization times at the (rate, chunks carried) pairs last asked remembered
// (the division is the costly part, and an algorithm moves its chunks at a few dozen rates in
// messages of a handful of sizes). Same results and errors as route_cost.
class RouteCoster {
 public:
  RouteCoster(const topo::Topology& t, Bytes bytes, LinkModel model, bool steps);
  // For an algorithm's transfers: its chunk size, link model and step costs. `t` must be what `a`
  // is timed on (synth/cost/protocol_view.hpp: under its protocol); throws tenet::Error otherwise.
  RouteCoster(const topo::Topology& t, const Algorithm& a);
  // `count`: the chunks the transfer carries (Transfer::count), one step for all of them.
  RouteCost operator()(std::span<const LinkId> route, Bandwidth rate = 0, int count = 1);
  // Transfer `id` of `a` (the algorithm this coster was made for).
  RouteCost operator()(const Algorithm& a, TransferId id) {
    return (*this)(a.route(id), a.rate(id), a[id].count);
  }

 private:
  Time serialization_time(Bandwidth rate, int count);

  const topo::Topology& t_;
  Bytes bytes_;
  LinkModel model_;
  bool steps_;
  std::vector<Bandwidth> bandwidth_;
  std::vector<Time> latency_, step_;
  // The serialization times asked for, by (rate, chunks carried) hashed to a slot: the last asked
  // there. (Paced pipelines move each stream at its own rate: dozens of rates, interleaved.)
  struct Remembered {
    Bandwidth rate = -1;
    int count = 0;
    Time time = 0;
  };
  static constexpr size_t kRemembered = 64;
  static_assert(std::has_single_bit(kRemembered));  // (slots by the hash's top bits)
  std::array<Remembered, kRemembered> remembered_{};
};

// How much of link `l`'s bandwidth a transfer at `rate` holds under `model` (hold: all of it).
inline Bandwidth held_rate(const topo::Topology& t, LinkId l, Bandwidth rate, LinkModel model) {
  return model == LinkModel::Hold ? t.link(l).bandwidth : rate;
}
// The time-equivalent of what a transfer holding `rate` of a link of bandwidth `bandwidth` for
// `occupancy` carries over it: occupancy x rate / bandwidth (the link's busy time, when shared).
inline Time busy_share(Time occupancy, Bandwidth rate, Bandwidth bandwidth) {
  if (rate >= bandwidth) return occupancy;
  // In 64 bits where the product fits: the same quotient, without a 128-bit division.
  if (int64_t product = 0; occupancy >= 0 && rate >= 0 && bandwidth > 0 &&
                           !__builtin_mul_overflow(occupancy, rate, &product))
    return product / bandwidth;
  return static_cast<Time>(static_cast<Int128>(occupancy) * rate / bandwidth);
}

// How many chunks to send as one message (Transfer::count) so that per-step costs and pipelining
// balance: `chunks` chunks sent m at a time pay chunks / m steps of `step` each, and each message
// holds the chunks after it back by m - 1 chunk times (`chunk_time`) at each of `relays` places
// it is forwarded whole. Their sum is least at m = sqrt(chunks x step / (relays x chunk_time)),
// which this rounds (at least 1, at most `chunks` and kMaxChunksPerTransfer). 1 without steps.
int balanced_message_chunks(int64_t chunks, Time step, Time chunk_time, int relays = 1);

struct TimingResult {
  Time collective_time = 0;  // the latest arrival, when its data is usable (reductions included)
  std::vector<Time>
      link_busy;  // per link, summed occupancy weighted by the share of bandwidth held
};

// Assigns start/end to every transfer of `a` (overwriting what was there, in place: no copy of the
// schedule beside it) and sets a.claimed_time. Throws tenet::Error when a reference is out of range
// or a dependency does not point to an earlier transfer (before any time is written), or a route
// cannot be costed (then the transfers before it are timed already).
TimingResult time(const topo::Topology& t, Algorithm& a);
// The same, writing the times into `start` and `end` (sized a.size()) and leaving `a` alone.
TimingResult compute_times(const topo::Topology& t, const Algorithm& a, std::span<Time> start,
                           std::span<Time> end);
// The collective time compute_times gives, without keeping the schedule (8 B per transfer, not 16).
Time model_time(const topo::Topology& t, const Algorithm& a);
// A lower bound on model_time(t, a), in one pass each way and without timing the contention: the
// longest chain of transfers at their own rates (explicit and chunk-arrival dependencies, each
// sender's queue starting in list order, and a queue's next transfer leaving its first link after
// the last where their rates do not fit it together), and per link the earliest any of its
// transfers may start, plus all they carry at its bandwidth, plus the least any of them still has
// ahead once it ended. Exact where nothing contends (a ring). For pruning: an algorithm whose floor
// is at least a time to beat need not be timed. Same checks and errors as compute_times.
Time time_floor(const topo::Topology& t, const Algorithm& a);
// The same for a ring plan (synth/ir/ring_plan.hpp), equal to time_floor of what it materializes,
// with no transfer held: memory for its (node, chunk) arrivals and its links alone.
Time time_floor(const topo::Topology& t, const RingPlan& plan);
// The most any one link carries of a ring plan's transfers, each at its own rate (time_floor's
// per-link load, without the wait before the link's first transfer or after its last): at most
// time_floor(t, plan), and computed per hop and route (RingPlan::for_each_route_use), not per
// transfer. For pruning where a plan's load alone is over a time to beat.
Time load_floor(const topo::Topology& t, const RingPlan& plan);
// Times `a` (synth::time), unless `to_beat` is positive and its floor (time_floor) is at least
// that: then its claimed time is the floor and it is left untimed. Returns whether it was floored.
// `floor`, where given, receives the floor where one was computed (else it is left as it was).
bool time_unless_floored(const topo::Topology& t, Algorithm& a, Time to_beat,
                         Time* floor = nullptr);
// The algorithm's time: what it claims, or, when it claims none, what compute_times gives.
Time collective_time(const topo::Topology& t, const Algorithm& a);
// Gives `a`'s reductions `reduce_bandwidth` (0: no time; see Algorithm::reduce_bandwidth) and
// re-times it (synth::time) when that changes its schedule. An algorithm without reductions is left
// alone.
void set_reduce_bandwidth(const topo::Topology& t, Algorithm& a, Bandwidth reduce_bandwidth);

}  // namespace tenet::synth
