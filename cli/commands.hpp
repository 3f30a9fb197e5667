// The verbs of the `tenet` executable. Each registers its subcommand on the app; the work is a
// thin call into the libraries.
#pragma once

#include <CLI/CLI.hpp>

namespace tenet::cli {

void add_topo_commands(CLI::App& app);

}  // namespace tenet::cli
