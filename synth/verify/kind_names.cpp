// The names `tenet verify` prints and writes (JSON `violations_by_kind`, `kind`) for what it
// reports: stable, lower-case, hyphenated.
#include "synth/verify/verify.hpp"

namespace tenet::synth {

std::string_view to_string(ViolationKind k) {
  switch (k) {
    case ViolationKind::BadReference:
      return "bad-reference";
    case ViolationKind::BrokenRoute:
      return "broken-route";
    case ViolationKind::SwitchCapability:
      return "switch-capability";
    case ViolationKind::WrongOperation:
      return "wrong-operation";
    case ViolationKind::DependencyCycle:
      return "dependency-cycle";
    case ViolationKind::DependencyOrder:
      return "dependency-order";
    case ViolationKind::DependencyViolated:
      return "dependency-violated";
    case ViolationKind::SourceLacksData:
      return "source-lacks-data";
    case ViolationKind::LinkOverbooked:
      return "link-overbooked";
    case ViolationKind::TooShort:
      return "too-short";
    case ViolationKind::DoubleCount:
      return "double-count";
    case ViolationKind::Overwrite:
      return "overwrite";
    case ViolationKind::ReduceIntoNothing:
      return "reduce-into-nothing";
    case ViolationKind::PostconditionUnmet:
      return "postcondition-unmet";
    case ViolationKind::TimeMismatch:
      return "time-mismatch";
    case ViolationKind::BadRate:
      return "bad-rate";
    case ViolationKind::BufferSlotWrong:
      return "buffer-slot-wrong";
    case ViolationKind::ChannelOverlap:
      return "channel-overlap";
    case ViolationKind::ReduceMismatch:
      return "reduce-mismatch";
    case ViolationKind::UnorderedAccess:
      return "unordered-access";
    case ViolationKind::OutOfBounds:
      return "out-of-bounds";
    case ViolationKind::UnpairedMessage:
      return "unpaired-message";
    case ViolationKind::NeverReady:
      return "never-ready";
  }
  return "?";
}

std::string_view to_string(WarningKind k) {
  switch (k) {
    case WarningKind::Redundant:
      return "redundant";
    case WarningKind::FingerprintMismatch:
      return "fingerprint-mismatch";
    case WarningKind::TimesComputed:
      return "times-computed";
    case WarningKind::Idle:
      return "idle";
  }
  return "?";
}

}  // namespace tenet::synth
