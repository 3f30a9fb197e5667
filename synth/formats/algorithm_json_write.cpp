#include "synth/formats/algorithm_json.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <ostream>

#include "topo/io.hpp"

namespace tenet::synth {

namespace {

// Where the JSON text goes: kept whole (to_json), or passed on to a stream a megabyte at a time
// (write_json), so that a million transfers never sit in memory as one string. The text is a
// buffer filled up to `used_` (a piece is copied in without the string's own bookkeeping).
class Sink {
 public:
  explicit Sink(std::ostream* stream) : stream_(stream) {
    text_.resize(stream ? kFlushAt + kSlack : kSlack);
  }
  void put(std::string_view s) {
    if (used_ + s.size() > text_.size()) make_room(s.size());
    std::memcpy(text_.data() + used_, s.data(), s.size());
    used_ += s.size();
    if (stream_ && used_ >= kFlushAt) flush();
  }
  void num(int64_t v) {
    const fmt::format_int f(v);
    put({f.data(), f.size()});
  }
  void flush() {
    stream_->write(text_.data(), static_cast<std::streamsize>(used_));
    used_ = 0;
  }
  // The text so far; the sink is done with.
  std::string& text() {
    text_.resize(used_);
    return text_;
  }

 private:
  static constexpr size_t kFlushAt = size_t{1} << 20;
  static constexpr size_t kSlack = size_t{1} << 12;
  void make_room(size_t n) { text_.resize(std::max(2 * text_.size(), used_ + n)); }

  std::ostream* stream_;
  std::string text_;
  size_t used_ = 0;
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
  // Versions 3 and 4 only where needed: files without inputs sent stay readable by version-2
  // readers, files without transfers of several chunks by version-3 ones.
  out.put(fmt::format("{{\n  \"format\": \"tenet-algorithm\",\n  \"version\": {},\n",
                      a.has_messages()  ? 4
                      : a.sends_input() ? 3
                                        : 2));
  out.put(fmt::format("  \"name\": {},\n", json(a.name).dump()));
  if (!a.method.empty()) out.put(fmt::format("  \"method\": {},\n", json(a.method).dump()));
  out.put(
      fmt::format("  \"collective\": {{\"kind\": \"{}\", \"ranks\": {}, \"chunks_per_npu\": {}, "
                  "\"root\": {}{}}},\n",
                  to_string(c.kind), json(c.ranks).dump(), c.chunks_per_npu, c.root,
                  c.uneven() ? fmt::format(", \"pair_units\": {}", json(c.pair_units).dump())
                  : c.all_reduce_chunks > 0 ? fmt::format(", \"chunks\": {}", c.all_reduce_chunks)
                                            : ""));
  out.put(fmt::format("  \"topology\": {{\"name\": {}, \"fingerprint\": \"{:016x}\"}},\n",
                      json(a.topology_name).dump(), a.topology_fingerprint));
  out.put(fmt::format("  \"chunk_bytes\": {},\n  \"link_model\": \"{}\",\n", a.chunk_bytes,
                      to_string(a.link_model)));
  if (a.reduce_bandwidth > 0) out.put(fmt::format("  \"reduce_Bps\": {},\n", a.reduce_bandwidth));
  if (a.serial_channels) out.put("  \"channels\": \"serial\",\n");
  if (a.step_costs) out.put("  \"step_costs\": true,\n");
  if (!a.protocol.empty()) out.put(fmt::format("  \"protocol\": {},\n", json(a.protocol).dump()));
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
    if (const Bandwidth rate = a.rate(id); rate != 0) {
      out.put(", \"rate_Bps\": ");
      out.num(rate);
    }
    if (x.channel != 0) {
      out.put(", \"channel\": ");
      out.num(x.channel);
    }
    if (x.from_input) out.put(", \"from\": \"input\"");
    if (x.count != 1) {
      out.put(", \"count\": ");
      out.num(x.count);
    }
    out.put("}");
  }
  out.put(a.size() ? "\n  ]\n}\n" : "]\n}\n");
}

}  // namespace

std::string to_json(const Algorithm& a) {
  Sink out(nullptr);
  write_to(a, out);
  return std::move(out.text());
}

void write_json(const Algorithm& a, std::ostream& stream) {
  Sink out(&stream);
  write_to(a, out);
  out.flush();
}

void save_algorithm(const Algorithm& a, const std::string& path) {
  topo::write_file_atomically(path, [&](std::ostream& out) { write_json(a, out); });
}

}  // namespace tenet::synth
