#include "synth/ir/traffic.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>
#include <random>
#include <sstream>

#include "topo/error.hpp"
#include "topo/io.hpp"

namespace tenet::synth {
namespace {

// A pair's bytes: a plain whole number, or a size with a unit.
Bytes entry_bytes(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  Bytes b = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), b);
  if (ec == std::errc() && end == text.data() + text.size()) {
    if (b < 0) throw Error(fmt::format("'{}' is negative", text));
    if (b > (Bytes{1} << 60)) throw Error(fmt::format("'{}' is more than 2^60 bytes", text));
    return b;
  }
  if (text.empty()) throw Error("an empty entry");
  return parse_bytes(text);
}

void check(const Traffic& t, const std::string& path) {
  for (int s = 0; s < t.ranks; ++s)
    if (t.bytes[static_cast<size_t>(s) * t.ranks + s] != 0)
      throw Error(fmt::format("rank {} sends {} bytes to itself: the diagonal must be 0", s,
                              t.bytes[static_cast<size_t>(s) * t.ranks + s]),
                  {path});
  if (t.total() == 0) throw Error("the traffic matrix sends nothing", {path});
}

Traffic read_json(const std::string& path, const std::string& text, int ranks) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // a parse error, or a number out of range (3e508)
    throw Error(fmt::format("not JSON: {}", e.what()), {path});
  }
  const nlohmann::json& rows = doc.is_object() && doc.contains("bytes") ? doc["bytes"] : doc;
  if (!rows.is_array() || static_cast<int>(rows.size()) != ranks)
    throw Error(fmt::format("expected {} rows of bytes (an array, or {{\"bytes\": [...]}})", ranks),
                {path});
  Traffic t{ranks, {}};
  for (int s = 0; s < ranks; ++s) {
    if (!rows[s].is_array() || static_cast<int>(rows[s].size()) != ranks)
      throw Error(fmt::format("row {} must hold {} entries", s, ranks), {path});
    for (int d = 0; d < ranks; ++d) {
      const nlohmann::json& e = rows[s][d];
      try {
        if (e.is_number_unsigned()) {
          if (e.get<uint64_t>() > (uint64_t{1} << 60)) throw Error("more than 2^60 bytes");
          t.bytes.push_back(static_cast<Bytes>(e.get<uint64_t>()));
        } else if (e.is_string())
          t.bytes.push_back(entry_bytes(e.get<std::string>()));
        else
          throw Error("expected a whole number of bytes or a size such as \"4MiB\"");
      } catch (const Error& err) {
        throw Error(fmt::format("row {}, column {}: {}", s, d, err.message()), {path});
      }
    }
  }
  return t;
}

Traffic read_csv(const std::string& path, const std::string& text, int ranks) {
  Traffic t{ranks, {}};
  std::istringstream in(text);
  std::string line;
  int number = 0, rows = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos ||
        line[line.find_first_not_of(" \t")] == '#')
      continue;
    if (++rows > ranks)
      throw Error(fmt::format("more than {} rows (one per rank)", ranks), {path, number});
    std::vector<std::string_view> cells;
    for (size_t start = 0;;) {
      const size_t comma = line.find(',', start);
      cells.emplace_back(std::string_view(line).substr(
          start, comma == std::string::npos ? std::string::npos : comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    if (static_cast<int>(cells.size()) != ranks)
      throw Error(
          fmt::format("{} entries, expected {} (one per destination rank)", cells.size(), ranks),
          {path, number});
    for (size_t d = 0; d < cells.size(); ++d) {
      try {
        t.bytes.push_back(entry_bytes(cells[d]));
      } catch (const Error& e) {
        throw Error(fmt::format("column {}: {}", d + 1, e.message()), {path, number});
      }
    }
  }
  if (rows != ranks)
    throw Error(fmt::format("{} rows, expected {} (one per rank)", rows, ranks), {path});
  return t;
}

}  // namespace

Bytes Traffic::total() const { return std::accumulate(bytes.begin(), bytes.end(), Bytes{0}); }

Bytes Traffic::most_sent() const {
  Bytes most = 0;
  for (int s = 0; s < ranks; ++s)
    most = std::max(
        most, std::accumulate(bytes.begin() + static_cast<ptrdiff_t>(s) * ranks,
                              bytes.begin() + static_cast<ptrdiff_t>(s + 1) * ranks, Bytes{0}));
  return most;
}

Traffic parse_traffic(std::string_view text, const std::string& path, int ranks) {
  if (ranks < 1) throw Error(fmt::format("a traffic matrix for {} ranks", ranks), {path});
  const std::string copy(topo::without_bom(text));
  const size_t first = copy.find_first_not_of(" \t\r\n");
  Traffic t = first != std::string::npos && (copy[first] == '[' || copy[first] == '{')
                  ? read_json(path, copy, ranks)
                  : read_csv(path, copy, ranks);
  check(t, path);
  return t;
}

