// Chakra ET workloads, as `tenet sim --workload PREFIX` runs them (one file per rank, separated by
// tenet::fuzz::kRankSeparator): prepared as a recorded trace (dependencies, process groups), then
// run on the analytical network with synthesized collectives.
#include "sim/recorded_trace.hpp"
#include "sim/system.hpp"
#include "tests/fuzz/fuzz.hpp"
#include "tests/fuzz/topologies.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tenet::fuzz::run(data, size, [](std::string_view text) {
    std::vector<tenet::chakra::EtFile> files = tenet::fuzz::parse_ranks(text);
    (void)tenet::sim::prepare_trace(files, {}, "fuzz");
    tenet::sim::SimConfig config;
    config.chunks_per_npu = 1;
    (void)tenet::sim::simulate(tenet::fuzz::fully_connected(static_cast<int>(files.size())), files,
                               config, "fuzz");
  });
}
