#include "synth/groups/composed.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "synth/cost/timing.hpp"
#include "synth/groups/group_map.hpp"
#include "topo/analysis.hpp"

namespace tenet::synth {

std::optional<std::vector<std::vector<topo::NodeId>>> composed_servers(const topo::Topology& t,
                                                                       const Collective& c,
                                                                       Bandwidth* joined) {
  if (c.kind != CollectiveKind::AllReduce || c.uneven()) return std::nullopt;
  std::vector<std::vector<topo::NodeId>> servers = topo::servers_of(t, c.ranks, joined);
  if (servers.empty()) return std::nullopt;
  return servers;
}

namespace {

// Appends `part`'s transfers to `out`, chunk c becoming chunk_of[c] and channel h becoming
// h + channel_base (the highest channel written goes to `highest`).
void append(Algorithm& out, const Algorithm& part, const std::vector<ChunkId>& chunk_of,
            int channel_base, int& highest) {
  // A message whose chunks the renaming scatters is sent chunk by chunk.
  const bool contiguous =
      std::all_of(part.transfers().begin(), part.transfers().end(), [&](const Transfer& x) {
        for (int j = 1; j < x.count; ++j)
          if (chunk_of[static_cast<size_t>(x.chunk + j)] !=
              chunk_of[static_cast<size_t>(x.chunk)] + j)
            return false;
        return true;
      });
  if (!contiguous) {
    append(out, split_messages(part), chunk_of, channel_base, highest);
    return;
  }
  const auto base = static_cast<TransferId>(out.size());
  std::vector<TransferId> deps;
  for (TransferId id = 0; id < static_cast<TransferId>(part.size()); ++id) {
    const Transfer& x = part[id];
    deps.assign(part.deps(id).begin(), part.deps(id).end());
    for (TransferId& d : deps) d += base;
    const int channel = channel_base + x.channel;
    if (channel > 0xffff) throw Error("a composed algorithm needs over 65,535 channels");
    highest = std::max(highest, channel);
    out.add(chunk_of[static_cast<size_t>(x.chunk)], x.src, x.dst, part.route(id), x.op, deps, -1,
            -1, part.rate(id), static_cast<uint16_t>(channel), false, x.count);
  }
}

// Whether every transfer of `a` starts and ends at one of `npus`.
bool within(const topo::Topology& t, const Algorithm& a, const std::vector<topo::NodeId>& npus) {
  std::vector<char> member(static_cast<size_t>(t.num_nodes()), 0);
  for (topo::NodeId v : npus) member[static_cast<size_t>(v)] = 1;
  return std::all_of(a.transfers().begin(), a.transfers().end(), [&](const Transfer& x) {
    return member[static_cast<size_t>(x.src)] && member[static_cast<size_t>(x.dst)];
  });
}

// `first` (made over first.collective.ranks) over each of `groups`: renamed where a renaming is
// found, else made by `remake`. Nothing when one of them leaves its group.
std::optional<std::vector<Algorithm>> over_groups(
    const topo::Topology& t, const Algorithm& first,
    const std::vector<std::vector<topo::NodeId>>& groups, const LevelMaker& remake) {
  std::vector<Algorithm> out;
  out.reserve(groups.size());
  for (size_t j = 0; j < groups.size(); ++j) {
    if (j == 0) {
      out.push_back(first);
    } else if (std::optional<Algorithm> renamed = map_to_group(t, first, groups[j])) {
      out.push_back(std::move(*renamed));
    } else {
      Collective lc = first.collective;
      lc.ranks = groups[j];
      out.push_back(remake(lc));
    }
    if (!within(t, out.back(), groups[j])) return std::nullopt;
  }
  return out;
}

}  // namespace

bool composes_across(const Algorithm& across) {
  return std::none_of(across.transfers().begin(), across.transfers().end(),
                      [](const Transfer& x) { return x.from_input; });
}

std::optional<Algorithm> compose_all_reduce(const topo::Topology& t, const Collective& c, int k,
                                            Bytes chunk_bytes, LinkModel model,
                                            const ComposedLevels& levels,
                                            const LevelMaker& remake) {
  if (k < 1) throw Error(fmt::format("chunks per NPU must be at least 1, got {}", k));
  const auto servers = composed_servers(t, c);
  if (!servers) return std::nullopt;
  const int g = static_cast<int>((*servers)[0].size());
  const int across_chunks = levels.across.collective.num_chunks();
  if (across_chunks < 1 || k % across_chunks != 0) return std::nullopt;
  std::vector<std::vector<topo::NodeId>> rails(static_cast<size_t>(g));
  for (int i = 0; i < g; ++i)
    for (const auto& s : *servers)
      rails[static_cast<size_t>(i)].push_back(s[static_cast<size_t>(i)]);
  if (levels.reduce_scatter.collective.ranks != (*servers)[0] ||
      levels.all_gather.collective.ranks != (*servers)[0] ||
      levels.reduce_scatter.collective.num_chunks() != g ||
      levels.all_gather.collective.num_chunks() != g || levels.across.collective.ranks != rails[0])
    throw Error("compose_all_reduce: the levels are not over the first server and the first rail");

  const auto rs = over_groups(t, levels.reduce_scatter, *servers, remake);
  const auto ag = rs ? over_groups(t, levels.all_gather, *servers, remake) : std::nullopt;
  const auto across = ag ? over_groups(t, levels.across, rails, remake) : std::nullopt;
  if (!across || !std::all_of(across->begin(), across->end(), composes_across)) return std::nullopt;

  Algorithm out;
  out.name = "tenet";
  out.collective = c;
  out.collective.chunks_per_npu = 1;
  out.collective.all_reduce_chunks = g * k;
  out.topology_fingerprint = t.fingerprint();
  out.topology_name = t.name();
  out.chunk_bytes = chunk_bytes;
  out.link_model = model;
  out.step_costs = t.charges_steps();
  const size_t servers_size = rs->front().size() + ag->front().size();
  out.reserve(
      servers_size * servers->size() * static_cast<size_t>(k) +
          across->front().size() * static_cast<size_t>(g) * static_cast<size_t>(k / across_chunks),
      0, 0);

  int highest = 0;
  std::vector<ChunkId> chunk_of;
  // A server level's loop q: its chunk i (slice i) is chunk i*k + q.
  auto server_phase = [&](const std::vector<Algorithm>& per_server, int channel_base) {
    chunk_of.resize(static_cast<size_t>(g));
    for (int q = 0; q < k; ++q) {
      for (int i = 0; i < g; ++i) chunk_of[static_cast<size_t>(i)] = i * k + q;
      for (const Algorithm& a : per_server) append(out, a, chunk_of, channel_base, highest);
    }
  };
  server_phase(*rs, 0);
  // Rail i's loop r: its chunk q is chunk i*k + r*L + q.
  const int across_base = highest + 1;
  chunk_of.resize(static_cast<size_t>(across_chunks));
  for (int r = 0; r < k / across_chunks; ++r)
    for (int i = 0; i < g; ++i) {
      for (int q = 0; q < across_chunks; ++q)
        chunk_of[static_cast<size_t>(q)] = i * k + r * across_chunks + q;
      append(out, (*across)[static_cast<size_t>(i)], chunk_of, across_base, highest);
    }
  server_phase(*ag, highest + 1);
  time(t, out);
  return out;
}

}  // namespace tenet::synth
