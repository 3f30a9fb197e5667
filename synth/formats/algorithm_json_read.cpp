// Reading the algorithm JSON (synth/algorithm_json.hpp).
//
// Two readers make the same records. The fast one is simdjson's DOM parser, which validates as
// strictly as nlohmann does and runs several times faster. It reads files laid out as Tenet writes
// them, in slices, and takes only files as they should be; for anything else (a syntax error, a
// problem in a transfer, a field given twice in a transfer, another layout, a nesting deeper than
// simdjson allows) the reference reader reads the file again, and its result and messages are the
// ones given. The reference reader is nlohmann's SAX parser: the small head (format, collective,
// topology, ...) becomes a json value, checked as a document; the transfers go straight from the
// parser's events into compact records, so they never exist as a DOM (which takes many times the
// file's size).
//
// Here: what both share (the head's checks, a transfer's) and the entry points. The reference
// reader is algorithm_json_sax.cpp, the fast one algorithm_json_fast.cpp; what crosses files is in
// algorithm_json_detail.hpp.
#include <fmt/format.h>

#include <limits>
#include <optional>
#include <span>

#include "synth/formats/algorithm_json.hpp"
#include "synth/formats/algorithm_json_detail.hpp"
#include "topo/io.hpp"
#include "topo/limits.hpp"

