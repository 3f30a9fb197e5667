#include "synth/groups/relay_synthesis.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "synth/auto/portfolio.hpp"
#include "synth/baselines/baselines.hpp"
#include "synth/cost/timing.hpp"
#include "synth/groups/group_map.hpp"
#include "synth/groups/team_relay.hpp"
#include "synth/ir/provenance.hpp"
#include "synth/tuning.hpp"

namespace tenet::synth::detail {

bool relay_enough(const topo::Topology& t, const Algorithm& a, BoundMemo* memo) {
  return within_bound(t, a, kRelayEnough, memo);
}
std::optional<Algorithm> relay_synthesize(const topo::Topology& t, const Collective& c,
                                          Bytes chunk_bytes, const SynthOptions& o) {
  const std::optional<RelayTeams> relay = relay_teams(t, c, o.portfolio.borrow_servers);
  if (!relay) return std::nullopt;
  const int k = c.chunks_per_npu, team_size = static_cast<int>(relay->teams.front().size());
  if (relay->mirrors ? k < 2 : k % team_size != 0) return std::nullopt;
  // The slices' sub-groups are usually one shape (mates of one position, on one rail; the members
  // and their mirrors): the first one's algorithm at each chunk count is renamed for the others
  // where it can be (synth/groups/group_map.hpp).
  std::map<int, Algorithm> first;
  auto renamed_first = [&](const Collective& sc) -> std::optional<Algorithm> {
    const auto it = first.find(sc.chunks_per_npu);
    return it != first.end() ? map_to_group(t, it->second, sc.ranks) : std::nullopt;
  };
  // The sub-groups synthesized by `method`; `how` takes the first one's method, `by` its producer.
  auto synthesized_by = [&](SynthMethod method, std::string& how, Producer& by) {
    return [&, method, how_of = &how, by_of = &by](const Collective& sc) {
      if (std::optional<Algorithm> a = renamed_first(sc)) return std::move(*a);
      SynthOptions so = part_options(o);
      so.method = method;
      Algorithm a = synthesize(t, sc, chunk_bytes, so);
      if (how_of->empty()) *how_of = a.method, *by_of = a.provenance.producer;
      first.try_emplace(sc.chunks_per_npu, a);
      return a;
    };
  };
  auto compose_in =
      [&](const std::vector<int>& slices,
          const std::function<Algorithm(const Collective&)>& sub) -> std::optional<Algorithm> {
    // A slice's sub-group may have no algorithm: the method does not apply to it, or its members
    // cannot reach each other without NPUs of other slices. Any other error is a real one.
    try {
      return team_relay(t, c, chunk_bytes, o.link_model, *relay, slices, sub);
    } catch (const NotApplicable&) {
      return std::nullopt;
    } catch (const Unreachable&) {
      return std::nullopt;
    }
  };
  // Mates take equal slices. Mirrors take m of the k chunks, where the two paths would finish
  // together: all k at home take T0, all through the mirrors T1, so m = k T0 / (T0 + T1), rounded
  // both ways (and all through the mirrors, should that be faster).
  std::optional<Algorithm> relayed;
  std::string how;
  // `seed`: the first slice's algorithm when already made.
  auto compose = [&](const std::function<Algorithm(const Collective&)>& sub,
                     const std::string& label, std::optional<Algorithm> seed) {
    first.clear();
    if (seed) first.emplace(seed->collective.chunks_per_npu, std::move(*seed));
    auto keep = [&](std::optional<Algorithm> a) {
      if (a && (!relayed || a->claimed_time < relayed->claimed_time))
        relayed = std::move(a), how = label;
    };
    if (!relay->mirrors) return keep(compose_in(equal_slices(k, team_size), sub));
    const std::optional<Algorithm> home = compose_in({k, 0}, sub);
    std::optional<Algorithm> away = compose_in({0, k}, sub);
    if (!home || !away) return;
    const double through = static_cast<double>(k) * static_cast<double>(home->claimed_time) /
                           static_cast<double>(home->claimed_time + away->claimed_time);
    const int low = std::clamp(static_cast<int>(std::floor(through)), 1, k - 1);
    const int high = std::clamp(static_cast<int>(std::ceil(through)), 1, k - 1);
    keep(compose_in({k - low, low}, sub));
    if (high != low) keep(compose_in({k - high, high}, sub));
    keep(std::move(away));
  };
  // Small sub-groups are synthesized; every sub-group size gets the baselines fastest alone on the
  // first slice (within 1 % of the fastest: a ring and direct often tie alone and compose very
  // differently, the ring wanting its chunks in an order the hand-overs cannot follow). Each is
  // composed, and the fastest composition stays.
  Collective first_slice = c;
  for (size_t i = 0; i < first_slice.ranks.size(); ++i) first_slice.ranks[i] = relay->teams[i][0];
  first_slice.chunks_per_npu = relay->mirrors ? k : k / team_size;
  // The synthesis fastest alone may compose worse than the matcher's (a flat server plan on a
  // rail's switch sends each chunk to every member at once, where the hand-overs want them one
  // after another), so the matcher's sub-groups are composed too.
  std::string synthesized_how, matcher_how;
  if (transfer_estimate(first_slice) <= kRelaySubSynthesisTransfers) {
    Producer by = Producer::Unknown, matcher_by = Producer::Unknown;
    compose(synthesized_by(SynthMethod::Auto, synthesized_how, by), synthesized_how, std::nullopt);
    if (by != Producer::Matcher && by != Producer::Baseline)
      compose(synthesized_by(SynthMethod::Matcher, matcher_how, matcher_by), matcher_how,
              std::nullopt);
  }
  std::vector<std::pair<BaselineSpec, Algorithm>> alone;  // every baseline on the first slice
  for_each_baseline(t, first_slice, [&](const BaselineSpec& spec) {
    Made<Algorithm> a =
        try_baseline(spec, t, first_slice, chunk_bytes, o.link_model, o.reduce_bandwidth);
    if (Algorithm* made_here = made(a)) alone.emplace_back(spec, std::move(*made_here));
  });
  Time fastest = std::numeric_limits<Time>::max();
  for (const auto& [spec, a] : alone) fastest = std::min(fastest, a.claimed_time);
  for (auto& entry : alone) {
    const BaselineSpec& spec = entry.first;  // not a structured binding: the lambda captures it
    Algorithm& a = entry.second;
    if (static_cast<double>(a.claimed_time) > kRelayBaselineTie * static_cast<double>(fastest))
      continue;
    compose(
        [&](const Collective& sc) {
          if (std::optional<Algorithm> renamed = renamed_first(sc)) return std::move(*renamed);
          Algorithm made =
              make_baseline(spec, t, sc, chunk_bytes, o.link_model, o.reduce_bandwidth);
          first.try_emplace(sc.chunks_per_npu, made);
          return made;
        },
        "baseline " + spec.name(), std::move(a));
  }
  if (!relayed) return std::nullopt;
  set_reduce_bandwidth(t, *relayed, o.reduce_bandwidth);
  relayed->provenance = Provenance(Producer::TeamRelay);
  relayed->provenance.mirrors = relay->mirrors;
  relayed->method = relay->mirrors
                        ? fmt::format(
                              "team relay: each member's mirror (the NPU at its place in another "
                              "server, through its NIC) "
                              "carries a slice of its data; each slice's sub-group by {}",
                              how)
                        : fmt::format(
                              "team relay: {} idle server mates per member carry slices of its "
                              "data; each slice's "
                              "sub-group by {}",
                              team_size - 1, how);
  return relayed;
}

}  // namespace tenet::synth::detail
