// Tenet's C++ API: what a program does with Tenet, in the calls the `tenet` command makes.
//
//   #include "tenet/tenet.hpp"
//   const tenet::Topology t = tenet::load_topology("torus2d:4x4");
//   tenet::Synthesis s = tenet::synthesize(t, {.kind = tenet::CollectiveKind::AllReduce,
//                                              .size = 64 * tenet::MiB});
//   if (!tenet::verify(t, s.algorithm).correct()) ...
//   tenet::export_algorithm(t, s.algorithm, {"json", "msccl-xml", "chakra"}, "out");
//
// This header is the stable surface (docs/library.md): its names keep their meaning within a minor
// version. The layers' headers it includes, and a few layers' entry points, are installed beside it
// (TENET_PUBLIC_ENTRY_HEADERS in cmake/install.cmake) for the types it returns and for programs
// that need a layer alone; their names may change between minor versions. The other headers are
// internal to the libraries and not installed.
//
// Errors are the command's: tenet::Error (topo/error.hpp) with the message `tenet` prints, and its
// kinds (tenet::NotApplicable: an algorithm that does not apply to the collective; ParseError: a
// file's line; tenet::Unreachable).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "export/export.hpp"
#include "sim/system.hpp"
#include "synth/baselines/baselines.hpp"
#include "synth/bounds/lower_bound.hpp"
#include "synth/ir/algorithm.hpp"
#include "synth/ir/collective.hpp"
#include "synth/synthesizer.hpp"
#include "synth/verify/verify.hpp"
#include "topo/error.hpp"
#include "topo/topology.hpp"
#include "topo/units.hpp"

