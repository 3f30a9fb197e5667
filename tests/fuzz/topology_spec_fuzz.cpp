// Generator specs (`torus2d:8x8,bw=50GB/s`) and preset names, as --topo takes them.
#include "tests/fuzz/fuzz.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"
#include "topo/presets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tenet::fuzz::run(data, size, [](std::string_view text) {
    const std::string spec(text);
    // A path would read the file system: only what --topo takes without a file.
    if (!tenet::topo::looks_like_spec(spec) && !tenet::topo::preset_text(spec)) {
      (void)tenet::topo::not_a_topology(spec);
      return;
    }
    const tenet::topo::Topology t = tenet::topo::load(spec);
    // Reading back is checked where it is quick (yaml-cpp takes seconds per 100,000 links).
    if (t.num_links() <= 20000)
      tenet::fuzz::must("reading back to_yaml", [&] {
        (void)tenet::topo::parse_yaml(tenet::topo::to_yaml(t), "back.yaml");
      });
  });
}
