// Setup shared by All-to-Allv's correctness tests (tests/synth/ir/all_to_allv_test.cpp) and its
// quality pins (tests/quality/all_to_allv_quality_test.cpp).
#pragma once

#include "synth/ir/traffic.hpp"
#include "synth/synthesizer.hpp"
#include "topo/topology.hpp"

namespace tenet::synth::testing {

// A mixture-of-experts layer's Zipf(1.2) routing, 16 MiB per rank, over every NPU of `t` (at most
// 8 units per pair on average), synthesized with -k auto (up to 8 chunks per NPU).
inline ChunkingResult zipf_all_to_allv(const topo::Topology& t) {
  const Traffic traffic = generate_traffic("zipf:1.2", t.num_npus(), Bytes{16} << 20, 1);
  const TrafficUnits u = to_units(traffic, 8 * t.num_npus() * t.num_npus());
  Collective c = Collective::over_all(t, CollectiveKind::AllToAll);
  c.set_pair_units(u.units);
  return synthesize_auto_chunks(t, c, u.unit_bytes, {}, 8);
}

}  // namespace tenet::synth::testing
