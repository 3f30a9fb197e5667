// How `tenet synth` prints what it made: one algorithm in detail, or many rows as a table (text,
// CSV or JSON).
#pragma once

#include <string>
#include <vector>

#include "cli/synth_args.hpp"
#include "cli/synth_rows.hpp"
#include "export/export.hpp"
#include "synth/ir/collective.hpp"
#include "topo/topology.hpp"

namespace tenet::cli {

// The detailed summary of one algorithm for one size, as text or JSON, with what was written of
// it (`exported`).
void print_one(const SynthArgs& args, const topo::Topology& t, const SynthRow& row,
               const exporting::Exported& exported);

// Many rows (--algo all and/or a size sweep): a table per size group, as text, CSV or JSON;
// `files` are the algorithm files written, one per row.
void print_rows(const SynthArgs& args, const topo::Topology& t, const synth::Collective& c,
                const std::vector<SynthRow>& rows, const std::vector<std::string>& files);

}  // namespace tenet::cli
