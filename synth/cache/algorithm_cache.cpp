#include "synth/cache/algorithm_cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <system_error>
#include <utility>
#include <vector>

#include "synth/cache/build_id.hpp"
#include "synth/formats/algorithm_columns.hpp"
#include "synth/formats/algorithm_json.hpp"
#include "synth/verify/verify.hpp"
#include "topo/io.hpp"
#include "topo/limits.hpp"
#include "topo/no_follow.hpp"

namespace tenet::synth {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr std::string_view kExtension = ".tenet";
// 2: the algorithm's JSON head then its transfers as columns (synth/formats/algorithm_columns.hpp);
// 1 (read as a miss, then replaced): the algorithm's whole JSON.
constexpr int kEntryFormat = 2;

// FNV-1a, 64 bits: a file name for a key (the key itself is kept in the entry and compared).
uint64_t fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char ch : s) {
    h ^= ch;
    h *= 1099511628211ULL;
  }
  return h;
}

json provenance_json(const Provenance& p) {
  auto traits = [](const PipelineTraits& t) {
    return json{
        {"trees", t.trees},      {"per", t.per},     {"per_root", t.per_root},
        {"sped_up", t.sped_up},  {"lanes", t.lanes}, {"paced", t.paced},
        {"serial", t.serial},    {"split", t.split}, {"dealt_by_arrival", t.dealt_by_arrival},
        {"messages", t.messages}};
  };
  return json{{"producer", static_cast<int>(p.producer)},
              {"choice", static_cast<int>(p.choice)},
              {"under_hold", p.under_hold},
              {"matcher_left_out", p.matcher_left_out},
              {"in_group_part", p.in_group_part},
              {"rail_trees", p.rail_trees},
              {"mirrors", p.mirrors},
              {"halves_in_turn", p.halves_in_turn},
              {"halves_answers", p.halves_answers},
              {"full_rate_drain", p.full_rate_drain},
              {"tail_spread", p.tail_spread},
              {"pipeline", traits(p.pipeline)},
              {"all_gather", traits(p.all_gather)},
              {"baseline", p.baseline}};
}

Provenance provenance_of(const json& j) {
  auto traits = [](const json& t) {
    PipelineTraits r;
    r.trees = t.at("trees").get<int>();
    r.per = t.at("per").get<int>();
    r.per_root = t.at("per_root").get<bool>();
    r.sped_up = t.at("sped_up").get<bool>();
    r.lanes = t.at("lanes").get<bool>();
    r.paced = t.at("paced").get<bool>();
    r.serial = t.at("serial").get<bool>();
    r.split = t.at("split").get<int>();
    r.dealt_by_arrival = t.at("dealt_by_arrival").get<bool>();
    r.messages = t.at("messages").get<bool>();
    return r;
  };
  Provenance p;
  const int producer = j.at("producer").get<int>();
  const int choice = j.at("choice").get<int>();
  if (producer < 0 || producer > static_cast<int>(Producer::Baseline) || choice < 0 ||
      choice > static_cast<int>(MatcherChoice::RandomYielding))
    throw Error("cache entry: provenance out of range");
  p.producer = static_cast<Producer>(producer);
  p.choice = static_cast<MatcherChoice>(choice);
  p.under_hold = j.at("under_hold").get<bool>();
  p.matcher_left_out = j.at("matcher_left_out").get<bool>();
  p.in_group_part = j.at("in_group_part").get<bool>();
  p.rail_trees = j.at("rail_trees").get<bool>();
  p.mirrors = j.at("mirrors").get<bool>();
  p.halves_in_turn = j.at("halves_in_turn").get<bool>();
  p.halves_answers = j.at("halves_answers").get<bool>();
  p.full_rate_drain = j.at("full_rate_drain").get<double>();
  p.tail_spread = j.at("tail_spread").get<double>();
  if (!(p.full_rate_drain >= 0 && p.full_rate_drain < 1) ||
      !(p.tail_spread >= 0 && p.tail_spread < 1))
    throw Error("cache entry: provenance out of range");
  p.pipeline = traits(j.at("pipeline"));
  p.all_gather = traits(j.at("all_gather"));
  p.baseline = j.at("baseline").get<std::string>();
  return p;
}

// The entry's file, read without following a link; none when it is missing, a link, not a
// regular file, or unreadable (a damaged entry is replaced, never trusted).
std::optional<std::string> read_entry(const std::string& path) {
  try {
    return topo::no_follow::read_file_at(AT_FDCWD, path, path);
  } catch (const Error&) {
    return std::nullopt;
  }
}

// Whether `a` is what was asked for: the same topology, collective, size and model.
bool as_asked(const Algorithm& a, const topo::Topology& t, const Collective& c,
              const AlgorithmCache::Expected& e) {
  const Collective& x = a.collective;
  const bool size = e.auto_chunks
                        ? a.chunk_bytes == x.chunk_bytes_for(e.bytes)
                        : a.chunk_bytes == e.bytes && x.chunks_per_npu == c.chunks_per_npu &&
                              x.all_reduce_chunks == c.all_reduce_chunks;
  return a.topology_fingerprint == t.fingerprint() && x.kind == c.kind && x.ranks == c.ranks &&
         x.root == c.root && x.pair_units == c.pair_units && size && a.link_model == e.link_model &&
         a.reduce_bandwidth == e.reduce_bandwidth && a.step_costs == t.charges_steps();
}

}  // namespace

