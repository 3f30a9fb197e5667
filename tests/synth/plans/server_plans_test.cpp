// The run's memo of server plans (synth/plans/server_plans.hpp): a plan asked for again is the one
// made before, and it is what plan_servers makes; anything plan_servers reads (the topology and
// its per-step costs, the chunk size, the link model, the routes per pair) makes another.
#include <gtest/gtest.h>

#include <string>

#include "synth/plans/server_plans.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"

namespace tenet::synth {
namespace {

void expect_same(const std::optional<ServerPlan>& a, const std::optional<ServerPlan>& b,
                 const std::string& where) {
  ASSERT_EQ(a.has_value(), b.has_value()) << where;
  if (!a) return;
  EXPECT_EQ(a->servers(), b->servers()) << where;
  ASSERT_EQ(a->ways().size(), b->ways().size()) << where;
  for (size_t i = 0; i < a->ways().size(); ++i) {
    const ServerWay &x = a->ways()[i], &y = b->ways()[i];
    EXPECT_EQ(x.src, y.src) << where << ", way " << i;
    EXPECT_EQ(x.dst, y.dst) << where << ", way " << i;
    EXPECT_EQ(x.route, y.route) << where << ", way " << i;
    EXPECT_EQ(x.rate, y.rate) << where << ", way " << i;
  }
}

TEST(ServerPlans, KeepsWhatPlanServersMakesPerTopologyAndChunk) {
  for (const char* spec : {"nvcluster:2x4,net=fattree", "leafspine:2x4,spines=2", "switch:8"}) {
    topo::Topology t = topo::generate(spec);
    detail::ServerPlans plans;
    EXPECT_EQ(plans.kept(t, 1 << 20, LinkModel::Pipelined, 8), nullptr) << spec;
    const detail::ServerPlans::Plan made = plans.of(t, 1 << 20, LinkModel::Pipelined, 8);
    ASSERT_NE(made, nullptr) << spec;
    ASSERT_TRUE(made->has_value()) << spec;
    expect_same(*made, plan_servers(t, 1 << 20, LinkModel::Pipelined, 8), spec);
    EXPECT_EQ(plans.of(t, 1 << 20, LinkModel::Pipelined, 8), made) << spec;
    EXPECT_EQ(plans.kept(t, 1 << 20, LinkModel::Pipelined, 8), made) << spec;
    // Each of these is another plan, made as plan_servers makes it.
    const topo::Topology r = topo::reversed(t);
    expect_same(*plans.of(r, 1 << 20, LinkModel::Pipelined, 8),
                plan_servers(r, 1 << 20, LinkModel::Pipelined, 8), std::string(spec) + " reversed");
    EXPECT_NE(plans.of(r, 1 << 20, LinkModel::Pipelined, 8), made) << spec;
    EXPECT_NE(plans.of(t, 1 << 16, LinkModel::Pipelined, 8), made) << spec;
    EXPECT_NE(plans.of(t, 1 << 20, LinkModel::Hold, 8), made) << spec;
    EXPECT_NE(plans.of(t, 1 << 20, LinkModel::Pipelined, 2), made) << spec;
    t.set_charges_steps(!t.charges_steps());
    EXPECT_EQ(plans.kept(t, 1 << 20, LinkModel::Pipelined, 8), nullptr) << spec;
    expect_same(*plans.of(t, 1 << 20, LinkModel::Pipelined, 8),
                plan_servers(t, 1 << 20, LinkModel::Pipelined, 8), std::string(spec) + " steps");
  }
}

// A topology that differs in its links' per-step costs alone (not in its fingerprint) is another.
TEST(ServerPlans, PerStepCostsArePartOfTheKey) {
  // Two leaves of two NPUs, their spine link's step 1 us or 3 us.
  auto two_leaves = [](const char* spine_step) {
    return topo::parse_yaml(std::string(R"(
name: two-leaves
defaults: {bw: 50GB/s, lat: 0.5us, step: 1us, bidirectional: true}
npus: [a, b, c, d]
switches: [s1, s2]
links:
  - {src: a, dst: s1}
  - {src: b, dst: s1}
  - {src: c, dst: s2}
  - {src: d, dst: s2}
  - {src: s1, dst: s2, bw: 100GB/s, step: )") +
                            spine_step + "}\n");
  };
  topo::Topology cheaper = two_leaves("1us"), dearer = two_leaves("3us");
  cheaper.set_charges_steps(true);
  dearer.set_charges_steps(true);
  ASSERT_EQ(cheaper.fingerprint(), dearer.fingerprint());
  detail::ServerPlans plans;
  const detail::ServerPlans::Plan first = plans.of(cheaper, 1 << 20, LinkModel::Pipelined, 8);
  EXPECT_EQ(plans.kept(dearer, 1 << 20, LinkModel::Pipelined, 8), nullptr);
  EXPECT_NE(plans.of(dearer, 1 << 20, LinkModel::Pipelined, 8), first);
}

// It keeps the last few asked for: a fifth chunk size drops the first.
TEST(ServerPlans, KeepsTheLastFour) {
  const topo::Topology t = topo::generate("switch:8");
  detail::ServerPlans plans;
  for (Bytes chunk : {1 << 10, 1 << 12, 1 << 14, 1 << 16})
    ASSERT_NE(plans.of(t, chunk, LinkModel::Pipelined, 8), nullptr);
  for (Bytes chunk : {1 << 10, 1 << 12, 1 << 14, 1 << 16})
    EXPECT_NE(plans.kept(t, chunk, LinkModel::Pipelined, 8), nullptr) << chunk;
  ASSERT_NE(plans.of(t, 1 << 18, LinkModel::Pipelined, 8), nullptr);
  EXPECT_EQ(plans.kept(t, 1 << 10, LinkModel::Pipelined, 8), nullptr);
  EXPECT_NE(plans.kept(t, 1 << 18, LinkModel::Pipelined, 8), nullptr);
}

}  // namespace
}  // namespace tenet::synth
