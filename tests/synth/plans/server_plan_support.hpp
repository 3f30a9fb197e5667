// Setup shared by the server plan's correctness tests (tests/synth/plans/server_plan_test.cpp) and
// its quality pins (tests/quality/server_plan_quality_test.cpp): the matcher on the server plan of
// the clusters.
#pragma once

#include "synth/synthesizer.hpp"
#include "topo/generators.hpp"

namespace tenet::synth::testing {

// All-Gather, Reduce-Scatter and All-Reduce of 256 MiB in 32 chunks per NPU on the server plan of
// rail and fat-tree clusters: f(spec, t, kind, c, chunk, a) for each.
template <typename F>
void for_each_cluster_collective(F f) {
  SynthOptions o;
  o.method = SynthMethod::ServerPlan;
  for (const char* spec :
       {"nvcluster:4x8,net=rail", "nvcluster:4x8,net=fattree", "nvcluster:2x4,net=rail"}) {
    const topo::Topology t = topo::generate(spec);
    for (CollectiveKind kind :
         {CollectiveKind::AllGather, CollectiveKind::ReduceScatter, CollectiveKind::AllReduce}) {
      const Collective c = Collective::over_all(t, kind, 32);
      const Bytes chunk = c.chunk_bytes_for(256 << 20);
      const Algorithm a = synthesize(t, c, chunk, o);
      f(spec, t, kind, c, chunk, a);
    }
  }
}

// Broadcast and Reduce of 256 MiB in 4096 chunks from NPU 0 and 13 on the server plan of rail and
// fat-tree clusters: f(spec, t, kind, root, c, chunk, a) for each.
template <typename F>
void for_each_cluster_rooted(F f) {
  SynthOptions o;
  o.method = SynthMethod::ServerPlan;
  for (const char* spec : {"nvcluster:4x8,net=rail", "nvcluster:4x8,net=fattree"}) {
    const topo::Topology t = topo::generate(spec);
    for (CollectiveKind kind : {CollectiveKind::Broadcast, CollectiveKind::Reduce})
      for (int root : {0, 13}) {
        Collective c = Collective::over_all(t, kind, 4096);
        c.root = root;
        const Bytes chunk = c.chunk_bytes_for(256 << 20);
        const Algorithm a = synthesize(t, c, chunk, o);
        f(spec, t, kind, root, c, chunk, a);
      }
  }
}

}  // namespace tenet::synth::testing
