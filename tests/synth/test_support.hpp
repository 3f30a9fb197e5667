// Test support for the synth layer: random topologies, and a simple producer of correct
// algorithms for any collective on any topology (shortest-path trees per chunk, relays explicit),
// so that the verifier and timing can be tested before and apart from the real producers.
#pragma once

#include <functional>
#include <initializer_list>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "synth/ir/algorithm.hpp"
#include "synth/verify/verify.hpp"
#include "topo/topology.hpp"

namespace tenet::synth::testing {

// A random topology: 3..max_npus NPUs, up to 2 switches, heterogeneous and asymmetric links
// (1-100 GB/s, 0-2 us), some parallel links, some router NPUs; always strongly connected.
// `steps`: each link also gets a per-step cost (0, 300 ns, 2.6 us or 0-3 us at random), and the
// topology charges them (topo::Topology::charges_steps).
topo::Topology random_topology(std::mt19937_64& rng, int max_npus = 8, bool steps = false);
// The topologies `specs` generate, then `random` random ones of up to 8 NPUs (random_topology).
std::vector<topo::Topology> fabrics(std::initializer_list<const char*> specs, std::mt19937_64& rng,
                                    int random);

// Every algorithm made for `c` on `t` at `chunk` bytes: the synthesizer's (each method, both link
// models) and every baseline that applies, each passed to `f` with who made it and how, in words
// ("ring (auto, pipelined)"). Producers that do not apply are skipped.
void for_each_producer(const topo::Topology& t, const Collective& c, Bytes chunk,
                       const std::function<void(const Algorithm&, const std::string& who)>& f);

// A random collective over `t`: a random kind (or `kind`), all NPUs or a random subset of at least
// two (reducing collectives always use all NPUs), 1..max_chunks chunks per NPU, a random root.
Collective random_collective(std::mt19937_64& rng, const topo::Topology& t, int max_chunks = 2);

// A correct algorithm: per chunk, a breadth-first tree from its holder to the ranks that need it
// (copies), or towards its owner (reductions; All-Reduce then broadcasts the result back). Timed
// under `model`.
Algorithm tree_algorithm(const topo::Topology& t, const Collective& c, Bytes chunk_bytes,
                         LinkModel model = LinkModel::Pipelined);

// `text` with the first `from` replaced by `to`; throws when `from` is not there (tests that edit
// a valid file into a broken one must not silently test the valid one).
std::string replaced(std::string text, std::string_view from, std::string_view to);

// The violations' and warnings' messages, one per line, for a failure message.
std::string violation_text(const Report& r);

// The first link from u to v.
LinkId link_between(const topo::Topology& t, NodeId u, NodeId v);

// `t` charging every link's per-step cost (topo::Topology::charges_steps), as the CLI does.
topo::Topology charging(topo::Topology t);
// examples/topologies/`file`, charging its per-step costs as the CLI does.
topo::Topology example_with_steps(const std::string& file);

// Whether each owner (Collective::origin's rank, on its NPU) of `gathered`'s collective sends its
// chunks (copies from it: an All-Gather's) in the order `reduced` reduces them into it: taken in
// the order of their first copy from the owner (a message's chunks tied, in the order reduced),
// the chunks' last reductions into the owner come in list order (and false where a chunk is not
// reduced into, or not sent from, its owner). `reduced` and `gathered` may be one algorithm (an
// All-Reduce joined).
bool each_owner_sends_as_reduced(const Algorithm& reduced, const Algorithm& gathered);

// `a` with every transfer at `rate` in channel 1, its channels serial (Algorithm::serial_channels:
// one transfer at a time per first link), timed.
Algorithm in_serial_channel(const topo::Topology& t, const Algorithm& a, Bandwidth rate);

}  // namespace tenet::synth::testing
