// What the algorithm JSON's readers share (see algorithm_json_read.cpp): checks on json values, a
// transfer as read and its fields, the head's checks and a transfer's. The reference reader is
// algorithm_json_sax.cpp, the fast one algorithm_json_fast.cpp. Internal to synth/formats.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "synth/ir/algorithm.hpp"

namespace tenet::synth::detail {

using nlohmann::json;

// Checks on json values, failing with the value's path in the document.
class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}
  Error error(const std::string& path, const std::string& what) const {
    return Error(what, {file_, 0, 0, path});
  }
  [[noreturn]] void fail(const std::string& path, const std::string& what) const {
    throw error(path, what);
  }
  const json& field(const json& obj, const char* key, const std::string& path) const {
    auto it = obj.find(key);
    if (it == obj.end()) fail(path, fmt::format("missing \"{}\"", key));
    return *it;
  }
  int64_t integer(const json& v, const std::string& path, int64_t lo, int64_t hi) const {
    if (!v.is_number_integer())
      fail(path, fmt::format("expected a whole number, got {}", v.dump()));
    return in_range(v.is_number_unsigned() ? saturate(v.get<uint64_t>()) : v.get<int64_t>(), path,
                    lo, hi);
  }
  int64_t in_range(int64_t x, const std::string& path, int64_t lo, int64_t hi) const {
    if (x < lo || x > hi) fail(path, fmt::format("{} is out of range [{}, {}]", x, lo, hi));
    return x;
  }
  static int64_t saturate(uint64_t x) {
    return x > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(x);
  }
  std::string string(const json& v, const std::string& path) const {
    if (!v.is_string()) fail(path, fmt::format("expected a string, got {}", v.dump()));
    return v.get<std::string>();
  }
  const json& array(const json& v, const std::string& path) const {
    if (!v.is_array()) fail(path, fmt::format("expected a list, got {}", v.dump().substr(0, 40)));
    return v;
  }
  Time time(const json& v, const std::string& path) const {
    if (v.is_null()) return -1;
    if (v.is_number_integer() && v.get<int64_t>() < 0)
      fail(path, fmt::format("negative time {} ps", v.get<int64_t>()));
    return integer(v, path, 0, std::numeric_limits<Time>::max());
  }
  const std::string& file() const { return file_; }

 private:
  std::string file_;
};

// A transfer as read, before the checks that need the whole file (chunk ids need the collective,
// dependency ids the number of transfers).
struct RawTransfer {
  enum Has : uint8_t {
    kChunk = 1,
    kSrc = 2,
    kDst = 4,
    kRoute = 8,
    kStart = 16,
    kEnd = 32,
    kRate = 64,
    kChannel = 128
  };
  uint8_t has = 0;
  Op op = Op::Copy;
  bool from_input = false;  // "from": "input" (version 3)
  uint16_t channel = 0;
  uint16_t count = 1;  // "count": the chunks it carries (version 4)
  NodeId src = 0, dst = 0;
  int64_t chunk = 0;
  Time start = -1, end = -1;
  Bandwidth rate = 0;
  uint32_t route_begin = 0, route_size = 0, deps_begin = 0, deps_size = 0;
};

// The fields of a transfer, and the range of each whole-number one (route and deps items: [0,
// 2^31)).
enum class Field : uint8_t {
  Id,
  Chunk,
  Src,
  Dst,
  Op,
  Route,
  Deps,
  Start,
  End,
  Rate,
  Channel,
  Count,
  From,
  Other
};
struct Range {
  int64_t lo, hi;
};
constexpr Range kItemRange{0, INT32_MAX};
constexpr Range range_of(Field f) {
  switch (f) {
    case Field::Src:
    case Field::Dst:
      return {0, INT32_MAX};
    case Field::Rate:
      return {1, int64_t{1'000'000'000'000'000}};
    case Field::Channel:
      return {0, 65535};
    case Field::Count:
      return {1, kMaxChunksPerTransfer};
    default:
      return {0, INT64_MAX};  // id, chunk, times
  }
}
Field field_of(std::string_view n);
// A whole-number field's value into the record (its range checked by the caller).
void set_field(RawTransfer& x, Field f, int64_t v);

// The head's checks: the algorithm without its transfers, and the format's version.
Algorithm build_head(const Reader& r, const json& doc, int64_t& version);

// A transfer's checks (its fields, its chunk against the head, its dependencies against the count
// `n` when known, its times), then it is added.
void add_checked(const Reader& r, Algorithm& a, int64_t i, const RawTransfer& x,
                 std::span<const LinkId> route, std::span<const TransferId> deps, int64_t chunks,
                 std::optional<int64_t> n);

}  // namespace tenet::synth::detail
