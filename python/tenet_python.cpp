// The Python module `tenet`: tenet/tenet.hpp's API for Python (docs/python.md). Results are plain
// Python objects (numbers, strings, lists, dicts); an algorithm's transfers come as columns, one
// list per field, without numpy. Times are integer picoseconds (`*_ps`), sizes bytes (a size may
// also be given as text: "64MiB"). Errors are tenet.Error (a ValueError) with the command's
// message, and tenet.NotApplicable (a tenet.Error) for an algorithm that does not apply.
// The long calls (synthesize, simulate, verify, rescale, export) release the GIL.
#include <fmt/format.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <variant>
#include <vector>

#include "astra/bundle.hpp"
#include "synth/ir/provenance.hpp"
#include "synth/verify/verify.hpp"
#include "tenet/tenet.hpp"
#include "topo/units.hpp"

namespace py = pybind11;

namespace tenet {
namespace {

using SizeArg = std::variant<Bytes, std::string>;

Bytes size_of(const SizeArg& size) {
  if (const Bytes* b = std::get_if<Bytes>(&size)) return *b;
  return parse_bytes(std::get<std::string>(size));
}

// An algorithm's transfers as columns: one list per field, in transfer order.
py::dict transfer_columns(const Algorithm& a) {
  std::vector<int64_t> chunk, count, src, dst, channel, start, end, rate;
  std::vector<bool> reduce;
  std::vector<std::vector<int32_t>> route, deps;
  const size_t n = a.size();
  for (auto* v : {&chunk, &count, &src, &dst, &channel, &start, &end, &rate}) v->reserve(n);
  reduce.reserve(n);
  route.reserve(n);
  deps.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const auto id = static_cast<synth::TransferId>(i);
    const synth::Transfer& t = a[id];
    chunk.push_back(t.chunk);
    count.push_back(t.count);
    src.push_back(t.src);
    dst.push_back(t.dst);
    channel.push_back(t.channel);
    start.push_back(t.start);
    end.push_back(t.end);
    rate.push_back(a.rate(id));
    reduce.push_back(t.op == synth::Op::Reduce);
    const auto r = a.route(id);
    route.emplace_back(r.begin(), r.end());
    const auto d = a.deps(id);
    deps.emplace_back(d.begin(), d.end());
  }
  py::dict out;
  out["chunk"] = chunk;
  out["count"] = count;
  out["src"] = src;
  out["dst"] = dst;
  out["reduce"] = reduce;
  out["channel"] = channel;
  out["start_ps"] = start;
  out["end_ps"] = end;
  out["rate"] = rate;
  out["route"] = route;
  out["deps"] = deps;
  return out;
}

py::dict report_dict(const synth::Report& r) {
  py::dict out;
  out["correct"] = r.correct();
  out["violation_count"] = r.violation_count;
  std::vector<std::string> violations;
  for (const synth::Violation& v : r.violations) violations.push_back(v.message);
  out["violations"] = violations;
  std::vector<std::string> warnings;
  for (const synth::Warning& w : r.warnings) warnings.push_back(w.message);
  out["warnings"] = warnings;
  out["transfers"] = r.transfers;
  out["time_ps"] = r.collective_time;
  out["claimed_ps"] = r.claimed_time;
  out["model_ps"] = r.model_time;
  out["bound_ps"] = r.bound.total;
  out["bound_limit"] = r.bound.limit;
  out["ratio"] = r.ratio();
  out["links_used"] = r.links_used;
  out["max_utilization"] = r.max_utilization;
  return out;
}

py::dict exported_dict(const exporting::Exported& e) {
  py::dict out;
  out["written"] = e.written;
  py::dict skipped;
  for (const auto& [format, why] : e.skipped) skipped[py::str(format)] = why;
  out["skipped"] = skipped;
  out["warnings"] = e.warnings;
  out["astra_ps"] = e.astra_time;
  out["msccl_ps"] = e.msccl_time;
  out["astra_notes"] = e.astra_notes;
  return out;
}

py::list collective_rows(const sim::SimResult& r) {
  py::list rows;
  for (const sim::CollectiveRow& c : r.collective_rows) {
    py::dict row;
    row["group"] = c.group;
    row["groups"] = c.groups;
    row["collective"] = std::string(synth::to_string(c.kind));
    row["bytes"] = c.bytes;
    row["algorithm"] = c.algorithm;
    row["method"] = c.method;
    row["chunks_per_npu"] = c.chunks_per_npu;
    row["protocol"] = c.protocol;
    row["calls"] = c.calls;
    row["time_ps"] = c.time;
    row["wait_ps"] = c.wait;
    row["exposed_ps"] = c.exposed;
    row["busiest_link"] = c.busiest_link;
    rows.append(row);
  }
  return rows;
}

// The module's errors and types.
void bind_types(py::module_& m) {
  // (A translator per type; the later registered is tried first.)
  auto& error = py::register_exception<Error>(m, "Error", PyExc_ValueError);
  py::register_exception<NotApplicable>(m, "NotApplicable", error.ptr());

  py::class_<Topology>(m, "Topology", "A topology: NPUs, switches and directed links.")
      .def_property_readonly("name", &Topology::name)
      .def_property_readonly("npus", &Topology::num_npus)
      .def_property_readonly("switches", &Topology::num_switches)
      .def_property_readonly("links", &Topology::num_links)
      .def_property_readonly("step_costs", &Topology::charges_steps)
      .def_property_readonly(
          "protocols",
          [](const Topology& t) {
            py::list out;
            for (const topo::Protocol& p : t.protocols()) {
              py::dict d;
              d["name"] = p.name;
              d["bandwidth"] = p.bandwidth;
              d["step_ps"] = p.step;
              d["step_scale"] = p.step_scale;
              d["in_network"] = p.in_network;
              d["excludes"] = p.excludes;
              out.append(d);
            }
            return out;
          },
          "The runtime protocols its algorithms may run: name, bandwidth (the share of every "
          "link's), step_ps, in_network (switches reduce and multicast under it), excludes "
          "(producers that cannot run it).")
      .def(
          "link",
          [](const Topology& t, int l) {
            if (l < 0 || l >= t.num_links())
              throw Error(
                  fmt::format("link {}: the topology has links 0 to {}", l, t.num_links() - 1));
            const topo::Link& k = t.link(l);
            py::dict d;
            d["src"] = t.describe_node(k.src);
            d["dst"] = t.describe_node(k.dst);
            d["bandwidth"] = k.bandwidth;
            d["latency_ps"] = k.latency;
            d["step_ps"] = k.step;
            return d;
          },
          py::arg("id"), "Link `id`: its ends' names, bandwidth (B/s), latency and step (ps).")
      .def("__repr__", [](const Topology& t) {
        return fmt::format("<tenet.Topology {}: {} NPUs, {} switches, {} links>", t.name(),
                           t.num_npus(), t.num_switches(), t.num_links());
      });

  py::class_<Algorithm>(m, "Algorithm", "An algorithm: a collective's transfers, timed.")
      .def_readonly("name", &Algorithm::name)
      .def_readonly("method", &Algorithm::method)
      .def_readonly("chunk_bytes", &Algorithm::chunk_bytes)
      .def_readonly("claimed_ps", &Algorithm::claimed_time)
      .def_readonly("protocol", &Algorithm::protocol)
      .def_property_readonly("collective",
                             [](const Algorithm& a) { return a.collective.describe(); })
      .def_property_readonly(
          "kind",
          [](const Algorithm& a) { return std::string(synth::to_string(a.collective.kind)); })
      .def_property_readonly("ranks", [](const Algorithm& a) { return a.collective.ranks; })
      .def_property_readonly("chunks_per_npu",
                             [](const Algorithm& a) { return a.collective.chunks_per_npu; })
      .def("__len__", &Algorithm::size)
      .def("transfers", &transfer_columns,
           "The transfers as columns: a dict of equal-length lists (chunk, src, dst, reduce, "
           "channel, start_ps, end_ps, rate, route, deps).")
      .def("__repr__", [](const Algorithm& a) {
        return fmt::format("<tenet.Algorithm {} of {}: {} transfers, {} ps>", a.name,
                           a.collective.describe(), a.size(), a.claimed_time);
      });
}

// The module's topology, bound and synthesis functions.
void bind_synthesis(py::module_& m) {
  m.def("load_topology", &load_topology, py::arg("path_or_spec"), py::arg("step_costs") = true,
        "A topology file (YAML, JSON, DOT, ASTRA-sim network.yml), a generator spec "
        "('torus2d:8x8') or a system preset ('dgx-h100'). step_costs: every transfer pays its "
        "route's per-step cost (the command's default).");

  m.def("parse_topology", &parse_topology, py::arg("text"), py::arg("step_costs") = true,
        py::arg("name") = "<string>",
        "A topology file's text (Tenet YAML or JSON); errors name `name` and the line.");

  m.def(
      "lower_bound",
      [](const Topology& t, const std::string& collective, const SizeArg& size,
         const std::string& ranks, int root) {
        const synth::LowerBound b =
            lower_bound(t, {parse_collective(collective), size_of(size), ranks, root});
        py::dict out;
        out["total_ps"] = b.total;
        out["bandwidth_ps"] = b.bandwidth;
        out["step_ps"] = b.step;
        out["latency_ps"] = b.latency;
        out["label"] = b.label;
        out["terms"] = synth::describe(b);
        out["limit"] = b.limit;
        return out;
      },
      py::arg("topology"), py::arg("collective"), py::arg("size"), py::arg("ranks") = "",
      py::arg("root") = 0,
      "The lower bound of `collective` of `size` on `topology`: no algorithm is faster than "
      "total_ps. A dict: total_ps, bandwidth_ps, step_ps, latency_ps, label, terms (its terms "
      "in words), limit (what limits it, in the topology's names).");

  m.def(
      "synthesize",
      [](const Topology& t, const std::string& collective, const SizeArg& size,
         const std::string& algorithm, int chunks_per_npu, const std::string& ranks, int root,
         double time_limit, const std::string& cache) {
        CollectiveSpec spec{parse_collective(collective), size_of(size), ranks, root};
        SynthesisOptions o;
        o.algorithm = algorithm;
        o.chunks_per_npu = chunks_per_npu;
        o.time_limit = time_limit;
        o.cache = cache;
        Synthesis s;
        {
          py::gil_scoped_release free;
          s = synthesize(t, spec, o);
        }
        py::dict out;
        out["algorithm"] = py::cast(std::move(s.algorithm));
        out["time_ps"] = s.time;
        out["bound_ps"] = s.report.bound.total;
        out["bound_limit"] = s.report.bound.limit;
        out["ratio"] = s.ratio;
        out["chunks_per_npu"] = s.chunks_per_npu;
        out["seconds"] = s.seconds;
        out["from_cache"] = s.from_cache;
        out["stopped_early"] = s.stopped_early;
        out["correct"] = s.report.correct();
        return out;
      },
      py::arg("topology"), py::arg("collective"), py::arg("size"), py::arg("algorithm") = "tenet",
      py::arg("chunks_per_npu") = 0, py::arg("ranks") = "", py::arg("root") = 0,
      py::arg("time_limit") = 0.0, py::arg("cache") = "",
      "Makes `collective` ('all-reduce', 'all-gather', ...) of `size` on `topology` with "
      "`algorithm` ('tenet' or a baseline: 'ring', 'ring:8', 'direct', ...), verified. "
      "chunks_per_npu 0: searched. ranks: a group ('0-7'). time_limit: seconds (0: none). "
      "cache: the algorithm cache's folder ('': none). Returns a dict: algorithm, time_ps, "
      "bound_ps, bound_limit, ratio, chunks_per_npu, seconds, from_cache, stopped_early, correct.");
}

// The module's functions on algorithms: verify, re-time, rescale, import, export, simulate.
void bind_algorithms(py::module_& m) {
  m.def(
      "verify",
      [](const Topology& t, const Algorithm& a) {
        synth::Report r;
        {
          py::gil_scoped_release free;
          r = verify(t, a);
        }
        return report_dict(r);
      },
      py::arg("topology"), py::arg("algorithm"),
      "Every check `tenet verify` makes. A dict: correct, violation_count, violations, warnings, "
      "transfers, time_ps, claimed_ps, model_ps, bound_ps, bound_limit, ratio, links_used, "
      "max_utilization.");

  m.def(
      "retime", [](const Topology& t, Algorithm& a) { return retime(t, a); }, py::arg("topology"),
      py::arg("algorithm"), "Re-times `algorithm` under its link model; its time in ps.");

  m.def(
      "rescale",
      [](const Topology& t, const Algorithm& a, const SizeArg& size) {
        const Bytes bytes = size_of(size);
        py::gil_scoped_release free;
        return rescale(t, a, bytes);
      },
      py::arg("topology"), py::arg("algorithm"), py::arg("size"),
      "`algorithm` at another size, its structure kept (chunks scaled), re-timed.");

  m.def("load_algorithm", &load_algorithm, py::arg("path"), py::arg("topology"),
        "An algorithm file: Tenet JSON, MSCCL-XML (or ForestColl's tree XML), or a Chakra prefix.");

  m.def(
      "forestcoll_all_gather",
      [](const std::string& path, const Topology& t, const SizeArg& size, int slices) {
        const Bytes bytes = size_of(size);
        py::gil_scoped_release free;
        return forestcoll_all_gather(path, t, bytes, slices);
      },
      py::arg("path"), py::arg("topology"), py::arg("size"), py::arg("slices") = 1,
      "ForestColl's spanning trees (its tree XML) as the All-Gather of `size` they make, each "
      "part streamed down its tree in `slices` chunks, timed on `topology` (named as ForestColl "
      "names its nodes).");

  m.def(
      "export_algorithm",
      [](const Topology& t, const Algorithm& a, const std::vector<std::string>& formats,
         const std::string& folder, const std::string& astra_network) {
        exporting::ExportOptions o;
        o.astra_network = astra::parse_astra_network(astra_network);
        exporting::Exported e;
        {
          py::gil_scoped_release free;
          e = export_algorithm(t, a, formats, folder, o);
        }
        return exported_dict(e);
      },
      py::arg("topology"), py::arg("algorithm"), py::arg("formats"), py::arg("folder"),
      py::arg("astra_network") = "auto",
      "Writes `algorithm` in each of `formats` ('json', 'msccl-xml', 'chakra', 'astra-sim') "
      "into `folder`, committed together; the astra-sim folder runs on `astra_network` "
      "('analytical', 'ns3', or 'auto': analytical where the topology is ASTRA-sim dimensions). "
      "A dict: written, skipped (format: why), warnings, astra_ps, msccl_ps, astra_notes.");

  m.def(
      "simulate",
      [](const Topology& t, const std::string& workload, int tp, int pp, int microbatches,
         const std::string& schedule, int64_t batch, int64_t sequence, const std::string& network,
         const std::string& collectives, int chunks_per_npu, double peak_flops,
         double compute_efficiency, double memory_efficiency, bool one_replica,
         const std::string& system, const std::string& cache, double time_limit) {
        const WorkloadSpec w{workload, tp,    pp,       microbatches,
                             schedule, batch, sequence, one_replica};
        SimulationOptions o;
        o.network = network;
        o.collectives = collectives;
        o.chunks_per_npu = chunks_per_npu;
        o.peak_flops = peak_flops;
        o.compute_efficiency = compute_efficiency;
        o.memory_efficiency = memory_efficiency;
        o.system = system;
        o.cache = cache;
        o.time_limit = time_limit;
        Simulation s;
        {
          py::gil_scoped_release free;
          s = simulate(t, w, o);
        }
        py::dict out;
        out["name"] = s.name;
        out["iteration_ps"] = s.result.iteration;
        out["mfu"] = s.mfu;
        out["collectives"] = collective_rows(s.result);
        out["warnings"] = s.result.warnings;
        out["system_notes"] = s.system_notes;
        std::vector<Time> finish;
        for (const sim::RankStats& k : s.result.ranks) finish.push_back(k.finish);
        out["rank_finish_ps"] = finish;
        return out;
      },
      py::arg("topology"), py::arg("workload") = "resnet50", py::arg("tp") = 1, py::arg("pp") = 1,
      py::arg("microbatches") = 1, py::arg("schedule") = "1f1b", py::arg("batch") = 0,
      py::arg("sequence") = 0, py::arg("network") = "analytical", py::arg("collectives") = "",
      py::arg("chunks_per_npu") = 0, py::arg("peak_flops") = 0.0,
      py::arg("compute_efficiency") = 0.0, py::arg("memory_efficiency") = 0.0,
      py::arg("one_replica") = false, py::arg("system") = "", py::arg("cache") = "",
      py::arg("time_limit") = 0.0,
      "Simulates a model preset's training iteration ('resnet50', 'gpt3-175b', "
      "'gpt:layers=24,hidden=2304,heads=24', ...) or Chakra ET files (a prefix) on `topology`, as "
      "`tenet sim`. collectives: as --coll ('all-reduce=ring'). peak_flops: per NPU (0: the "
      "system file's, else 312e12). compute_efficiency, memory_efficiency: shares of the peak and "
      "of the memory bandwidth (0: the workload's default, Megatron-LM's calibration for a gpt: "
      "model, else 1). one_replica: as --one-replica. system: an "
      "ASTRA-sim system.json. A dict: name, iteration_ps, mfu, collectives (one dict per "
      "collective, size and group), warnings, system_notes, rank_finish_ps.");
}

}  // namespace
}  // namespace tenet

PYBIND11_MODULE(tenet, m) {
  using namespace tenet;
  m.doc() =
      "Tenet: synthesize, verify, export and simulate collective communication algorithms.\n"
      "Times are integer picoseconds (*_ps); sizes are bytes or text such as '64MiB'.";

  bind_types(m);
  bind_synthesis(m);
  bind_algorithms(m);
}
