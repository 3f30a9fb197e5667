// Topology files in the Tenet format (YAML or JSON) and ASTRA-sim's network.yml.
#include "tests/fuzz/fuzz.hpp"
#include "topo/io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tenet::fuzz::run(data, size, [](std::string_view text) {
    const tenet::topo::Topology t = tenet::topo::parse_yaml(text, "fuzz.yaml");
    // Printing and reading back are checked where they are quick. Large topologies are legal (up
    // to 2^22 links) and linear: a 773,926-NPU ASTRA-sim switch prints as JSON in 5.4 s in Release,
    // 38 s under the sanitizers, which libFuzzer reported as a hang. yaml-cpp reads back more
    // slowly.
    if (t.num_links() > 100000) return;
    (void)tenet::topo::to_json(t);
    (void)tenet::topo::to_dot(t);
    // Reading back through yaml-cpp is the slow part: an 8,732-NPU ASTRA-sim ring (17,464 links,
    // regressions/topology_yaml/astra-ring-8732-npus.yml) took 2.8 s under the sanitizers, and 37 s
    // when the fuzzer shared its core with a build, which libFuzzer reported as a hang.
    if (t.num_links() > 4000) return;
    tenet::fuzz::must("reading back to_yaml", [&] {
      if (tenet::topo::parse_yaml(tenet::topo::to_yaml(t), "back.yaml").fingerprint() !=
          t.fingerprint()) {
        std::fprintf(stderr, "fuzz: to_yaml read back as another topology\n");
        std::abort();
      }
    });
  });
}
