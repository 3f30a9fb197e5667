// What `tenet synth` was asked (its flags, as CLI11 fills them in).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/formats.hpp"

namespace tenet::cli {

struct SynthArgs {
  std::string topology, collective = "all-reduce", size = "256MiB", chunks = "auto", output = "out",
                        channels;
  std::string priority = "scarce", link_model = "pipelined", algo = "tenet", method = "auto";
  std::string target = "tenet";  // --target: tenet (Tenet's model) or msccl (the MSCCL runtime)
  std::string min_size, max_size;
  MscclFlags msccl;
  ChakraFlags chakra;
  std::vector<std::string> emit{"json"};
  uint64_t seed = 1;
  int restarts = 1, root = 0, step_factor = 2;
  std::string ranks;       // --ranks: a process group; empty: every NPU
  bool step_costs = true;  // --step-costs
  CacheArgs cache;         // --cache, --no-cache
  std::string time_limit;  // --time-limit
  bool no_borrow =
      false;  // --no-borrow: a group does not borrow idle NPUs (synth/groups/team_relay.hpp)
  // All-to-Allv: a traffic matrix file, or a generator (--skew zipf:S, --hot-experts K).
  std::string traffic, skew;
  int hot_experts = 0;
  bool size_given = false;
  bool json = false, csv = false;
  bool plot = false;  // --plot
};

}  // namespace tenet::cli
