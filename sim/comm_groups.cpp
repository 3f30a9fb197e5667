#include "sim/comm_groups.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <sstream>

#include "sim/et_checks.hpp"

namespace tenet::sim::detail {

const Group& CommGroups::of(int r, const chakra::Node& n) {
  const auto text = chakra::string_attr(n, "tenet_ranks");  // none: every rank
  auto known = texts_.find(text);
  if (known == texts_.end()) {
    std::vector<int> members;
    if (text) {
      std::stringstream in(*text);
      for (std::string item; std::getline(in, item, ',');) {
        int m = -1;
        try {
          m = std::stoi(item);
        } catch (const std::exception&) {
        }
        if (m < 0 || m >= p_)
          throw node_error(name_, r, n,
                           fmt::format("group member '{}' is not a rank of the workload", item));
        members.push_back(m);
      }
    } else {
      for (int m = 0; m < p_; ++m) members.push_back(m);
    }
    auto [it, fresh] = groups_.try_emplace(members);
    Group& g = it->second;
    if (fresh) {
      g.id = static_cast<int>(groups_.size()) - 1;
      g.members = std::move(members);
      g.sorted = g.members;
      std::sort(g.sorted.begin(), g.sorted.end());
      for (int m : g.members)
        if (m < files_) g.present.push_back(m);
    }
    known = texts_.emplace(text, &g).first;
  }
  const Group& g = *known->second;
  if (!std::binary_search(g.sorted.begin(), g.sorted.end(), r))
    throw node_error(name_, r, n, "the collective's group does not include this rank");
  return g;
}

}  // namespace tenet::sim::detail
