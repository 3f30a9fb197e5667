#include "synth/cost/rescale.hpp"

#include <fmt/format.h>

#include "synth/cost/timing.hpp"
#include "topo/error.hpp"

namespace tenet::synth {

Algorithm rescaled(const topo::Topology& t, Algorithm a, Bytes size) {
  if (size < 1)
    throw Error(fmt::format("cannot rescale {} to {}: a size is at least one byte",
                            a.collective.describe(), format_bytes(size)));
  const int64_t pieces = a.collective.pieces();
  if (size < pieces)
    throw Error(fmt::format(
        "cannot rescale {} to {}: it has {} chunks, and each is at least a byte (rescale to {} "
        "or more, or make an algorithm with fewer chunks for this size)",
        a.collective.describe(), format_bytes(size), pieces, format_bytes(pieces)));
  a.chunk_bytes = a.collective.chunk_bytes_for(size);
  a.clear_times();
  time(t, a);
  return a;
}

}  // namespace tenet::synth
