// Hints for a command line CLI11 refused: the verb or flag the user most likely meant.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace tenet::cli {

// Walks argv as CLI11 would (verbs, then flags and their values) and returns one line per word
// that names no verb or flag of the command it belongs to, with the nearest names, e.g.
// "unknown command 'sythn' (did you mean 'synth'?)" or "unknown option '--colll' of `tenet synth`
// (did you mean '--coll'?)". Empty when every word was known.
std::vector<std::string> argument_hints(const CLI::App& app, int argc, const char* const* argv);

}  // namespace tenet::cli