AlgorithmCache::AlgorithmCache(std::string folder, uint64_t max_bytes)
    : folder_(std::move(folder)), max_bytes_(max_bytes) {}

std::optional<std::string> AlgorithmCache::default_folder() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg == '/')
    return (fs::path(xdg) / "tenet").string();
  if (const char* home = std::getenv("HOME"); home && *home == '/')
    return (fs::path(home) / ".cache" / "tenet").string();
  return std::nullopt;
}

std::string AlgorithmCache::path_of(const std::string& key) const {
  return (fs::path(folder_) / fmt::format("{:016x}{}", fnv1a(key), kExtension)).string();
}

std::optional<ChunkingResult> AlgorithmCache::load(const std::string& key, const topo::Topology& t,
                                                   const Collective& c, const Expected& expected) {
  const std::string path = path_of(key);
  const std::optional<std::string> text = read_entry(path);
  if (!text) {
    ++misses_;
    return std::nullopt;
  }
  auto reject = [&]() -> std::optional<ChunkingResult> {
    ++misses_;
    ++rejected_;
    return std::nullopt;
  };
  const size_t line = text->find('\n');
  if (line == std::string::npos) return reject();
  ChunkingResult r;
  try {
    const json header = json::parse(std::string_view(*text).substr(0, line));
    if (header.at("format").get<int>() != kEntryFormat) return reject();
    if (header.at("key").get<std::string>() != key) {
      ++misses_;  // another key of the same hash: a miss, replaced by the next store
      return std::nullopt;
    }
    const auto head_bytes = header.at("head_bytes").get<size_t>();
    if (head_bytes > text->size() - line - 1) return reject();
    r.algorithm = parse_algorithm_json(std::string_view(*text).substr(line + 1, head_bytes), path);
    if (r.algorithm.size() != 0 ||
        !add_transfers_from_columns(std::string_view(*text).substr(line + 1 + head_bytes),
                                    r.algorithm))
      return reject();
    r.chunks_per_npu = header.at("chunks_per_npu").get<int>();
    // What the entry says of the search is printed beside the algorithm, unverified but for
    // these: counts of the IR's range, times of no less than 0, and no count made faster than
    // the answer (the answer is the fastest made).
    const auto count_ok = [](int k) { return k >= 1 && k <= topo::kMaxChunksPerNpuOfAlgorithm; };
    if (!count_ok(r.chunks_per_npu)) return reject();
    r.algorithm.provenance = provenance_of(header.at("provenance"));
    for (const json& tried : header.at("tried")) {
      ChunkingResult::Try x;
      x.chunks_per_npu = tried.at(0).get<int>();
      x.time = tried.at(1).get<Time>();
      if (const int alone = tried.at(2).get<int>(); alone >= 0) {
        if (alone > static_cast<int>(SynthMethod::Symmetric)) return reject();
        x.alone = static_cast<SynthMethod>(alone);
      }
      // (Entries before floors were kept have three fields: every count a time.)
      const int flags = tried.size() > 3 ? tried.at(3).get<int>() : 0;
      x.floor = (flags & 1) != 0;
      x.predicted = (flags & 2) != 0;
      if (!count_ok(x.chunks_per_npu) || x.time < 0 ||
          (!x.floor && !x.predicted && x.time < r.algorithm.claimed_time))
        return reject();
      r.tried.push_back(x);
    }
    if (!as_asked(r.algorithm, t, c, expected)) return reject();
    // Trusted only as the verifier finds it: correct, and its claimed time the model's.
    const Report report = verify(t, r.algorithm, {.max_reported = 1, .lower_bound = false});
    if (!report.correct() || report.claimed_time != report.model_time) return reject();
  } catch (const std::exception&) {
    return reject();
  }
  r.algorithm.topology_name = t.name();  // informational: the name it is asked for under
  ++hits_;
  // A hit renews the entry (the least recently used go first when the folder is full).
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, AT_SYMLINK_NOFOLLOW);
  return r;
}

