// Setup shared by the synthesizer's correctness tests (tests/synth/synthesizer_test.cpp) and its
// quality pins (tests/quality/synthesizer_quality_test.cpp).
#pragma once

#include "synth/synthesizer.hpp"
#include "topo/topology.hpp"

namespace tenet::synth::testing {

// The public TACOS code's own heterogeneous-mesh tests (astra-sim/tacos,
// tests/test_tacos_mesh_2d_hetero.cpp): All-Gather of `output` over a WxH mesh with one bandwidth
// (GiB/s) along x and another along y, k chunks per NPU, under its hold model, where TACOS expects
// `tacos`.
struct TacosMesh {
  const char* spec;
  int k;
  Bytes output;
  Time tacos;  // ps, to TACOS's 10 ns
};
inline constexpr TacosMesh kTacosMeshes[] = {
    {"hetmesh2d:5x5,bw=50GiB/s/75GiB/s,lat=0.5us", 1, Bytes{1} << 30, 8'005'000'000},
    {"hetmesh2d:8x5,bw=80GiB/s/35GiB/s,lat=1us", 2, Bytes{1} << 30, 8'595'430'000},
    {"hetmesh2d:7x10,bw=16GiB/s/73GiB/s,lat=1.5us", 3, Bytes{4} << 30, 44'612'470'000}};

// The All-Gather of `x.output` on `t` (x's mesh) in x.k chunks per NPU: `c`, and the synthesizer's
// algorithm for it under the hold model.
struct TacosRun {
  Collective c;
  Algorithm a;
};
inline TacosRun tacos_hold_run(const topo::Topology& t, const TacosMesh& x) {
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather, x.k);
  SynthOptions o;
  o.link_model = LinkModel::Hold;
  Algorithm a = synthesize(t, c, c.chunk_bytes_for(x.output), o);
  return {c, std::move(a)};
}

}  // namespace tenet::synth::testing
