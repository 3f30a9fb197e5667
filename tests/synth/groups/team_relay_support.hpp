// Setup shared by the team relay's correctness tests (tests/synth/groups/team_relay_test.cpp) and
// its quality pins (tests/quality/team_relay_quality_test.cpp): groups of an nvcluster, and team
// relays over the group's ring.
#pragma once

#include <fmt/format.h>

#include <optional>
#include <string>
#include <vector>

#include "synth/baselines/baselines.hpp"
#include "synth/groups/team_relay.hpp"
#include "synth/ir/algorithm.hpp"
#include "topo/topology.hpp"

namespace tenet::synth::testing {

// Every 8th NPU from `first`: one member per server of an nvcluster, on one rail.
inline Collective rail_group(const topo::Topology& t, CollectiveKind kind, int first,
                             int chunks_per_npu) {
  Collective c;
  c.kind = kind;
  for (topo::NodeId v = first; v < t.num_npus(); v += 8) c.ranks.push_back(v);
  c.chunks_per_npu = chunks_per_npu;
  return c;
}

// NPUs first .. first + n - 1: a group inside one server.
inline Collective server_group(CollectiveKind kind, int first, int n, int chunks_per_npu) {
  Collective c;
  c.kind = kind;
  for (int i = 0; i < n; ++i) c.ranks.push_back(first + i);
  c.chunks_per_npu = chunks_per_npu;
  return c;
}

// The team relay of `c` over `t` with the group's ring on each slice's sub-group.
inline std::optional<Algorithm> ring_team_relay(const topo::Topology& t, const Collective& c,
                                                Bytes chunk) {
  return team_relay(t, c, chunk, LinkModel::Pipelined, [&](const Collective& sc) {
    return make_baseline({BaselineKind::Ring, {}}, t, sc, chunk);
  });
}

// The rail groups of 64 MiB on `spec` (topology `t`): All-Gather, Reduce-Scatter and All-Reduce,
// from NPU 0 and 5, at 8 and 16 chunks per NPU; each with its chunk size and a description.
struct RailCase {
  Collective c;
  Bytes chunk;
  std::string what;
};
inline std::vector<RailCase> rail_cases(const topo::Topology& t, const char* spec) {
  std::vector<RailCase> cases;
  for (CollectiveKind kind :
       {CollectiveKind::AllGather, CollectiveKind::ReduceScatter, CollectiveKind::AllReduce})
    for (int first : {0, 5})
      for (int k : {8, 16}) {
        const Collective c = rail_group(t, kind, first, k);
        const Bytes chunk = c.chunk_bytes_for(64 << 20);
        cases.push_back(
            {c, chunk, fmt::format("{} from {} k={} on {}", to_string(kind), first, k, spec)});
      }
  return cases;
}

}  // namespace tenet::synth::testing