bool AlgorithmCache::store(const std::string& key, const Algorithm& a, int chunks_per_npu,
                           const std::vector<ChunkingResult::Try>& tried_counts) {
  json tried = json::array();
  for (const ChunkingResult::Try& x : tried_counts)
    tried.push_back(
        json::array({x.chunks_per_npu, x.time, x.alone ? static_cast<int>(*x.alone) : -1,
                     (x.floor ? 1 : 0) | (x.predicted ? 2 : 0)}));
  // The algorithm's JSON without its transfers, then they as columns, which a hit reads straight
  // into the algorithm (synth/formats/algorithm_columns.hpp).
  const std::string head = to_json(with_transfers(a, {}));
  const json header{{"format", kEntryFormat},
                    {"key", key},
                    {"head_bytes", head.size()},
                    {"chunks_per_npu", chunks_per_npu},
                    {"provenance", provenance_json(a.provenance)},
                    {"tried", tried}};
  const std::string path = path_of(key);
  try {
    std::error_code ec;
    fs::create_directories(folder_, ec);
    ::chmod(folder_.c_str(), 0700);
    // A link where the entry goes is removed, never written through.
    if (fs::is_symlink(fs::symlink_status(path, ec))) fs::remove(path, ec);
    topo::write_file_atomically(path, [&](std::ostream& out) {
      out << header.dump() << '\n' << head << transfers_to_columns(a);
    });
  } catch (const std::exception&) {
    ++failed_stores_;
    return false;
  }
  ++stores_;
  prune();
  return true;
}

void AlgorithmCache::prune() {
  struct Entry {
    fs::file_time_type when;
    uint64_t bytes;
    fs::path path;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  std::error_code ec;
  for (fs::directory_iterator it(folder_, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    if (p.extension() != kExtension || !it->is_regular_file(ec) || it->is_symlink(ec)) continue;
    const uint64_t bytes = it->file_size(ec);
    const fs::file_time_type when = it->last_write_time(ec);
    if (ec) {
      ec.clear();
      continue;
    }
    entries.push_back({when, bytes, p});
    total += bytes;
  }
  if (total <= max_bytes_) return;
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.when < b.when; });
  for (const Entry& e : entries) {
    if (total <= max_bytes_) break;
    if (fs::remove(e.path, ec)) total -= e.bytes;
  }
}

std::string cache_key(std::string_view producer, const topo::Topology& t, const Collective& c,
                      Bytes bytes, bool auto_chunks, int max_chunks_per_npu,
                      const SynthOptions& o) {
  std::string k;
  auto line = [&k](std::string_view name, auto&& value) {
    k += fmt::format("{}={}\n", name, std::forward<decltype(value)>(value));
  };
  line("tenet", build_id());
  line("producer", producer);
  // The topology: what the fingerprint covers (nodes, links, bandwidths, latencies), what it does
  // not that changes a result (per-step costs where charged, the structure it was made with, a
  // preset's calibration).
  line("topology", fmt::format("{:016x}", t.fingerprint()));
  line("steps", t.charges_steps());
  if (t.charges_steps()) {
    std::string steps;
    for (const topo::Link& l : t.links()) steps += fmt::format("{},", l.step);
    line("link_steps", fmt::format("{:016x}", fnv1a(steps)));
  }
  line("levels", fmt::join(t.levels(), ","));
  line("grid", fmt::join(t.grid(), ","));
  for (const auto& [algorithm, efficiency] : t.calibration().algorithm_efficiency)
    line("efficiency", fmt::format("{}:{}", algorithm, efficiency));
  // Under a protocol (its share and steps are in the links above): the producers it excludes.
  if (const topo::Protocol* p = t.applied())
    line("protocol", fmt::format("{}:{}:{}", p->name, p->in_network, fmt::join(p->excludes, ",")));
  // The collective.
  line("kind", to_string(c.kind));
  line("ranks", fmt::join(c.ranks, ","));
  line("root", c.root);
  line("chunks_per_npu", c.chunks_per_npu);
  line("all_reduce_chunks", c.all_reduce_chunks);
  line("pair_units", fmt::join(c.pair_units, ","));
  line(auto_chunks ? "total_bytes" : "chunk_bytes", bytes);
  if (auto_chunks) line("max_chunks_per_npu", max_chunks_per_npu);
  // Every option (SynthOptions: keep in step with its fields).
  line("method", to_string(o.method));
  line("seed", o.seed);
  line("restarts", o.restarts);
  line("link_model", to_string(o.link_model));
  line("ecmp_routes", o.ecmp_routes);
  line("reduce_bandwidth", o.reduce_bandwidth);
  line("time_baselines", o.time_baselines);
  line("priority", to_string(o.matcher.priority));
  line("slow_links_yield", o.matcher.slow_links_yield);
  line("split", o.pipelines.split);
  line("variants", o.pipelines.variants);
  line("predicted", o.pipelines.predicted);
  line("random_choice", o.portfolio.random_choice);
  line("baselines", o.portfolio.baselines);
  line("team_relay", o.portfolio.team_relay);
  line("borrow_servers", o.portfolio.borrow_servers);
  line("chunk_transfers", o.portfolio.chunk_transfers);
  line("matcher_work", o.portfolio.matcher_work);
  line("matcher_work_beside_servers", o.portfolio.matcher_work_beside_servers);
  line("matcher_work_beside_symmetric", o.portfolio.matcher_work_beside_symmetric);
  line("across_sizes", o.portfolio.across_sizes);
  line("rail_messages", o.portfolio.rail_messages);
  line("full_rate_drain", o.portfolio.full_rate_drain);
  line("tail_spread", o.portfolio.tail_spread);
  line("halves_answers", o.portfolio.halves_answers);
  return k;
}

std::string_view build_id() { return kBuildId; }

}  // namespace tenet::synth
