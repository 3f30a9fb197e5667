// System presets: calibrated descriptions of real machines (examples/systems/*.yaml, compiled
// into the binary), loadable by name wherever a topology is expected: `--topo dgx-h100`.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace tenet::topo {

struct Preset {
  std::string_view name;  // the file's stem: "dgx-h100"
  std::string_view text;  // its YAML
};

// Every preset, by name.
const std::vector<Preset>& presets();
// The YAML of preset `name`, or nothing.
std::optional<std::string_view> preset_text(std::string_view name);

namespace detail {
extern const std::vector<Preset> kPresets;
}

}  // namespace tenet::topo
