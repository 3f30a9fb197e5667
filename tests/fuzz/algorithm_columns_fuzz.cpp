// The algorithm cache's transfer columns (synth/formats/algorithm_columns.hpp), as a cache hit
// reads them into its entry's head (here an All-Reduce over ring:4 at 2 chunks per NPU), then
// verifies them.
#include "synth/formats/algorithm_columns.hpp"
#include "synth/formats/algorithm_json.hpp"
#include "synth/verify/verify.hpp"
#include "tests/fuzz/fuzz.hpp"
#include "topo/generators.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tenet::synth;
  static const tenet::topo::Topology t = tenet::topo::generate("ring:4");
  static const Algorithm head = empty_algorithm(
      "fuzz", t, Collective::over_all(t, CollectiveKind::AllReduce, 2), 4096, LinkModel::Pipelined);
  return tenet::fuzz::run(data, size, [](std::string_view bytes) {
    Algorithm a = with_transfers(head, {});
    if (!add_transfers_from_columns(bytes, a)) return;
    // (Node and link ids are checked against the topology here, not by the columns.)
    (void)verify(t, a, {.max_reported = 20, .lower_bound = false});
    tenet::fuzz::must("reading back its columns", [&] {
      Algorithm back = with_transfers(head, {});
      if (!add_transfers_from_columns(transfers_to_columns(a), back) || to_json(back) != to_json(a))
        throw tenet::Error("the columns written do not read back the same");
    });
  });
}
