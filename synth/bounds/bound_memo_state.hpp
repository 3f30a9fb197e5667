// Internal to synth/bounds: what lower_bound keeps between calls (BoundMemo's state), shared by
// the files that compute its terms (lower_bound.cpp, group_bounds.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "synth/bounds/lower_bound.hpp"
#include "topo/bounds.hpp"

namespace tenet::synth {

// Past this many entries a kept map (flows, cuts) starts again: a sweep over many groups must not
// keep every one.
inline constexpr size_t kBoundMemoEntries = 64;

struct BoundMemo::State {
  std::mutex mutex;
  // farthest(): the last answer (a chunk-count search asks for the bound at every count).
  struct Farthest {
    uint64_t fingerprint = 0;
    std::vector<topo::NodeId> from, to;
    Time latency = -1;
  } farthest;
  // flow_bound(): per topology, collective and group, the bound for a unit of bytes per pair.
  struct FlowKey {
    uint64_t fingerprint;
    CollectiveKind kind;
    int root;
    std::vector<topo::NodeId> ranks;
    std::vector<int32_t> pair_units;
    auto operator<=>(const FlowKey&) const = default;
  };
  struct FlowUnit {
    double seconds = 0;  // the bound for one unit of bytes per pair
    std::string label;
    std::string limit;  // its binding links in words (topo::describe_limit)
  };
  std::map<FlowKey, FlowUnit> flows;
  // cut_bound(): per topology, group, root and kind, the cut (it does not depend on the bytes).
  struct CutKey {
    uint64_t fingerprint;
    bool broadcast, reversed, large_root_side;
    topo::NodeId root;
    std::vector<topo::NodeId> ranks;
    auto operator<=>(const CutKey&) const = default;
  };
  std::map<CutKey, topo::CutBound> cuts;
  // farthest_paying(): the last answer (it does not depend on the bytes either).
  struct Paying {
    uint64_t fingerprint = 0;
    std::vector<Time> levels;      // the distinct steps it was found under (StepNeed)
    std::vector<Time> link_steps;  // where they are uneven, which link pays which (not in the
                                   // fingerprint: StepNeed's components follow them)
    std::vector<topo::NodeId> from, to;
    Time plain = -1, latency = -1;
  } paying;
  // arrival_islands(): per topology (with its links' steps) and group, the islands counted at
  // each width, which the bytes only scale.
  struct ArrivalsKey {
    uint64_t fingerprint;
    std::vector<Time> link_steps;  // where charged (not in the fingerprint)
    std::vector<topo::NodeId> ranks;
    auto operator<=>(const ArrivalsKey&) const = default;
  };
  struct Islands {
    int64_t holding = 0;  // islands holding a rank
    Int128 ingress = 0;   // their summed ingress from the others into NPUs and reducing switches
    Time step = 0;        // the least step of the links counted (0 where not charged)
    std::string limit;    // in words (LowerBound::limit)
  };
  std::map<ArrivalsKey, std::vector<Islands>> arrivals;
  // lower_bound(): the last answer (the synthesizer's searches and then the verifier ask for it).
  struct Last {
    uint64_t fingerprint = 0;
    bool steps = false;
    std::vector<Time> link_steps;  // the links' steps where charged (not in the fingerprint)
    Collective collective;
    Bytes chunk_bytes = -1;
    LowerBound bound;
  } last;
};

}  // namespace tenet::synth
