// `tenet bench` suite files (YAML). Topology paths are anchored at a folder that does not exist.
#include "bench/suite.hpp"
#include "tests/fuzz/fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tenet::fuzz::run(data, size, [](std::string_view text) {
    (void)tenet::bench::parse_suite(text, "/nonexistent-tenet-fuzz/suite.yaml");
  });
}
