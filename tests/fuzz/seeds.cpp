// Writes the seed corpus of every fuzz harness: valid inputs of each format, made by Tenet's own
// writers from generated topologies, baselines and workload presets, so the fuzzer starts from
// inputs that reach deep into each reader. Usage: tenet_fuzz_seeds OUTPUT_FOLDER
// (OUTPUT_FOLDER/<harness>/<seed>).
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "astra/analytical.hpp"
#include "bench/suite.hpp"
#include "chakra/collective_graph.hpp"
#include "chakra/et.hpp"
#include "sim/workload.hpp"
#include "synth/formats/algorithm_columns.hpp"
#include "synth/formats/algorithm_json.hpp"
#include "synth/formats/msccl_xml.hpp"
#include "synth/producers.hpp"
#include "synth/synthesizer.hpp"
#include "tests/fuzz/topologies.hpp"
#include "tests/sim/pytorch_trace.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"
#include "topo/presets.hpp"

namespace {

using namespace tenet;

std::filesystem::path root;
int written = 0;

void seed(const std::string& harness, const std::string& name, const std::string& bytes) {
  const std::filesystem::path dir = root / harness;
  std::filesystem::create_directories(dir);
  topo::write_file_atomically((dir / name).string(), bytes);
  ++written;
}

std::string ranks_bytes(const std::vector<chakra::EtFile>& files) {
  std::string out;
  for (size_t r = 0; r < files.size(); ++r) {
    if (r > 0) out += fuzz::kRankSeparator;
    out += chakra::serialize_et(files[r]);
  }
  return out;
}

void topologies() {
  const std::vector<std::string> specs = {"ring:4",
                                          "torus2d:3x3",
                                          "mesh2d:2x3,bw=25GB/s",
                                          "switch:4",
                                          "nvcluster:2x4,net=rail",
                                          "leafspine:2x2,spines=2",
                                          "hypercube:8"};
  for (size_t i = 0; i < specs.size(); ++i) {
    const topo::Topology t = topo::generate(specs[i]);
    seed("topology_yaml", fmt::format("gen{}.yaml", i), topo::to_yaml(t));
    seed("topology_yaml", fmt::format("gen{}.json", i), topo::to_json(t));
    seed("topology_dot", fmt::format("gen{}.dot", i), topo::to_dot(t));
    if (auto yml = astra::astra_network_yml(t))
      seed("topology_yaml", fmt::format("astra{}.yml", i), *yml);
  }
  for (const topo::Preset& p : topo::presets()) {
    seed("topology_yaml", std::string(p.name) + ".yaml", std::string(p.text));
    seed("topology_spec", std::string(p.name), std::string(p.name));
  }
  for (const topo::GeneratorInfo& g : topo::generators()) seed("topology_spec", g.name, g.example);
}

void algorithms() {
  struct Case {
    std::string topology, producer;
    synth::CollectiveKind kind;
  };
  const std::vector<Case> cases = {{"ring:4", "ring", synth::CollectiveKind::AllReduce},
                                   {"fc:4", "direct", synth::CollectiveKind::AllGather},
                                   {"torus2d:2x2", "tenet", synth::CollectiveKind::ReduceScatter},
                                   {"switch:4", "tenet", synth::CollectiveKind::Broadcast},
                                   {"fc:4", "tenet", synth::CollectiveKind::AllToAll},
                                   {"hypercube:4", "rhd", synth::CollectiveKind::AllReduce}};
  for (size_t i = 0; i < cases.size(); ++i) {
    const topo::Topology t = topo::generate(cases[i].topology);
    const synth::Collective c = synth::Collective::over_all(t, cases[i].kind, 2);
    const synth::Algorithm a = synth::make_algorithm(cases[i].producer, t, c, 4096);
    seed("algorithm_json", fmt::format("alg{}.json", i), synth::to_json(a));
    seed("algorithm_columns", fmt::format("alg{}", i), synth::transfers_to_columns(a));
    try {
      seed("msccl_xml", fmt::format("alg{}.xml", i), synth::to_msccl_xml(a));
    } catch (const Error&) {  // a collective MSCCL-XML does not have
    }
    try {
      seed("chakra_et", fmt::format("alg{}", i), ranks_bytes(chakra::to_collective_graph(a, t)));
    } catch (const Error&) {  // an endpoint that is not a rank
    }
  }
  // An All-to-Allv: its unit matrix in the JSON and in Chakra's metadata.
  const topo::Topology t = topo::generate("fc:3");
  synth::Collective v = synth::Collective::over_all(t, synth::CollectiveKind::AllToAll);
  v.set_pair_units({0, 2, 1, 0, 0, 3, 1, 0, 0});
  const synth::Algorithm a = synth::synthesize(t, v, 4096);
  seed("algorithm_json", "alltoallv.json", synth::to_json(a));
  seed("chakra_et", "alltoallv", ranks_bytes(chakra::to_collective_graph(a, t)));
}

// Traffic matrices: the first byte is the rank count less one.
void traffic() {
  seed("traffic", "csv3", std::string(1, '\x02') + "# bytes\n0,1MiB,4096\n10,0,0\n0,2KiB,0\n");
  seed("traffic", "json2", std::string(1, '\x01') + "{\"bytes\": [[0, 5], [\"1KiB\", 0]]}");
  seed("traffic", "json4", std::string(1, '\x03') + "[[0,1,2,3],[4,0,5,6],[7,8,0,9],[1,1,1,0]]");
}

void workloads() {
  seed("workload", "allreduce",
       ranks_bytes(sim::collective_microbenchmark(synth::CollectiveKind::AllReduce, 1 << 20, 4)));
  seed("workload", "alltoall",
       ranks_bytes(sim::collective_microbenchmark(synth::CollectiveKind::AllToAll, 1 << 16, 2)));
  seed("workload", "resnet50", ranks_bytes(sim::data_parallel(sim::model_preset("resnet50"), 2)));
  seed("workload", "pytorch",
       ranks_bytes(testing::pytorch_like_trace(2)));  // a process-group table, CPU operators
  seed("workload", "gpt3-tp2-pp2",
       ranks_bytes(
           sim::training_iteration(sim::model_preset("gpt3-175b"),
                                   sim::layout(4, 2, 2, 2, sim::PipelineSchedule::OneFOneB))));
}

void suites() {
  seed("bench_suite", "default.yaml", std::string(bench::default_suite_yaml()));
  seed("bench_suite", "small.yaml",
       "name: small\ntopologies: [ring:4, \"torus2d:2x2,bw=25GB/s\"]\ncollectives: [all-reduce, "
       "all-gather]\n"
       "algorithms: [tenet, ring]\nsizes: [1MiB, 64MiB]\nchunks: [1, auto]\n"
       "workloads: [{model: resnet50}, {model: gpt3-175b, tp: 2, pp: 2, microbatches: 4}]\n"
       "sim-algorithms: [tenet, ring]\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT_FOLDER\n", argv[0]);
    return 2;
  }
  root = argv[1];
  try {
    topologies();
    algorithms();
    workloads();
    suites();
    traffic();
  } catch (const tenet::Error& e) {
    std::fprintf(stderr, "tenet_fuzz_seeds: %s\n", e.what());
    return 1;
  }
  std::printf("%d seeds written under %s\n", written, root.string().c_str());
  return 0;
}
