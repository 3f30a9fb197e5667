#include <fmt/format.h>

#include "cli/commands.hpp"
#include "synth/cache/algorithm_cache.hpp"

namespace tenet::cli {

void add_cache_flags(CLI::App* cmd, CacheArgs& args) {
  const std::optional<std::string> folder = synth::AlgorithmCache::default_folder();
  cmd->add_option(
         "--cache", args.folder,
         fmt::format("Folder of the algorithm cache: a synthesis already made (same topology, "
                     "collective, size, options and Tenet build) is read from it, verified, "
                     "instead of made again; what is made is kept there. Default: {}",
                     folder ? *folder : "none ($XDG_CACHE_HOME and $HOME unset)"))
      ->type_name("DIR");
  cmd->add_flag("--no-cache", args.off, "Neither read nor write the algorithm cache");
}

std::unique_ptr<synth::AlgorithmCache> open_cache(const CacheArgs& args) {
  if (args.off) return nullptr;
  if (!args.folder.empty()) return std::make_unique<synth::AlgorithmCache>(args.folder);
  if (std::optional<std::string> folder = synth::AlgorithmCache::default_folder())
    return std::make_unique<synth::AlgorithmCache>(*folder);
  return nullptr;
}

}  // namespace tenet::cli
