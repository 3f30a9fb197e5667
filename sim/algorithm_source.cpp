#include "sim/algorithm_source.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "chakra/algorithm_files.hpp"
#include "synth/cost/rescale.hpp"
#include "synth/groups/group_map.hpp"
#include "synth/ir/traffic.hpp"
#include "synth/producers.hpp"
#include "topo/analysis.hpp"
#include "topo/error.hpp"
#include "topo/limits.hpp"

namespace tenet::sim::detail {

const synth::RingPlan* AlgorithmSource::ring_plan(const CollectiveCall& m, Bytes size) {
  if (!cfg_.lazy_rings || !m.traffic.empty() || cfg_.sized_files.count(m.kind) > 0) return nullptr;
  const bool native = cfg_.dataset_splits.count(m.kind) > 0;
  if (cfg_.chunks_per_npu == 0 && !native)
    return nullptr;  // -k auto: the chunk search times algorithms
  auto it = cfg_.algorithms.find(m.kind);
  if (it == cfg_.algorithms.end() || is_algorithm_file(it->second)) return nullptr;
  const std::string& producer = it->second;
  const std::string key = fmt::format("{}|{}|{}|{}|{}", synth::to_string(m.kind),
                                      fmt::join(m.members, ","), m.root, size, producer);
  if (auto cached = plans_.find(key); cached != plans_.end()) return cached->second.get();
  std::unique_ptr<synth::RingPlan> plan;
  synth::BaselineSpec spec;
  try {
    spec = synth::parse_baseline(producer);
  } catch (const Error&) {
    return plans_.emplace(key, nullptr)
        .first->second.get();  // "tenet", or a name algorithm() explains
  }
  const synth::Collective c = collective_of(m);
  if (auto made = synth::ring_plan(spec, t_, c, std::max<Bytes>(1, c.chunk_bytes_for(size)),
                                   synth::LinkModel::Pipelined, 0, &memo_.baselines)) {
    // A replay keeps a byte per transfer (BasicLinkAdmission's state), the rest per member.
    topo::check_memory(
        static_cast<uint64_t>(made->size()),
        fmt::format("{}: ring plan of {} of {} over {} ranks ({} chunks per NPU: {} transfers)",
                    name_, synth::to_string(c.kind), format_bytes(size), c.num_ranks(),
                    c.chunks_per_npu, made->size()),
        "simulate fewer ranks, or fewer chunks per NPU (-k)");
    plan = std::make_unique<synth::RingPlan>(std::move(*made));
  }
  return plans_.emplace(key, std::move(plan)).first->second.get();
}

synth::Collective AlgorithmSource::collective_of(const CollectiveCall& m) const {
  synth::Collective c;
  c.kind = m.kind;
  for (int r : m.members) c.ranks.push_back(r);
  // ASTRA-sim's native algorithms (kinds with dataset splits) send each piece whole.
  const bool native = cfg_.dataset_splits.count(m.kind) > 0;
  c.chunks_per_npu = native ? 1 : std::max(1, cfg_.chunks_per_npu);
  c.root = std::clamp(m.root, 0, static_cast<int>(m.members.size()) - 1);
  return c;
}

const synth::Algorithm& AlgorithmSource::algorithm(const CollectiveCall& m, Bytes size) {
  synth::Collective c = collective_of(m);
  const bool native = cfg_.dataset_splits.count(m.kind) > 0;
  const std::string producer = producer_of(m.kind, size);
  const std::string key = fmt::format("{}|{}|{}|{}|{}|{}", synth::to_string(m.kind),
                                      fmt::join(m.members, ","), c.root, size, producer, m.traffic);
  auto cached = cache_.find(key);
  if (cached != cache_.end()) return *cached->second;
  // Groups of one shape (every tensor-parallel group of a rail cluster, every data-parallel group
  // on one rail) share one algorithm: one made for another group of the shape is renamed to this
  // one when it can be (synth/groups/group_map.hpp: the same transfers over links of the same
  // properties, so it is correct and takes the same time). An algorithm file names its ranks.
  const bool from_file = is_algorithm_file(producer);
  const std::string shape = fmt::format("{}|{}|{}|{}|{}|{}", synth::to_string(m.kind),
                                        m.members.size(), c.root, size, producer, m.traffic);
  if (!from_file && cfg_.rename_groups)
    if (const synth::Algorithm* renamed = renamed_from_shape(shape, key, c)) return *renamed;
  if (!m.traffic.empty()) spread_traffic(m, c, size);
  std::unique_ptr<synth::Algorithm> a =
      from_file ? load_file(producer, c, size) : make(producer, std::move(c), size, native);
  const synth::Algorithm& made = *cache_.emplace(key, std::move(a)).first->second;
  // A shape whose groups do not rename into each other keeps a few of its algorithms to try.
  if (std::vector<const synth::Algorithm*>& same = shapes_[shape];
      !from_file && cfg_.rename_groups && same.size() < kShapeTries)
    same.push_back(&made);
  return made;
}

// The configured producer of `kind` ("tenet" by default), or the algorithm file made for the size
// nearest `size` when there are several.
std::string AlgorithmSource::producer_of(synth::CollectiveKind kind, Bytes size) {
  auto it = cfg_.algorithms.find(kind);
  std::string producer = it == cfg_.algorithms.end() ? "tenet" : it->second;
  if (auto files = cfg_.sized_files.find(kind);
      files != cfg_.sized_files.end() && !files->second.empty())
    producer = nearest_file(files->second, size);
  return producer;
}

// One made for another group of `shape` renamed to c's ranks, cached under `key`; null when none
// renames.
const synth::Algorithm* AlgorithmSource::renamed_from_shape(const std::string& shape,
                                                            const std::string& key,
                                                            const synth::Collective& c) {
  auto made = shapes_.find(shape);
  if (made == shapes_.end()) return nullptr;
  for (const synth::Algorithm* other : made->second)
    if (auto renamed = synth::map_to_group(t_, *other, c.ranks)) {
      ++renamed_;
      return cache_.emplace(key, std::make_unique<synth::Algorithm>(std::move(*renamed)))
          .first->second.get();
    }
  return nullptr;
}

// An uneven All-to-All (a mixture-of-experts layer): every rank sends `size` bytes, dealt to the
// others as the traffic spec says; the producers get a unit's bytes (synth/ir/traffic.hpp).
void AlgorithmSource::spread_traffic(const CollectiveCall& m, synth::Collective& c,
                                     Bytes& size) const {
  try {
    const synth::Traffic traffic = synth::generate_traffic(m.traffic, c.num_ranks(), size, 1);
    const synth::TrafficUnits u = synth::to_units(traffic, synth::default_max_units(c.num_ranks()));
    c.set_pair_units(u.units);
    size = u.unit_bytes;
  } catch (const Error& e) {
    throw Error(fmt::format("{}: all-to-all of {} over {} ranks with traffic '{}': {}", name_,
                            format_bytes(size), c.num_ranks(), m.traffic, e.message()));
  }
}

// An algorithm file runs the call's collective over the call's ranks (else an error), rescaled to
// the call's size (synth/cost/rescale.hpp).
std::unique_ptr<synth::Algorithm> AlgorithmSource::load_file(const std::string& file,
                                                             const synth::Collective& c,
                                                             Bytes size) {
  auto a = std::make_unique<synth::Algorithm>(chakra::load_any_algorithm(file, t_));
  if (a->collective.kind != c.kind || a->collective.ranks != c.ranks)
    throw Error(fmt::format("{}: {} is {} over NPUs {}, but the workload runs {} over ranks {}",
                            name_, file, a->collective.describe(),
                            fmt::join(a->collective.ranks, ","), synth::to_string(c.kind),
                            fmt::join(c.ranks, ",")));
  const Bytes wanted = std::max<Bytes>(1, a->collective.chunk_bytes_for(size));
  if (a->chunk_bytes == wanted) return a;
  // A file runs at every size with its structure kept, its chunks scaled to the call (as the MSCCL
  // runtime runs an XML algorithm in its size range): the schedule's time at this size, not at the
  // one it was made for. A JSON or Chakra file made for another size says so.
  const Bytes made_for = a->chunk_bytes;
  if (std::filesystem::path(file).extension() != ".xml")
    warnings_.push_back(fmt::format(
        "{} of {} ran {} rescaled: made with {} chunks of {}, run with chunks of {} (export one "
        "per size, --coll {}=a.json,{}=b.json, for schedules made at each)",
        synth::to_string(c.kind), format_bytes(size), file, a->collective.num_chunks(),
        format_bytes(made_for), format_bytes(wanted), synth::to_string(c.kind),
        synth::to_string(c.kind)));
  if (size >= a->collective.pieces()) {
    *a = synth::rescaled(t_, std::move(*a), size);
  } else {  // fewer bytes than chunks: chunks of one byte, as the runtime would send them
    a->chunk_bytes = wanted;
    a->clear_times();
    a->claimed_time = -1;
  }
  return a;
}

// `producer` (the synthesizer or a baseline) made for `c` at `size` bytes.
std::unique_ptr<synth::Algorithm> AlgorithmSource::make(const std::string& producer,
                                                        synth::Collective c, Bytes size,
                                                        bool native) {
  // A group borrowing its idle server mates (synth/groups/team_relay.hpp) keeps thousands of flows
  // in flight: the congestion and packet networks, which share links per flow, take far longer
  // over it, so only the analytical network gets it.
  synth::SynthOptions o;
  o.portfolio.team_relay = cfg_.network == NetworkKind::Analytical;
  o.portfolio.borrow_servers = false;  // every server runs its own group at the same time
  o.cache = cfg_.cache;
  o.deadline = cfg_.deadline;
  o.memo = &memo_;
  // The workload's sizes are synthesized one after another: what lost by far at one size is not
  // made again at the sizes near it (synth/auto/size_history.hpp).
  o.portfolio.across_sizes = true;
  // Not an All-Reduce's halves' own answers beside its own: one or two more searches per size,
  // which a workload's many sizes pay for little (docs/tuning.md, kHalvesAnswersOver).
  o.portfolio.halves_answers = false;
  // As made: relays' hops and hand-overs count.
  o.portfolio.chunk_transfers = synth::kSimAutoChunkTransfers;
  // An All-Reduce over a cluster too large to synthesize flat is composed per level
  // (synth/groups/composed.hpp): its chunks, and so its size estimate and chunk size, are the
  // composition's.
  if (producer == "tenet") c = synth::as_synthesized(t_, c, o);
  // One such All-Reduce is the whole iteration's traffic: -k auto searches it as
  // `tenet synth` does.
  if (c.all_reduce_chunks > 0) o.portfolio.chunk_transfers = synth::kAutoChunkTransferBudget;
  // A routed chunk (All-to-All, Scatter, Gather) is a transfer per hop: half the diameter on
  // average.
  const bool routed = synth::one_destination(c.kind);
  if (routed && half_diameter_ == 0) half_diameter_ = std::max(1, topo::npu_diameter(t_).hops / 2);
  const int64_t hops = routed ? half_diameter_ : 1;
  const int64_t transfers = synth::transfer_estimate(c) * hops;  // at the fewest chunks tried
  topo::check_memory(
      static_cast<uint64_t>(transfers) * synth::kSimBytesPerTransfer,
      fmt::format("{}: {} of {} over {} ranks ({} chunks per NPU: about {} transfers)", name_,
                  synth::to_string(c.kind), format_bytes(size), c.num_ranks(), c.chunks_per_npu,
                  transfers),
      "simulate fewer ranks, or fewer chunks per NPU (-k)");
  if (cfg_.chunks_per_npu == 0 && !native) {
    int most = 1;  // an iteration builds many collectives: keep each affordable
    for (c.chunks_per_npu = 2;
         most < 64 && synth::transfer_estimate(c) * hops <= synth::kSimAutoChunkTransfers;
         c.chunks_per_npu *= 2)
      most = c.chunks_per_npu;
    c.chunks_per_npu = 1;
    return std::make_unique<synth::Algorithm>(
        synth::make_algorithm_auto_chunks(producer, t_, c, std::max<Bytes>(1, size), o, most)
            .algorithm);
  }
  o.time_baselines = false;  // replayed below, with everything else in flight
  return std::make_unique<synth::Algorithm>(
      synth::make_algorithm(producer, t_, c, std::max<Bytes>(1, c.chunk_bytes_for(size)), o));
}

std::string AlgorithmSource::nearest_file(const std::vector<std::string>& files, Bytes size) {
  std::string best;
  double best_distance = 0;
  Bytes best_size = 0;
  for (const std::string& f : files) {
    auto [it, fresh] = file_sizes_.try_emplace(f, 0);
    if (fresh) {
      const synth::Algorithm a = chakra::load_any_algorithm(f, t_);
      it->second = std::max<Bytes>(1, a.chunk_bytes * a.collective.pieces());
    }
    const double distance = std::abs(
        std::log(static_cast<double>(it->second) / static_cast<double>(std::max<Bytes>(size, 1))));
    if (best.empty() || distance < best_distance ||
        (distance == best_distance && it->second > best_size))
      best = f, best_distance = distance, best_size = it->second;
  }
  return best;
}

int64_t AlgorithmSource::ring_plans() const {
  return std::count_if(plans_.begin(), plans_.end(),
                       [](const auto& p) { return p.second != nullptr; });
}

}  // namespace tenet::sim::detail
