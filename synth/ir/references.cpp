#include "synth/ir/references.hpp"

#include <fmt/format.h>

#include "topo/error.hpp"

namespace tenet::synth {

std::string_view to_string(ReferenceField f) {
  switch (f) {
    case ReferenceField::Chunk:
      return "chunk";
    case ReferenceField::Count:
      return "count";
    case ReferenceField::Source:
      return "src";
    case ReferenceField::Destination:
      return "dst";
    case ReferenceField::RouteLink:
      return "route";
  }
  return "?";
}

std::string describe(const BadReference& b) {
  switch (b.field) {
    case ReferenceField::Chunk:
      return fmt::format("chunk {} does not exist (the collective has chunks 0..{})", b.value,
                         b.count - 1);
    case ReferenceField::Count:
      return b.value < 1 ? fmt::format("carries {} chunks (at least 1)", b.value)
                         : fmt::format(
                               "carries {} chunks, but only {} follow from its first on "
                               "(past the collective's last chunk)",
                               b.value, b.count);
    case ReferenceField::Source:
    case ReferenceField::Destination:
      return fmt::format("node {} does not exist (the topology has {} nodes)", b.value, b.count);
    case ReferenceField::RouteLink:
      return fmt::format("link {} does not exist (the topology has {} links)", b.value, b.count);
  }
  return "?";
}

void check_references(const Algorithm& a, const topo::Topology& t, const std::string& file) {
  try {
    a.collective.validate(t);
  } catch (const Error& e) {
    throw Error(fmt::format("the collective is not valid on this topology: {}", e.message()),
                Location(file, 0, 0, "collective"));
  }
  const int64_t chunks = a.collective.num_chunks();
  for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id)
    for_each_bad_reference(a, t, chunks, id, [&](const BadReference& b) {
      const std::string object = b.field == ReferenceField::RouteLink
                                     ? fmt::format("transfers[{}].route[{}]", id, b.position)
                                     : fmt::format("transfers[{}].{}", id, to_string(b.field));
      throw Error(describe(b), Location(file, 0, 0, object));
    });
}

}  // namespace tenet::synth
