// Algorithm files (algorithm.json), as `tenet verify`, `export` and `sim --coll` read them.
#include <fmt/format.h>

#include <algorithm>

#include "synth/formats/algorithm_json.hpp"
#include "synth/verify/verify.hpp"
#include "tests/fuzz/fuzz.hpp"
#include "tests/fuzz/topologies.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tenet::fuzz::run(data, size, [](std::string_view text) {
    // The fast reader, with a cut at every "}," + "{": what it takes, the reference reader must
    // read the same (it declines everything else).
    if (const auto fast = tenet::synth::parse_algorithm_json_fast(text, 1)) {
      const std::string want = tenet::synth::to_json(*fast);
      tenet::fuzz::must("the reference reader agreeing with the fast one", [&] {
        if (tenet::synth::to_json(
                tenet::synth::parse_algorithm_json_reference(text, "fuzz.json")) != want)
          throw tenet::Error("the two readers read different algorithms");
      });
    }
    const tenet::synth::Algorithm a = tenet::synth::parse_algorithm_json(text, "fuzz.json");
    int npus = 0;
    for (auto r : a.collective.ranks) npus = std::max(npus, static_cast<int>(r) + 1);
    // Verified on a topology of about its size (any mismatch must be an error, not a crash).
    (void)tenet::synth::verify(tenet::fuzz::fully_connected(npus), a,
                               {.max_reported = 20, .lower_bound = false});
    tenet::fuzz::must("reading back to_json", [&] {
      (void)tenet::synth::parse_algorithm_json(tenet::synth::to_json(a), "back.json");
    });
  });
}
