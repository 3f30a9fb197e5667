#include "synth/ir/provenance.hpp"

#include <fmt/format.h>

namespace tenet::synth {

std::string_view to_string(Producer p) {
  switch (p) {
    case Producer::Unknown:
      return "unknown";
    case Producer::Matcher:
      return "matcher";
    case Producer::FlowPlanMatcher:
      return "flow-plan matcher";
    case Producer::FlowWaysMatcher:
      return "flow-ways matcher";
    case Producer::ServerPlanMatcher:
      return "server-plan matcher";
    case Producer::FlowPlanPipelines:
      return "flow-plan pipelines";
    case Producer::Symmetric:
      return "symmetric";
    case Producer::Composed:
      return "composed";
    case Producer::TeamRelay:
      return "team relay";
    case Producer::Baseline:
      return "baseline";
  }
  return "?";
}

std::string describe(const PipelineTraits& p) {
  return fmt::format(
      "{} trees, {} per {}, at their fluid rates{}{}{}{}{}{}{}", p.trees, p.per,
      p.per_root ? "root" : "NPU", p.sped_up ? " or faster where links have room" : "",
      p.lanes ? ", in lanes" : "", p.paced ? ", paced" : "",
      p.messages ? ", several chunks per transfer where steps cost" : "",
      p.serial
          ? (p.messages ? ", a transfer of a stream at a time" : ", a chunk of a stream at a time")
          : "",
      p.split > 1
          ? fmt::format(", {} chunks of a stream at once at 1/{} of its rate", p.split, p.split)
          : "",
      p.dealt_by_arrival ? ", dealt by arrival" : "");
}

std::string method_of(const Provenance& p, std::string_view name) {
  if (p.halves_answers) return "halves' own answers";
  if (p.producer == Producer::Baseline) return name == p.baseline ? "" : "baseline " + p.baseline;
  if (p.producer == Producer::Unknown) return "";
  return std::string(to_string(p.producer));
}

}  // namespace tenet::synth
