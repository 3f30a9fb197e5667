#include "topo/limits.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <limits>
#include <optional>

#include "topo/units.hpp"

namespace tenet::topo {

namespace {

// The first number in a file (a cgroup's memory.max: "max" for none), or nothing.
std::optional<uint64_t> read_number(const char* path) {
  std::ifstream in(path);
  uint64_t v = 0;
  if (in >> v) return v;
  return std::nullopt;
}

}  // namespace

uint64_t available_memory() {
  if (const char* forced = std::getenv("TENET_MEMORY"); forced && *forced) {
    try {
      return static_cast<uint64_t>(parse_bytes(forced));
    } catch (const Error& e) {
      throw Error(fmt::format("TENET_MEMORY='{}': {}", forced, e.message()));
    }
  }
  uint64_t available = 0;
  std::ifstream meminfo("/proc/meminfo");
  for (std::string key; meminfo >> key;) {
    uint64_t kib = 0;
    if (key == "MemAvailable:" && meminfo >> kib) {
      available = kib * 1024;
      break;
    }
    meminfo.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  const auto max = read_number("/sys/fs/cgroup/memory.max"),
             current = read_number("/sys/fs/cgroup/memory.current");
  if (max && current) {
    const uint64_t left = *max > *current ? *max - *current : 0;
    available = available == 0 ? left : std::min(available, left);
  }
  return available;
}

void check_memory(uint64_t bytes, std::string_view what, std::string_view remedy) {
  const uint64_t available = available_memory();
  if (available == 0 || bytes <= available) return;
  auto size = [](uint64_t b) {
    return format_bytes(static_cast<Bytes>(std::min<uint64_t>(b, uint64_t{1} << 62)));
  };
  const char* forced = std::getenv("TENET_MEMORY");
  throw Error(fmt::format("{} would need about {} of memory, and {} are available{}; {}", what,
                          size(bytes), size(available), forced && *forced ? " (TENET_MEMORY)" : "",
                          remedy));
}

std::optional<int64_t> checked_product(std::span<const int> factors) {
  std::optional<int64_t> product = 1;
  for (int f : factors)
    if (!(product = checked_mul(*product, f))) break;
  return product;
}

void check_limit(int64_t count, int64_t limit, std::string_view what, const Location& where) {
  if (count > limit)
    throw Error(
        fmt::format("{} {} is over Tenet's limit of {} (topo/limits.hpp)", count, what, limit),
        where);
}

void check_nesting(std::string_view text, const std::string& file) {
  int depth = 0, line = 1;
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') ++line;
    if (quoted) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        quoted = false;
    } else if (c == '"') {
      quoted = true;
    } else if (c == '[' || c == '{' || c == '(') {
      if (++depth > kMaxNesting)
        throw Error(fmt::format("nested deeper than Tenet's limit of {} levels (topo/limits.hpp)",
                                kMaxNesting),
                    Location(file, line));
    } else if ((c == ']' || c == '}' || c == ')') && depth > 0) {
      --depth;
    }
  }
}

bool valid_utf8(std::string_view text, size_t* bad_at) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    const unsigned char c = s[i];
    size_t len = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, cp = c & 0x07;
    }
    bool ok = len > 0 && i + len <= n;
    for (size_t k = 1; ok && k < len; ++k) {
      ok = (s[i + k] & 0xC0) == 0x80;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    ok = ok && cp >= kMin[len] && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
    if (!ok) {
      if (bad_at) *bad_at = i;
      return false;
    }
    i += len;
  }
  return true;
}

}  // namespace tenet::topo
