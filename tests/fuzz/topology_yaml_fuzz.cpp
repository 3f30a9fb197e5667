// Topology files in the Tenet format (YAML or JSON) and ASTRA-sim's network.yml.
#include "tests/fuzz/fuzz.hpp"
#include "topo/io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tenet::fuzz::run(data, size, [](std::string_view text) {
    const tenet::topo::Topology t = tenet::topo::parse_yaml(text, "fuzz.yaml");
    // What was read prints in every format, and the YAML reads back as the same topology.
    (void)tenet::topo::to_json(t);
    (void)tenet::topo::to_dot(t);
    // Reading back is checked where it is quick: yaml-cpp takes seconds per 100,000 links, more
    // under the sanitizers (a 65,382-NPU ASTRA-sim ring took 38 s and was reported as a hang).
    if (t.num_links() > 20000) return;
    tenet::fuzz::must("reading back to_yaml", [&] {
      if (tenet::topo::parse_yaml(tenet::topo::to_yaml(t), "back.yaml").fingerprint() != t.fingerprint()) {
        std::fprintf(stderr, "fuzz: to_yaml read back as another topology\n");
        std::abort();
      }
    });
  });
}
