// Setup shared by the server plan's correctness tests (tests/synth/plans/server_plan_test.cpp,
// rail_deal_test.cpp) and its quality pins (tests/quality/server_plan_quality_test.cpp): random
// clusters, and the matcher on the server plan of the clusters.
#pragma once

#include <random>
#include <vector>

#include "synth/synthesizer.hpp"
#include "topo/generators.hpp"
#include "topo/topology.hpp"

namespace tenet::synth::testing {

// S servers of G NPUs, each server an NVSwitch (or NPUs linked pairwise) at 150-500 GB/s, joined
// by rails (NPU i of every server on rail switch i) or by a leaf per server under 1-3 spines whose
// uplinks may be oversubscribed or missing one way; NICs 10-100 GB/s, drawn per NPU (the rails
// between two servers mostly unequal: synth/plans/rail_deal.hpp).
inline topo::Topology random_cluster(std::mt19937_64& rng) {
  const int servers = 2 + static_cast<int>(rng() % 4), per = 2 + static_cast<int>(rng() % 3);
  auto between = [&](int lo, int hi) {
    return Bandwidth{1'000'000'000} * (lo + static_cast<Bandwidth>(rng() % (hi - lo + 1)));
  };
  auto latency = [&] { return Time{100'000} * static_cast<Time>(1 + rng() % 20); };
  topo::TopologyBuilder b("cluster");
  std::vector<std::vector<NodeId>> npu(servers);
  for (int s = 0; s < servers; ++s)
    for (int i = 0; i < per; ++i) npu[s].push_back(b.add_npu());
  for (int s = 0; s < servers; ++s) {
    const Bandwidth fast = between(150, 500);
    if (rng() % 2) {
      const NodeId sw = b.add_switch();
      for (NodeId v : npu[s]) b.add_bidirectional(v, sw, fast, latency());
    } else {
      for (int i = 0; i < per; ++i)
        for (int j = i + 1; j < per; ++j)
          b.add_bidirectional(npu[s][i], npu[s][j], fast, latency());
    }
  }
  if (rng() % 2) {
    for (int i = 0; i < per; ++i) {
      const NodeId rail = b.add_switch();
      for (int s = 0; s < servers; ++s)
        b.add_bidirectional(npu[s][i], rail, between(10, 100), latency());
    }
  } else {
    const int spines = 1 + static_cast<int>(rng() % 3);
    std::vector<NodeId> spine;
    for (int k = 0; k < spines; ++k) spine.push_back(b.add_switch());
    for (int s = 0; s < servers; ++s) {
      const NodeId leaf = b.add_switch();
      for (NodeId v : npu[s]) b.add_bidirectional(v, leaf, between(10, 100), latency());
      for (int k = 0; k < spines; ++k) {
        const Bandwidth up = between(10, 100);
        // A missing uplink (one way) where another spine still carries the traffic.
        if (spines > 1 && k == 0 && rng() % 4 == 0)
          b.add_link(spine[k], leaf, up, latency());
        else
          b.add_bidirectional(leaf, spine[k], up, latency());
      }
    }
  }
  return b.build();
}

// 2-3 pods of 2-3 servers of 2-4 NPUs: each server an NVSwitch at 150-500 GB/s, each NPU's NIC
// (10-100 GB/s, drawn per NPU) into its pod's leaf, the leaves under 1-2 spines at 10-100 GB/s (so
// often oversubscribed): the servers a relayed plan goes over pods of (relayed_over_pods).
inline topo::Topology random_pod_cluster(std::mt19937_64& rng) {
  const int pods = 2 + static_cast<int>(rng() % 2), servers = 2 + static_cast<int>(rng() % 2),
            per = 2 + static_cast<int>(rng() % 3), spines = 1 + static_cast<int>(rng() % 2);
  auto between = [&](int lo, int hi) {
    return Bandwidth{1'000'000'000} * (lo + static_cast<Bandwidth>(rng() % (hi - lo + 1)));
  };
  auto latency = [&] { return Time{100'000} * static_cast<Time>(1 + rng() % 20); };
  topo::TopologyBuilder b("pods");
  std::vector<NodeId> npus;
  for (int i = 0; i < pods * servers * per; ++i) npus.push_back(b.add_npu());
  std::vector<NodeId> spine;
  for (int k = 0; k < spines; ++k) spine.push_back(b.add_switch());
  for (int p = 0; p < pods; ++p) {
    const NodeId leaf = b.add_switch();
    for (int k = 0; k < spines; ++k)
      b.add_bidirectional(leaf, spine[k], between(10, 100), latency());
    for (int s = 0; s < servers; ++s) {
      const NodeId sw = b.add_switch();
      const Bandwidth fast = between(150, 500);
      for (int i = 0; i < per; ++i) {
        const NodeId v = npus[static_cast<size_t>((p * servers + s) * per + i)];
        b.add_bidirectional(v, sw, fast, latency());
        b.add_bidirectional(v, leaf, between(10, 100), latency());
      }
    }
  }
  return b.build();
}

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
