// The run's memo of reversed topologies (synth/plans/reversed_topologies.hpp): a reverse asked for
// again is the one made before, and it is what topo::reversed makes; a topology that differs in
// anything a reverse carries (links, per-step costs and whether they are charged, names) gets its
// own.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "synth/plans/reversed_topologies.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"

namespace tenet::synth {
namespace {

void expect_reverse_of(const topo::Topology& r, const topo::Topology& t, const std::string& where) {
  const topo::Topology made = topo::reversed(t);
  EXPECT_EQ(r.fingerprint(), made.fingerprint()) << where;
  EXPECT_EQ(topo::step_fingerprint(r), topo::step_fingerprint(made)) << where;
  EXPECT_EQ(r.name(), made.name()) << where;
  ASSERT_EQ(r.num_links(), t.num_links()) << where;
  for (topo::LinkId l = 0; l < t.num_links(); ++l) {
    EXPECT_EQ(r.link(l).src, t.link(l).dst) << where << ", link " << l;
    EXPECT_EQ(r.link(l).dst, t.link(l).src) << where << ", link " << l;
    EXPECT_EQ(r.link(l).step, t.link(l).step) << where << ", link " << l;
  }
}

TEST(ReversedTopologies, KeepsOneReversePerTopology) {
  for (const char* spec : {"nvcluster:2x4,net=fattree", "hetmesh2d:3x3", "line:4"}) {
    topo::Topology t = topo::generate(spec);
    detail::ReversedTopologies memo;
    const std::shared_ptr<const topo::Topology> r = memo.of(t);
    ASSERT_NE(r, nullptr) << spec;
    expect_reverse_of(*r, t, spec);
    EXPECT_EQ(memo.of(t), r) << spec;
    EXPECT_EQ(memo.of(topo::generate(spec)), r) << spec << " (made again)";
    // Its own reverse is another topology (the links turned back).
    EXPECT_NE(memo.of(*r), r) << spec;
    // Charging the steps changes what algorithms on the reverse cost.
    t.set_charges_steps(!t.charges_steps());
    const std::shared_ptr<const topo::Topology> charged = memo.of(t);
    EXPECT_NE(charged, r) << spec;
    EXPECT_EQ(charged->charges_steps(), t.charges_steps()) << spec;
  }
}

// Two topologies that differ only where the fingerprint does not look (a link's per-step cost or
// buffer, a node's name) each get their own reverse.
TEST(ReversedTopologies, StepsBuffersAndNamesArePartOfTheKey) {
  auto pair = [](const char* b_name, const char* step, const char* buffer) {
    return topo::parse_yaml(fmt::format(R"(
name: pair
defaults: {{bw: 50GB/s, lat: 0.5us, bidirectional: true}}
npus: [a, {0}]
links:
  - {{src: a, dst: {0}, step: {1}, buffer: {2}}}
)",
                                        b_name, step, buffer));
  };
  const topo::Topology first = pair("b", "1us", "1MiB"), dearer = pair("b", "3us", "1MiB"),
                       renamed = pair("c", "1us", "1MiB"), deeper = pair("b", "1us", "2MiB");
  ASSERT_EQ(first.fingerprint(), dearer.fingerprint());
  ASSERT_EQ(first.fingerprint(), renamed.fingerprint());
  ASSERT_EQ(first.fingerprint(), deeper.fingerprint());
  ASSERT_NE(first.link(0).buffer, deeper.link(0).buffer);
  detail::ReversedTopologies memo;
  const std::shared_ptr<const topo::Topology> r = memo.of(first);
  const std::shared_ptr<const topo::Topology> d = memo.of(dearer);
  const std::shared_ptr<const topo::Topology> n = memo.of(renamed);
  const std::shared_ptr<const topo::Topology> b = memo.of(deeper);
  EXPECT_NE(d, r);
  EXPECT_NE(n, r);
  EXPECT_NE(b, r);
  EXPECT_EQ(d->link(0).step, dearer.link(0).step);
  EXPECT_EQ(n->node(1).name, "c");
  EXPECT_EQ(b->link(0).buffer, deeper.link(0).buffer);
  EXPECT_EQ(memo.of(first), r);
}

}  // namespace
}  // namespace tenet::synth