namespace tenet::synth::detail {

Field field_of(std::string_view n) {  // compared by length first: ten million keys at 1024 NPUs
  return n == "id"         ? Field::Id
         : n == "chunk"    ? Field::Chunk
         : n == "src"      ? Field::Src
         : n == "dst"      ? Field::Dst
         : n == "op"       ? Field::Op
         : n == "route"    ? Field::Route
         : n == "deps"     ? Field::Deps
         : n == "start_ps" ? Field::Start
         : n == "end_ps"   ? Field::End
         : n == "rate_Bps" ? Field::Rate
         : n == "channel"  ? Field::Channel
         : n == "count"    ? Field::Count
         : n == "from"     ? Field::From
                           : Field::Other;
}
// A whole-number field's value into the record (its range checked by the caller).
void set_field(RawTransfer& x, Field f, int64_t v) {
  switch (f) {
    case Field::Chunk:
      x.chunk = v, x.has |= RawTransfer::kChunk;
      break;
    case Field::Src:
      x.src = static_cast<NodeId>(v), x.has |= RawTransfer::kSrc;
      break;
    case Field::Dst:
      x.dst = static_cast<NodeId>(v), x.has |= RawTransfer::kDst;
      break;
    case Field::Start:
      x.start = v, x.has |= RawTransfer::kStart;
      break;
    case Field::End:
      x.end = v, x.has |= RawTransfer::kEnd;
      break;
    case Field::Rate:
      x.rate = v, x.has |= RawTransfer::kRate;
      break;
    case Field::Channel:
      x.channel = static_cast<uint16_t>(v), x.has |= RawTransfer::kChannel;
      break;
    case Field::Count:
      x.count = static_cast<uint16_t>(v);
      break;
    default:
      break;
  }
}

// The head's checks: the algorithm without its transfers, and the format's version.
Algorithm build_head(const Reader& r, const json& doc, int64_t& version) {
  if (!doc.is_object()) r.fail("", "expected a JSON object at the top");
  if (r.string(r.field(doc, "format", "format"), "format") != "tenet-algorithm")
    r.fail("format", "not a Tenet algorithm (\"format\" must be \"tenet-algorithm\")");
  version = r.integer(r.field(doc, "version", "version"), "version", 0, 1'000'000);
  if (version < kOldestAlgorithmFormatVersion || version > kAlgorithmFormatVersion)
    r.fail("version", fmt::format("unsupported version {} (this Tenet reads versions {} to {})",
                                  version, kOldestAlgorithmFormatVersion, kAlgorithmFormatVersion));
  Algorithm a;
  if (doc.contains("name")) a.name = r.string(doc["name"], "name");
  if (doc.contains("method")) a.method = r.string(doc["method"], "method");
  const json& c = r.field(doc, "collective", "collective");
  if (!c.is_object()) r.fail("collective", "expected an object");
  try {
    a.collective.kind =
        parse_collective(r.string(r.field(c, "kind", "collective.kind"), "collective.kind"));
  } catch (const Error& e) {
    r.fail("collective.kind", e.message());
  }
  const json& ranks = r.array(r.field(c, "ranks", "collective.ranks"), "collective.ranks");
  for (size_t i = 0; i < ranks.size(); ++i)
    a.collective.ranks.push_back(static_cast<NodeId>(r.integer(
        ranks[i], fmt::format("collective.ranks[{}]", i), 0, std::numeric_limits<NodeId>::max())));
  if (a.collective.ranks.size() < 2)
    r.fail("collective.ranks", "a collective needs at least 2 ranks");
  a.collective.chunks_per_npu = static_cast<int>(
      r.integer(r.field(c, "chunks_per_npu", "collective.chunks_per_npu"),
                "collective.chunks_per_npu", 1, topo::kMaxChunksPerNpuOfAlgorithm));
  a.collective.root = c.contains("root")
                          ? static_cast<int>(r.integer(c["root"], "collective.root", 0,
                                                       a.collective.num_ranks() - 1))
                          : 0;
  if (a.collective.wide_chunks() >= (int64_t{1} << 31))
    r.fail("collective",
           fmt::format("too many chunks ({}, over 2^31)", a.collective.wide_chunks()));
  if (c.contains("chunks")) {  // All-Reduce: C chunks in all
    if (a.collective.kind != CollectiveKind::AllReduce)
      r.fail("collective.chunks",
             fmt::format("a chunk count in all is for all-reduce; {} has its chunks per NPU",
                         to_string(a.collective.kind)));
    a.collective.all_reduce_chunks = static_cast<int>(
        r.integer(c["chunks"], "collective.chunks", 1, std::numeric_limits<int32_t>::max()));
  }
  if (c.contains("pair_units")) {  // All-to-Allv: P x P units, row-major
    const json& units = r.array(c["pair_units"], "collective.pair_units");
    std::vector<int32_t> matrix;
    for (size_t i = 0; i < units.size(); ++i)
      matrix.push_back(
          static_cast<int32_t>(r.integer(units[i], fmt::format("collective.pair_units[{}]", i), 0,
                                         std::numeric_limits<int32_t>::max())));
    if (a.collective.kind != CollectiveKind::AllToAll)
      r.fail("collective.pair_units", fmt::format("a traffic matrix is for all-to-all, not {}",
                                                  to_string(a.collective.kind)));
    try {
      a.collective.set_pair_units(std::move(matrix));
    } catch (const Error& e) {
      r.fail("collective.pair_units", e.message());
    }
    if (static_cast<double>(a.collective.total_units()) * a.collective.chunks_per_npu >
        static_cast<double>(int64_t{1} << 31))
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
  a.chunk_bytes =
      r.integer(r.field(doc, "chunk_bytes", "chunk_bytes"), "chunk_bytes", 1, int64_t{1} << 50);
  if (doc.contains("link_model")) {
    try {
      a.link_model = parse_link_model(r.string(doc["link_model"], "link_model"));
    } catch (const Error& e) {
      r.fail("link_model", e.message());
    }
  }
  if (doc.contains("reduce_Bps"))
    a.reduce_bandwidth =
        r.integer(doc["reduce_Bps"], "reduce_Bps", 0, int64_t{1'000'000'000'000'000});
  if (doc.contains("channels")) {
    const std::string channels = r.string(doc["channels"], "channels");
    if (channels != "serial" && channels != "shared")
      r.fail("channels", fmt::format("'{}' is neither 'shared' nor 'serial'", channels));
    a.serial_channels = channels == "serial";
  }
  if (doc.contains("step_costs")) {
    if (!doc["step_costs"].is_boolean())
      r.fail("step_costs", fmt::format("expected true or false, got {}", doc["step_costs"].dump()));
    a.step_costs = doc["step_costs"].get<bool>();
  }
  if (doc.contains("protocol")) a.protocol = r.string(doc["protocol"], "protocol");
  a.claimed_time = doc.contains("collective_time_ps")
                       ? r.time(doc["collective_time_ps"], "collective_time_ps")
                       : -1;

  r.array(r.field(doc, "transfers", "transfers"), "transfers");
  return a;
}

namespace {

// Transfer i's dependencies against the count of transfers.
void check_deps(const Reader& r, int64_t i, std::span<const TransferId> deps, int64_t n) {
  for (size_t k = 0; k < deps.size(); ++k)
    if (deps[k] >= n)
      r.fail(fmt::format("transfers[{}].deps[{}]", i, k),
             fmt::format("transfer {} does not exist ({} transfers)", deps[k], n));
}

}  // namespace

// A transfer's checks (its fields, its chunk against the head, its dependencies against the count
// `n` when known, its times), then it is added.
void add_checked(const Reader& r, Algorithm& a, int64_t i, const RawTransfer& x,
                 std::span<const LinkId> route, std::span<const TransferId> deps, int64_t chunks,
                 std::optional<int64_t> n) {
  auto at = [&] { return fmt::format("transfers[{}]", i); };
  for (auto [bit, name] : {std::pair{RawTransfer::kChunk, "chunk"},
                           {RawTransfer::kSrc, "src"},
                           {RawTransfer::kDst, "dst"},
                           {RawTransfer::kRoute, "route"}})
    if (!(x.has & bit)) r.fail(at(), fmt::format("missing \"{}\"", name));
  if (x.chunk >= chunks)
    r.fail(at() + ".chunk", fmt::format("chunk {} is out of range: the collective has chunks 0..{}",
                                        x.chunk, chunks - 1));
  if (x.count > chunks - x.chunk)
    r.fail(at() + ".count",
           fmt::format("carries chunks {}..{}, past the collective's last chunk {}", x.chunk,
                       x.chunk + x.count - 1, chunks - 1));
  if (n) check_deps(r, i, deps, *n);
  if ((x.start < 0) != (x.end < 0))
    r.fail(at(), "start_ps and end_ps must both be given or both be null");
  if (x.start >= 0 && x.end < x.start) r.fail(at() + ".end_ps", "ends before it starts");
  a.add(static_cast<ChunkId>(x.chunk), x.src, x.dst, route, x.op, deps, x.start, x.end, x.rate,
        x.channel, x.from_input, x.count);
}

}  // namespace tenet::synth::detail

namespace tenet::synth {

Algorithm parse_algorithm_json(std::string_view text, const std::string& file) {
  if (std::optional<Algorithm> a = parse_algorithm_json_fast(text)) return std::move(*a);
  return parse_algorithm_json_reference(text, file);
}

Algorithm load_algorithm(const std::string& path) {
  const topo::FileBytes bytes(path);
  // The pages the fast reader is done with go as it goes (the reference reader maps them back).
  if (std::optional<Algorithm> a = parse_algorithm_json_fast(bytes.view(), size_t{4} << 20,
                                                             [&](size_t b) { bytes.release(b); }))
    return std::move(*a);
  return parse_algorithm_json_reference(bytes.view(), path);
}

}  // namespace tenet::synth
