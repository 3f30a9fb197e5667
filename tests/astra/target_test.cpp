// `tenet synth --target astra-sim`: of every runtime candidate, the one ASTRA-sim runs fastest (as
// its bundle runs there), with the candidates ASTRA-sim cannot run said.
#include "astra/target.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "synth/cost/timing.hpp"
#include "synth/producers.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"

namespace tenet::astra {
namespace {

using synth::Collective;
using synth::CollectiveKind;

// Eight GPUs on one switch that reduces (NVLS): ASTRA-sim dimensions (one Switch), so its
// analytical network runs the bundle exactly; in-network reduction it cannot run.
constexpr const char* kNvSwitch = R"(
npus: 8
switches: [{name: sw, reduce: true, multicast: true}]
defaults: {bw: 100GB/s, lat: 0.5us}
links:
  - {src: "npu*", dst: sw}
)";

topo::Topology charging(topo::Topology t) {
  t.set_charges_steps(true);
  return t;
}

// The choice is the fastest candidate in ASTRA-sim, each timed by hand; never slower there than
// the algorithm Tenet's own model picks.
TEST(AstraSimTarget, PicksTheCandidateAstraSimRunsFastest) {
  for (const std::string& spec : {std::string("ring:8"), std::string("torus2d:4x4")}) {
    const topo::Topology t = charging(topo::generate(spec));
    for (CollectiveKind kind : {CollectiveKind::AllGather, CollectiveKind::AllReduce}) {
      SCOPED_TRACE(spec + " " + std::string(synth::to_string(kind)));
      const Collective c = Collective::over_all(t, kind);
      constexpr Bytes kSize = Bytes{4} << 20;
      synth::Made<synth::RuntimeChoice> made = best_for_astra_sim(t, c, kSize, {});
      const synth::RuntimeChoice* choice = synth::made(made);
      ASSERT_NE(choice, nullptr);
      Time least = -1;
      size_t candidates = 0;
      synth::for_each_runtime_candidate(t, c, kSize, {}, 64,
                                        [&](const synth::Algorithm& a, const std::string&) {
                                          const Time x = astra_sim_time(a, t).time;
                                          ++candidates;
                                          if (least < 0 || x < least) least = x;
                                        });
      EXPECT_EQ(choice->candidates, candidates);
      EXPECT_EQ(choice->runtime_time, least);
      EXPECT_EQ(astra_sim_time(choice->algorithm, t).time, least);
      EXPECT_EQ(choice->schedule_time, synth::collective_time(t, choice->algorithm));
      const synth::Algorithm tenet =
          synth::make_algorithm_auto_chunks("tenet", t, c, kSize).algorithm;
      EXPECT_LE(choice->runtime_time, astra_sim_time(tenet, t).time);
    }
  }
}

// Where Tenet's own pick reduces in the switch (no bundle can hold it), the target makes its
// candidates without in-network collectives: ASTRA-sim runs the one it picks.
TEST(AstraSimTarget, AvoidsInNetworkReduction) {
  const topo::Topology t = charging(topo::parse_yaml(kNvSwitch));
  const Collective c = Collective::over_all(t, CollectiveKind::AllReduce);
  constexpr Bytes kSize = Bytes{64} << 20;
  const synth::Algorithm nvls = synth::make_algorithm_auto_chunks("nvls", t, c, kSize).algorithm;
  EXPECT_THROW(astra_sim_time(nvls, t), Error);
  synth::Made<synth::RuntimeChoice> made = best_for_astra_sim(t, c, kSize, {});
  const synth::RuntimeChoice* choice = synth::made(made);
  ASSERT_NE(choice, nullptr);
  EXPECT_EQ(astra_sim_time(choice->algorithm, t).time, choice->runtime_time);
  EXPECT_EQ(choice->algorithm.topology_fingerprint, t.fingerprint());
  for (const synth::Transfer& x : choice->algorithm.transfers())
    ASSERT_TRUE(t.is_npu(x.src) && t.is_npu(x.dst));
}

// Two ranks of a line of six NPUs talk only through NPUs outside the group: no custom collective
// holds such relays, and the target says why rather than writing one.
TEST(AstraSimTarget, SaysWhyNoCandidateRuns) {
  const topo::Topology t = charging(topo::generate("line:6"));
  Collective c = Collective::over_all(t, CollectiveKind::AllGather);
  c.ranks = {0, 5};
  const synth::Made<synth::RuntimeChoice> made = best_for_astra_sim(t, c, Bytes{1} << 20, {});
  const synth::NotMade* why = std::get_if<synth::NotMade>(&made);
  ASSERT_NE(why, nullptr);
  EXPECT_NE(why->why.find("ASTRA-sim runs no candidate; the first: "), std::string::npos)
      << why->why;
  EXPECT_NE(why->why.find("not a rank"), std::string::npos) << why->why;
}

TEST(AstraSimTarget, RootedCollectivesAreNotMade) {
  const topo::Topology t = charging(topo::generate("ring:4"));
  Collective c = Collective::over_all(t, CollectiveKind::Broadcast);
  const synth::Made<synth::RuntimeChoice> made = best_for_astra_sim(t, c, Bytes{1} << 20, {});
  const synth::NotMade* why = std::get_if<synth::NotMade>(&made);
  ASSERT_NE(why, nullptr);
  EXPECT_NE(why->why.find("ASTRA-sim runs no custom"), std::string::npos) << why->why;
}

}  // namespace
}  // namespace tenet::astra
