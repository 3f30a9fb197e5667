#include "synth/plans/rail_messages.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "synth/ir/algorithm.hpp"

namespace tenet::synth::detail {
namespace {

// Whether `r` crosses a rail way (between two servers) with the root's own chunk: no dependency
// (the root holds it), one chunk.
bool sends_on_rail(const ChannelGraph& g, const ServerPlan& plan, const Raw& r) {
  const Channel& ch = g[r.channel];
  return plan.server_of(ch.src) != plan.server_of(ch.dst) && r.dep < 0 && r.more == 0;
}

}  // namespace

std::optional<RawList> rail_messages(const ChannelGraph& g, const ServerPlan& plan,
                                     const RawList& raw, double rho) {
  const size_t n = raw.size();
  // Each rail way's transfers, in the order they are listed (sent).
  std::vector<std::vector<size_t>> on(g.size());
  for (size_t i = 0; i < n; ++i)
    if (sends_on_rail(g, plan, raw[i])) on[raw[i].channel].push_back(i);
  // The renaming: a rail way's i-th transfer takes its i-th least chunk id, and a transfer that
  // passes a chunk on takes the name of the one that brought it (listed before it).
  std::vector<ChunkId> name(n);
  for (size_t i = 0; i < n; ++i) name[i] = raw[i].chunk;
  std::vector<ChunkId> ids;
  for (const std::vector<size_t>& way : on) {
    ids.clear();
    for (size_t i : way) ids.push_back(raw[i].chunk);
    std::sort(ids.begin(), ids.end());
    for (size_t j = 0; j < way.size(); ++j) name[way[j]] = ids[j];
  }
  for (size_t i = 0; i < n; ++i)
    if (const int32_t d = raw[i].dep; d >= 0 && raw[d].chunk == raw[i].chunk) name[i] = name[d];
  // Messages of rail_message_sizes, from the end of each way, each of consecutive names (with an
  // even deal a way's names are: its root's chunks). `head`: the first transfer of the message a
  // transfer joins (-1: it heads its own).
  std::vector<int64_t> head(n, -1);
  std::vector<uint16_t> more(n, 0);
  bool merged = false;
  for (const std::vector<size_t>& way : on) {
    const std::vector<int> sizes = rail_message_sizes(static_cast<int>(way.size()), rho);
    size_t end = way.size();
    for (auto size = sizes.rbegin(); size != sizes.rend() && end > 0; ++size) {
      size_t begin = end - 1;
      while (begin > 0 && end - begin < static_cast<size_t>(*size) &&
             name[way[begin - 1]] + 1 == name[way[begin]])
        --begin;
      for (size_t j = begin + 1; j < end; ++j) head[way[j]] = static_cast<int64_t>(way[begin]);
      more[way[begin]] = static_cast<uint16_t>(end - begin - 1);
      merged = merged || end - begin > 1;
      end = begin;
    }
  }
  if (!merged) return std::nullopt;
  // The list without the transfers a message took in, each dependency on one of them now on the
  // message. A message stays where its first chunk was, with that chunk's times: the reversed
  // plans order by them, and its first chunk's forwarding came after it.
  std::vector<int32_t> index(n, -1);
  RawList out;
  for (size_t i = 0; i < n; ++i) {
    if (head[i] >= 0) {
      index[i] = index[static_cast<size_t>(head[i])];
      continue;
    }
    index[i] = static_cast<int32_t>(out.size());
    Raw r = raw[i];
    r.chunk = name[i];
    r.more = more[i];
    if (r.dep >= 0) r.dep = index[static_cast<size_t>(r.dep)];
    out.push_back(r);
  }
  return out;
}

bool rail_messages_asked(const topo::Topology& t, const SynthOptions& o) {
  return o.portfolio.rail_messages && t.charges_steps() && o.link_model == LinkModel::Pipelined;
}

bool rail_messages_apply(const topo::Topology& t, const ServerPlan& plan, bool even,
                         const SynthOptions& o) {
  return rail_messages_asked(t, o) && even && !plan.flat() && !plan.pods() && !plan.relayed();
}

std::vector<int> rail_message_sizes(int chunks, double rho) {
  std::vector<int> sizes;  // from the end
  double size = 1;
  for (int left = chunks; left > 0; size /= rho) {
    const int most =
        static_cast<int>(std::min<double>(std::floor(size + 1e-9), kMaxChunksPerTransfer));
    sizes.push_back(std::min(most, left));
    left -= sizes.back();
  }
  std::reverse(sizes.begin(), sizes.end());
  return sizes;
}

}  // namespace tenet::synth::detail
