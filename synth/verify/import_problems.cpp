// An importer's findings (synth/ir/import_problem.hpp) as the verifier's violations.
#include "synth/verify/verify.hpp"

namespace tenet::synth {
namespace {

ViolationKind violation_of(ImportProblemKind k) {
  switch (k) {
    case ImportProblemKind::SlotWrong:
      return ViolationKind::BufferSlotWrong;
    case ImportProblemKind::ReduceMismatch:
      return ViolationKind::ReduceMismatch;
    case ImportProblemKind::DoubleCount:
      return ViolationKind::DoubleCount;
    case ImportProblemKind::Unordered:
      return ViolationKind::UnorderedAccess;
    case ImportProblemKind::OutOfBounds:
      return ViolationKind::OutOfBounds;
    case ImportProblemKind::Unpaired:
      return ViolationKind::UnpairedMessage;
    case ImportProblemKind::NeverReady:
      return ViolationKind::NeverReady;
  }
  return ViolationKind::BufferSlotWrong;
}

}  // namespace

void add_import_problems(Report& r, const std::vector<ImportProblem>& problems,
                         const VerifyOptions& options) {
  for (const ImportProblem& p : problems) {
    const ViolationKind kind = violation_of(p.kind);
    ++r.violation_count;
    ++r.counts[static_cast<int>(kind)];
    if (r.violations.size() < options.max_reported)
      r.violations.push_back({kind, -1, -1, -1, -1, -1, p.message});
  }
}

}  // namespace tenet::synth
