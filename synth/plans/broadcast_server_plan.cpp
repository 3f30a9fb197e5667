#include "synth/plans/broadcast_server_plan.hpp"

#include <fmt/format.h>

#include <array>
#include <vector>

#include "synth/baselines/baselines.hpp"
#include "synth/cost/timing.hpp"
#include "synth/memo.hpp"
#include "synth/plans/server_plan.hpp"
#include "synth/ten/spread_matcher.hpp"

namespace tenet::synth::detail {
namespace {

// A Broadcast over every NPU of a cluster of servers (Reduce: on the reversed topology): the
// root's chunks dealt over its server, chunk c to the NPU at position c mod G (the root keeps its
// own position's), each slice on along its rail to the NPU at that position in every other server
// (in a chain, or down double binary trees), and from there over each server's NVSwitch: every
// NIC carries each slice at most once, so all G NICs of a server stream at once (the flow plan's
// trees are deep there, and every level costs a chunk time and a latency of fill, so a server's
// last NIC begins well after its first). The matcher decides when, over the ways each chunk may
// take. Nothing where the plan would allow over 2^26 (chunk, way) pairs.
std::optional<Algorithm> broadcast_server_plan(const topo::Topology& t, const topo::Topology& ft,
                                               const ForwardPlan& plan, const Collective& c,
                                               const Collective& forward, Bytes chunk_bytes,
                                               const SynthOptions& o, const ServerPlan& servers,
                                               bool trees) {
  // The server plan's ways give the routes (balanced over the fabric's equal-cost ones).
  const int n = ft.num_npus(), g = static_cast<int>(servers.servers()[0].size());
  const int count = static_cast<int>(servers.servers().size());
  const NodeId root = forward.ranks[forward.root];
  const int home = servers.server_of(root), r = servers.position(root);
  auto at = [&](int sv, int i) { return servers.servers()[sv][i]; };
  // This plan's ways (each pair is one of the server plan's: in a server or on a rail), each with
  // the share of the root's data it carries (for its fluid rate).
  std::vector<ServerWay> ways;
  std::vector<double> volume;
  std::vector<int> mine(servers.ways().size(), -1);  // per way of the server plan, this plan's
  auto use = [&](NodeId u, NodeId v, double share) {
    const int w = servers.way_between(u, v);
    int& id = mine[static_cast<size_t>(w)];
    if (id < 0) {
      id = static_cast<int>(ways.size());
      ways.push_back(servers.ways()[static_cast<size_t>(w)]);
      volume.push_back(0);
    }
    volume[id] += share;
    return static_cast<ChannelId>(id);
  };
  const double slice = 1.0 / g, piece = slice / (g - 1);
  // Outside the root's server, slice i goes along rail i from the root's server: with `trees`,
  // each half down one tree of a double binary tree over the other servers
  // (synth/baselines/baselines.hpp), in which an inner node of one tree is a leaf of the other and
  // no server has more than two children in both, so each NIC sends at most the slice once and the
  // depth is log2 of the servers; else both halves along a chain from server to server (each NIC
  // sends it once). The NPU at position i of each server hands the slice on inside it.
  const int others = count - 1;
  auto server = [&](int member) { return (home + 1 + member) % count; };  // member m of the trees
  std::vector<int> shape(others), second(others);
  for (int m = 0; m < others; ++m) shape[m] = m - 1, second[m] = m;  // the chain
  if (trees) shape = binary_tree(others), second = complementary_positions(shape);
  std::vector<std::array<std::vector<ChannelId>, 2>> of_half(g);  // per slice and half
  std::vector<std::vector<ChannelId>> inside(g);                  // per slice, in the other servers
  for (int i = 0; i < g; ++i) {
    for (int half = 0; half < 2; ++half)
      for (int pos = 0; pos < others; ++pos) {
        const int member = half == 0 ? pos : second[pos];
        const int from =
            shape[pos] < 0 ? home : server(half == 0 ? shape[pos] : second[shape[pos]]);
        of_half[i][half].push_back(use(at(from, i), at(server(member), i), slice / 2));
      }
    for (int m = 0; m < others; ++m)
      for (int j = 0; j < g; ++j)
        if (j != i) inside[i].push_back(use(at(server(m), i), at(server(m), j), slice));
  }
  // Inside the root's server, a chunk goes from the root to one NPU, which hands it to the others:
  // the NPU at its slice's position (which sends it on along the rail), or for the root's own slice
  // (which the root sends along its rail) each of the others in turn, so that the root's NVSwitch
  // link carries every chunk once.
  auto distributor = [&](ChunkId ch) {
    const int i = ch % g;
    if (i != r) return i;
    const int k = (ch / g) % (g - 1);
    return k < r ? k : k + 1;
  };
  std::vector<std::vector<ChannelId>> from_root(
      g);  // per distributor: root -> it, it -> the others
  for (int d = 0; d < g; ++d) {
    if (d == r) continue;
    from_root[d].push_back(use(root, at(home, d), slice + piece));
    for (int x = 0; x < g; ++x)
      if (x != r && x != d) from_root[d].push_back(use(at(home, d), at(home, x), slice + piece));
  }
  set_fluid_rates(ft, o.link_model, ways, volume);
  const ChunkId chunks = forward.num_chunks();
  if (static_cast<int64_t>(chunks) * (static_cast<int64_t>(count) * g + 2 * g) > (int64_t{1} << 26))
    return std::nullopt;
  ChannelGraph channels(ft, chunk_bytes, o.link_model, ways);
  SpreadMatcher s(ft, channels, chunks, o);
  for (ChunkId ch = 0; ch < chunks; ++ch) {
    s.hold(root, ch);
    for (NodeId v = 0; v < n; ++v)
      if (v != root) s.need(v, ch);
    for (ChannelId id : inside[ch % g]) s.allow(id, ch);
    for (ChannelId id : of_half[ch % g][(ch / g) % 2]) s.allow(id, ch);
    for (ChannelId id : from_root[distributor(ch)]) s.allow(id, ch);
  }
  Algorithm a = build(t, channels, s.run(), plan, c, chunk_bytes, o);
  a.provenance = Provenance(Producer::ServerPlanMatcher);
  a.provenance.rail_trees = trees;
  a.method = fmt::format(
      "matcher on a server plan ({} servers of {}: the root's server, then {} on the rails, then "
      "NVSwitch)",
      count, g, trees ? "double binary trees" : "a chain");
  return a;
}

}  // namespace

std::optional<Algorithm> broadcast_server_plan(const topo::Topology& t, const topo::Topology& ft,
                                               const ForwardPlan& plan, const Collective& c,
                                               const Collective& forward, Bytes chunk_bytes,
                                               const SynthOptions& o) {
  const ServerPlans::Plan kept = server_plan_of(ft, chunk_bytes, o);
  const std::optional<ServerPlan>& servers = *kept;
  // (A flat plan has no rails to chain the root's chunks along.)
  if (!servers || servers->flat()) return std::nullopt;
  std::optional<Algorithm> chain =
      broadcast_server_plan(t, ft, plan, c, forward, chunk_bytes, o, *servers, false);
  if (!chain) return chain;
  std::optional<Algorithm> trees =
      broadcast_server_plan(t, ft, plan, c, forward, chunk_bytes, o, *servers, true);
  time(t, *chain);
  if (trees) time(t, *trees);
  return trees && trees->claimed_time < chain->claimed_time ? std::move(trees) : std::move(chain);
}

}  // namespace tenet::synth::detail
