// The algorithm JSON format, version 3 (documented in docs/formats.md, "Algorithm files"):
//
// {
//   "format": "tenet-algorithm", "version": 2,
//   "name": "ring",
//   "collective": {"kind": "all-gather", "ranks": [0, 1, 2, 3], "chunks_per_npu": 1, "root": 0},
//   "topology": {"name": "ring:4", "fingerprint": "18d287d1cc0c7e05"},
//   "chunk_bytes": 1048576,
//   "link_model": "pipelined",
//   "reduce_Bps": 500000000000,                (only when reductions take time:
//   Algorithm::reduce_bandwidth) "channels": "serial",                      (only when they are:
//   Algorithm::serial_channels; or "shared") "collective_time_ps": 62914560,            (or null)
//   "transfers": [
//     {"id": 0, "chunk": 0, "src": 0, "dst": 1, "op": "copy", "route": [0], "deps": [],
//      "start_ps": 0, "end_ps": 20971520},      (times null when not timed)
//     {"id": 1, ..., "rate_Bps": 25000000000, "channel": 3},  (each only when not the default)
//     {"id": 2, ..., "from": "input"},        (only for a transfer that sends its source's input)
//     ...
//   ]
// }
//
// Version 2 added the optional per-transfer rate and channel; version 3 the optional "from" (a
// transfer that sends its source's input: Transfer::from_input), written only by files that have
// one (others still say version 2); version 1 files (no rates) are still read. Writing then reading
// gives back exactly the same algorithm. Reading checks the structure and everything that needs no
// topology (types, signs, chunk ids, dependency ids); the verifier checks the rest against the
// topology.
#pragma once

#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>

#include "synth/ir/algorithm.hpp"

namespace tenet::synth {

inline constexpr int kAlgorithmFormatVersion = 4;
inline constexpr int kOldestAlgorithmFormatVersion = 1;

std::string to_json(const Algorithm& a);
// The same text onto a stream, a megabyte at a time (no whole copy in memory).
void write_json(const Algorithm& a, std::ostream& out);
// `file` names the text in errors.
Algorithm parse_algorithm_json(std::string_view text, const std::string& file = "<string>");
// The two readers parse_algorithm_json combines (see synth/algorithm_json_read.cpp), apart for
// tests: the fast one (simdjson) gives the algorithm or nothing, for a file it leaves to the
// reference one (nlohmann's SAX parser), whose result and error messages are authoritative. The
// fast one reads the transfers in slices of about `slice_bytes`, straight into the algorithm, and
// calls `done_with(b)` once it no longer reads the text before b (a file's pages can go:
// load_algorithm).
std::optional<Algorithm> parse_algorithm_json_fast(
    std::string_view text, size_t slice_bytes = size_t{4} << 20,
    const std::function<void(size_t)>& done_with = {});
Algorithm parse_algorithm_json_reference(std::string_view text,
                                         const std::string& file = "<string>");
Algorithm load_algorithm(const std::string& path);
// Atomic: written to a temporary file, then renamed.
void save_algorithm(const Algorithm& a, const std::string& path);

}  // namespace tenet::synth
