#include "sim/recorded_trace.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_set>

#include "sim/system.hpp"
#include "topo/error.hpp"
#include "topo/io.hpp"
#include "topo/limits.hpp"

namespace tenet::sim {
namespace {

using chakra::Node;

constexpr int64_t kMaxReplicatedNodes = int64_t{1}
                                        << 27;  // ~130 M nodes, tens of GB: past it, refuse

bool has_metadata_attr(const chakra::EtFile& f, std::string_view name) {
  for (const auto& a : f.metadata.attr())
    if (a.name() == name) return true;
  return false;
}

// Chakra's PyTorch converter writes a GlobalMetadata with the host trace's "schema" and, on every
// node, the operator's record-function id "rf_id" (src/converter/pytorch_converter.py,
// write_global_metadata and convert_json_to_protobuf_node).
bool from_pytorch(const std::vector<chakra::EtFile>& w) {
  for (const chakra::EtFile& f : w) {
    if (has_metadata_attr(f, "schema")) return true;
    for (const Node& n : f.nodes)
      if (chakra::has_attr(n, "rf_id") && chakra::has_attr(n, "op_schema")) return true;
  }
  return false;
}

std::string group_text(const std::vector<int>& members) {
  return fmt::format("{}", fmt::join(members, ","));
}

// The process-group table of a METADATA node: inputs.values is Python's str() of a one-element list
// holding the JSON text, "['[{...}, ...]']" (ASTRA-sim's Workload::issue_pytorch_pg_metadata strips
// the two characters at each end the same way). Returns false when it is not such a table.
bool read_pg_table(const Node& n, const std::string& where,
                   std::map<std::string, std::vector<int>>& table,
                   std::vector<std::string>& notes) {
  std::string text = n.inputs().values();
  if (text.size() >= 4 && text.compare(0, 2, "['") == 0 &&
      text.compare(text.size() - 2, 2, "']") == 0)
    text = text.substr(2, text.size() - 4);
  if (text.empty() || text.front() != '[') return false;
  try {
    topo::check_nesting(text, where);
    const nlohmann::json j = nlohmann::json::parse(text);
    if (!j.is_array()) return false;
    for (const auto& item : j) {
      if (!item.is_object() || !item.contains("pg_name") || !item.contains("ranks")) return false;
      const auto& name = item.at("pg_name");
      std::vector<int> ranks = item.at("ranks").get<std::vector<int>>();
      table[name.is_string() ? name.get<std::string>() : name.dump()] = std::move(ranks);
    }
    return true;
  } catch (const std::exception& e) {
    notes.push_back(fmt::format("{}: the process-group table could not be read ({}); ignored",
                                where, e.what()));
    return false;
  }
}

// What prepare_trace counts over the recorded files besides the summary's own fields.
struct Tally {
  std::set<int64_t> streams;
  int64_t broadcasts = 0, cpu_comm = 0;
};

// Drops `n`'s dependencies that are not followed, counting them in `s`.
void drop_deps(Node& n, const std::unordered_set<uint64_t>& ids, TraceSummary& s) {
  // Dependencies on absent nodes always go; control ones too in Data mode.
  auto keep = [&](google::protobuf::RepeatedField<uint64_t>* deps, bool control) {
    int kept = 0;
    for (int i = 0; i < deps->size(); ++i) {
      const uint64_t d = deps->Get(i);
      if (!ids.count(d))
        ++s.absent_deps_dropped;
      else if (control && s.deps == DepsMode::Data)
        ++s.ctrl_deps_dropped;
      else
        deps->Set(kept++, d);
    }
    deps->Truncate(kept);
  };
  keep(n.mutable_data_deps(), false);
  keep(n.mutable_ctrl_deps(), true);
}

// Counts `n` as compute or communication; a host-side communication node becomes a COMP node.
void count_node(Node& n, TraceSummary& s, Tally& tally) {
  const bool cpu = chakra::int_attr(n, "is_cpu_op").value_or(0) != 0;
  const bool comm = n.type() == ChakraProtoMsg::COMM_COLL_NODE ||
                    n.type() == ChakraProtoMsg::COMM_SEND_NODE ||
                    n.type() == ChakraProtoMsg::COMM_RECV_NODE;
  if (comm && cpu) {
    // PyTorch's host-side c10d operator (c10d::allreduce_, ...): it launches the NCCL kernel,
    // which is the node that carries comm_type and comm_size. It is CPU time, not a transfer.
    ++tally.cpu_comm;
    n.set_type(ChakraProtoMsg::COMP_NODE);
  }
  if (n.type() == ChakraProtoMsg::COMP_NODE) {
    if (cpu) {
      ++s.cpu_ops;
    } else {
      ++s.gpu_kernels;
      if (auto stream = chakra::int_attr(n, "stream")) tally.streams.insert(*stream);
    }
  }
  if (n.type() != ChakraProtoMsg::COMM_COLL_NODE) return;
  if (const auto type = chakra::int_attr(n, "comm_type")) {
    const auto kind = collective_of_comm_type(*type);
    ++s.collectives[kind                               ? std::string(synth::to_string(*kind))
                    : *type == ChakraProtoMsg::BARRIER ? std::string("barrier")
                                                       : fmt::format("comm_type {}", *type)];
    if (*type == ChakraProtoMsg::BROADCAST) ++tally.broadcasts;
  }
}

// Every node of `w`: its dependencies filtered and the node counted.
void filter_and_count(std::vector<chakra::EtFile>& w, TraceSummary& s, Tally& tally) {
  for (chakra::EtFile& f : w) {
    std::unordered_set<uint64_t> ids;
    ids.reserve(f.nodes.size());
    for (const Node& n : f.nodes) ids.insert(n.id());
    for (Node& n : f.nodes) {
      ++s.nodes;
      ++s.node_types[ChakraProtoMsg::NodeType_Name(n.type())];
      drop_deps(n, ids, s);
      count_node(n, s, tally);
    }
  }
}

// --replicate: the one rank file of `w` copied to o.replicate ranks.
void replicate_rank(std::vector<chakra::EtFile>& w, const TraceOptions& o,
                    const std::string& name) {
  if (w.size() != 1)
    throw Error(
        fmt::format("{}: --replicate runs a one-rank trace as N ranks, but it has {} rank files",
                    name, w.size()));
  topo::check_limit(
      static_cast<int64_t>(w[0].nodes.size()) * o.replicate, kMaxReplicatedNodes,
      fmt::format("nodes of {} replicas of {} nodes", o.replicate, w[0].nodes.size()));
  w.resize(o.replicate, w[0]);
}

// Rank r's process-group table: `o.groups` under the trace's own (rank 0's also into `recorded`).
std::map<std::string, std::vector<int>> group_table(
    const chakra::EtFile& f, int r, const std::string& where, const TraceOptions& o,
    TraceSummary& s, std::map<std::string, std::vector<int>>& recorded) {
  std::map<std::string, std::vector<int>> table = o.groups;
  for (const Node& n : f.nodes)
    if (n.type() == ChakraProtoMsg::METADATA_NODE && (r == 0 || o.replicate == 0)) {
      std::map<std::string, std::vector<int>> own;
      if (read_pg_table(n, fmt::format("{} node {}", where, n.id()), own, s.notes))
        for (auto& [g, ranks] : own) {
          if (r == 0) recorded[g] = ranks;
          table[g] = std::move(ranks);
        }
    }
  return table;
}

// Writes tenet_ranks on the collectives of rank file `f` from `table`, the groups into `s`.
void tag_collectives(chakra::EtFile& f, const std::string& where, const TraceOptions& o,
                     const std::map<std::string, std::vector<int>>& table,
                     const std::vector<int>& everyone, TraceSummary& s) {
  const int p = static_cast<int>(everyone.size());
  for (Node& n : f.nodes) {
    if (n.type() != ChakraProtoMsg::COMM_COLL_NODE || chakra::has_attr(n, "tenet_ranks"))
      continue;  // Tenet's own wins
    const std::string pg = chakra::string_attr(n, "pg_name").value_or("");
    if (o.replicate > 0 || pg.empty() || pg == "0") {
      // Every rank: no tenet_ranks says so (every rank naming every rank grows as their square).
      s.groups.try_emplace(pg.empty() ? "0" : pg, everyone);
      continue;
    }
    auto it = table.find(pg);
    if (it == table.end())
      throw Error(fmt::format(
          "{} node {} ('{}'): process group '{}' is in neither the trace's process-group table "
          "(its METADATA node) nor a --comm-groups file",
          where, n.id(), n.name(), pg));
    const std::vector<int>& members = it->second.empty() ? everyone : it->second;
    for (int m : members)
      if (m < 0 || m >= p)
        throw Error(fmt::format(
            "{} node {} ('{}'): process group '{}' holds rank {}, but the workload has {} "
            "rank{}{}",
            where, n.id(), n.name(), pg, m, p, p == 1 ? "" : "s",
            p == 1 ? " (--replicate N runs a one-rank trace as N data-parallel ranks)" : ""));
    s.groups[pg] = members;
    chakra::set_string(n.add_attr(), "tenet_ranks", group_text(members));
  }
}

// The summary's notes on what runs differently from the recording.
void add_notes(TraceSummary& s, const TraceOptions& o,
               const std::map<std::string, std::vector<int>>& recorded_groups, const Tally& tally) {
  const int p = s.ranks;
  if (s.ctrl_deps_dropped > 0)
    s.notes.push_back(fmt::format(
        "{} control dependencies not followed: Chakra's PyTorch converter writes each operator's "
        "parent there, not an order (ASTRA-sim's feeder does not follow them either; --deps all "
        "does)",
        s.ctrl_deps_dropped));
  if (s.absent_deps_dropped > 0)
    s.notes.push_back(fmt::format(
        "{} dependencies name nodes that are not in their rank's file: dropped (the converter "
        "prunes such nodes after its children name them; ASTRA-sim never resolves them either)",
        s.absent_deps_dropped));
  if (o.replicate > 0) {
    std::string recorded;
    for (const auto& [g, ranks] : recorded_groups)
      recorded += fmt::format("{}{} [{}]", recorded.empty() ? "" : ", ", g,
                              ranks.empty() ? "all" : group_text(ranks));
    s.notes.push_back(fmt::format(
        "replicated {} times as data-parallel ranks: every collective spans all {}{}", o.replicate,
        o.replicate,
        recorded.empty() ? "" : fmt::format(" (the recording's process groups: {})", recorded)));
  } else if (p == 1 && !s.collectives.empty()) {
    s.notes.push_back(
        "one rank: its collectives have no peers and take no time (--replicate N runs it as N "
        "data-parallel "
        "ranks)");
  }
  if (tally.broadcasts > 0)
    s.notes.push_back(
        fmt::format("{} broadcasts run on the network (ASTRA-sim replays a broadcast's recorded "
                    "duration instead)",
                    tally.broadcasts));
  if (s.gpu_streams > 1)
    s.notes.push_back(fmt::format(
        "GPU kernels of {} streams run one at a time, as ASTRA-sim runs them", s.gpu_streams));
  if (tally.cpu_comm > 0)
    s.notes.push_back(fmt::format(
        "{} communication nodes marked is_cpu_op (PyTorch's host-side c10d operators, which "
        "launch the NCCL kernels that carry comm_type and comm_size) run as CPU operators for "
        "their recorded duration",
        tally.cpu_comm));
}

}  // namespace

DepsMode parse_deps_mode(const std::string& name) {
  if (name == "auto") return DepsMode::Auto;
  if (name == "all") return DepsMode::All;
  if (name == "data") return DepsMode::Data;
  throw Error(fmt::format("unknown dependency mode '{}' (auto, all, data)", name));
}

std::map<std::string, std::vector<int>> read_comm_groups(const std::string& path) {
  const std::string text = topo::read_file(path);
  topo::check_nesting(text, path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{}: not JSON: {}", path, e.what()));
  }
  if (!j.is_object())
    throw Error(
        fmt::format("{}: a communicator-group file is an object of group ids to rank lists, e.g. "
                    "{{\"1\": [0, 1]}}",
                    path));
  std::map<std::string, std::vector<int>> out;
  for (auto it = j.begin(); it != j.end(); ++it) {
    std::vector<int> ranks;
    if (!it.value().is_array())
      throw Error(fmt::format("{}: group '{}': not a list of ranks", path, it.key()));
    for (const auto& r : it.value()) {
      if (!r.is_number_integer() || r.get<int64_t>() < 0 || r.get<int64_t>() > topo::kMaxNodes)
        throw Error(fmt::format("{}: group '{}': {} is not a rank", path, it.key(), r.dump()));
      ranks.push_back(r.get<int>());
    }
    out[it.key()] = std::move(ranks);
  }
  return out;
}

TraceSummary prepare_trace(std::vector<chakra::EtFile>& w, const TraceOptions& o,
                           const std::string& name) {
  TraceSummary s;
  s.ranks_recorded = static_cast<int>(w.size());
  s.from_pytorch = from_pytorch(w);
  s.deps = o.deps == DepsMode::Auto ? (s.from_pytorch ? DepsMode::Data : DepsMode::All) : o.deps;

  Tally tally;
  // Dependencies and counts over the recorded files.
  filter_and_count(w, s, tally);

  std::map<std::string, std::vector<int>> recorded_groups;  // rank 0's table, for the summary
  if (o.replicate > 0) replicate_rank(w, o, name);
  const int p = static_cast<int>(w.size());
  s.ranks = p;
  std::vector<int> everyone(p);
  for (int r = 0; r < p; ++r) everyone[r] = r;

  // Process groups into tenet_ranks.
  for (int r = 0; r < p; ++r) {
    chakra::EtFile& f = w[r];
    const std::string where = fmt::format("{} rank {}", name, r);
    // The rank's process-group table: the trace's own entries override a --comm-groups file's.
    const std::map<std::string, std::vector<int>> table =
        group_table(f, r, where, o, s, recorded_groups);
    tag_collectives(f, where, o, table, everyone, s);
  }
  s.gpu_streams = static_cast<int>(tally.streams.size());

  add_notes(s, o, recorded_groups, tally);
  return s;
}

std::string describe(const TraceSummary& s) {
  std::vector<std::string> types;
  for (const auto& [type, count] : s.node_types) types.push_back(fmt::format("{} {}", count, type));
  std::string out = fmt::format(
      "trace           {} rank file{}{}{}: {} nodes ({})\n", s.ranks_recorded,
      s.ranks_recorded == 1 ? "" : "s", s.from_pytorch ? " from PyTorch (Chakra's converter)" : "",
      s.ranks != s.ranks_recorded ? fmt::format(", run as {} ranks", s.ranks) : std::string(),
      s.nodes, fmt::join(types, ", "));
  if (s.cpu_ops + s.gpu_kernels > 0)
    out += fmt::format(
        "compute nodes   {} CPU operators, {} GPU kernels{}\n", s.cpu_ops, s.gpu_kernels,
        s.gpu_streams > 0
            ? fmt::format(" on {} stream{}", s.gpu_streams, s.gpu_streams == 1 ? "" : "s")
            : std::string());
  if (!s.collectives.empty()) {
    std::vector<std::string> colls;
    for (const auto& [kind, count] : s.collectives)
      colls.push_back(fmt::format("{} {}", count, kind));
    std::vector<std::string> groups;
    for (const auto& [g, members] : s.groups)
      groups.push_back(
          fmt::format("'{}' ({} rank{})", g, members.size(), members.size() == 1 ? "" : "s"));
    out +=
        fmt::format("collectives     {} (nodes in the rank files){}\n", fmt::join(colls, ", "),
                    groups.empty() ? std::string()
                                   : fmt::format("; process groups {}", fmt::join(groups, ", ")));
  }
  out += fmt::format("dependencies    {}\n",
                     s.deps == DepsMode::Data ? "data only (--deps data)" : "data and control");
  for (const std::string& n : s.notes) out += fmt::format("note            {}\n", n);
  return out;
}

}  // namespace tenet::sim
