// Topology files in Graphviz DOT.
#include "tests/fuzz/fuzz.hpp"
#include "topo/io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tenet::fuzz::run(data, size, [](std::string_view text) {
    const tenet::topo::Topology t = tenet::topo::parse_dot(text, "fuzz.dot");
    if (t.num_links() > 100000) return;  // printing is linear; large inputs only cost time
    (void)tenet::topo::to_json(t);
    tenet::fuzz::must("reading back to_dot",
                      [&] { (void)tenet::topo::parse_dot(tenet::topo::to_dot(t), "back.dot"); });
  });
}
