// MSCCL-XML programs as msccl-tools (microsoft/msccl-tools) writes them, generated here from the
// structure of its examples (not copied): each function cites the example it follows. Its XML
// carries name proto nchannels nchunksperloop ngpus coll inplace and the <gpu> buffer sizes, and
// names in each step's srcoff the sender's slot and in dstoff the receiver's (the runtime uses
// both as slots of the step's own GPU; these programs keep them equal where it reads them).
#pragma once

#include <string>

namespace tenet::synth::testing {

// A <step> as msccl-tools' ir_to_xml writes it (old format).
std::string step(int s, const char* type, char sb, int so, char db, int d, int cnt = 1,
                 int depid = -1, int deps = -1);

// examples/mscclang/allgather_ring.py: a ring All-Gather in place on p GPUs, `channels` rings each
// carrying 1/channels of every block.
std::string ring_allgather_in_place(int p, int channels, const std::string& proto);
// examples/mscclang/allreduce_a100_allpairs.py: every GPU sends each peer that peer's chunk,
// reduces what it receives into its own chunk with local 're' steps, and sends the result to
// every peer.
std::string allpairs_allreduce(int p);
// examples/mscclang/allreduce_1step.py (instances 1): every GPU sends its whole input (cnt p) to
// every peer's scratch, receives each peer's into its own, and only then (its local thread block
// waits for every peer block's receive, which follows that block's send) reduces the p - 1 received
// copies into its input with 're' steps: each chunk is reduced independently on every GPU. With
// `race`, the local block waits for no receive: its reductions race with the sends reading the
// input and with the receives writing scratch.
std::string one_step_allreduce(int p, bool race = false);
// examples/mscclang/allgather_recursive_doubling.py: at level d each GPU swaps its 2^d-chunk block
// with GPU r ^ 2^d in one step of cnt 2^d (out of place, after a local copy).
std::string recursive_doubling_allgather(int p);
// examples/mscclang/alltoall_a100_two_step.py on 2 nodes of g GPUs: GPU (n, l) sends what goes to
// the other node to its counterpart (m, l) in one step (into scratch), which forwards each chunk
// to its destination inside node m; chunks for its own node go directly.
std::string two_step_alltoall(int g);
// examples/mscclang/hierarchical_allreduce.py on 2 nodes of g GPUs, in place: GPU (n, l) reduces
// chunks l and l + g inside its node (rrc from each local peer, one after another: two thread
// blocks reducing into one slot at once would race), reduces chunk l (node 0) or l + g (node 1)
// across nodes with its counterpart, which sends the result back, and then gives its two chunks
// to every local peer.
std::string hierarchical_allreduce(int g);
// examples/mscclang/allreduce_a100_ncv4.py's shape: 2 chunks on 4 GPUs, reduced into GPU 0 (rrc
// from each peer in turn), then sent back.
std::string two_chunk_allreduce();
// examples/mscclang/allreduce_a100_ring.py (channels 1, instances 1) on p GPUs, in place, one
// thread block per GPU: send the own chunk, receive-reduce-send p - 2 chunks (rrs), the last
// reduction kept and sent on (rrcs), then receive-copy-send around the ring (rcs) and a final
// receive.
std::string ring_allreduce(int p);
// examples/mscclang/allreduce_recursive_doubling_halving.py on p GPUs (a power of 2), in place:
// reduce-scatter by vector halving (at count p/2 .. 1 each GPU sends its peer r ^ count the peer's
// block of `count` chunks and reduces its own with rrc), then all-gather by vector doubling; thread
// block q of each GPU talks to peer q, with the dependencies msccl-tools infers. For 4 and 8 GPUs
// the same steps, offsets and dependencies msccl-tools (030a750) writes; ring_allreduce likewise.
std::string recursive_halving_doubling_allreduce(int p);

}  // namespace tenet::synth::testing
