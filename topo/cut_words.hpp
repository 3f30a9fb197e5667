// A cut in the user's own names: what limits a cut bound (the links that carry its bytes, and the
// nodes on the smaller side).
#pragma once

#include <string>
#include <vector>

#include "topo/topology.hpp"

namespace tenet::topo {

// The links out of `set` (node ids of `t`) in words, with their summed bandwidth: "the links into
// server3/npu3 from the rest: 350 GB/s = 300 GB/s from server3.nvswitch + 50 GB/s from leaf1"
// where the other side is at most kNamedNodes nodes (and not larger than `set`), "the links out
// of server0/npu0 to the rest: ..." where `set` is, else "the links out of 8 nodes holding 4 NPUs
// (server0/npu0, server0/npu1, server0/npu2, ...) to the other 16: 400 GB/s = 8 x 50 GB/s". The
// links are named one by one up to kNamedLinks, past that counted per bandwidth.
std::string describe_cut(const Topology& t, const std::vector<NodeId>& set);

inline constexpr size_t kNamedNodes = 4;
inline constexpr size_t kNamedLinks = 4;

}  // namespace tenet::topo
