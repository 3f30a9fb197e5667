#include "synth/auto/baseline_floors.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <vector>

#include "synth/cost/timing.hpp"
#include "synth/memo.hpp"
#include "synth/tuning.hpp"
#include "topo/analysis.hpp"

namespace tenet::synth::detail {

std::optional<PlanFloor> ring_plan_floor(const BaselineSpec& spec, const topo::Topology& t,
                                         const Collective& c, Bytes chunk_bytes,
                                         const SynthOptions& o, Time to_beat) {
  if (c.all_reduce_chunks != 0 || c.uneven()) return std::nullopt;
  std::optional<RingPlan> plan;
  try {
    plan = ring_plan(spec, t, c, chunk_bytes, o.link_model, o.reduce_bandwidth, baselines_of(o));
  } catch (const NotApplicable&) {
    return std::nullopt;  // try_baseline says why
  }
  if (!plan) return std::nullopt;
  if (to_beat > 0)
    if (const Time load = load_floor(t, *plan); load >= to_beat)
      return PlanFloor{load, static_cast<size_t>(plan->size()), false};
  return PlanFloor{time_floor(t, *plan), static_cast<size_t>(plan->size())};
}

std::optional<PlanFloor> PlanFloors::of(const BaselineSpec& spec, const topo::Topology& t,
                                        const Collective& c, Bytes chunk_bytes,
                                        const SynthOptions& o, Time to_beat) {
  const auto key = std::tuple(spec.name(), c.chunks_per_npu, c.all_reduce_chunks, chunk_bytes);
  auto serves = [&](const std::optional<PlanFloor>& f) {
    return !f || f->whole || (to_beat > 0 && f->floor >= to_beat);
  };
  {
    std::lock_guard<std::mutex> guard(mutex_);
    if (auto it = found_.find(key); it != found_.end() && serves(it->second)) return it->second;
  }
  std::optional<PlanFloor> floor = ring_plan_floor(spec, t, c, chunk_bytes, o, to_beat);
  std::lock_guard<std::mutex> guard(mutex_);
  std::optional<PlanFloor>& kept = found_[key];
  if (!kept || !kept->whole) kept = floor;  // (a whole floor found meanwhile stays)
  return floor;
}

namespace {

// A floor of the one-shot All-Reduce with no transfer made: every rank receives the whole buffer
// of each of the P - 1 others, through its own incoming links at most. Nothing for the others.
// Its transfers are counted as one message a pair (at least: send_runs makes one a way where a
// pair has several routes).
std::optional<PlanFloor> oneshot_floor(const BaselineSpec& spec, const topo::Topology& t,
                                       const Collective& c, Bytes chunk_bytes) {
  if (spec.kind != BaselineKind::Oneshot || c.kind != CollectiveKind::AllReduce)
    return std::nullopt;
  const double buffer = static_cast<double>(chunk_bytes) * c.num_chunks();
  const int p = c.num_ranks();
  double most = 0;  // ps
  for (topo::NodeId v : c.ranks) {
    const Bandwidth in = topo::ingress_bandwidth(t, v);
    if (in <= 0) return std::nullopt;
    most = std::max(
        most, (p - 1) * buffer / static_cast<double>(in) * static_cast<double>(kPicosPerSecond));
  }
  // (Rounded down, and within Time's range on thin links.)
  const auto floor =
      static_cast<Time>(std::min(most, static_cast<double>(std::numeric_limits<Time>::max() / 2)));
  const int64_t messages =
      (int64_t{c.num_chunks()} + kMaxChunksPerTransfer - 1) / kMaxChunksPerTransfer;
  return PlanFloor{floor, static_cast<size_t>(messages * p * (p - 1))};
}

// The least any transfer takes beyond its bytes: the least per-step cost (where charged) plus the
// least latency of any link of `t` (which has links).
Time least_hop(const topo::Topology& t) {
  Time step = std::numeric_limits<Time>::max(), latency = std::numeric_limits<Time>::max();
  for (LinkId l = 0; l < t.num_links(); ++l) {
    step = std::min(step, t.charges_steps() ? t.link(l).step : Time{0});
    latency = std::min(latency, t.link(l).latency);
  }
  return step + latency;
}

// The phases a ring's or a direct exchange's `kind` runs: one for an All-Gather or a
// Reduce-Scatter, two for an All-Reduce (its Reduce-Scatter, then its All-Gather), none for the
// rest.
int exchange_phases(CollectiveKind kind) {
  if (kind == CollectiveKind::AllGather || kind == CollectiveKind::ReduceScatter) return 1;
  return kind == CollectiveKind::AllReduce ? 2 : 0;
}

// A floor of a ring's All-Gather, Reduce-Scatter or All-Reduce with no transfer made: each chunk
// passes the ring hop by hop, each transfer waiting for the arrival before it (ring_plan's one
// dependency; an All-Reduce's All-Gather after its Reduce-Scatter), so P - 1 transfers in a row a
// phase, each taking at least the least per-step cost (where charged) and latency of any link. On
// a large communicator where steps cost microseconds this alone is over a small message's answer.
// Its transfers are the plan's: P - 1 a chunk and phase.
//
// A ring's All-to-All (either ring: ring_all_to_all_steps, store and forward) is P (P - 1) / 2
// steps, every member sending each step a block of k chunks (k > 0: an even All-to-All) in
// messages of at most kMaxChunksPerTransfer, and each send waiting for the arrival the member had
// the step before: P (P - 1) / 2 transfers in a row, where its P^2 (P - 1) / 2 messages are too
// many to build for a floor on a large communicator.
std::optional<PlanFloor> ring_chain_floor(const BaselineSpec& spec, const topo::Topology& t,
                                          const Collective& c) {
  if (spec.kind != BaselineKind::Ring && spec.kind != BaselineKind::BidirRing) return std::nullopt;
  if (c.kind == CollectiveKind::AllToAll) {
    if (c.uneven() || c.num_ranks() < 2 || t.num_links() == 0) return std::nullopt;
    const int64_t p = c.num_ranks();
    const int64_t in_a_row = p * (p - 1) / 2;
    const int64_t messages =
        (int64_t{c.chunks_per_npu} + kMaxChunksPerTransfer - 1) / kMaxChunksPerTransfer;
    return PlanFloor{static_cast<Time>(in_a_row) * least_hop(t),
                     static_cast<size_t>(in_a_row * p * messages)};
  }
  const int phases = exchange_phases(c.kind);
  if (phases == 0 || c.num_ranks() < 2 || t.num_links() == 0) return std::nullopt;
  const int64_t in_a_row = int64_t{phases} * (c.num_ranks() - 1);
  return PlanFloor{static_cast<Time>(in_a_row) * least_hop(t),
                   static_cast<size_t>(in_a_row) * static_cast<size_t>(c.num_chunks())};
}

// A floor of the direct baseline's All-Gather, Reduce-Scatter or All-Reduce over every NPU with no
// transfer made: a phase sends every ordered pair of members a block (direct_exchange), so the
// blocks a server's (or a pod's: topo::detect_pods) NPUs send the NPUs outside it cross the links
// out of the server's nodes (its NPUs, and the switches only they attach to), and as many cross
// in: |G| (P - |G|) blocks each way a phase, over that capacity; the most of any server. On a
// cluster of servers it is many times the answer (nvcluster:128x8: every NPU's blocks to the 1016
// outside its server through 8 NICs). Its transfers are the exchange's: P (P - 1) a chunk of a
// block and phase.
std::optional<PlanFloor> direct_cut_floor(const BaselineSpec& spec, const topo::Topology& t,
                                          const Collective& c, Bytes chunk_bytes) {
  if (spec.kind != BaselineKind::Direct || c.num_ranks() != t.num_npus()) return std::nullopt;
  const int phases = exchange_phases(c.kind);
  std::vector<std::vector<topo::NodeId>> groups = topo::detect_servers(t);
  if (groups.empty()) groups = topo::detect_pods(t);
  if (phases == 0 || groups.empty()) return std::nullopt;
  const int p = c.num_ranks();
  const int64_t block = c.num_chunks() / p;  // the fewest chunks a member's block holds
  const topo::GroupBandwidth links = topo::group_bandwidth(t, groups);
  double most = 0;  // ps
  for (size_t g = 0; g < groups.size(); ++g) {
    const auto size = static_cast<double>(groups[g].size());
    const double bytes = phases * size * (p - size) * static_cast<double>(block) *
                         static_cast<double>(chunk_bytes) * static_cast<double>(kPicosPerSecond);
    for (Bandwidth capacity : {links.out[g], links.in[g]})
      if (capacity > 0) most = std::max(most, bytes / static_cast<double>(capacity));
  }
  // (Rounded down, and within Time's range on thin links.)
  const auto floor =
      static_cast<Time>(std::min(most, static_cast<double>(std::numeric_limits<Time>::max() / 2)));
  return PlanFloor{floor, static_cast<size_t>(phases) * static_cast<size_t>(p) *
                              static_cast<size_t>(p - 1) * static_cast<size_t>(block)};
}

// A floor of the direct baseline's All-Gather, Reduce-Scatter or All-Reduce from its senders'
// steps, no transfer made: a phase sends each of the P - 1 other members a block (direct_exchange)
// in at least one message per kMaxChunksPerTransfer of its chunks, and a message at rate r whose
// route's largest per-step cost is s holds r of each link of its route for s + b / r
// (docs/model.md), r s + b of an out-link's capacity: r is at least the topology's narrowest link,
// s at least the sender's cheapest out-link's step. A member's messages over its egress; the most
// of any member. Where steps cost microseconds, a large communicator's P - 1 steps a phase are many
// times a small message's answer (leafspine:32x32 All-Reduce of 1 MiB: 5.4 ms against 51 us).
std::optional<PlanFloor> direct_step_floor(const BaselineSpec& spec, const topo::Topology& t,
                                           const Collective& c, Bytes chunk_bytes) {
  if (spec.kind != BaselineKind::Direct || t.num_links() == 0) return std::nullopt;
  const int phases = exchange_phases(c.kind);
  const int p = c.num_ranks();
  if (phases == 0 || p < 2) return std::nullopt;
  const Bandwidth narrowest = narrowest_link(t);
  const int64_t block = c.num_chunks() / p;  // the fewest chunks a member's block holds
  const int64_t messages = (block + kMaxChunksPerTransfer - 1) / kMaxChunksPerTransfer;
  const double sends = static_cast<double>(phases) * (p - 1);
  double most = 0;  // ps
  for (topo::NodeId v : c.ranks) {
    const Bandwidth out = topo::egress_bandwidth(t, v);
    if (out <= 0) return std::nullopt;
    const double held = least_step_hold(t, t.out_links(v), narrowest);  // bytes per step
    const double bytes = sends * (static_cast<double>(messages) * held +
                                  static_cast<double>(block) * static_cast<double>(chunk_bytes));
    most = std::max(most, bytes / static_cast<double>(out) * static_cast<double>(kPicosPerSecond));
  }
  // (Rounded down, and within Time's range on thin links.)
  const auto floor =
      static_cast<Time>(std::min(most, static_cast<double>(std::numeric_limits<Time>::max() / 2)));
  return PlanFloor{
      floor, static_cast<size_t>(sends * static_cast<double>(p) * static_cast<double>(messages))};
}

// Per node v of `targets`, whether v can be reached from each node through switches and router
// NPUs alone (a transfer's route relays through nothing else): out[i][u] for v = targets[i].
std::vector<std::vector<char>> reached_through_switches(const topo::Topology& t,
                                                        const std::vector<NodeId>& targets) {
  std::vector<std::vector<char>> out;
  for (NodeId v : targets) {
    std::vector<char> from(t.num_nodes(), 0);
    std::vector<NodeId> stack{v};
    from[v] = 1;
    while (!stack.empty()) {
      const NodeId x = stack.back();
      stack.pop_back();
      if (x != v && !t.passes_through(x)) continue;  // it relays nothing on
      for (LinkId l : t.in_links(x))
        if (const NodeId u = t.link(l).src; !from[u]) {
          from[u] = 1;
          stack.push_back(u);
        }
    }
    out.push_back(std::move(from));
  }
  return out;
}

// A floor of the hierarchical baseline's All-Gather, Reduce-Scatter or All-Reduce (a ring on every
// dimension), no transfer made. Its phases run one after another at every member (each starts once
// everything of the phase before has arrived there), and a phase over a dimension of p members is
// p - 1 steps in a row, each a member's block to the next as messages once the step before has
// arrived: at least the least per-step cost and latency of any link and the block's bytes at the
// most any member of a line can send towards another (its out-links from which the other is
// reached through switches alone: between servers, its NICs). Its transfers: at least a message a
// member and step.
std::optional<PlanFloor> hierarchical_floor(const BaselineSpec& spec, const topo::Topology& t,
                                            const Collective& c, Bytes chunk_bytes) {
  if (spec.kind != BaselineKind::Hierarchical || c.num_ranks() != t.num_npus() ||
      t.num_links() == 0 ||
      std::any_of(spec.per_dimension.begin(), spec.per_dimension.end(),
                  [](BaselineKind k) { return k != BaselineKind::Ring; }))
    return std::nullopt;
  const bool rs = c.kind == CollectiveKind::ReduceScatter || c.kind == CollectiveKind::AllReduce;
  const bool ag = c.kind == CollectiveKind::AllGather || c.kind == CollectiveKind::AllReduce;
  if (!rs && !ag) return std::nullopt;
  // The lines as hierarchical() makes them: the topology's dimensions (NPU ids in mixed radix), or
  // its servers (position in the server, then the server).
  std::vector<int> levels = t.levels();
  std::vector<NodeId> npu_at(t.num_npus());
  for (NodeId v = 0; v < t.num_npus(); ++v) npu_at[v] = v;
  if (levels.size() < 2) {
    const std::vector<std::vector<NodeId>> servers = topo::detect_servers(t);
    if (servers.empty()) return std::nullopt;
    levels = {static_cast<int>(servers[0].size()), static_cast<int>(servers.size())};
    for (size_t s = 0; s < servers.size(); ++s)
      for (size_t k = 0; k < servers[s].size(); ++k)
        npu_at[s * servers[s].size() + k] = servers[s][k];
  }
  if (!spec.per_dimension.empty() && spec.per_dimension.size() != 1 &&
      spec.per_dimension.size() != levels.size())
    return std::nullopt;
  const Time least = least_hop(t);
  const std::vector<std::vector<char>> reaches = reached_through_switches(t, npu_at);
  double total = 0;  // ps
  int64_t transfers = 0, members_before = 1;
  for (size_t d = 0; d < levels.size(); ++d) {
    const int p = levels[d];
    members_before *= p;
    if (p < 2) continue;
    // The most a member sends another member of its line at (the line: slots that differ in
    // coordinate d alone).
    const int64_t stride = members_before / p;
    Bandwidth most = 0;
    for (NodeId x = 0; x < t.num_npus(); ++x) {
      const NodeId u = npu_at[x];
      const int64_t base = x - (x / stride % p) * stride;
      for (int j = 0; j < p; ++j) {
        const int64_t y = base + j * stride;
        if (y == x) continue;
        const NodeId v = npu_at[y];
        const std::vector<char>& to_v = reaches[static_cast<size_t>(y)];
        Bandwidth rate = 0;
        for (LinkId l : t.out_links(u))
          if (const NodeId head = t.link(l).dst;
              head == v || (t.passes_through(head) && to_v[head]))
            rate += t.link(l).bandwidth;
        most = std::max(most, rate);
      }
    }
    if (most <= 0) return std::nullopt;
    const int64_t block = c.num_chunks() / members_before;  // chunks a member sends a step
    const double hop = static_cast<double>(least) +
                       static_cast<double>(block) * static_cast<double>(chunk_bytes) /
                           static_cast<double>(most) * static_cast<double>(kPicosPerSecond);
    const int phases = int{rs} + int{ag};
    total += phases * (p - 1) * hop;
    transfers += int64_t{phases} * (p - 1) * t.num_npus();
  }
  const auto floor =
      static_cast<Time>(std::min(total, static_cast<double>(std::numeric_limits<Time>::max() / 2)));
  return PlanFloor{floor, static_cast<size_t>(transfers)};
}

}  // namespace

Bandwidth narrowest_link(const topo::Topology& t) {
  Bandwidth narrowest = std::numeric_limits<Bandwidth>::max();
  for (LinkId l = 0; l < t.num_links(); ++l) narrowest = std::min(narrowest, t.link(l).bandwidth);
  return narrowest;
}

double least_step_hold(const topo::Topology& t, std::span<const LinkId> links,
                       Bandwidth narrowest) {
  if (!t.charges_steps() || links.empty()) return 0;
  Time step = std::numeric_limits<Time>::max();
  for (LinkId l : links) step = std::min(step, t.link(l).step);
  return static_cast<double>(narrowest) * static_cast<double>(step) /
         static_cast<double>(kPicosPerSecond);
}

std::optional<PlanFloor> closed_floor(const BaselineSpec& spec, const topo::Topology& t,
                                      const Collective& c, Bytes chunk_bytes) {
  if (std::optional<PlanFloor> oneshot = oneshot_floor(spec, t, c, chunk_bytes)) return oneshot;
  if (std::optional<PlanFloor> levels = hierarchical_floor(spec, t, c, chunk_bytes)) return levels;
  // (Direct's two floors, the higher: a cluster's NICs, or a switched fabric's steps.)
  std::optional<PlanFloor> cut = direct_cut_floor(spec, t, c, chunk_bytes);
  std::optional<PlanFloor> steps = direct_step_floor(spec, t, c, chunk_bytes);
  if (cut && (!steps || cut->floor >= steps->floor)) return cut;
  if (steps) return steps;
  return ring_chain_floor(spec, t, c);
}

// The baseline, timed; CannotBeat when its time_floor says that it cannot be faster than `to_beat`
// (then it is not timed: on large clusters timing an algorithm takes longer than building it and
// its floor). `enough`, when
// given, is the chunk search's: a floor it would accept is timed anyway, so that the search stops
// there as it would have.
ChunkMade baseline_to_beat(const BaselineSpec& spec, const topo::Topology& t, const Collective& c,
                           Bytes chunk_bytes, const SynthOptions& o, Time to_beat,
                           const std::function<bool(const Algorithm&)>& enough, Time* floor,
                           PlanFloors* floors, bool blink_load) {
  Time found = -1;
  if (!floor) floor = &found;
  *floor = -1;
  // One-shot's, direct's and the rings' floors in closed form: on a large communicator one-shot's
  // is seconds over anything else, direct's many times the answer through a server's NICs, and a
  // ring's steps in a row over a small message's answer; their transfers are not built to say so.
  if (to_beat > 0)
    if (std::optional<PlanFloor> closed = closed_floor(spec, t, c, chunk_bytes);
        closed && closed->floor >= to_beat) {
      Algorithm floored = empty_algorithm(spec.name(), t, c, chunk_bytes, o.link_model);
      floored.claimed_time = closed->floor;
      if (!(enough && enough(floored))) {
        *floor = closed->floor;
        return CannotBeat{closed->floor, closed->transfers};
      }
    }
  // Blink's trees' load (blink_load_floor), no transfer made: where a tree edge's links cannot
  // carry its chunks both ways in time, no count of it can beat `to_beat` (the bytes are the same
  // at every count), and its transfers are not built to say so.
  if (to_beat > 0 && blink_load && spec.kind == BaselineKind::Blink)
    if (const std::optional<Time> load = blink_load_floor(t, c, chunk_bytes, baselines_of(o));
        load && *load >= to_beat) {
      Algorithm floored = empty_algorithm(spec.name(), t, c, chunk_bytes, o.link_model);
      floored.claimed_time = *load;
      if (!(enough && enough(floored))) {
        *floor = *load;
        // (Each chunk crosses each of its tree's P - 1 edges up and down.)
        return CannotBeat{
            *load, static_cast<size_t>(2 * int64_t{c.num_ranks() - 1} * int64_t{c.num_chunks()})};
      }
    }
  // A ring's floor from its plan (the same floor, no transfer made): a losing ring of millions of
  // transfers is not built. `enough` reads its time, collective and chunk size alone.
  bool floored_already = false;  // by the plan, and it may win: the algorithm is timed
  if (to_beat > 0) {
    auto plan_floor = [&](Time beat) {
      return floors ? floors->of(spec, t, c, chunk_bytes, o, beat)
                    : ring_plan_floor(spec, t, c, chunk_bytes, o, beat);
    };
    std::optional<PlanFloor> plan = plan_floor(to_beat);
    Algorithm floored = empty_algorithm(spec.name(), t, c, chunk_bytes, o.link_model);
    // (A load floor that `enough` would accept says nothing of the time: the whole floor then.)
    if (plan && !plan->whole && enough) {
      floored.claimed_time = plan->floor;
      if (enough(floored)) plan = plan_floor(0);
    }
    if (plan) {
      floored.claimed_time = *floor = plan->floor;
      if (floored.claimed_time >= to_beat && !(enough && enough(floored)))
        return CannotBeat{floored.claimed_time, plan->transfers};
      floored_already = true;
    }
  }
  Made<Algorithm> made_here = try_baseline(spec, t, c, chunk_bytes, o.link_model,
                                           o.reduce_bandwidth, false, baselines_of(o));
  Algorithm* a = made(made_here);
  if (!a) return std::get<NotMade>(std::move(made_here));
  if (!floored_already && to_beat > 0) {
    *floor = time_floor(t, *a);
    if (*floor >= to_beat) {
      a->claimed_time = *floor;
      if (!enough || !enough(*a)) return CannotBeat{a->claimed_time, a->size()};
    }
  }
  time(t, *a);  // (enough at its floor: timed, as what it is)
  return std::move(*a);
}

}  // namespace tenet::synth::detail
