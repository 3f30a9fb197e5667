#include "topo/cut_words.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>

#include "topo/units.hpp"

namespace tenet::topo {

std::string describe_cut(const Topology& t, const std::vector<NodeId>& set) {
  std::vector<char> inside(static_cast<size_t>(t.num_nodes()), 0);
  for (NodeId v : set) inside[static_cast<size_t>(v)] = 1;
  std::vector<NodeId> in, out;
  for (NodeId v = 0; v < t.num_nodes(); ++v) (inside[v] ? in : out).push_back(v);
  std::vector<LinkId> cut;
  Bandwidth total = 0;
  for (LinkId l = 0; l < t.num_links(); ++l)
    if (inside[t.link(l).src] && !inside[t.link(l).dst]) {
      cut.push_back(l);
      total += t.link(l).bandwidth;
    }
  auto names = [&](const std::vector<NodeId>& nodes) {
    std::vector<std::string> n;
    for (NodeId v : nodes) n.push_back(t.node(v).name);
    return fmt::format("{}", fmt::join(n, ", "));
  };
  auto npus = [&](const std::vector<NodeId>& nodes) {
    size_t k = 0;
    for (NodeId v : nodes) k += t.is_npu(v);
    return k;
  };
  // Which side is named, and how each link reads from it.
  const bool name_out = out.size() <= kNamedNodes && out.size() <= in.size();
  const bool name_in = !name_out && in.size() <= kNamedNodes;
  std::string sides;
  if (name_out)
    sides = fmt::format("into {} from the rest", names(out));
  else if (name_in)
    sides = fmt::format("out of {} to the rest", names(in));
  else
    sides = fmt::format("out of {} nodes holding {} NPUs ({}, ...) to the other {}", in.size(),
                        npus(in), names(std::vector<NodeId>(in.begin(), in.begin() + kNamedNodes)),
                        out.size());
  std::vector<std::string> parts;
  if (cut.size() <= kNamedLinks) {
    for (LinkId l : cut) {
      const Link& k = t.link(l);
      const std::string& from = t.node(k.src).name;
      const std::string& to = t.node(k.dst).name;
      if (name_out && out.size() == 1)
        parts.push_back(fmt::format("{} from {}", format_bandwidth(k.bandwidth), from));
      else if (name_in && in.size() == 1)
        parts.push_back(fmt::format("{} to {}", format_bandwidth(k.bandwidth), to));
      else
        parts.push_back(fmt::format("{} {} -> {}", format_bandwidth(k.bandwidth), from, to));
    }
  } else {
    std::map<Bandwidth, int, std::greater<>> by_width;
    for (LinkId l : cut) ++by_width[t.link(l).bandwidth];
    for (const auto& [bw, count] : by_width)
      parts.push_back(fmt::format("{} x {}", count, format_bandwidth(bw)));
  }
  return fmt::format("the links {}: {} = {}", sides, format_bandwidth(total),
                     fmt::join(parts, " + "));
}

}  // namespace tenet::topo
