// The checks of a collective graph: the reader rules ASTRA-sim enforces, and sends paired with
// receives across ranks as ASTRA-sim pairs them.
#include "chakra/collective_graph.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "chakra/collective_graph_detail.hpp"

namespace tenet::chakra {
namespace detail {

Pairing pair_up(const std::vector<EtFile>& files, const std::string& prefix) {
  Pairing out;
  const int p = static_cast<int>(files.size());
  using Key = std::tuple<int64_t, int, int, int64_t>;  // tag, source, destination, size
  std::map<Key, std::vector<Pairing::End>> sends, recvs;
  auto unpaired = [&](int r, const Node& n, std::string what) {
    out.problems.push_back({synth::ImportProblemKind::Unpaired, r, -1, static_cast<int64_t>(n.id()),
                            fmt::format("{}: node {}: {}", et_path(prefix, r), n.id(), what)});
  };
  for (int r = 0; r < p; ++r)
    for (size_t i = 0; i < files[r].nodes.size(); ++i) {
      const Node& n = files[r].nodes[i];
      const bool send = n.type() == ChakraProtoMsg::COMM_SEND_NODE;
      if (!send && n.type() != ChakraProtoMsg::COMM_RECV_NODE) continue;
      const auto peer = int_attr(n, send ? "comm_dst" : "comm_src");
      const auto tag = int_attr(n, "comm_tag"), size = int_attr(n, "comm_size");
      if (!peer || !tag || !size) continue;  // reported by the attribute rules
      if (*peer < 0 || *peer >= p) {
        unpaired(r, n,
                 fmt::format("{} {} is not a rank (0..{})", send ? "comm_dst" : "comm_src", *peer,
                             p - 1));
        if (!send) out.unpaired_recvs.push_back({r, i});
        continue;
      }
      const int other = static_cast<int>(*peer);
      if (send)
        sends[{*tag, r, other, *size}].push_back({r, i});
      else
        recvs[{*tag, other, r, *size}].push_back({r, i});
    }
  // Per (tag, source, destination): what is left unpaired, in file order.
  std::map<std::tuple<int64_t, int, int>,
           std::pair<std::vector<Pairing::End>, std::vector<Pairing::End>>>
      left;
  for (auto& [key, list] : sends) {
    auto& [tag, src, dst, size] = key;
    auto it = recvs.find(key);
    const size_t matched = it == recvs.end() ? 0 : std::min(list.size(), it->second.size());
    for (size_t k = 0; k < matched; ++k) out.pairs.push_back({list[k], it->second[k]});
    for (size_t k = matched; k < list.size(); ++k) left[{tag, src, dst}].first.push_back(list[k]);
  }
  for (auto& [key, list] : recvs) {
    auto& [tag, src, dst, size] = key;
    auto it = sends.find(key);
    const size_t have = it == sends.end() ? 0 : it->second.size();
    for (size_t k = have; k < list.size(); ++k) {
      left[{tag, src, dst}].second.push_back(list[k]);
      out.unpaired_recvs.push_back(list[k]);
    }
  }
  // A send and a receive left with the same tag and peers differ in size: one problem for both.
  for (auto& [key, ends] : left) {
    auto& [tag, src, dst] = key;
    const auto& [s, rv] = ends;
    for (size_t k = 0; k < std::max(s.size(), rv.size()); ++k) {
      if (k < s.size() && k < rv.size()) {
        const Node& sn = files[src].nodes[s[k].index];
        const Node& rn = files[dst].nodes[rv[k].index];
        unpaired(src, sn,
                 fmt::format("sends {} bytes to rank {} (tag {}), but {} node {} expects {}: "
                             "ASTRA-sim pairs a send with a receive of the same size",
                             *int_attr(sn, "comm_size"), dst, tag, et_path(prefix, dst), rn.id(),
                             *int_attr(rn, "comm_size")));
      } else if (k < s.size()) {
        const Node& sn = files[src].nodes[s[k].index];
        unpaired(src, sn,
                 fmt::format("send of {} bytes to rank {} with tag {} has no matching receive "
                             "in {}",
                             *int_attr(sn, "comm_size"), dst, tag, et_path(prefix, dst)));
      } else {
        const Node& rn = files[dst].nodes[rv[k].index];
        unpaired(dst, rn,
                 fmt::format("receive of {} bytes from rank {} with tag {} has no matching send "
                             "in {}",
                             *int_attr(rn, "comm_size"), src, tag, et_path(prefix, src)));
      }
    }
  }
  // The algorithm's order is decided later (ready_order); file order per key is ASTRA-sim's.
  return out;
}

}  // namespace detail

namespace {

using detail::kMaxTag;
using detail::meta_string;
using detail::pair_up;
using detail::Pairing;

}  // namespace

namespace detail {

std::vector<std::string> well_formed_problems(const std::vector<EtFile>& files,
                                              const std::string& prefix) {
  std::vector<std::string> problems;
  // Tenet's exports name their set: every rank must come from the same one.
  if (!files.empty())
    if (const auto set = meta_string(files[0].metadata, "tenet_set"))
      for (size_t r = 1; r < files.size(); ++r)
        if (const auto other = meta_string(files[r].metadata, "tenet_set").value_or("none");
            other != *set)
          problems.push_back(fmt::format(
              "{}: from another export than rank 0 (tenet_set {}, rank 0's {}): a folder "
              "mixing two runs",
              et_path(prefix, static_cast<int>(r)), other, *set));
  for (size_t r = 0; r < files.size(); ++r) {
    const std::string file = et_path(prefix, static_cast<int>(r));
    const auto& nodes = files[r].nodes;
    std::unordered_set<uint64_t> ids;
    for (const Node& n : nodes)
      if (!ids.insert(n.id()).second)
        problems.push_back(fmt::format("{}: node id {} is used twice", file, n.id()));
    for (const Node& n : nodes) {
      const std::string where = fmt::format("{}: node {} ('{}')", file, n.id(), n.name());
      auto need = [&](std::initializer_list<const char*> names) {
        for (const char* a : names)
          if (!has_attr(n, a))
            problems.push_back(fmt::format("{}: {} needs the attribute {}", where,
                                           ChakraProtoMsg::NodeType_Name(n.type()), a));
      };
      switch (n.type()) {
        case ChakraProtoMsg::COMM_SEND_NODE:
          need({"comm_dst", "comm_size", "comm_tag"});
          break;
        case ChakraProtoMsg::COMM_RECV_NODE:
          need({"comm_src", "comm_size", "comm_tag"});
          break;
        case ChakraProtoMsg::COMM_COLL_NODE:
          need({"comm_type", "comm_size"});
          break;
        case ChakraProtoMsg::COMP_NODE:
          if (n.duration_micros() == 0 && !has_attr(n, "num_ops")) need({"num_ops", "tensor_size"});
          break;
        case ChakraProtoMsg::INVALID_NODE:
          problems.push_back(fmt::format("{}: has type INVALID_NODE", where));
          break;
        default:
          break;
      }
      if (auto tag = int_attr(n, "comm_tag"); tag && (*tag < 0 || *tag >= kMaxTag))
        problems.push_back(fmt::format("{}: comm_tag {} is outside [0, 500,000,000)", where, *tag));
    }
  }
  return problems;
}

}  // namespace detail

std::vector<std::string> check_collective_graph(const std::vector<EtFile>& files,
                                                const std::string& prefix) {
  std::vector<std::string> problems = detail::well_formed_problems(files, prefix);
  const Pairing pairing = pair_up(files, prefix);
  const detail::ReadyOrder ready =
      detail::ready_order(files, pairing, std::vector<int64_t>(pairing.pairs.size(), 0), prefix);
  for (const auto* list : {&pairing.problems, &ready.problems})
    for (const synth::ImportProblem& p : *list) problems.push_back(p.message);
  return problems;
}

}  // namespace tenet::chakra
