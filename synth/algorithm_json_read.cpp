// Reading the algorithm JSON (synth/algorithm_json.hpp).
//
// Two readers make the same records. The fast one is simdjson's DOM parser, which validates as
// strictly as nlohmann does and runs several times faster (the 158 MB file of a 1024-NPU
// All-Gather: 0.43 s against 1.16 s, its algorithm built). It reads files laid out as Tenet writes
// them, in slices, and takes only files as they should be; for anything else (a syntax error, a
// problem in a transfer, a field given twice in a transfer, another layout, a nesting deeper than
// simdjson allows) the reference reader reads the file again, and its result and messages are the
// ones given. The reference reader is nlohmann's SAX parser: the small head (format, collective,
// topology, ...) becomes a json value, checked as a document; the transfers go straight from the
// parser's events into compact records, so they never exist as a DOM (which took 1.4 GB and five
// seconds for a 158 MB file).
#include <fmt/format.h>
#include <simdjson.h>

#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>

#include "synth/algorithm_json.hpp"
#include "topo/io.hpp"
#include "topo/limits.hpp"

namespace tenet::synth {
namespace {

using nlohmann::json;

// Checks on json values, failing with the value's path in the document.
class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}
  Error error(const std::string& path, const std::string& what) const { return Error(what, {file_, 0, 0, path}); }
  [[noreturn]] void fail(const std::string& path, const std::string& what) const { throw error(path, what); }
  const json& field(const json& obj, const char* key, const std::string& path) const {
    auto it = obj.find(key);
    if (it == obj.end()) fail(path, fmt::format("missing \"{}\"", key));
    return *it;
  }
  int64_t integer(const json& v, const std::string& path, int64_t lo, int64_t hi) const {
    if (!v.is_number_integer()) fail(path, fmt::format("expected a whole number, got {}", v.dump()));
    return in_range(v.is_number_unsigned() ? saturate(v.get<uint64_t>()) : v.get<int64_t>(), path, lo, hi);
  }
  int64_t in_range(int64_t x, const std::string& path, int64_t lo, int64_t hi) const {
    if (x < lo || x > hi) fail(path, fmt::format("{} is out of range [{}, {}]", x, lo, hi));
    return x;
  }
  static int64_t saturate(uint64_t x) { return x > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(x); }
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
  enum Has : uint8_t { kChunk = 1, kSrc = 2, kDst = 4, kRoute = 8, kStart = 16, kEnd = 32, kRate = 64, kChannel = 128 };
  uint8_t has = 0;
  Op op = Op::Copy;
  uint16_t channel = 0;
  NodeId src = 0, dst = 0;
  int64_t chunk = 0;
  Time start = -1, end = -1;
  Bandwidth rate = 0;
  uint32_t route_begin = 0, route_size = 0, deps_begin = 0, deps_size = 0;
};

