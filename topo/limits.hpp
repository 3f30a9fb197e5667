// Input limits, in one place: what Tenet refuses to build before it allocates, with a message that
// names the limit, instead of running out of memory or stack. Generous for real clusters (a 32K-NPU
// torus has ~200K links); far below what a typo such as fc:20000 (400M links) asks for.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "topo/error.hpp"

namespace tenet::topo {

inline constexpr int64_t kMaxNodes = int64_t{1} << 20;  // NPUs and switches of a topology
inline constexpr int64_t kMaxLinks = int64_t{1} << 22;  // directed links of a topology
inline constexpr int kMaxNesting = 256;        // brackets, braces, levels in a topology file
inline constexpr int kMaxChunksPerNpu = 4096;  // tenet sim -k, suites, -k auto's search
// An algorithm's chunks per NPU (Tenet JSON, Chakra ET and MSCCL-XML read back), and `tenet synth
// -k`: -k auto's pipelines, server plan and matcher double past kMaxChunksPerNpu while they gain,
// and what auto picked can be written, read back and asked for.
inline constexpr int kMaxChunksPerNpuOfAlgorithm = 1 << 20;
// What is read from a pipe or a device (`/dev/stdin`, a FIFO): a regular file is sized before it is
// read, a stream is not, and `/dev/zero` never ends.
inline constexpr int64_t kMaxStreamBytes = int64_t{1} << 30;

// a x b, or nothing when the product is outside int64_t: sizes multiplied from user input are
// checked before they size anything.
inline std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) return std::nullopt;
  return product;
}
// The product of `factors` (1 for none), or nothing when it is outside int64_t.
std::optional<int64_t> checked_product(std::span<const int> factors);

// Throws tenet::Error("<count> <what> is over the limit of <limit> ...") at `where` when count >
// limit.
void check_limit(int64_t count, int64_t limit, std::string_view what, const Location& where = {});

// Throws tenet::Error at the file and line where brackets, braces or parentheses (outside double
// quotes) nest deeper than kMaxNesting: the YAML and Graphviz parsers recurse per level.
void check_nesting(std::string_view text, const std::string& file);

// Memory this process may still take, in bytes: /proc/meminfo's MemAvailable, or less when a
// cgroup limit (memory.max less memory.current, a container's) leaves less. The environment
// variable TENET_MEMORY (a size: "8GiB") sets it instead. 0 when unknown.
uint64_t available_memory();
// Throws tenet::Error when `bytes`, an estimate of what `what` will hold, is more than
// available_memory() (when known): the estimate, the memory there is, and what to change, instead
// of running for minutes into std::bad_alloc.
void check_memory(uint64_t bytes, std::string_view what, std::string_view remedy);

// Whether `text` is valid UTF-8 (no overlong forms, surrogates or code points past U+10FFFF); when
// not, the offset of the first bad byte in `bad_at`.
bool valid_utf8(std::string_view text, size_t* bad_at = nullptr);

}  // namespace tenet::topo
