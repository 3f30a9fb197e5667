#include "synth/auto/composed_search.hpp"

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "synth/auto/deadline.hpp"
#include "synth/auto/portfolio.hpp"
#include "synth/groups/composed_synthesis.hpp"
#include "synth/tuning.hpp"

namespace tenet::synth::detail {

Made<ChunkingResult> composed_auto_chunks(const topo::Topology& t, const Collective& c,
                                          Bytes total_bytes, const SynthOptions& o,
                                          int max_chunks_per_npu, Time to_beat) {
  SynthOptions quiet = o;
  quiet.progress = nullptr;
  quiet.method = SynthMethod::Composed;
  ChunkingResult best;
  bool have = false;
  int worse = 0;
  std::optional<std::string> why;  // the first count's reason for no composition
  // As many chunks in all as the flat search may make (k chunks per NPU inside a server of G are
  // G*k in all, P*k flat).
  const int64_t most_chunks = static_cast<int64_t>(max_chunks_per_npu) * c.num_ranks();
  const Made<std::vector<std::vector<topo::NodeId>>> servers = servers_to_compose(t, c);
  if (const NotMade* none = std::get_if<NotMade>(&servers)) return *none;
  const int64_t g = static_cast<int64_t>(std::get<0>(servers).front().size());
  double last_seconds = 0;  // what the last count took
  for (int k = 1; g * k <= most_chunks; k *= 2) {
    Collective cc = c;
    cc.all_reduce_chunks = 0;
    cc.chunks_per_npu = k;
    cc = composed_collective(t, cc);
    if (k > 1 && transfer_estimate(cc) > o.portfolio.chunk_transfers)
      break;  // the first count always runs
    const Bytes chunk = cc.chunk_bytes_for(total_bytes);
    if (chunk < 1 || (k > 1 && (cc.pieces() > total_bytes || chunk < min_chunk_of(t))))
      break;  // as search_chunks
    if (o.progress) o.progress(0.05 + 0.9 * std::log2(k + 1) / std::log2(max_chunks_per_npu + 1));
    if (have && o.deadline && o.deadline->reached(2 * last_seconds)) break;
    const auto began = Deadline::Clock::now();
    Made<Algorithm> made_here = try_synthesize(t, cc, chunk, quiet);
    last_seconds = seconds_since(began);
    if (const NotMade* not_here = std::get_if<NotMade>(&made_here)) {
      // A rail level may need more chunks (flat synthesis where they split among the rail's
      // ranks, when the trees cannot run there): try the next count.
      if (!why) why = not_here->why;
      continue;
    }
    Algorithm& a = std::get<Algorithm>(made_here);
    best.tried.push_back({k, a.claimed_time, SynthMethod::Composed});
    const Time now = a.claimed_time;
    // As the pipelines' doubling (double_plans): contending within kPipelinesContend.
    const bool far =
        to_beat > 0 && static_cast<double>(now) > kPipelinesContend * static_cast<double>(to_beat);
    // Hopeless where the gain of the last doubling, gained again, would not reach `to_beat`; at
    // the first count, where it is over twice kPipelinesContend of it: as times go
    // (search_chunks), a doubling at most halves a count's time (leave_out_pipelines).
    const bool hopeless = far && (have ? 2 * now - best.algorithm.claimed_time >= to_beat
                                       : static_cast<double>(now) >
                                             2 * kPipelinesContend * static_cast<double>(to_beat));
    if (!have || a.claimed_time < best.algorithm.claimed_time) {
      best.algorithm = std::move(a);
      best.chunks_per_npu = k;
      have = true;
      worse = 0;
      if (within_bound(t, best.algorithm, 1 + kChunkSearchSlack, bounds_of(o))) break;
      if (hopeless) break;
    } else if (++worse >= 2 || transfer_estimate(cc) > (int64_t{1} << 20) || far) {
      break;
    }
  }
  if (!have) return NotMade{why ? *why : std::string("no chunk count composes")};
  return best;
}

}  // namespace tenet::synth::detail