Traffic read_traffic(const std::string& path, int ranks) {
  return parse_traffic(topo::read_file(path), path, ranks);
}

Traffic generate_traffic(std::string_view spec, int ranks, Bytes per_rank, uint64_t seed) {
  constexpr int kTokens = 4096;
  const size_t colon = spec.find(':');
  const std::string_view kind = spec.substr(0, colon),
                         arg = colon == std::string_view::npos ? "" : spec.substr(colon + 1);
  if (ranks < 2) throw Error("an all-to-allv needs at least 2 ranks");
  if (per_rank < kTokens)
    throw Error(
        fmt::format("generated traffic needs at least {} bytes per rank (one per token)", kTokens));
  // Expert popularity in a seeded order.
  std::vector<int> order(ranks);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(seed));
  std::vector<double> weight(ranks);
  if (kind == "zipf") {
    double s = 0;
    const auto [end, ec] = std::from_chars(arg.data(), arg.data() + arg.size(), s);
    if (ec != std::errc() || end != arg.data() + arg.size() || !(s >= 0) || s > 10)
      throw Error(
          fmt::format("traffic '{}': zipf:S needs an exponent S in [0, 10], e.g. zipf:1.2", spec));
    for (int i = 0; i < ranks; ++i) weight[order[i]] = 1.0 / std::pow(i + 1.0, s);
  } else if (kind == "hot") {
    int k = 0;
    const auto [end, ec] = std::from_chars(arg.data(), arg.data() + arg.size(), k);
    if (ec != std::errc() || end != arg.data() + arg.size() || k < 1 || k >= ranks)
      throw Error(fmt::format("traffic '{}': hot:K needs 1 <= K < {} hot experts", spec, ranks));
    for (int i = 0; i < ranks; ++i) weight[order[i]] = i < k ? 0.5 / k : 0.5 / (ranks - k);
  } else {
    throw Error(fmt::format("unknown traffic generator '{}' (zipf:S or hot:K)", spec));
  }
  // Each source deals its tokens to the other ranks by largest remainder.
  Traffic t{ranks, std::vector<Bytes>(static_cast<size_t>(ranks) * ranks, 0)};
  const Bytes token = per_rank / kTokens;
  for (int s = 0; s < ranks; ++s) {
    double sum = 0;
    for (int d = 0; d < ranks; ++d)
      if (d != s) sum += weight[d];
    std::vector<std::pair<double, int>> rest;
    int dealt = 0;
    for (int d = 0; d < ranks; ++d) {
      if (d == s) continue;
      const double share = kTokens * weight[d] / sum;
      const int whole = static_cast<int>(std::floor(share));
      t.bytes[static_cast<size_t>(s) * ranks + d] = whole;
      dealt += whole;
      rest.emplace_back(share - whole, -d);
    }
    std::sort(rest.rbegin(), rest.rend());
    for (int i = 0; i < kTokens - dealt; ++i)
      ++t.bytes[static_cast<size_t>(s) * ranks - rest[i].second];
    for (int d = 0; d < ranks; ++d) t.bytes[static_cast<size_t>(s) * ranks + d] *= token;
  }
  return t;
}

int64_t default_max_units(int ranks) {
  const int64_t pairs = static_cast<int64_t>(ranks) * ranks;
  return std::min<int64_t>(64 * pairs, std::max<int64_t>(pairs, int64_t{1} << 20));
}

TrafficUnits to_units(const Traffic& t, int64_t max_units) {
  Bytes g = 0;
  for (Bytes b : t.bytes) g = std::gcd(g, b);
  TrafficUnits out;
  out.unit_bytes = std::max<Bytes>(g, 1);
  auto count = [&](Bytes unit) {  // in 128 bits: 64 pairs of 2^60 bytes in units of 1 overflow 64
    Int128 n = 0;
    for (Bytes b : t.bytes) n += (b + unit - 1) / unit;
    return n;
  };
  if (count(out.unit_bytes) > max_units) {  // coarser units: the smallest that fits, by bisection
    Bytes lo = out.unit_bytes,
          hi = std::max<Bytes>(lo, *std::max_element(t.bytes.begin(), t.bytes.end()));
    while (hi - lo > 1) {
      const Bytes mid = lo + (hi - lo) / 2;
      (count(mid) > max_units ? lo : hi) = mid;
    }
    out.unit_bytes = hi;
  }
  for (Bytes b : t.bytes) {
    const Bytes n = (b + out.unit_bytes - 1) / out.unit_bytes;
    if (n > std::numeric_limits<int32_t>::max())
      throw Error("the traffic matrix has over 2^31 units in one pair");
    out.units.push_back(static_cast<int32_t>(n));
    out.padding += n * out.unit_bytes - b;
  }
  return out;
}

}  // namespace tenet::synth
