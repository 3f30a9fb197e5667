#include "synth/ten/channel_graph.hpp"

namespace tenet::synth::detail {

std::vector<char> relays(const ChannelGraph& g, int n, const std::vector<NodeId>& from,
                         const std::vector<NodeId>& to) {
  std::vector<char> on(n, 0);
  std::vector<std::vector<int>> d_to;
  for (NodeId b : to) d_to.push_back(g.hops(b, true));
  for (NodeId a : from) {
    std::vector<int> d_from = g.hops(a, false);
    for (size_t j = 0; j < to.size(); ++j) {
      const int total = d_from[to[j]];
      if (total < 0) continue;
      for (NodeId x = 0; x < n; ++x)
        if (d_from[x] >= 0 && d_to[j][x] >= 0 && d_from[x] + d_to[j][x] == total) on[x] = 1;
    }
  }
  return on;
}

}  // namespace tenet::synth::detail
