// What one synthesis run keeps between its steps (SynthOptions::memo): the flow plans it packed,
// the server plans it made, the routes they and the matcher's channels searched, the reversed
// topologies it planned on, the bounds it computed, what the baselines keep (Blink's trees, channel
// rings) and which ways lost at each size (SizeHistory), for every topology it works on. A run that
// is given none keeps its own while it lasts; a caller that synthesizes on the same topology again
// (a sweep, a simulator, a benchmark) or verifies what it made holds one and passes it.
#pragma once

#include "synth/auto/size_history.hpp"
#include "synth/baselines/baseline_memo.hpp"
#include "synth/bounds/lower_bound.hpp"
#include "synth/plans/flow_plans.hpp"
#include "synth/plans/reversed_topologies.hpp"
#include "synth/plans/server_plans.hpp"
#include "synth/synthesizer.hpp"
#include "topo/routing.hpp"

namespace tenet::synth {

struct SynthMemo {
  BoundMemo bounds;
  detail::FlowPlans plans;
  detail::ServerPlans servers;
  topo::RouteMemo routes;  // the route searches of the server plans and the matcher's channels
  detail::ReversedTopologies reversed;
  BaselineMemo baselines;
  detail::SizeHistory sizes;  // read only where PortfolioOptions::across_sizes
};

// `o`'s bound memo, or none.
inline BoundMemo* bounds_of(const SynthOptions& o) { return o.memo ? &o.memo->bounds : nullptr; }
// `o`'s baseline memo, or none.
inline BaselineMemo* baselines_of(const SynthOptions& o) {
  return o.memo ? &o.memo->baselines : nullptr;
}

// `o`'s route searches (topo::RouteMemo), or none.
inline topo::RouteMemo* routes_of(const SynthOptions& o) {
  return o.memo ? &o.memo->routes : nullptr;
}

// plan_servers(t, chunk_bytes) under `o`'s link model and routes, kept in `o`'s memo where it has
// one.
inline detail::ServerPlans::Plan server_plan_of(const topo::Topology& t, Bytes chunk_bytes,
                                                const SynthOptions& o) {
  if (o.memo)
    return o.memo->servers.of(t, chunk_bytes, o.link_model, o.ecmp_routes, o.give_up, routes_of(o));
  return std::make_shared<const std::optional<ServerPlan>>(
      plan_servers(t, chunk_bytes, o.link_model, o.ecmp_routes, o.give_up));
}

}  // namespace tenet::synth
