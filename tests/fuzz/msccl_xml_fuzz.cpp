// MSCCL-XML algorithms, as `tenet verify`/`export`/`sim --coll` import them.
#include <charconv>

#include "synth/formats/msccl_xml.hpp"
#include "synth/verify/verify.hpp"
#include "tests/fuzz/fuzz.hpp"
#include "tests/fuzz/topologies.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tenet::fuzz::run(data, size, [](std::string_view text) {
    // The topology the user would name: as many NPUs as the file's ngpus says (when it says).
    int npus = 8;
    if (const size_t at = text.find("ngpus=\""); at != std::string_view::npos)
      std::from_chars(text.data() + at + 7, text.data() + text.size(), npus);
    const tenet::topo::Topology& t = tenet::fuzz::fully_connected(npus);
    const tenet::synth::MscclImport imported = tenet::synth::import_msccl_xml(text, t, "fuzz.xml");
    (void)tenet::synth::verify(t, imported.algorithm, {.max_reported = 20, .lower_bound = false});
  });
}
