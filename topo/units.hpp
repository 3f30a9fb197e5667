// Units: time in integer picoseconds, sizes in bytes, bandwidth in bytes per second. Strings with
// explicit units are parsed once, at the edges; a number without a unit is an error, not a guess.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tenet {

using Time = int64_t;       // picoseconds
using Bytes = int64_t;      // bytes
using Bandwidth = int64_t;  // bytes per second

// 128-bit integers for exact intermediate products (bytes * ps / bandwidth).
__extension__ typedef __int128 Int128;

inline constexpr Time kPicosPerSecond = 1'000'000'000'000;

// "64MiB", "1 GB", "512B". Units: B, KB, MB, GB, TB (powers of 1000), KiB, MiB, GiB, TiB.
// The value must be a whole number of bytes, at least 0 and at most 2^60.
Bytes parse_bytes(std::string_view text);
// "50GB/s", "80GiB/s", "400Gbps", "1.5TB/s". Units: B/s, KB/s, MB/s, GB/s, TB/s, KiB/s, MiB/s,
// GiB/s, TiB/s, Kbps, Mbps, Gbps, Tbps. Rounded to whole bytes per second; must lie in
// [1 B/s, 10^15 B/s].
Bandwidth parse_bandwidth(std::string_view text);
// "0.5us", "500ns", "2ms", "1s", "250ps". Rounded to whole picoseconds; must lie in [0, 1 hour].
Time parse_time(std::string_view text);

// Human-readable forms with units, e.g. "64 MiB", "50 GB/s", "1.5 us". Sizes always in binary
// units (KiB, MiB, ..., four significant digits), bandwidths in decimal ones (as vendors quote
// links).
std::string format_bytes(Bytes bytes);
std::string format_bandwidth(Bandwidth bw);
std::string format_time(Time ps);
// Canonical forms that parse back to exactly the same value (used by writers): "67108864B" is
// avoided in favour of "64MiB" when exact, "50GB/s", "500ns".
std::string canonical_bytes(Bytes bytes);
std::string canonical_bandwidth(Bandwidth bw);
std::string canonical_time(Time ps);

// Time to push `bytes` through a link of bandwidth `bw`, rounded up to the picosecond. Exact.
Time transfer_time(Bytes bytes, Bandwidth bw);

}  // namespace tenet
