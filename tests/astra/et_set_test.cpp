#include "astra/et_set.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "astra/analytical.hpp"
#include "synth/synthesizer.hpp"
#include "tests/topo/test_util.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"

namespace tenet::astra {
namespace {

using synth::Algorithm;
using synth::CollectiveKind;
using ::testing::HasSubstr;

constexpr Bytes kChunk = 256 << 10;

TEST(AstraEtSet, WritesSystemJsonAndNetworkYml) {
  topo::testing::TempDir dir;
  const auto t = topo::generate("ring:4,bw=50GB/s,lat=0.5us x switch:2,bw=25GB/s,lat=1us");
  const Algorithm a =
      synth::synthesize(t, synth::Collective::over_all(t, CollectiveKind::AllReduce), kChunk);
  const auto written = write_astra_collective(a, t, dir.file("out"), "ar");
  EXPECT_EQ(written.size(), 8u + 2u);
  std::ifstream sys(dir.file("out/system.json"));
  std::string text((std::istreambuf_iterator<char>(sys)), {});
  EXPECT_THAT(text, HasSubstr("\"all-reduce-implementation-custom\": [\n    \"ar\"\n  ]"));
  EXPECT_THAT(text, HasSubstr("\"preferred-dataset-splits\": 1"));
  // The network.yml reads back as the same topology.
  const auto back = topo::load(dir.file("out/network.yml"));
  EXPECT_EQ(back.fingerprint(), t.fingerprint());
  // No network.yml for what ASTRA-sim's dimensions cannot say.
  EXPECT_FALSE(astra_network_yml(topo::generate("dgx1")));
  EXPECT_TRUE(astra_network_yml(topo::generate("fc:4 x ring:3")));
  // Rings of rings up to the order of links: a torus and a hypercube are ASTRA-sim dimensions too.
  EXPECT_THAT(astra_network_yml(topo::generate("torus2d:4x8")).value_or(""),
              HasSubstr("topology: [ Ring, Ring ]\nnpus_count: [ 4, 8 ]"));
  EXPECT_THAT(astra_network_yml(topo::generate("hypercube:8")).value_or(""),
              HasSubstr("npus_count: [ 2, 2, 2 ]"));
  EXPECT_FALSE(astra_network_yml(topo::generate("mesh2d:4x4")));
}

}  // namespace
}  // namespace tenet::astra
