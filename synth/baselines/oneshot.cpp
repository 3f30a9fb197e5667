// The one-shot All-Reduce (oneshot): every rank sends its whole input to every other rank (a
// message of all its chunks, Transfer::count, one per way between the two: send_runs), and
// each reduces the P - 1 inputs it receives into its own buffer (msccl-tools' allreduce_1step, the
// "one-shot" all-reduce of inference runtimes on NVSwitch). One message deep: a rank's port
// carries (P - 1) times the buffer where a ring carries 2 (P - 1) / P of it, but every byte is sent
// once, with one latency and one step cost, so it is the fastest All-Reduce for small buffers
// where every pair of ranks is linked directly or through switches. Each chunk is reduced
// independently at every rank (Transfer::from_input), so nothing waits for anything: a rank's
// sends leave its port in turn, each rank starting with the next rank up so that the destinations
// of a round are all different.
#include <fmt/format.h>

#include "synth/baselines/builder.hpp"
#include "synth/baselines/families.hpp"

namespace tenet::synth::detail {

// P (P - 1) messages, each of up to kMaxChunksPerTransfer chunks: past this many transfers (a few
// GiB of IR) it is not for this communicator.
constexpr int64_t kMaxOneshotTransfers = int64_t{1} << 26;

void oneshot(Builder& b, const Collective& c) {
  const int p = c.num_ranks();
  const ChunkId chunks = c.num_chunks();
  const int64_t messages = (int64_t{chunks} + kMaxChunksPerTransfer - 1) / kMaxChunksPerTransfer;
  const int64_t transfers = messages * p * (p - 1);
  if (transfers > kMaxOneshotTransfers)
    throw NotApplicable(fmt::format(
        "one-shot sends every chunk from each of the {} ranks to every other: {} transfers for {} "
        "chunks, over its limit of {} (it is for small communicators and buffers)",
        p, transfers, chunks, kMaxOneshotTransfers));
  const std::vector<ChunkId> every = all_chunks(c);
  for (int s = 1; s < p; ++s)
    for (int r = 0; r < p; ++r)
      send_runs(b, every, c.ranks[r], c.ranks[(r + s) % p], Op::Reduce, {}, nullptr, true);
}

}  // namespace tenet::synth::detail
