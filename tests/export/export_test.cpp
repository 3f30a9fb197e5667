// Exports keep their time, or say so: every format written is read back on the same topology and
// timed again, under per-step costs.
#include "export/export.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "chakra/algorithm_files.hpp"
#include "synth/cost/timing.hpp"
#include "synth/formats/algorithm_json.hpp"
#include "synth/producers.hpp"
#include "synth/synthesizer.hpp"
#include "tests/topo/test_util.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"

namespace tenet::exporting {
namespace {

bool within(Time a, Time b, double tolerance) {
  return std::abs(static_cast<double>(a - b)) <= tolerance * static_cast<double>(b);
}

// Producers x topologies (switched, a user's cluster with a degraded NIC, doubled links, two
// spines) x All-Reduce and All-Gather: JSON and Chakra read back at Tenet's time (within 0.1 %);
// MSCCL-XML read back at it too, or a warning gives both times.
TEST(ExportRoundTrip, EveryFormatKeepsItsTimeOrSaysSo) {
  int checked = 0, msccl_same = 0;
  for (const std::string& spec : {std::string("ring:8"), std::string("switch:8"),
                                  topo::testing::examples_dir() + "/cluster16.yaml",
                                  std::string("dgx1"), std::string("leafspine:2x4,spines=2")}) {
    topo::Topology t = topo::load(spec);
    t.set_charges_steps(true);
    for (synth::CollectiveKind kind :
         {synth::CollectiveKind::AllReduce, synth::CollectiveKind::AllGather})
      for (const char* producer : {"tenet", "ring", "direct"}) {
        const synth::Collective c = synth::Collective::over_all(t, kind, 2);
        synth::Algorithm a;
        try {
          a = synth::make_algorithm(producer, t, c, c.chunk_bytes_for(Bytes{16} << 20), {});
        } catch (const Error&) {
          continue;  // a baseline that does not apply there (direct on a ring)
        }
        const std::string what = fmt::format("{} {} on {}", producer, to_string(kind), spec);
        topo::testing::TempDir tmp;
        const Exported e = export_algorithm(a, t, {"json", "msccl-xml", "chakra"}, tmp.file("out"));
        EXPECT_EQ(synth::model_time(t, synth::load_algorithm(tmp.file("out/algorithm.json"))),
                  a.claimed_time)
            << what;
        EXPECT_TRUE(within(
            synth::model_time(t, chakra::load_any_algorithm(tmp.file("out/chakra/algorithm"), t)),
            a.claimed_time, 1e-3))
            << what;
        ASSERT_GE(e.msccl_time, 0) << what;
        bool warned = false;
        for (const std::string& w : e.warnings)
          warned = warned || (w.find("msccl-xml: read back") != std::string::npos &&
                              w.find(format_time(e.msccl_time)) != std::string::npos &&
                              w.find(format_time(a.claimed_time)) != std::string::npos);
        if (within(e.msccl_time, a.claimed_time, 1e-3)) {
          EXPECT_FALSE(warned) << what;
          ++msccl_same;
        } else {
          EXPECT_TRUE(warned) << what;
        }
        ++checked;
      }
  }
  EXPECT_GE(checked, 26);
  EXPECT_GE(msccl_same, 10);  // the baselines' programs run as Tenet times them
}

}  // namespace
}  // namespace tenet::exporting
