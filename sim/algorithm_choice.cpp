// SimConfig::algorithms and sized_files from `tenet sim --coll`'s text (sim/system.hpp).
#include <fmt/format.h>

#include <sstream>
#include <string>

#include "chakra/algorithm_files.hpp"
#include "sim/system.hpp"
#include "synth/baselines/baselines.hpp"
#include "topo/error.hpp"

namespace tenet::sim {

bool is_algorithm_file(const std::string& producer) {
  const std::string_view base = std::string_view(producer).substr(0, producer.find(':'));
  if (base == "tenet") return false;
  for (synth::BaselineKind b : synth::all_baselines())
    if (synth::to_string(b) == base) return false;
  return chakra::names_algorithm_file(producer);
}

// "all-reduce=ring,all-gather=tenet"; a collective named again with algorithm files only
// ("all-reduce=ar-1MiB.json,all-reduce=ar-64MiB.json"): one file per size, each call running the
// nearest.
void choose_algorithms(const std::string& text, SimConfig& cfg) {
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string::npos)
      throw Error(fmt::format(
          "--coll takes collective=algorithm pairs, e.g. all-reduce=ring; got '{}'", item));
    const auto kind = synth::parse_collective(item.substr(0, eq));
    const std::string algo = item.substr(eq + 1);
    const bool file = is_algorithm_file(algo);
    if (algo != "tenet" && !file) synth::parse_baseline(algo);  // checked now
    auto [at, fresh] = cfg.algorithms.try_emplace(kind, algo);
    if (!fresh) {
      if (!file || !is_algorithm_file(at->second))
        throw Error(fmt::format(
            "--coll names {} twice ('{}' and '{}'): a collective may repeat only with algorithm "
            "files, one per size",
            synth::to_string(kind), at->second, algo));
      auto& sized = cfg.sized_files[kind];
      if (sized.empty()) sized.push_back(at->second);
      sized.push_back(algo);
    }
  }
}

}  // namespace tenet::sim
