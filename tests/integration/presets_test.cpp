// System presets (examples/systems/*.yaml, compiled in): every published figure a preset was
// calibrated against is reproduced within 10 % by the NCCL-like producer it names, at the sizes it
// holds for; calibration survives a round trip through the file formats.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "synth/producers.hpp"
#include "synth/verify/verify.hpp"
#include "topo/io.hpp"
#include "topo/presets.hpp"

namespace tenet::synth {
namespace {

TEST(Presets, EveryPublishedFigureWithinTenPercent) {
  int checked = 0;
  for (const topo::Preset& p : topo::presets()) {
    // As the commands load it: per-step costs charged, so that each algorithm runs its fastest
    // protocol (topo::Protocol).
    topo::Topology t = topo::load(std::string(p.name));
    t.set_charges_steps(true);
    for (const topo::PublishedFigure& f : t.calibration().published)
      for (Bytes size : std::set<Bytes>{f.min_bytes, f.max_bytes}) {
        const Collective c = Collective::over_all(t, parse_collective(f.collective));
        const ChunkingResult r = make_algorithm_auto_chunks(f.algorithm, t, c, size);
        ASSERT_TRUE(verify(t, r.algorithm, {.max_reported = 3, .lower_bound = false}).correct())
            << p.name;
        const double seconds =
            static_cast<double>(r.algorithm.claimed_time) / static_cast<double>(kPicosPerSecond);
        const double busbw =
            static_cast<double>(size) / seconds * bus_bandwidth_factor(c.kind, c.num_ranks());
        const double published = static_cast<double>(f.busbw);
        EXPECT_NEAR(busbw / published, 1.0, 0.10)
            << p.name << " " << f.algorithm << " " << f.collective << " " << format_bytes(size)
            << ": " << format_bandwidth(static_cast<Bandwidth>(busbw)) << " against "
            << format_bandwidth(f.busbw);
        fmt::print("  {:<14} {:<5} {:<10} {:>7}  {:>10} (published {})\n", p.name, f.algorithm,
                   f.collective, format_bytes(size),
                   format_bandwidth(static_cast<Bandwidth>(busbw)), format_bandwidth(f.busbw));
        ++checked;
      }
  }
  EXPECT_GE(checked, 8);
}

TEST(Presets, CalibrationSurvivesTheFileFormats) {
  const topo::Topology t = topo::load("dgx-h100");
  ASSERT_FALSE(t.calibration().empty());
  EXPECT_DOUBLE_EQ(t.calibration().efficiency_of("nvls"), 0.77);
  EXPECT_DOUBLE_EQ(t.calibration().efficiency_of("ring:4"), 1.0);
  EXPECT_EQ(t.link(0).bandwidth, 369'000'000'000);  // 450 GB/s x 0.82
  for (const std::string& text : {topo::to_yaml(t), topo::to_json(t)}) {
    const topo::Topology back = topo::parse_yaml(text);
    EXPECT_EQ(back.fingerprint(), t.fingerprint());
    EXPECT_EQ(back.calibration().source, t.calibration().source);
    EXPECT_EQ(back.calibration().algorithm_efficiency, t.calibration().algorithm_efficiency);
    ASSERT_EQ(back.calibration().published.size(), t.calibration().published.size());
    EXPECT_EQ(back.calibration().published[1].busbw, t.calibration().published[1].busbw);
    ASSERT_EQ(back.protocols().size(), 2u);
    EXPECT_FALSE(back.protocols()[0].in_network);
    EXPECT_EQ(back.protocols()[1].step, t.protocols()[1].step);
  }
}

TEST(Presets, EveryPresetLoadsByNameAndAsItsFile) {
  for (const topo::Preset& p : topo::presets()) {
    const topo::Topology by_name = topo::load(std::string(p.name));
    const topo::Topology file =
        topo::load(fmt::format("{}/examples/systems/{}.yaml", TENET_SOURCE_DIR, p.name));
    EXPECT_EQ(by_name.fingerprint(), file.fingerprint()) << p.name;
  }
  EXPECT_GE(topo::presets().size(), 4u);
}

}  // namespace
}  // namespace tenet::synth
