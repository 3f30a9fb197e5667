// All-to-Allv traffic matrices (`tenet synth --traffic FILE`): CSV or JSON for 1-8 ranks (the
// first byte picks the count), then converted to units and, when it reads, set on a collective.
#include "synth/ir/collective.hpp"
#include "synth/ir/traffic.hpp"
#include "tests/fuzz/fuzz.hpp"
#include "tests/fuzz/topologies.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int ranks = 1 + data[0] % 8;
  return tenet::fuzz::run(data + 1, size - 1, [&](std::string_view text) {
    const tenet::synth::Traffic t = tenet::synth::parse_traffic(text, "fuzz.csv", ranks);
    const tenet::synth::TrafficUnits u =
        tenet::synth::to_units(t, tenet::synth::default_max_units(ranks));
    tenet::synth::Collective c = tenet::synth::Collective::over_all(
        tenet::fuzz::fully_connected(ranks), tenet::synth::CollectiveKind::AllToAll);
    c.set_pair_units(u.units);
    tenet::fuzz::must("unit counts", [&] {
      if (c.total_units() < 1) throw tenet::Error("no units");
    });
  });
}
