// A Chakra collective graph as ASTRA-sim runs it: the ET set (chakra/collective_graph.hpp) with the
// system.json that names it as the custom implementation of its collective, and the network.yml of
// the topology where ASTRA-sim's analytical network can express it (astra/analytical.hpp).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "chakra/collective_graph.hpp"
#include "synth/ir/algorithm.hpp"
#include "topo/output_folder.hpp"
#include "topo/topology.hpp"

namespace tenet::astra {

// ASTRA-sim's name of a collective it runs as a custom implementation ("all-reduce", "all-gather",
// "reduce-scatter", "all-to-all"), or nothing.
std::optional<std::string> astra_collective_name(synth::CollectiveKind k);

// system.json (naming <stem> as the custom implementation) and network.yml, where they apply,
// staged in `out` under `subdir`; an earlier export's copies that this one does not replace go.
void stage_astra_files(const synth::Algorithm& a, const topo::Topology& t, topo::OutputFolder& out,
                       const std::string& subdir, const std::string& stem);

// The ET set of `plan` (made from `a`) with its system.json and network.yml, staged in `out`.
void stage_astra_collective(const chakra::CollectiveGraphPlan& plan, const synth::Algorithm& a,
                            const topo::Topology& t, topo::OutputFolder& out,
                            const std::string& subdir, const std::string& stem);

// Writes <dir>/<stem>.<rank>.et, <dir>/system.json and, when the topology is expressible as
// ASTRA-sim dimensions, <dir>/network.yml, as one set. Returns the paths written.
std::vector<std::string> write_astra_collective(const synth::Algorithm& a, const topo::Topology& t,
                                                const std::string& dir, const std::string& stem,
                                                const chakra::GraphOptions& options = {});

}  // namespace tenet::astra
