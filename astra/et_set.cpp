#include "astra/et_set.hpp"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "astra/analytical.hpp"
#include "topo/io.hpp"

namespace tenet::astra {

using synth::Algorithm;

std::optional<std::string> astra_collective_name(synth::CollectiveKind k) {
  switch (k) {
    case synth::CollectiveKind::AllReduce:
      return "all-reduce";
    case synth::CollectiveKind::AllGather:
      return "all-gather";
    case synth::CollectiveKind::ReduceScatter:
      return "reduce-scatter";
    case synth::CollectiveKind::AllToAll:
      return "all-to-all";
    default:
      return std::nullopt;
  }
}

void stage_astra_files(const Algorithm& a, const topo::Topology& t, topo::OutputFolder& out,
                       const std::string& subdir, const std::string& stem) {
  const auto rel = [&](const std::string& name) {
    return (std::filesystem::path(subdir) / name).string();
  };
  // So do an earlier export's system.json and network.yml that this one does not replace.
  out.remove_at_commit(rel("system.json"));
  out.remove_at_commit(rel("network.yml"));
  if (auto key = astra_collective_name(a.collective.kind)) {
    nlohmann::ordered_json sys;
    sys["scheduling-policy"] = "LIFO";
    sys["endpoint-delay"] = 10;
    sys["active-chunks-per-dimension"] = 1;
    sys["preferred-dataset-splits"] = 1;
    sys[*key + "-implementation-custom"] = nlohmann::ordered_json::array({stem});
    sys["collective-optimization"] = "localBWAware";
    sys["local-mem-bw"] = 1600;
    sys["boost-mode"] = 0;
    topo::write_file_atomically(out.stage(rel("system.json")), sys.dump(2) + "\n");
  }
  if (auto yml = astra_network_yml(t))
    topo::write_file_atomically(out.stage(rel("network.yml")), *yml);
}

void stage_astra_collective(const chakra::CollectiveGraphPlan& plan, const Algorithm& a,
                            const topo::Topology& t, topo::OutputFolder& out,
                            const std::string& subdir, const std::string& stem) {
  chakra::stage_collective_graph(plan, out, subdir, stem);
  stage_astra_files(a, t, out, subdir, stem);
}

std::vector<std::string> write_astra_collective(const Algorithm& a, const topo::Topology& t,
                                                const std::string& dir, const std::string& stem,
                                                const chakra::GraphOptions& options) {
  topo::OutputFolder out(dir);
  chakra::stage_collective_graph(chakra::to_collective_graph(a, t, options), out, "", stem);
  stage_astra_files(a, t, out, "", stem);
  return out.commit();
}

}  // namespace tenet::astra
