#include "tenet/tenet.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <memory>

#include "astra/system_json.hpp"
#include "chakra/algorithm_files.hpp"
#include "chakra/et.hpp"
#include "sim/gpt_model.hpp"
#include "sim/network.hpp"
#include "sim/recorded_trace.hpp"
#include "sim/workload.hpp"
#include "synth/auto/deadline.hpp"
#include "synth/cache/algorithm_cache.hpp"
#include "synth/cost/rescale.hpp"
#include "synth/cost/timing.hpp"
#include "synth/formats/forestcoll_trees.hpp"
#include "synth/memo.hpp"
#include "synth/producers.hpp"
#include "topo/io.hpp"
#include "topo/limits.hpp"

namespace tenet {

namespace {

std::unique_ptr<synth::AlgorithmCache> open_cache(const std::string& folder) {
  return folder.empty() ? nullptr : std::make_unique<synth::AlgorithmCache>(folder);
}

// A Deadline holds atomics (it is neither copied nor moved): made in place.
std::unique_ptr<synth::Deadline> deadline_of(double seconds) {
  if (!(seconds >= 0))
    throw Error(fmt::format("a time limit of {} s: give 0 (none) or more", seconds));
  if (seconds == 0) return nullptr;
  return std::make_unique<synth::Deadline>(seconds);
}

}  // namespace

Topology load_topology(const std::string& path_or_spec, bool step_costs) {
  Topology t = topo::load(path_or_spec);
  t.set_charges_steps(step_costs);
  return t;
}

Topology parse_topology(std::string_view text, bool step_costs, const std::string& name) {
  Topology t = topo::parse_yaml(text, name);
  t.set_charges_steps(step_costs);
  return t;
}

CollectiveKind parse_collective(std::string_view name) { return synth::parse_collective(name); }

namespace {

// The collective of `spec` over `t`, checked, at one chunk per NPU.
synth::Collective collective_of(const Topology& t, const CollectiveSpec& spec) {
  synth::Collective c = synth::Collective::over_all(t, spec.kind);
  if (!spec.ranks.empty()) c.ranks = synth::parse_ranks(spec.ranks, t.num_npus());
  c.root = spec.root;
  c.validate(t);
  if (spec.size < 1) throw Error("a collective's size is at least one byte");
  return c;
}

}  // namespace

synth::LowerBound lower_bound(const Topology& t, const CollectiveSpec& spec) {
  const synth::Collective c = collective_of(t, spec);
  // Chunks rounded down: the bound of a collective of at most `size` bytes, a bound for it too.
  if (spec.size < c.pieces())
    throw Error(fmt::format("{} has {} pieces of at least a byte: a size of {} is too small",
                            c.describe(), c.pieces(), format_bytes(spec.size)));
  return synth::lower_bound(t, c, spec.size / c.pieces());
}

// As `tenet synth` builds a row (cli/synth_cmd.cpp): the collective checked, its chunks cut whole,
// the synthesizer's collective as it composes it, the memory it needs checked, then made and
// verified.
Synthesis synthesize(const Topology& t, const CollectiveSpec& spec, const SynthesisOptions& o) {
  synth::Collective c = collective_of(t, spec);
  if (o.chunks_per_npu < 0 || o.chunks_per_npu > topo::kMaxChunksPerNpuOfAlgorithm)
    throw Error(fmt::format("chunks per NPU {}: give 0 (searched) or 1 to {}", o.chunks_per_npu,
                            topo::kMaxChunksPerNpuOfAlgorithm));
  const bool searched = o.chunks_per_npu == 0;
  c.chunks_per_npu = searched ? 1 : o.chunks_per_npu;
  c.validate(t);
  (void)c.whole_chunk_bytes_for(spec.size);  // chunks of a byte or more, or why not
  if (o.algorithm == "tenet") c = synth::as_synthesized(t, c, o.synth);
  const int64_t transfers = synth::transfer_estimate(c);
  topo::check_memory(
      static_cast<uint64_t>(transfers) * synth::kSynthBytesPerTransfer,
      fmt::format("{} for {} (about {} transfers)", o.algorithm, c.describe(), transfers),
      "synthesize for fewer ranks, or fewer chunks per NPU");

  const std::unique_ptr<synth::AlgorithmCache> cache = open_cache(o.cache);
  const std::unique_ptr<synth::Deadline> deadline = deadline_of(o.time_limit);
  synth::SynthMemo memo;
  synth::SynthOptions so = o.synth;
  if (cache) so.cache = cache.get();
  if (deadline) so.deadline = deadline.get();
  if (!so.memo) so.memo = &memo;

  Synthesis s;
  const auto began = std::chrono::steady_clock::now();
  if (searched) {
    synth::ChunkingResult r = synth::make_algorithm_auto_chunks(o.algorithm, t, c, spec.size, so);
    s.algorithm = std::move(r.algorithm);
    s.chunks_per_npu = r.chunks_per_npu;
  } else {
    s.algorithm = synth::make_algorithm(o.algorithm, t, c, c.chunk_bytes_for(spec.size), so);
    s.chunks_per_npu = c.chunks_per_npu;
  }
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  s.from_cache = cache && cache->hits() > 0;
  s.stopped_early = deadline && deadline->stopped();
  s.report = synth::verify(t, s.algorithm, {.max_reported = 5, .bounds = synth::bounds_of(so)});
  s.time = s.report.collective_time;
  s.ratio = s.report.ratio();
  return s;
}

Time retime(const Topology& t, Algorithm& a) { return synth::time(t, a).collective_time; }

Algorithm rescale(const Topology& t, const Algorithm& a, Bytes size) {
  return synth::rescaled(t, a, size);
}

Algorithm load_algorithm(const std::string& path, const Topology& t) {
  return chakra::load_any_algorithm(path, t);
}

Algorithm forestcoll_all_gather(const std::string& path, const Topology& t, Bytes size,
                                int slices) {
  return synth::pipeline_forest(t, synth::read_forestcoll_trees(topo::read_file(path), t, path),
                                size, slices);
}

exporting::Exported export_algorithm(const Topology& t, const Algorithm& a,
                                     const std::vector<std::string>& formats,
                                     const std::string& dir,
                                     const exporting::ExportOptions& options) {
  return exporting::export_algorithm(a, t, formats, dir, options);
}

Simulation simulate(const Topology& t, const WorkloadSpec& w, const SimulationOptions& o) {
  sim::SimConfig cfg;
  cfg.network = sim::parse_network(o.network);
  sim::choose_algorithms(o.collectives, cfg);
  if (o.chunks_per_npu < 0) throw Error("chunks per NPU: give 0 (searched) or more");
  cfg.chunks_per_npu = o.chunks_per_npu;
  if (!(o.peak_flops >= 0))
    throw Error("the peak FLOP/s of an NPU: give 0 (the system file's or 312e12) or more");
  if (!(o.compute_efficiency >= 0 && o.compute_efficiency <= 1))
    throw Error(
        fmt::format("a compute efficiency of {}: give a share in (0, 1], or 0 for the default",
                    o.compute_efficiency));
  if (!(o.memory_efficiency >= 0 && o.memory_efficiency <= 1))
    throw Error(
        fmt::format("a memory efficiency of {}: give a share in (0, 1], or 0 for the default",
                    o.memory_efficiency));
  Simulation s;
  // As `tenet sim --system`: the file's settings under the options given.
  if (!o.system.empty())
    s.system_notes = astra::apply_astra_system(astra::read_astra_system(o.system), cfg, false);
  if (o.peak_flops > 0) cfg.peak_flops = o.peak_flops;
  sim::set_efficiency(cfg, w.workload, o.compute_efficiency, o.memory_efficiency);
  const std::unique_ptr<synth::AlgorithmCache> cache = open_cache(o.cache);
  const std::unique_ptr<synth::Deadline> deadline = deadline_of(o.time_limit);
  cfg.cache = cache.get();
  cfg.deadline = deadline.get();

  std::vector<chakra::EtFile> files;
  if (sim::is_model_preset(w.workload)) {
    sim::PresetIteration it =
        sim::preset_iteration(w.workload, t.num_npus(), w.tp, w.pp, w.microbatches, w.schedule,
                              {w.batch, w.sequence}, w.one_replica);
    files = std::move(it.files);
    s.name = std::move(it.name);
    if (w.one_replica) cfg.workload_ranks = t.num_npus();
  } else {  // a Chakra ET prefix (read_prefix names the files it looked for when there are none)
    if (w.one_replica)
      throw Error("one_replica applies to a model preset, whose replicas are identical");
    files = chakra::read_prefix(w.workload);
    s.name = w.workload;
    (void)sim::prepare_trace(files, {}, s.name);
  }
  s.result = sim::simulate(t, files, cfg, s.name);
  s.mfu = cfg.roofline ? sim::model_flops_utilization(s.result, cfg.peak_flops) : 0;
  return s;
}

}  // namespace tenet
