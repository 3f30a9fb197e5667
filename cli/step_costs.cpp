#include <fmt/format.h>

#include "cli/commands.hpp"
#include "topo/io.hpp"

namespace tenet::cli {

void add_step_costs_flag(CLI::App* cmd, bool& on) {
  cmd->add_option(
         "--step-costs", on,
         fmt::format(
             "on (default) or off: whether every transfer pays its route's per-step cost\n"
             "(the alpha of the alpha-beta model: a step holds its share of the links for\n"
             "alpha + bytes / bandwidth). Each link's is its `step` (a file's key, default\n"
             "{} us; scale-out links of the leafspine, fattree, dragonfly and nvcluster\n"
             "generators {} us: TACCL's measured NVLink and InfiniBand alphas); `tenet topo\n"
             "info` lists them. off: the bytes-only model of earlier versions",
             static_cast<double>(topo::kDefaultStep) / 1e6,
             static_cast<double>(topo::kNetworkStep) / 1e6))
      ->type_name("on|off")
      ->default_str("on")
      // Checked before CLI11 converts it, so that a bad value names both answers.
      ->check([](const std::string& value) -> std::string {
        if (value == "on" || value == "off") return "";
        return fmt::format("'{}' is neither on nor off", value);
      });
}

topo::Topology load_topology(const std::string& spec, bool step_costs) {
  topo::Topology t = topo::load(spec);
  t.set_charges_steps(step_costs);
  return t;
}

}  // namespace tenet::cli
