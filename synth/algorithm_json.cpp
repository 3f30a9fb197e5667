#include "synth/algorithm_json.hpp"

#include <fmt/format.h>

#include <limits>
#include <ostream>
#include <nlohmann/json.hpp>

#include "topo/io.hpp"

namespace tenet::synth {

namespace {

// Where the JSON text goes: kept whole (to_json), or passed on to a stream a megabyte at a time
// (write_json), so that a million transfers never sit in memory as one string.
class Sink {
 public:
  explicit Sink(std::ostream* stream) : stream_(stream) {}
  void put(std::string_view s) {
    text_.append(s);
    if (stream_ && text_.size() >= (1 << 20)) flush();
  }
  void num(int64_t v) {
    const fmt::format_int f(v);
    put({f.data(), f.size()});
  }
  void flush() {
    stream_->write(text_.data(), static_cast<std::streamsize>(text_.size()));
    text_.clear();
  }
  std::string& text() { return text_; }

 private:
  std::ostream* stream_;
  std::string text_;
};

void write_to(const Algorithm& a, Sink& out) {
  using nlohmann::json;
  const Collective& c = a.collective;
  auto time = [&](Time t) { t < 0 ? out.put("null") : out.num(t); };
  auto list = [&](auto values) {
    out.put("[");
    for (size_t i = 0; i < values.size(); ++i) {
      if (i) out.put(", ");
      out.num(values[i]);
    }
    out.put("]");
  };
  out.put(fmt::format("{{\n  \"format\": \"tenet-algorithm\",\n  \"version\": {},\n", kAlgorithmFormatVersion));
  out.put(fmt::format("  \"name\": {},\n", json(a.name).dump()));
  if (!a.method.empty()) out.put(fmt::format("  \"method\": {},\n", json(a.method).dump()));
  out.put(fmt::format("  \"collective\": {{\"kind\": \"{}\", \"ranks\": {}, \"chunks_per_npu\": {}, \"root\": {}}},\n",
                      to_string(c.kind), json(c.ranks).dump(), c.chunks_per_npu, c.root));
  out.put(fmt::format("  \"topology\": {{\"name\": {}, \"fingerprint\": \"{:016x}\"}},\n",
                      json(a.topology_name).dump(), a.topology_fingerprint));
  out.put(fmt::format("  \"chunk_bytes\": {},\n  \"link_model\": \"{}\",\n", a.chunk_bytes, to_string(a.link_model)));
  if (a.reduce_bandwidth > 0) out.put(fmt::format("  \"reduce_Bps\": {},\n", a.reduce_bandwidth));
  out.put("  \"collective_time_ps\": ");
  time(a.claimed_time);
  out.put(",\n  \"transfers\": [");
  for (TransferId id = 0; id < static_cast<TransferId>(a.size()); ++id) {
    const Transfer& x = a[id];
    out.put(id ? ",\n    {\"id\": " : "\n    {\"id\": ");
    out.num(id);
    out.put(", \"chunk\": ");
    out.num(x.chunk);
    out.put(", \"src\": ");
    out.num(x.src);
    out.put(", \"dst\": ");
    out.num(x.dst);
    out.put(", \"op\": \"");
    out.put(to_string(x.op));
    out.put("\", \"route\": ");
    list(a.route(id));
    out.put(", \"deps\": ");
    list(a.deps(id));
    out.put(", \"start_ps\": ");
    time(x.start);
    out.put(", \"end_ps\": ");
    time(x.end);
    if (x.rate != 0) {
      out.put(", \"rate_Bps\": ");
      out.num(x.rate);
    }
    if (x.channel != 0) {
      out.put(", \"channel\": ");
      out.num(x.channel);
    }
    out.put("}");
  }
  out.put(a.size() ? "\n  ]\n}\n" : "]\n}\n");
}

}  // namespace

std::string to_json(const Algorithm& a) {
  Sink out(nullptr);
  out.text().reserve(512 + a.size() * 150);
  write_to(a, out);
  return std::move(out.text());
}

void write_json(const Algorithm& a, std::ostream& stream) {
  Sink out(&stream);
  write_to(a, out);
  out.flush();
}

namespace {

using nlohmann::json;

class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}
  [[noreturn]] void fail(const std::string& path, const std::string& what) const {
    throw Error(what, {file_, 0, 0, path});
  }
  const json& field(const json& obj, const char* key, const std::string& path) const {
    auto it = obj.find(key);
    if (it == obj.end()) fail(path, fmt::format("missing \"{}\"", key));
    return *it;
  }
  int64_t integer(const json& v, const std::string& path, int64_t lo, int64_t hi) const {
    if (!v.is_number_integer()) fail(path, fmt::format("expected a whole number, got {}", v.dump()));
    int64_t x = v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)
                    ? INT64_MAX
                    : v.get<int64_t>();
    if (x < lo || x > hi) fail(path, fmt::format("{} is out of range [{}, {}]", x, lo, hi));
    return x;
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

 private:
  std::string file_;
};

}  // namespace

