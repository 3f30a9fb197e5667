// What the two MSCCL runtimes' XML loaders accept, as a checker for tests: every Tenet export must
// pass it. Written from the loaders' code (microsoft/msccl src/graph/xml.cc and topo.cc;
// Azure/msccl-executor-nccl src/misc/msccl/msccl_parser.cc) and from running host builds of both
// on hand-made cases (/work/notes/msccl.md in the team's notes): a hand-written tokenizer that
// rejects an XML declaration, tabs, single quotes, spaces around '=', and line breaks inside a
// tag; at most 16 attributes per element; 4095 stored XML nodes per rank.
#pragma once

#include <string>
#include <vector>

#include "synth/formats/msccl_xml.hpp"

namespace tenet::synth::testing {

// Every rule `xml` breaks for `runtime`, one sentence each; empty when both loaders would load it.
std::vector<std::string> msccl_runtime_problems(const std::string& xml, MscclRuntime runtime);

}  // namespace tenet::synth::testing
