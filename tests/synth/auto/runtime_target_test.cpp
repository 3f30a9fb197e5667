#include "synth/auto/runtime_target.hpp"

#include <gtest/gtest.h>

#include <string>

#include "synth/cost/timing.hpp"
#include "synth/producers.hpp"
#include "synth/verify/verify.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"

namespace tenet::synth {
namespace {

// The program the runtime runs: correct, its time what its own MSCCL-XML reads back at, and no
// slower than the ring's program read back (a candidate it considered).
TEST(RuntimeTarget, TheFastestProgramTheRuntimeRuns) {
  for (const std::string& spec :
       {std::string("ring:8"),
        std::string(TENET_SOURCE_DIR) + "/examples/topologies/cluster16.yaml"}) {
    topo::Topology t = topo::load(spec);
    t.set_charges_steps(true);
    for (CollectiveKind kind : {CollectiveKind::AllGather, CollectiveKind::AllReduce}) {
      const Collective c = Collective::over_all(t, kind);
      const Bytes total = Bytes{1} << 20;
      Made<RuntimeChoice> made_choice = best_for_msccl(t, c, total, {}, {});
      const RuntimeChoice* choice = made(made_choice);
      ASSERT_NE(choice, nullptr) << spec;
      const Algorithm& a = choice->algorithm;
      EXPECT_TRUE(verify(t, a).correct()) << spec;
      EXPECT_GE(choice->candidates, 2u) << spec;
      const Algorithm again = import_msccl_xml(to_msccl_xml(a), t).algorithm;
      EXPECT_EQ(model_time(t, again), a.claimed_time) << spec;
      const ChunkingResult ring = make_algorithm_auto_chunks("ring", t, c, total, {});
      const Algorithm ring_back = import_msccl_xml(to_msccl_xml(ring.algorithm), t).algorithm;
      EXPECT_LE(a.claimed_time, model_time(t, ring_back)) << spec;
    }
  }
}

// A program holds GPUs only: on a switch that reduces (NVLS), where Tenet's own fastest is in the
// network, every candidate is made without it and the runtime holds each one.
TEST(RuntimeTarget, CandidatesAvoidInNetworkReduction) {
  topo::Topology t = topo::load("dgx-h100");
  t.set_charges_steps(true);
  const Collective c = Collective::over_all(t, CollectiveKind::AllReduce);
  Made<RuntimeChoice> made_choice = best_for_msccl(t, c, Bytes{64} << 20, {}, {});
  const RuntimeChoice* choice = made(made_choice);
  ASSERT_NE(choice, nullptr);
  EXPECT_TRUE(choice->left_out.empty()) << choice->left_out.front();
  for (const Transfer& x : choice->algorithm.transfers())
    ASSERT_TRUE(t.is_npu(x.src) && t.is_npu(x.dst));
  EXPECT_TRUE(verify(t, choice->algorithm).correct());
}

// What MSCCL-XML cannot say is a value, not an exception.
TEST(RuntimeTarget, BroadcastIsNotMade) {
  const auto t = topo::generate("ring:4");
  Made<RuntimeChoice> r =
      best_for_msccl(t, Collective::over_all(t, CollectiveKind::Broadcast), 1 << 20, {}, {});
  ASSERT_TRUE(std::holds_alternative<NotMade>(r));
  EXPECT_NE(std::get<NotMade>(r).why.find("broadcast"), std::string::npos)
      << std::get<NotMade>(r).why;
}

}  // namespace
}  // namespace tenet::synth