Algorithm parse_algorithm_json(std::string_view text, const std::string& file) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::out_of_range& e) {  // a number past double's range: 1e999
    throw Error(fmt::format("a number is out of range: {}", e.what()), {file});
  } catch (const json::parse_error& e) {
    // Turn the byte offset into a line and column.
    int line = 1, column = 1;
    for (size_t i = 0; i + 1 < e.byte && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    std::string what = e.what();
    size_t colon = what.find("syntax error");
    throw Error(fmt::format("not valid JSON: {}", colon == std::string::npos ? what : what.substr(colon)),
                {file, line, column});
  }
  Reader r(file);
  if (!doc.is_object()) r.fail("", "expected a JSON object at the top");
  if (r.string(r.field(doc, "format", "format"), "format") != "tenet-algorithm")
    r.fail("format", "not a Tenet algorithm (\"format\" must be \"tenet-algorithm\")");
  const int64_t version = r.integer(r.field(doc, "version", "version"), "version", 0, 1'000'000);
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
      r.integer(r.field(c, "chunks_per_npu", "collective.chunks_per_npu"), "collective.chunks_per_npu", 1, 1 << 20));
  a.collective.root = c.contains("root")
                          ? static_cast<int>(r.integer(c["root"], "collective.root", 0, a.collective.num_ranks() - 1))
                          : 0;
  if (static_cast<int64_t>(a.collective.num_ranks()) * a.collective.num_ranks() * a.collective.chunks_per_npu >
      (int64_t{1} << 31))
    r.fail("collective", "too many chunks (over 2^31)");
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
  a.claimed_time = doc.contains("collective_time_ps") ? r.time(doc["collective_time_ps"], "collective_time_ps") : -1;

  const json& transfers = r.array(r.field(doc, "transfers", "transfers"), "transfers");
  const int64_t chunks = a.collective.num_chunks();
  const int64_t n = static_cast<int64_t>(transfers.size());
  a.reserve(transfers.size(), transfers.size() * 2, transfers.size());
  std::vector<LinkId> route;
  std::vector<TransferId> deps;
  for (int64_t i = 0; i < n; ++i) {
    const json& x = transfers[i];
    const std::string at = fmt::format("transfers[{}]", i);
    if (!x.is_object()) r.fail(at, "expected an object");
    if (x.contains("id") && r.integer(x["id"], at + ".id", 0, INT64_MAX) != i)
      r.fail(at + ".id", fmt::format("transfer ids must count up from 0 in list order: expected {}", i));
    const auto chunk = static_cast<ChunkId>(r.integer(r.field(x, "chunk", at), at + ".chunk", 0, INT64_MAX));
    if (chunk >= chunks)
      r.fail(at + ".chunk", fmt::format("chunk {} is out of range: the collective has chunks 0..{}", chunk, chunks - 1));
    const auto src = static_cast<NodeId>(r.integer(r.field(x, "src", at), at + ".src", 0, INT32_MAX));
    const auto dst = static_cast<NodeId>(r.integer(r.field(x, "dst", at), at + ".dst", 0, INT32_MAX));
    Op op = Op::Copy;
    if (x.contains("op")) {
      std::string o = r.string(x["op"], at + ".op");
      if (o == "reduce") op = Op::Reduce;
      else if (o != "copy") r.fail(at + ".op", fmt::format("unknown op '{}' (copy or reduce)", o));
    }
    route.clear();
    const json& jr = r.array(r.field(x, "route", at), at + ".route");
    for (size_t k = 0; k < jr.size(); ++k)
      route.push_back(static_cast<LinkId>(r.integer(jr[k], fmt::format("{}.route[{}]", at, k), 0, INT32_MAX)));
    deps.clear();
    if (x.contains("deps")) {
      const json& jd = r.array(x["deps"], at + ".deps");
      for (size_t k = 0; k < jd.size(); ++k) {
        int64_t d = r.integer(jd[k], fmt::format("{}.deps[{}]", at, k), 0, INT32_MAX);
        if (d >= n) r.fail(fmt::format("{}.deps[{}]", at, k), fmt::format("transfer {} does not exist ({} transfers)", d, n));
        deps.push_back(static_cast<TransferId>(d));
      }
    }
    const Time start = x.contains("start_ps") ? r.time(x["start_ps"], at + ".start_ps") : -1;
    const Time end = x.contains("end_ps") ? r.time(x["end_ps"], at + ".end_ps") : -1;
    if ((start < 0) != (end < 0)) r.fail(at, "start_ps and end_ps must both be given or both be null");
    if (start >= 0 && end < start) r.fail(at + ".end_ps", "ends before it starts");
    Bandwidth rate = 0;
    if (x.contains("rate_Bps")) {
      if (version < 2) r.fail(at + ".rate_Bps", "rates need version 2 of the format");
      rate = r.integer(x["rate_Bps"], at + ".rate_Bps", 1, int64_t{1'000'000'000'000'000});
    }
    int64_t channel = 0;
    if (x.contains("channel")) {
      if (version < 2) r.fail(at + ".channel", "channels need version 2 of the format");
      channel = r.integer(x["channel"], at + ".channel", 0, 65535);
    }
    a.add(chunk, src, dst, route, op, deps, start, end, rate, static_cast<uint16_t>(channel));
  }
  return a;
}

Algorithm load_algorithm(const std::string& path) {
  return parse_algorithm_json(topo::read_file(path), path);
}

void save_algorithm(const Algorithm& a, const std::string& path) {
  topo::write_file_atomically(path, [&](std::ostream& out) { write_json(a, out); });
}

}  // namespace tenet::synth
