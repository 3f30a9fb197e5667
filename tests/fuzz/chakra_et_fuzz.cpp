// Chakra ET collective graphs (`<prefix>.<rank>.et`), as `tenet chakra check`, `verify` and
// `export` read them. The input holds one file per rank, separated by tenet::fuzz::kRankSeparator.
#include "chakra/collective_graph.hpp"
#include "chakra/et.hpp"
#include "synth/verify/verify.hpp"
#include "tests/fuzz/fuzz.hpp"
#include "tests/fuzz/topologies.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tenet::fuzz::run(data, size, [](std::string_view text) {
    const std::vector<tenet::chakra::EtFile> files = tenet::fuzz::parse_ranks(text);
    for (const auto& f : files) {
      (void)tenet::chakra::dump_json(f);
      (void)tenet::chakra::to_dot(f);
    }
    (void)tenet::chakra::check_collective_graph(files, "fuzz");
    const tenet::topo::Topology& t = tenet::fuzz::fully_connected(static_cast<int>(files.size()));
    const tenet::synth::Algorithm a = tenet::chakra::from_collective_graph(files, t, "fuzz");
    (void)tenet::synth::verify(t, a, {.max_reported = 20, .lower_bound = false});
  });
}
