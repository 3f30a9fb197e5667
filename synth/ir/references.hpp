// What an algorithm names must exist on the topology it runs on: its collective valid there
// (Collective::validate: at least two ranks, each a distinct NPU, the root one of them), and for
// every transfer its chunks (chunk .. chunk + count - 1, count at least 1) the collective's, its
// source and destination nodes of the topology, and each link of its route a link of the topology.
// Whatever sizes a table by ranks, nodes, chunks or links (the verifier's replay, the exporters,
// the simulator) relies on it.
//
// One check with two uses: the verifier reports each bad reference as a violation and goes on
// (synth/verify/verify.cpp); whoever reads an algorithm against a topology
// (chakra::load_any_algorithm, for every file format) or exports one (export/export.hpp) refuses
// it at the first with check_references, before anything is sized by what it names.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "synth/ir/algorithm.hpp"

namespace tenet::synth {

// The field of a transfer that names something.
enum class ReferenceField : uint8_t { Chunk, Count, Source, Destination, RouteLink };
// The field's name in the algorithm JSON: "chunk", "count", "src", "dst", "route".
std::string_view to_string(ReferenceField f);

// A reference to something that does not exist: `value` names one of `count` (ids 0..count-1).
struct BadReference {
  ReferenceField field = ReferenceField::Chunk;
  int64_t value = 0;
  int64_t count = 0;
  size_t position = 0;  // RouteLink: the link's place in the route
};
// "chunk 9 does not exist (the collective has chunks 0..3)", "node 100 does not exist (the
// topology has 4 nodes)", "link 12 does not exist (the topology has 8 links)".
std::string describe(const BadReference& b);

// Passes each reference of transfer `id` that does not exist to `visit`, in the order chunk, the
// last chunk it carries (Count: `value` is the count, `count` the chunks from its first on),
// source, destination, then the first link of its route that does not exist (a route is not
// followed past it). `chunks` is a.collective.num_chunks(), computed once by callers over many
// transfers.
template <class Visit>
void for_each_bad_reference(const Algorithm& a, const topo::Topology& t, int64_t chunks,
                            TransferId id, Visit&& visit) {
  const Transfer& x = a[id];
  if (x.chunk < 0 || x.chunk >= chunks)
    visit(BadReference{ReferenceField::Chunk, x.chunk, chunks});
  else if (x.count < 1 || x.count > chunks - x.chunk)
    visit(BadReference{ReferenceField::Count, x.count, chunks - x.chunk});
  if (x.src < 0 || x.src >= t.num_nodes())
    visit(BadReference{ReferenceField::Source, x.src, t.num_nodes()});
  if (x.dst < 0 || x.dst >= t.num_nodes())
    visit(BadReference{ReferenceField::Destination, x.dst, t.num_nodes()});
  const auto route = a.route(id);
  for (size_t i = 0; i < route.size(); ++i)
    if (route[i] < 0 || route[i] >= t.num_links()) {
      visit(BadReference{ReferenceField::RouteLink, route[i], t.num_links(), i});
      break;
    }
}

// Throws tenet::Error at the first reference of `a` that `t` lacks: the collective's (the object
// "collective"), or a transfer's (the object "transfers[i].<field>", as the algorithm JSON names
// it), in `file` when given.
void check_references(const Algorithm& a, const topo::Topology& t, const std::string& file = "");

}  // namespace tenet::synth