namespace tenet {

using synth::Algorithm;
using synth::CollectiveKind;
using synth::NotApplicable;  // a tenet::Error: the algorithm asked for does not apply
using topo::Topology;

inline constexpr Bytes KiB = Bytes{1} << 10;
inline constexpr Bytes MiB = Bytes{1} << 20;
inline constexpr Bytes GiB = Bytes{1} << 30;

// ---- Topologies ----------------------------------------------------------------------------

// A topology file (YAML or JSON, Graphviz DOT, ASTRA-sim network.yml), a generator spec
// ("torus2d:8x8", "nvcluster:2x8"; `tenet topo generators` lists them) or a system preset
// ("dgx-h100"). With `step_costs` (the command's `--step-costs on`, the default) every transfer
// pays its route's per-step cost; off: bytes and latency only.
Topology load_topology(const std::string& path_or_spec, bool step_costs = true);
// A topology file's text (Tenet YAML or JSON); errors name `name` and the line.
Topology parse_topology(std::string_view text, bool step_costs = true,
                        const std::string& name = "<string>");

// ---- Collectives and algorithms ----------------------------------------------------------

// A collective as `tenet synth` takes it.
struct CollectiveSpec {
  CollectiveKind kind = CollectiveKind::AllReduce;
  // Bytes, in Tenet's convention (`tenet synth -s`): an All-Reduce's, Reduce's, Broadcast's
  // buffer; an All-Gather's and Gather's output (every rank's part); a Reduce-Scatter's and
  // Scatter's input; an All-to-All's per rank.
  Bytes size = 0;
  // A process group, as `--ranks` takes it ("0-7", "0,2,4,6"); empty: every NPU.
  std::string ranks;
  int root = 0;  // Broadcast, Reduce, Gather, Scatter: a position in the group
};

// "all-reduce", "all-gather", ... (as `-c`); throws tenet::Error naming the kinds for others.
CollectiveKind parse_collective(std::string_view name);

struct SynthesisOptions {
  // "tenet" (the synthesizer) or a baseline: "ring", "bidir-ring", "direct", "rhd", "dbt",
  // "tree", "bruck", "hierarchical", "nvls", "oneshot", "blink"; channels as "ring:8".
  std::string algorithm = "tenet";
  int chunks_per_npu = 0;  // 0: the chunk count is searched (`-k auto`)
  // Seconds (`--time-limit`): the best verified answer found by then; 0: the whole search.
  double time_limit = 0;
  // The algorithm cache's folder (`--cache`): a synthesis already made is read from it, verified;
  // empty: none (the command's default is $XDG_CACHE_HOME/tenet: synth::AlgorithmCache).
  std::string cache;
  // The synthesizer's own options (method, seed, restarts, link model, reduce bandwidth, ...).
  synth::SynthOptions synth;
};

struct Synthesis {
  Algorithm algorithm;
  // What `tenet verify` finds: correct() (always, for what Tenet makes), the lower bound
  // (report.bound.total: no algorithm of this collective is faster; report.bound.limit says what
  // limits it), links used and their utilization.
  synth::Report report;
  Time time = 0;               // ps: the algorithm's collective time on the topology
  double ratio = 0;            // time / report.bound.total (at least 1)
  int chunks_per_npu = 1;      // the chunk count used
  double seconds = 0;          // wall time it took
  bool from_cache = false;     // read from the cache (and verified)
  bool stopped_early = false;  // the time limit ended the search: the best found by then
};

// Makes `c` on `t` with `o.algorithm`, at the chunk count asked or searched. Throws
// NotApplicable where a baseline does not apply, tenet::Error for an invalid collective.
Synthesis synthesize(const Topology& t, const CollectiveSpec& c, const SynthesisOptions& o = {});

// The lower bound of the collective on `t` (`report.bound` of whatever is made for it): no
// algorithm, Tenet's or any other, of a collective of `c.size` bytes is faster than its total, ps
// (under the per-step costs `t` charges). `limit` says what limits it, describe(b) its terms.
// Throws tenet::Error where `c.size` is fewer bytes than the collective has pieces (a byte each).
synth::LowerBound lower_bound(const Topology& t, const CollectiveSpec& c);

// verify(t, a): every check `tenet verify` makes: each chunk where it should be, nothing sent
// before it arrived, each reduction counting every rank once, the claimed time the model's; with
// the lower bound (synth::Report::bound). The verifier's own function (so that an unqualified call
// finds one, not two).
using synth::verify;

// Re-times `a` on `t` under its link model (its transfers' start and end times, claimed_time) and
// returns its collective time, ps.
Time retime(const Topology& t, Algorithm& a);

// `a` at another size, its structure kept: the same transfers with chunks of the size that makes
// `size` bytes (rounded up to whole bytes), re-timed. Throws tenet::Error where `size` is fewer
// bytes than `a` has chunks.
Algorithm rescale(const Topology& t, const Algorithm& a, Bytes size);

// An algorithm file: Tenet JSON, MSCCL-XML (or ForestColl's tree XML, each part one 1 MiB chunk),
// or a folder or prefix of Chakra collective graphs.
Algorithm load_algorithm(const std::string& path, const Topology& t);

// ForestColl's spanning trees (its tree XML, synth/formats/forestcoll_trees.hpp) as the All-Gather
// of `size` bytes they make, each of a root's k parts streamed down its tree in `slices` chunks:
// the trees pipelined, for comparison with what Tenet makes on the same topology (named as
// ForestColl names its nodes).
Algorithm forestcoll_all_gather(const std::string& path, const Topology& t, Bytes size,
                                int slices = 1);

// Writes `a` in each of `formats` ("json", "msccl-xml", "chakra", "astra-sim") into `dir`, every
// file committed together; a format that cannot hold it is skipped with the reason
// (exporting::Exported::skipped). As `tenet export`.
exporting::Exported export_algorithm(const Topology& t, const Algorithm& a,
                                     const std::vector<std::string>& formats,
                                     const std::string& dir,
                                     const exporting::ExportOptions& options = {});

// ---- Simulation ----------------------------------------------------------------------------

// A workload as `tenet sim -w` takes it: a model preset's training iteration (resnet50, gpt3-175b,
// ...: sim::model_presets(), or a Megatron-LM GPT "gpt:layers=L,hidden=H,heads=A") laid out over
// the topology's NPUs, or a prefix of Chakra ET files (prefix.0.et, prefix.1.et, ...).
struct WorkloadSpec {
  std::string workload = "resnet50";
  int tp = 1, pp = 1, microbatches = 1;  // a preset's tensor and pipeline parallelism
  std::string schedule = "1f1b";         // a preset's pipeline schedule: 1f1b or gpipe
  int64_t batch = 0, sequence = 0;       // a preset's batch and sequence length; 0: its own
  // A preset's first data-parallel replica only, the others mirroring it (`--one-replica`; the
  // analytical network only, where it is the whole run's iteration).
  bool one_replica = false;
};

struct SimulationOptions {
  std::string network = "analytical";  // analytical, analytical-congestion or packet
  // Per collective, as `--coll`: "all-reduce=ring,all-gather=tenet", or algorithm files
  // ("all-reduce=ar.json": rescaled to each call's size); empty: the synthesizer for all.
  std::string collectives;
  int chunks_per_npu = 0;  // 0: searched per collective and size
  // Per NPU, FLOP/s; 0: the system file's peak-perf, else 312e12 (an A100's BF16 dense peak).
  double peak_flops = 0;
  // The shares of peak_flops and of the memory bandwidth matmuls and elementwise kernels run at,
  // (0, 1]; 0: the workload's default (sim::default_efficiency: Megatron-LM's calibration for a
  // gpt: model, else 1).
  double compute_efficiency = 0, memory_efficiency = 0;
  // An ASTRA-sim system.json (`--system`): its algorithms, dataset splits, roofline and endpoint
  // delays apply under the options above; empty: none.
  std::string system;
  std::string cache;      // as SynthesisOptions::cache
  double time_limit = 0;  // seconds for the run's syntheses together; 0: none
};

struct Simulation {
  sim::SimResult result;  // iteration time, per rank, per collective, per link
  std::string name;       // the workload, as `tenet sim` prints it
  // Model FLOPs utilization at the peak the run computed at; 0 when COMP nodes replay their
  // durations (a system.json without roofline-enabled), which says nothing of their FLOPs.
  double mfu = 0;
  std::vector<std::string> system_notes;  // what reading the system file found
};

Simulation simulate(const Topology& t, const WorkloadSpec& w, const SimulationOptions& o = {});

}  // namespace tenet
