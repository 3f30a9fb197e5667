// Internal to the simulator: sim/trace_json.cpp defines tenet::sim::trace_json, the Perfetto trace
// of a run, which sim/system.hpp declares (with what it shows) for callers.
#pragma once

#include <string>

#include "sim/system.hpp"

namespace tenet::sim {

std::string trace_json(const SimResult& r);

}  // namespace tenet::sim
