// Internal to the simulator (sim/system.cpp): the communicator groups of a workload's collectives.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "chakra/et.hpp"

namespace tenet::sim::detail {

// A collective's group: its ranks in the node's order, and an id for the meetings (the same
// ranks written another way are the same group).
struct Group {
  int id = 0;
  std::vector<int> members, sorted;
  // The members that have a file (all, unless SimConfig::workload_ranks mirrors the rest).
  std::vector<int> present;
};

// The groups of a workload of `ranks` ranks, read from the collectives' tenet_ranks attribute
// (none: every rank). Parsed once per distinct tenet_ranks text: every rank of a 16,384-rank
// collective names the same 16,384, and parsing them per rank grows as the square of the ranks,
// all before the first event.
class CommGroups {
 public:
  // `files`: the ranks with a file (ranks 0 .. files - 1); the others mirror them.
  CommGroups(std::string workload_name, int ranks, int files)
      : name_(std::move(workload_name)), p_(ranks), files_(files) {}
  // The group of collective node `n` of rank `r`. Throws tenet::Error (naming the node) when a
  // member is not a rank of the workload, or the group does not include `r`.
  const Group& of(int r, const chakra::Node& n);
  const std::string& workload_name() const { return name_; }

 private:
  std::string name_;
  int p_, files_;
  std::map<std::vector<int>, Group> groups_;                  // by members, in order
  std::map<std::optional<std::string>, const Group*> texts_;  // by tenet_ranks text, if any
};

}  // namespace tenet::sim::detail
