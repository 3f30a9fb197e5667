// Internal to the simulator (sim/system.cpp): the algorithms its collectives run, chosen per
// collective by SimConfig (a baseline, the synthesizer, or algorithm files) and cached.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/system.hpp"
#include "synth/ir/algorithm.hpp"
#include "synth/ir/collective.hpp"
#include "synth/ir/ring_plan.hpp"
#include "synth/memo.hpp"
#include "topo/topology.hpp"

namespace tenet::sim::detail {

// A collective as a workload calls it.
struct CollectiveCall {
  synth::CollectiveKind kind{};
  std::vector<int> members;  // its group's ranks, in the node's order
  int root = 0;
  std::string traffic;  // an All-to-All's uneven traffic (tenet_traffic: zipf:S, hot:K), or empty
};

// The producer of every collective of a run: what SimConfig::algorithms, sized_files,
// chunks_per_npu, rename_groups, lazy_rings and dataset_splits ask for, made once per collective,
// group, root, size and producer and kept for the run (the references it returns stay valid).
class AlgorithmSource {
 public:
  // `name` (the workload's) starts its error messages.
  AlgorithmSource(const topo::Topology& t, const SimConfig& config, std::string name)
      : t_(t), cfg_(config), name_(std::move(name)) {}

  // The call's ring as a plan (SimConfig::lazy_rings), or null: cached per collective, group,
  // root, size and producer, as algorithms are.
  const synth::RingPlan* ring_plan(const CollectiveCall& m, Bytes size);
  // The algorithm the call runs at `size` bytes (Tenet's convention).
  const synth::Algorithm& algorithm(const CollectiveCall& m, Bytes size);
  // The call's collective over its members, with the configured chunks per NPU (1 for -k auto,
  // where the chunk search starts).
  synth::Collective collective_of(const CollectiveCall& m) const;
  // Of algorithm files made for one size each, the one whose size is nearest `size` by ratio (the
  // larger on a tie). Each file is read once.
  std::string nearest_file(const std::vector<std::string>& files, Bytes size);

  // Algorithms made (synthesized, built or read) and renamed from another group's, and ring plans.
  int64_t made() const { return static_cast<int64_t>(cache_.size()) - renamed_; }
  int64_t renamed() const { return renamed_; }
  int64_t ring_plans() const;
  // What the user should know about the algorithms chosen, in the order it came up.
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  std::string producer_of(synth::CollectiveKind kind, Bytes size);
  const synth::Algorithm* renamed_from_shape(const std::string& shape, const std::string& key,
                                             const synth::Collective& c);
  void spread_traffic(const CollectiveCall& m, synth::Collective& c, Bytes& size) const;
  std::unique_ptr<synth::Algorithm> load_file(const std::string& file, const synth::Collective& c,
                                              Bytes size);
  std::unique_ptr<synth::Algorithm> make(const std::string& producer, synth::Collective c,
                                         Bytes size, bool native);

  const topo::Topology& t_;
  const SimConfig& cfg_;
  std::string name_;
  std::unordered_map<std::string, std::unique_ptr<synth::Algorithm>> cache_;
  std::unordered_map<std::string, std::unique_ptr<synth::RingPlan>> plans_;  // null: no plan for it
  static constexpr size_t kShapeTries = 4;
  // Made, not renamed, per shape.
  std::unordered_map<std::string, std::vector<const synth::Algorithm*>> shapes_;
  int64_t renamed_ = 0;    // algorithms renamed from another group's
  int half_diameter_ = 0;  // half the NPUs' hop diameter, once a routed collective needs it
  std::unordered_map<std::string, Bytes> file_sizes_;  // algorithm file -> the size it was made for
  std::vector<std::string> warnings_;
  // Flow plans, bounds, the baselines' rings and trees: shared by every size and group made.
  synth::SynthMemo memo_;
};

}  // namespace tenet::sim::detail
