// MSCCL-XML, the algorithm format of the MSCCL runtime (shared/reference/msccl-xml.md).
//
// Export (All-Reduce in place, All-Gather and Reduce-Scatter out of place, All-to-All): per rank,
// a thread block per send peer and channel, one per receive peer and channel, and one for local
// copies; the k-th send from a to b on a channel meets the k-th receive on b from a there. A pair
// moves to a new channel when a thread block would pass 64 steps, with at most 32 thread blocks
// per channel and 32 channels; an algorithm beyond that is refused with the reason, never written
// half-valid. Every step waits for the previous step that touched the same buffer slot (the data
// dependency, and no slot is overwritten before it is read); further dependencies become nop
// steps. minBytes, maxBytes, inplace and outofplace are always written.
//
// Import reads XML from Tenet or other generators: steps with cnt > 1 expand into chunks, sends
// and receives pair up per (peer, channel) in order, compound steps (rcs, rrs, rrcs) receive and
// send on, and which chunk each message carries follows the data from the initial buffers through
// the steps (scratch included). Routes come from the topology. Local reductions ('re') have no
// equivalent in Tenet's IR (one copy per chunk and node) and are refused.
#pragma once

#include <string>
#include <string_view>

#include "synth/algorithm.hpp"
#include "topo/topology.hpp"

namespace tenet::synth {

struct MscclOptions {
  std::string protocol = "Simple";  // Simple, LL or LL128
  std::string name;                 // the <algo> name; default: the algorithm's name
};

// Throws tenet::Error when the collective is not supported, an endpoint is not a rank, or the
// runtime's limits would be exceeded.
std::string to_msccl_xml(const Algorithm& a, const MscclOptions& options = {});
Algorithm parse_msccl_xml(std::string_view text, const topo::Topology& t, const std::string& file = "<string>");

}  // namespace tenet::synth
