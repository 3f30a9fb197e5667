#include "topo/presets.hpp"

namespace tenet::topo {

const std::vector<Preset>& presets() { return detail::kPresets; }

std::optional<std::string_view> preset_text(std::string_view name) {
  for (const Preset& p : detail::kPresets)
    if (p.name == name) return p.text;
  return std::nullopt;
}

}  // namespace tenet::topo