// The fields of a transfer, and the range of each whole-number one (route and deps items: [0, 2^31)).
enum class Field : uint8_t { Id, Chunk, Src, Dst, Op, Route, Deps, Start, End, Rate, Channel, Other };
struct Range {
  int64_t lo, hi;
};
constexpr Range kItemRange{0, INT32_MAX};
constexpr Range range_of(Field f) {
  switch (f) {
    case Field::Src:
    case Field::Dst: return {0, INT32_MAX};
    case Field::Rate: return {1, int64_t{1'000'000'000'000'000}};
    case Field::Channel: return {0, 65535};
    default: return {0, INT64_MAX};  // id, chunk, times
  }
}
Field field_of(std::string_view n) {  // compared by length first: ten million keys at 1024 NPUs
  return n == "id" ? Field::Id : n == "chunk" ? Field::Chunk : n == "src" ? Field::Src : n == "dst" ? Field::Dst
       : n == "op" ? Field::Op : n == "route" ? Field::Route : n == "deps" ? Field::Deps
       : n == "start_ps" ? Field::Start : n == "end_ps" ? Field::End : n == "rate_Bps" ? Field::Rate
       : n == "channel" ? Field::Channel : Field::Other;
}
// A whole-number field's value into the record (its range checked by the caller).
void set_field(RawTransfer& x, Field f, int64_t v) {
  switch (f) {
    case Field::Chunk: x.chunk = v, x.has |= RawTransfer::kChunk; break;
    case Field::Src: x.src = static_cast<NodeId>(v), x.has |= RawTransfer::kSrc; break;
    case Field::Dst: x.dst = static_cast<NodeId>(v), x.has |= RawTransfer::kDst; break;
    case Field::Start: x.start = v, x.has |= RawTransfer::kStart; break;
    case Field::End: x.end = v, x.has |= RawTransfer::kEnd; break;
    case Field::Rate: x.rate = v, x.has |= RawTransfer::kRate; break;
    case Field::Channel: x.channel = static_cast<uint16_t>(v), x.has |= RawTransfer::kChannel; break;
    default: break;
  }
}

// What a reader makes of a file, before the checks that need all of it: the head as a json value,
// the transfers as records with their routes and dependencies in two pools.
struct Parsed {
  json head;
  std::vector<RawTransfer> transfers;
  std::vector<LinkId> route_pool;
  std::vector<TransferId> deps_pool;
  std::optional<Error> problem;  // the first problem in a transfer
  int64_t first_versioned = -1;   // the first transfer with a rate or channel (version 2)
};

// The SAX handler (nlohmann::json_sax): the head into `head`, the transfers into `transfers` and
// the two pools. The first problem in a transfer is kept and reported once the head has been
// checked, as a document reader would; a syntax error ends the parse at once.
class Sax : public Parsed {
 public:
  using number_integer_t = json::number_integer_t;
  using number_unsigned_t = json::number_unsigned_t;
  using number_float_t = json::number_float_t;
  using string_t = json::string_t;
  using binary_t = json::binary_t;

  Sax(const Reader& r, std::string_view text) : r_(r), text_(text) {}

  bool null() { return scalar(json(nullptr)); }
  bool boolean(bool v) { return scalar(json(v)); }
  bool number_integer(number_integer_t v) { return integer(v, json(v)); }
  bool number_unsigned(number_unsigned_t v) { return integer(Reader::saturate(v), json(v)); }
  bool number_float(number_float_t v, const string_t&) { return scalar(json(v)); }
  bool string(string_t& v) {
    if (state_ == State::Transfer && field_ == Field::Op) {  // every transfer has one: no json value made
      if (v == "copy") x_.op = Op::Copy;
      else if (v == "reduce") x_.op = Op::Reduce;
      else note(path(), fmt::format("unknown op '{}' (copy or reduce)", v));
      return true;
    }
    return scalar(json(std::move(v)));
  }
  bool binary(binary_t&) { return scalar(json()); }  // not in JSON text

  bool start_object(std::size_t) { return open(true); }
  bool end_object() { return close(); }
  bool start_array(std::size_t) { return open(false); }
  bool end_array() { return close(); }

  bool key(string_t& k) {
    if (state_ == State::Head) {
      key_ = std::move(k);
    } else if (state_ == State::Transfer) {
      field_ = field_of(k);
      field_name_ = std::move(k);
    }
    return true;
  }

  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) {
    if (dynamic_cast<const json::out_of_range*>(&e))  // a number past double's range: 1e999
      throw Error(fmt::format("a number is out of range: {}", e.what()), {r_.file()});
    int line = 1, column = 1;  // the byte offset as a line and column
    for (size_t i = 0; i + 1 < position && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    const std::string what = e.what();
    const size_t at = what.find("syntax error");
    throw Error(fmt::format("not valid JSON: {}", at == std::string::npos ? what : what.substr(at)),
                {r_.file(), line, column});
  }

 private:
  enum class State : uint8_t { Head, TransferList, Transfer, List, Skip };

  std::string at() const { return fmt::format("transfers[{}]", transfers.size()); }
  std::string path() const { return fmt::format("{}.{}", at(), field_name_); }
  void note(const std::string& where, const std::string& what) {
    if (!problem) problem = r_.error(where, what);
  }

  // A value in the head: into the object or list being built, or the document itself.
  json& put(json v) {
    if (stack_.empty()) {
      head = std::move(v);
      return head;
    }
    json& top = *stack_.back();
    if (top.is_object()) return top[key_] = std::move(v);
    top.push_back(std::move(v));
    return top.back();
  }

  bool open(bool object) {
    switch (state_) {
      case State::Head:
        if (!object && stack_.size() == 1 && stack_.back()->is_object() && key_ == "transfers") {
          put(json::array());  // a placeholder: the records hold them
          // A second "transfers" replaces the first, as a document's last duplicate key does.
          transfers.clear(), route_pool.clear(), deps_pool.clear(), first_versioned = -1, problem.reset();
          state_ = State::TransferList;
          return true;
        }
        stack_.push_back(&put(object ? json::object() : json::array()));
        return true;
      case State::TransferList:
        if (object) {
          state_ = State::Transfer;
          x_ = RawTransfer{};
          x_.route_begin = static_cast<uint32_t>(route_pool.size());
          x_.deps_begin = static_cast<uint32_t>(deps_pool.size());
          return true;
        }
        note(at(), "expected an object, got a list");
        break;
      case State::Transfer:
        if (!object && (field_ == Field::Route || field_ == Field::Deps)) {
          if (field_ == Field::Route) x_.has |= RawTransfer::kRoute;
          state_ = State::List;
          return true;
        }
        if (field_ != Field::Other) note(path(), wanted(fmt::format("an {}", object ? "object" : "list")));
        break;
      case State::List:
        note(fmt::format("{}[{}]", path(), listed()), fmt::format("expected a whole number, got {}", object ? "an object" : "a list"));
        break;
      case State::Skip:
        ++skip_depth_;
        return true;
    }
    skip_return_ = state_;
    state_ = State::Skip;
    skip_depth_ = 1;
    return true;
  }

  bool close() {
    switch (state_) {
      case State::Head:
        stack_.pop_back();
        return true;
      case State::TransferList:
        state_ = State::Head;
        return true;
      case State::Transfer:
        if (!problem && transfers.size() >= static_cast<size_t>(std::numeric_limits<TransferId>::max()))
          note(at(), "too many transfers (over 2^31)");
        x_.route_size = static_cast<uint32_t>(route_pool.size() - x_.route_begin);
        x_.deps_size = static_cast<uint32_t>(deps_pool.size() - x_.deps_begin);
        if ((x_.has & (RawTransfer::kRate | RawTransfer::kChannel)) && first_versioned < 0)
          first_versioned = static_cast<int64_t>(transfers.size());
        transfers.push_back(x_);
        state_ = State::TransferList;
        return true;
      case State::List:
        state_ = State::Transfer;
        return true;
      case State::Skip:
        if (--skip_depth_ == 0) state_ = skip_return_;
        return true;
    }
    return true;
  }

  // What a field of a transfer wants, and what it got instead.
  std::string wanted(const std::string& got) const {
    const char* want = field_ == Field::Op ? "a string" : field_ == Field::Route || field_ == Field::Deps ? "a list" : "a whole number";
    return fmt::format("expected {}, got {}", want, got);
  }
  size_t listed() const {
    return field_ == Field::Route ? route_pool.size() - x_.route_begin : deps_pool.size() - x_.deps_begin;
  }

  bool scalar(json v) {
    switch (state_) {
      case State::Head:
        put(std::move(v));
        return true;
      case State::TransferList:
        note(at(), fmt::format("expected an object, got {}", v.dump()));
        return true;
      case State::Transfer:
        if ((field_ == Field::Start || field_ == Field::End) && v.is_null()) {
          x_.has |= field_ == Field::Start ? RawTransfer::kStart : RawTransfer::kEnd;  // given as not timed
        } else if (field_ != Field::Other) {
          note(path(), wanted(v.dump()));
        }
        return true;
      case State::List:
        note(fmt::format("{}[{}]", path(), listed()), fmt::format("expected a whole number, got {}", v.dump()));
        return true;
      case State::Skip:
        return true;
    }
    return true;
  }

  // v within its range, or the problem noted.
  bool within(int64_t v, Range range, const char* unit = "") {
    if (v >= range.lo && v <= range.hi) return true;
    note(state_ == State::List ? fmt::format("{}[{}]", path(), listed()) : path(),
         v < 0 && *unit ? fmt::format("negative time {} {}", v, unit)
                        : fmt::format("{} is out of range [{}, {}]", v, range.lo, range.hi));
    return false;
  }

  bool integer(int64_t v, json as_json) {
    if (state_ == State::Head || state_ == State::TransferList || state_ == State::Skip) return scalar(std::move(as_json));
    if (state_ == State::List) {
      if (within(v, kItemRange)) {
        if (field_ == Field::Route) route_pool.push_back(static_cast<LinkId>(v));
        else deps_pool.push_back(static_cast<TransferId>(v));
      }
      return true;
    }
    switch (field_) {
      case Field::Id:
        if (within(v, range_of(field_)) && v != static_cast<int64_t>(transfers.size()))
          note(path(), fmt::format("transfer ids must count up from 0 in list order: expected {}", transfers.size()));
        break;
      case Field::Op:
      case Field::Route:
      case Field::Deps: note(path(), wanted(as_json.dump())); break;
      case Field::Other: break;
      default:
        if (within(v, range_of(field_), field_ == Field::Start || field_ == Field::End ? "ps" : "")) set_field(x_, field_, v);
        break;
    }
    return true;
  }

  const Reader& r_;
  std::string_view text_;
  State state_ = State::Head, skip_return_ = State::Head;
  int skip_depth_ = 0;
  std::vector<json*> stack_;  // the head's open objects and lists
  std::string key_;           // the head's pending key
  Field field_ = Field::Other;
  std::string field_name_;
  RawTransfer x_;
};

// The head's values as nlohmann would make them (whole numbers >= 0 unsigned).
json to_nlohmann(simdjson::dom::element e) {
  using T = simdjson::dom::element_type;
  switch (e.type()) {
    case T::ARRAY: {
      json list = json::array();
      for (simdjson::dom::element x : simdjson::dom::array(e)) list.push_back(to_nlohmann(x));
      return list;
    }
    case T::OBJECT: {
      json object = json::object();
      for (simdjson::dom::key_value_pair kv : simdjson::dom::object(e)) object[std::string(kv.key)] = to_nlohmann(kv.value);
      return object;
    }
    case T::INT64: {
      const int64_t v = int64_t(e);
      return v >= 0 ? json(static_cast<uint64_t>(v)) : json(v);
    }
    case T::UINT64: return json(uint64_t(e));
    case T::DOUBLE: return json(double(e));
    case T::STRING: return json(std::string(std::string_view(e)));
    case T::BOOL: return json(bool(e));
    case T::NULL_VALUE: return json(nullptr);
  }
  return json();
}

void add_checked(const Reader& r, Algorithm& a, int64_t i, const RawTransfer& x, std::span<const LinkId> route,
                 std::span<const TransferId> deps, int64_t chunks, std::optional<int64_t> n);

// What the fast reader builds: the algorithm itself, its transfers added as they are read (no
// records beside it: a 64x64 torus All-Gather's 16.8M took 1.1 GB).
struct FastBuild {
  Reader r{"<fast>"};
  Algorithm a;
  int64_t version = 0, chunks = 0;
  std::vector<LinkId> route;
  std::vector<TransferId> deps;
};

// The fast reader's transfers: false for anything the reference reader must look at.
bool read_transfers_fast(simdjson::dom::array list, FastBuild& f) {
  for (simdjson::dom::element item : list) {
    simdjson::dom::object o;
    if (item.get_object().get(o)) return false;
    const auto i = static_cast<int64_t>(f.a.size());
    if (i >= std::numeric_limits<TransferId>::max()) return false;
    RawTransfer x;
    f.route.clear();
    f.deps.clear();
    unsigned seen = 0;
    for (simdjson::dom::key_value_pair kv : o) {
      const Field field = field_of(kv.key);
      if (field == Field::Other) continue;  // unknown fields are skipped, whatever they hold
      if (seen & (1u << static_cast<unsigned>(field))) return false;
      seen |= 1u << static_cast<unsigned>(field);
      if (field == Field::Op) {
        std::string_view op;
        if (kv.value.get_string().get(op)) return false;
        if (op == "copy") x.op = Op::Copy;
        else if (op == "reduce") x.op = Op::Reduce;
        else return false;
      } else if (field == Field::Route || field == Field::Deps) {
        simdjson::dom::array items;
        if (kv.value.get_array().get(items)) return false;
        for (simdjson::dom::element e : items) {
          int64_t v = 0;
          if (e.get_int64().get(v) || v < kItemRange.lo || v > kItemRange.hi) return false;
          if (field == Field::Route) f.route.push_back(static_cast<LinkId>(v));
          else f.deps.push_back(static_cast<TransferId>(v));
        }
        if (field == Field::Route) x.has |= RawTransfer::kRoute;
      } else if ((field == Field::Start || field == Field::End) && kv.value.is_null()) {
        x.has |= field == Field::Start ? RawTransfer::kStart : RawTransfer::kEnd;  // given as not timed
      } else {
        int64_t v = 0;
        if (kv.value.get_int64().get(v) || v < range_of(field).lo || v > range_of(field).hi) return false;
        if (field == Field::Id && v != i) return false;
        set_field(x, field, v);
      }
    }
    if ((x.has & (RawTransfer::kRate | RawTransfer::kChannel)) && f.version < 2) return false;
    try {
      add_checked(f.r, f.a, i, x, f.route, f.deps, f.chunks, std::nullopt);
    } catch (const Error&) {
      return false;
    }
  }
  return true;
}

// simdjson's parser reused over one slice of the text at a time, as a list: "[" slice "]".
class Slices {
 public:
  // The value of the slice text[b, e) made a list, or an error.
  simdjson::simdjson_result<simdjson::dom::element> parse(std::string_view text, size_t b, size_t e) {
    buffer_.assign(1, '[');
    buffer_.append(text.substr(b, e - b));
    buffer_.push_back(']');
    buffer_.reserve(buffer_.size() + simdjson::SIMDJSON_PADDING);  // what the parser may read past the end
    return parser_.parse(buffer_.data(), buffer_.size(), false);
  }

 private:
  simdjson::dom::parser parser_;
  std::string buffer_;
};

// The fast reader (see the top). It reads a file laid out as Tenet writes it, the transfers the
// last field of the top object, in slices of a few megabytes (so that simdjson's parser, which
// needs several times the text's size, reuses a few tens of megabytes instead of taking half a
// gigabyte), and is nothing for anything it does not take as it is. The slices are cut where
// the text reads "}," then "{" (between two transfers), without knowing whether that is inside
// a string or deeper in the file: a wrong cut leaves a slice whose string or brackets are not
// closed, which does not parse, so the reader gives up rather than read anything wrong.
// The head's checks: the algorithm without its transfers, and the format's version.
Algorithm build_head(const Reader& r, const json& doc, int64_t& version) {
  if (!doc.is_object()) r.fail("", "expected a JSON object at the top");
  if (r.string(r.field(doc, "format", "format"), "format") != "tenet-algorithm")
    r.fail("format", "not a Tenet algorithm (\"format\" must be \"tenet-algorithm\")");
  version = r.integer(r.field(doc, "version", "version"), "version", 0, 1'000'000);
  if (version < kOldestAlgorithmFormatVersion || version > kAlgorithmFormatVersion)
    r.fail("version", fmt::format("unsupported version {} (this Tenet reads versions {} to {})", version,
                                  kOldestAlgorithmFormatVersion, kAlgorithmFormatVersion));
  Algorithm a;
  if (doc.contains("name")) a.name = r.string(doc["name"], "name");
  if (doc.contains("method")) a.method = r.string(doc["method"], "method");
  const json& c = r.field(doc, "collective", "collective");
  if (!c.is_object()) r.fail("collective", "expected an object");
  try {
    a.collective.kind = parse_collective(r.string(r.field(c, "kind", "collective.kind"), "collective.kind"));
  } catch (const Error& e) {
    r.fail("collective.kind", e.message());
  }
  const json& ranks = r.array(r.field(c, "ranks", "collective.ranks"), "collective.ranks");
  for (size_t i = 0; i < ranks.size(); ++i)
    a.collective.ranks.push_back(static_cast<NodeId>(
        r.integer(ranks[i], fmt::format("collective.ranks[{}]", i), 0, std::numeric_limits<NodeId>::max())));
  if (a.collective.ranks.size() < 2) r.fail("collective.ranks", "a collective needs at least 2 ranks");
  a.collective.chunks_per_npu = static_cast<int>(
      r.integer(r.field(c, "chunks_per_npu", "collective.chunks_per_npu"), "collective.chunks_per_npu", 1,
                topo::kMaxChunksPerNpuOfAlgorithm));
  a.collective.root = c.contains("root")
                          ? static_cast<int>(r.integer(c["root"], "collective.root", 0, a.collective.num_ranks() - 1))
                          : 0;
  if (a.collective.wide_chunks() >= (int64_t{1} << 31))
    r.fail("collective", fmt::format("too many chunks ({}, over 2^31)", a.collective.wide_chunks()));
  if (c.contains("chunks")) {  // All-Reduce: C chunks in all
    if (a.collective.kind != CollectiveKind::AllReduce)
      r.fail("collective.chunks", fmt::format("a chunk count in all is for all-reduce; {} has its chunks per NPU",
                                              to_string(a.collective.kind)));
    a.collective.all_reduce_chunks =
        static_cast<int>(r.integer(c["chunks"], "collective.chunks", 1, std::numeric_limits<int32_t>::max()));
  }
  if (c.contains("pair_units")) {  // All-to-Allv: P x P units, row-major
    const json& units = r.array(c["pair_units"], "collective.pair_units");
    std::vector<int32_t> matrix;
    for (size_t i = 0; i < units.size(); ++i)
      matrix.push_back(static_cast<int32_t>(
          r.integer(units[i], fmt::format("collective.pair_units[{}]", i), 0, std::numeric_limits<int32_t>::max())));
    if (a.collective.kind != CollectiveKind::AllToAll)
      r.fail("collective.pair_units", fmt::format("a traffic matrix is for all-to-all, not {}", to_string(a.collective.kind)));
    try {
      a.collective.set_pair_units(std::move(matrix));
    } catch (const Error& e) {
      r.fail("collective.pair_units", e.message());
    }
    if (static_cast<double>(a.collective.total_units()) * a.collective.chunks_per_npu > static_cast<double>(int64_t{1} << 31))
      r.fail("collective", "too many chunks (over 2^31)");
  }
  if (doc.contains("topology")) {
    const json& t = doc["topology"];
    if (!t.is_object()) r.fail("topology", "expected an object");
    if (t.contains("name")) a.topology_name = r.string(t["name"], "topology.name");
    if (t.contains("fingerprint")) {
      std::string hex = r.string(t["fingerprint"], "topology.fingerprint");
      try {
        size_t used = 0;
        a.topology_fingerprint = std::stoull(hex, &used, 16);
        if (used != hex.size()) throw std::invalid_argument(hex);
      } catch (const std::exception&) {
        r.fail("topology.fingerprint", fmt::format("'{}' is not a hexadecimal fingerprint", hex));
      }
    }
  }
  a.chunk_bytes = r.integer(r.field(doc, "chunk_bytes", "chunk_bytes"), "chunk_bytes", 1, int64_t{1} << 50);
  if (doc.contains("link_model")) {
    try {
      a.link_model = parse_link_model(r.string(doc["link_model"], "link_model"));
    } catch (const Error& e) {
      r.fail("link_model", e.message());
    }
  }
  if (doc.contains("reduce_Bps"))
    a.reduce_bandwidth = r.integer(doc["reduce_Bps"], "reduce_Bps", 0, int64_t{1'000'000'000'000'000});
  if (doc.contains("channels")) {
    const std::string channels = r.string(doc["channels"], "channels");
    if (channels != "serial" && channels != "shared")
      r.fail("channels", fmt::format("'{}' is neither 'shared' nor 'serial'", channels));
    a.serial_channels = channels == "serial";
  }
  a.claimed_time = doc.contains("collective_time_ps") ? r.time(doc["collective_time_ps"], "collective_time_ps") : -1;

  r.array(r.field(doc, "transfers", "transfers"), "transfers");
  return a;
}

// Transfer i's dependencies against the count of transfers.
void check_deps(const Reader& r, int64_t i, std::span<const TransferId> deps, int64_t n) {
  for (size_t k = 0; k < deps.size(); ++k)
    if (deps[k] >= n)
      r.fail(fmt::format("transfers[{}].deps[{}]", i, k), fmt::format("transfer {} does not exist ({} transfers)", deps[k], n));
}

// A transfer's checks (its fields, its chunk against the head, its dependencies against the count
// `n` when known, its times), then it is added.
void add_checked(const Reader& r, Algorithm& a, int64_t i, const RawTransfer& x, std::span<const LinkId> route,
                 std::span<const TransferId> deps, int64_t chunks, std::optional<int64_t> n) {
  auto at = [&] { return fmt::format("transfers[{}]", i); };
  for (auto [bit, name] : {std::pair{RawTransfer::kChunk, "chunk"}, {RawTransfer::kSrc, "src"},
                           {RawTransfer::kDst, "dst"}, {RawTransfer::kRoute, "route"}})
    if (!(x.has & bit)) r.fail(at(), fmt::format("missing \"{}\"", name));
  if (x.chunk >= chunks)
    r.fail(at() + ".chunk", fmt::format("chunk {} is out of range: the collective has chunks 0..{}", x.chunk, chunks - 1));
  if (n) check_deps(r, i, deps, *n);
  if ((x.start < 0) != (x.end < 0)) r.fail(at(), "start_ps and end_ps must both be given or both be null");
  if (x.start >= 0 && x.end < x.start) r.fail(at() + ".end_ps", "ends before it starts");
  a.add(static_cast<ChunkId>(x.chunk), x.src, x.dst, route, x.op, deps, x.start, x.end, x.rate, x.channel);
}

[[noreturn]] void fail_versioned(const Reader& r, int64_t i, const RawTransfer& x) {
  r.fail(fmt::format("transfers[{}].{}", i, x.has & RawTransfer::kRate ? "rate_Bps" : "channel"),
         fmt::format("{} need version 2 of the format", x.has & RawTransfer::kRate ? "rates" : "channels"));
}

// The checks that need the whole file, and the algorithm.
Algorithm build(const Reader& r, const Parsed& sax) {
  int64_t version = 0;
  Algorithm a = build_head(r, sax.head, version);
  if (sax.problem) throw *sax.problem;
  // What needs the whole file: chunk ids against the collective, dependencies against the count.
  const int64_t chunks = a.collective.num_chunks();
  const int64_t n = static_cast<int64_t>(sax.transfers.size());
  if (version < 2 && sax.first_versioned >= 0) fail_versioned(r, sax.first_versioned, sax.transfers[sax.first_versioned]);
  a.reserve(sax.transfers.size(), sax.route_pool.size(), sax.deps_pool.size());
  for (int64_t i = 0; i < n; ++i) {
    const RawTransfer& x = sax.transfers[i];
    const std::span<const TransferId> deps(sax.deps_pool.data() + x.deps_begin, x.deps_size);
    add_checked(r, a, i, x, {sax.route_pool.data() + x.route_begin, x.route_size}, deps, chunks, n);
  }
  return a;
}

std::optional<Algorithm> read_fast(std::string_view text, size_t slice_bytes, const std::function<void(size_t)>& done_with) {
  constexpr std::string_view kWhite = " \t\r\n", kKey = "\"transfers\"";
  // The list's brackets: `"transfers": [` (its first mention: a search from the end would read
  // through the whole list, every page of a 2.6 GB file, before anything is parsed), then `]` and
  // `}` at the end.
  const size_t key = text.find(kKey);
  if (key == std::string_view::npos) return std::nullopt;
  const size_t colon = text.find_first_not_of(kWhite, key + kKey.size());
  if (colon == std::string_view::npos || text[colon] != ':') return std::nullopt;
  const size_t open = text.find_first_not_of(kWhite, colon + 1), brace = text.find_last_not_of(kWhite);
  if (open == std::string_view::npos || text[open] != '[' || text[brace] != '}' || brace <= open) return std::nullopt;
  const size_t close = text.find_last_not_of(kWhite, brace - 1);
  if (text[close] != ']' || close <= open) return std::nullopt;

  // The head: the text with the list emptied. Its last field must be "transfers", once: otherwise
  // the brackets found are not the list's.
  const std::string head_text = std::string(text.substr(0, open + 1)) + std::string(text.substr(close));
  simdjson::dom::parser head_parser;
  simdjson::dom::object top;
  if (head_parser.parse(head_text).get_object().get(top)) return std::nullopt;
  json head;
  bool last_is_list = false;
  for (simdjson::dom::key_value_pair kv : top) {
    last_is_list = false;
    if (kv.key == "transfers") {
      simdjson::dom::array list;
      if (head.contains("transfers") || kv.value.get_array().get(list) || list.size() != 0) return std::nullopt;
      head["transfers"] = json::array();  // a placeholder: the transfers are read below
      last_is_list = true;
    } else {
      head[std::string(kv.key)] = to_nlohmann(kv.value);  // a key given twice: the last, as nlohmann has it
    }
  }
  if (!last_is_list) return std::nullopt;
  FastBuild f;
  try {
    f.a = build_head(f.r, head, f.version);
  } catch (const Error&) {
    return std::nullopt;
  }
  f.chunks = f.a.collective.num_chunks();

  // The items, a slice at a time; every slice but the last ends before a comma, and holds items.
  Slices slices;
  for (size_t b = open + 1; b < close;) {
    size_t e = close;
    for (size_t at = b + std::max<size_t>(slice_bytes, 1); at < close; ++at) {
      at = text.find("},", at);
      if (at == std::string_view::npos || at >= close) break;
      if (const size_t next = text.find_first_not_of(kWhite, at + 2); next < close && text[next] == '{') {
        e = at + 1;
        break;
      }
    }
    simdjson::dom::array items;
    if (slices.parse(text, b, e).get_array().get(items) || (e < close && items.size() == 0)) return std::nullopt;
    if (!read_transfers_fast(items, f)) return std::nullopt;
    b = e + 1;  // past the comma
    if (done_with) done_with(b);
  }
  // What needs every transfer: dependencies against the count.
  const auto n = static_cast<int64_t>(f.a.size());
  for (TransferId id = 0; id < n; ++id)
    for (TransferId d : f.a.deps(id))
      if (d >= n) return std::nullopt;
  return std::move(f.a);
}

}  // namespace

Algorithm parse_algorithm_json_reference(std::string_view text, const std::string& file) {
  Reader r(file);
  Sax sax(r, text);
  json::sax_parse(text.begin(), text.end(), &sax);
  return build(r, sax);
}

std::optional<Algorithm> parse_algorithm_json_fast(std::string_view text, size_t slice_bytes,
                                                   const std::function<void(size_t)>& done_with) {
  return read_fast(text, slice_bytes, done_with);  // nothing where the reference reader must say why, in its words
}

Algorithm parse_algorithm_json(std::string_view text, const std::string& file) {
  if (std::optional<Algorithm> a = parse_algorithm_json_fast(text)) return std::move(*a);
  return parse_algorithm_json_reference(text, file);
}

Algorithm load_algorithm(const std::string& path) {
  const topo::FileBytes bytes(path);
  // The pages the fast reader is done with go as it goes (the reference reader maps them back).
  if (std::optional<Algorithm> a = parse_algorithm_json_fast(bytes.view(), size_t{4} << 20, [&](size_t b) { bytes.release(b); }))
    return std::move(*a);
  return parse_algorithm_json_reference(bytes.view(), path);
}

}  // namespace tenet::synth
