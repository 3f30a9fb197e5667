// Floors of the baselines' times with no transfer made, or none timed: what lets the chunk
// searches leave out a baseline that cannot beat the time to beat (synth/auto/portfolio.hpp) on
// large communicators, where building and timing millions of transfers would cost seconds.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <tuple>

#include "synth/baselines/baselines.hpp"
#include "synth/synthesizer.hpp"
#include "topo/topology.hpp"

namespace tenet::synth::detail {

// The bandwidth of `t`'s narrowest link: the least rate any transfer moves at.
Bandwidth narrowest_link(const topo::Topology& t);
// The bytes of a link's capacity a transfer's per-step cost holds at least, whichever of `links`
// (an NPU's out- or in-links) it leaves or enters by: a step holds the transfer's rate r of each
// link of its route for its route's largest per-step cost s (docs/model.md), r at least `narrowest`
// and s at least the least step of `links`. 0 where steps are not charged or there are no links.
double least_step_hold(const topo::Topology& t, std::span<const LinkId> links, Bandwidth narrowest);

// The time_floor of `spec`'s ring plan (ring_plan) for `c`, with no transfer made: equal to the
// ring's time where nothing contends, as in a ring. nullopt for a baseline without a plan (other
// families, an uneven or All-Reduce-chunked collective, a ring whose NPUs relay). Given a positive
// `to_beat`, the plan's load_floor where that alone is at or over it (`whole` false: a lower
// floor, enough to say that the ring cannot beat it, found per hop instead of per transfer).
struct PlanFloor {
  Time floor;
  size_t transfers;   // what the ring would make
  bool whole = true;  // time_floor's, not load_floor's alone
};
std::optional<PlanFloor> ring_plan_floor(const BaselineSpec& spec, const topo::Topology& t,
                                         const Collective& c, Bytes chunk_bytes,
                                         const SynthOptions& o, Time to_beat = 0);

// A floor of `spec`'s time for `c` in closed form, no transfer made: one-shot's (every rank
// receives P - 1 buffers through its own incoming links), direct's (the blocks a server's or pod's
// NPUs exchange with the rest, over the links out of it, or each member's P - 1 messages a phase,
// their steps included, over its own out-links, whichever is higher), a ring's or bidirectional
// ring's (P - 1 transfers in a row a phase, each at least the least per-step cost and latency of
// any link), hierarchical's (each phase's p - 1 ring steps in a row, a block each at the most a
// member can send another of its line); nothing for the other families.
std::optional<PlanFloor> closed_floor(const BaselineSpec& spec, const topo::Topology& t,
                                      const Collective& c, Bytes chunk_bytes);

// The ring plan floors one chunk search found, per baseline, chunk count and chunk size: a search
// asks the same ring's floor several times (its rival, the promising ring, that ring's own
// search), and on 1024 NPUs each is a pass over 2M transfers. For one topology, collective (but
// its chunk count) and options. Safe to share between threads (two may find one floor at once).
class PlanFloors {
 public:
  // As ring_plan_floor; a load floor kept serves a later `to_beat` at or under it.
  std::optional<PlanFloor> of(const BaselineSpec& spec, const topo::Topology& t,
                              const Collective& c, Bytes chunk_bytes, const SynthOptions& o,
                              Time to_beat = 0);

 private:
  std::mutex mutex_;
  std::map<std::tuple<std::string, int, int, Bytes>, std::optional<PlanFloor>> found_;
};

// The baseline, timed; CannotBeat when its time_floor says that it cannot be faster than `to_beat`
// (then it is not timed: on large clusters timing an algorithm takes longer than building it and
// its floor), or a floor with no transfer made does (closed_floor; Blink's trees' load,
// blink_load_floor; a ring's plan). `enough`, when
// given, is the chunk search's: a floor it would accept is timed anyway, so that the search stops
// there as it would have. `floor`, when given, receives the floor found (of a timed baseline too),
// or -1 where none was sought (no `to_beat`).
// `floors`, when given, keeps the rings' plan floors. `blink_load` false: Blink is built and
// floored by its time_floor, tighter than its load (for a caller that learns from the floor found
// how far behind it lost: SizeHistory).
ChunkMade baseline_to_beat(const BaselineSpec& spec, const topo::Topology& t, const Collective& c,
                           Bytes chunk_bytes, const SynthOptions& o, Time to_beat,
                           const std::function<bool(const Algorithm&)>& enough = {},
                           Time* floor = nullptr, PlanFloors* floors = nullptr,
                           bool blink_load = true);

}  // namespace tenet::synth::detail
