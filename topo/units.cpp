#include "topo/units.hpp"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <span>

#include "topo/error.hpp"

namespace tenet {
namespace {

struct Unit {
  std::string_view name;
  double factor;  // base units (bytes, bytes/s, ps) per one of this unit
};

constexpr std::array kByteUnits{
    Unit{"B", 1},           Unit{"KB", 1e3},           Unit{"MB", 1e6},
    Unit{"GB", 1e9},        Unit{"TB", 1e12},          Unit{"KiB", 1024.0},
    Unit{"MiB", 1048576.0}, Unit{"GiB", 1073741824.0}, Unit{"TiB", 1099511627776.0},
};
constexpr std::array kBandwidthUnits{
    Unit{"B/s", 1},           Unit{"KB/s", 1e3},           Unit{"MB/s", 1e6},
    Unit{"GB/s", 1e9},        Unit{"TB/s", 1e12},          Unit{"KiB/s", 1024.0},
    Unit{"MiB/s", 1048576.0}, Unit{"GiB/s", 1073741824.0}, Unit{"TiB/s", 1099511627776.0},
    Unit{"Kbps", 1e3 / 8},    Unit{"Mbps", 1e6 / 8},       Unit{"Gbps", 1e9 / 8},
    Unit{"Tbps", 1e12 / 8},
};
constexpr std::array kTimeUnits{
    Unit{"ps", 1}, Unit{"ns", 1e3}, Unit{"us", 1e6}, Unit{"ms", 1e9}, Unit{"s", 1e12},
};

template <size_t K>
std::string unit_list(const std::array<Unit, K>& units) {
  std::string out;
  for (const Unit& u : units) out += (out.empty() ? "" : ", ") + std::string(u.name);
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Splits "1.5 GiB" into a value in base units. `what` names the quantity for messages.
template <size_t K>
double parse_quantity(std::string_view text, const std::array<Unit, K>& units, const char* what) {
  std::string_view s = trim(text);
  if (s.empty())
    throw Error(
        fmt::format("empty {} (expected e.g. a number and one of: {})", what, unit_list(units)));
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.' ||
                          s[i] == '-' || s[i] == '+' || s[i] == 'e' || s[i] == 'E')) {
    // An 'e' is part of the number only when followed by a digit or a sign (1e3), not in "1 ms".
    if ((s[i] == 'e' || s[i] == 'E') &&
        (i + 1 >= s.size() || !(std::isdigit(static_cast<unsigned char>(s[i + 1])) ||
                                s[i + 1] == '-' || s[i + 1] == '+')))
      break;
    ++i;
  }
  std::string_view number = s.substr(0, i);
  std::string_view unit = trim(s.substr(i));
  double value = 0;
  auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (number.empty() || ec != std::errc() || end != number.data() + number.size() ||
      !std::isfinite(value))
    throw Error(fmt::format("'{}' is not a valid {}: expected a number followed by a unit ({})",
                            text, what, unit_list(units)));
  if (unit.empty())
    throw Error(fmt::format("{} '{}' has no unit: write one of {}", what, text, unit_list(units)));
  for (const Unit& u : units)
    if (u.name == unit) return value * u.factor;
  throw Error(fmt::format("unknown {} unit '{}' in '{}': expected one of {}", what, unit, text,
                          unit_list(units)));
}

// Picks the largest unit in which the value is a whole number, for canonical output.
template <size_t K>
std::string canonical(int64_t value, const std::array<Unit, K>& units) {
  const Unit* best = &units[0];
  for (const Unit& u : units) {
    double q = static_cast<double>(value) / u.factor;
    if (u.factor <= static_cast<double>(value) && q == std::floor(q) &&
        static_cast<int64_t>(q * u.factor) == value && u.factor > best->factor &&
        u.name.find("bps") == std::string_view::npos)
      best = &u;
  }
  return fmt::format("{}{}", static_cast<int64_t>(static_cast<double>(value) / best->factor),
                     best->name);
}

std::string human(double value, std::span<const Unit> units, size_t first, size_t last) {
  size_t pick = first;
  for (size_t i = first; i <= last; ++i)
    if (std::abs(value) >= units[i].factor) pick = i;
  return fmt::format("{:.4g} {}", value / units[pick].factor, units[pick].name);
}

}  // namespace

Bytes parse_bytes(std::string_view text) {
  double v = parse_quantity(text, kByteUnits, "size");
  if (v < 0) throw Error(fmt::format("size '{}' is negative", text));
  if (v > std::ldexp(1.0, 60))
    throw Error(fmt::format("size '{}' is absurdly large (over 1 EiB)", text));
  double r = std::round(v);
  if (std::abs(v - r) > 1e-6 * std::max(1.0, v))
    throw Error(fmt::format("size '{}' is not a whole number of bytes", text));
  return static_cast<Bytes>(r);
}

Bandwidth parse_bandwidth(std::string_view text) {
  double v = parse_quantity(text, kBandwidthUnits, "bandwidth");
  if (v <= 0) throw Error(fmt::format("bandwidth '{}' must be positive", text));
  if (v < 0.5) throw Error(fmt::format("bandwidth '{}' is below 1 B/s", text));
  if (v > 1e15) throw Error(fmt::format("bandwidth '{}' is absurdly large (over 1 PB/s)", text));
  return static_cast<Bandwidth>(std::llround(v));
}

Time parse_time(std::string_view text) {
  double v = parse_quantity(text, kTimeUnits, "time");
  if (v < 0) throw Error(fmt::format("time '{}' is negative", text));
  if (v > 3600.0 * 1e12)
    throw Error(fmt::format("time '{}' is absurdly large (over 1 hour)", text));
  return static_cast<Time>(std::llround(v));
}

std::string format_bytes(Bytes bytes) {
  // One unit family everywhere (binary: the sizes people pick are powers of two), so a column of
  // chunk sizes never mixes "46.17 KB" with "60 KiB"; four significant digits ("45.09 KiB").
  if (bytes < 1024) return fmt::format("{} B", bytes);
  return human(static_cast<double>(bytes), kByteUnits, 5, 8);
}
std::string format_bandwidth(Bandwidth bw) {
  return human(static_cast<double>(bw), kBandwidthUnits, 0, 4);
}
std::string format_time(Time ps) { return human(static_cast<double>(ps), kTimeUnits, 0, 4); }

std::string canonical_bytes(Bytes bytes) { return canonical(bytes, kByteUnits); }
std::string canonical_bandwidth(Bandwidth bw) { return canonical(bw, kBandwidthUnits); }
std::string canonical_time(Time ps) { return canonical(ps, kTimeUnits); }

Time transfer_time(Bytes bytes, Bandwidth bw) {
  // In 64 bits where the product fits (up to about 9.2 MB): the same quotient, and a 128-bit
  // division costs several times more (the timing calls this once per transfer).
  if (int64_t num64 = 0; bytes >= 0 && bw > 0 &&
                         !__builtin_mul_overflow(bytes, kPicosPerSecond, &num64) &&
                         num64 <= std::numeric_limits<int64_t>::max() - (bw - 1))
    return (num64 + bw - 1) / bw;
  Int128 num = static_cast<Int128>(bytes) * kPicosPerSecond;
  Int128 q = (num + bw - 1) / bw;
  if (q > std::numeric_limits<Time>::max()) throw Error("transfer time overflows 2^63 ps");
  return static_cast<Time>(q);
}

}  // namespace tenet
