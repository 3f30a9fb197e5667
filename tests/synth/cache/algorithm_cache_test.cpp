// The algorithm cache: a hit gives back what was made; any change of what decides a result misses;
// a damaged, tampered or linked entry is never trusted; writers sharing a folder never tear an
// entry; the folder stays under its size.
#include "synth/cache/algorithm_cache.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "synth/producers.hpp"
#include "synth/synthesizer.hpp"
#include "tests/topo/test_util.hpp"
#include "topo/generators.hpp"
#include "topo/io.hpp"

namespace tenet::synth {
namespace {

namespace fs = std::filesystem;

constexpr Bytes kSize = Bytes{4} << 20;

topo::Topology stepped(const std::string& spec) {
  topo::Topology t = topo::generate(spec);
  t.set_charges_steps(true);
  return t;
}

std::string key_of(const topo::Topology& t, const Collective& c, Bytes bytes = kSize,
                   const SynthOptions& o = {}) {
  return cache_key("tenet", t, c, bytes, true, 8, o);
}

TEST(AlgorithmCache, AHitGivesBackWhatWasMade) {
  topo::testing::TempDir tmp;
  const topo::Topology t = stepped("leafspine:2x4");
  const Collective c = Collective::over_all(t, CollectiveKind::AllReduce);
  AlgorithmCache cache(tmp.file("cache"));
  SynthOptions o;
  o.cache = &cache;
  const ChunkingResult made = make_algorithm_auto_chunks("tenet", t, c, kSize, o, 8);
  EXPECT_EQ(cache.misses(), 1);
  EXPECT_EQ(cache.stores(), 1);
  const ChunkingResult again = make_algorithm_auto_chunks("tenet", t, c, kSize, o, 8);
  EXPECT_EQ(cache.hits(), 1);
  EXPECT_EQ(cache.stores(), 1);  // nothing made, nothing kept
  EXPECT_EQ(again.algorithm.claimed_time, made.algorithm.claimed_time);
  EXPECT_EQ(again.algorithm.size(), made.algorithm.size());
  EXPECT_EQ(again.algorithm.method, made.algorithm.method);
  EXPECT_EQ(again.algorithm.provenance, made.algorithm.provenance);
  EXPECT_EQ(again.algorithm.step_costs, made.algorithm.step_costs);
  EXPECT_EQ(again.chunks_per_npu, made.chunks_per_npu);
  ASSERT_EQ(again.tried.size(), made.tried.size());
  for (size_t i = 0; i < made.tried.size(); ++i) {
    EXPECT_EQ(again.tried[i].chunks_per_npu, made.tried[i].chunks_per_npu);
    EXPECT_EQ(again.tried[i].time, made.tried[i].time);
    EXPECT_EQ(again.tried[i].alone, made.tried[i].alone);
  }
  // A fixed chunk count is its own entry.
  const Algorithm fixed = make_algorithm("tenet", t, c, c.chunk_bytes_for(kSize), o);
  const Algorithm fixed_again = make_algorithm("tenet", t, c, c.chunk_bytes_for(kSize), o);
  EXPECT_EQ(cache.hits(), 2);
  EXPECT_EQ(fixed_again.claimed_time, fixed.claimed_time);
  // Baselines are not kept (they are quicker to build than to verify).
  make_algorithm("ring", t, c, c.chunk_bytes_for(kSize), o);
  EXPECT_EQ(cache.stores(), 2);
}

TEST(AlgorithmCache, EveryInputThatDecidesTheResultIsInTheKey) {
  const topo::Topology t = stepped("leafspine:2x4");
  const Collective c = Collective::over_all(t, CollectiveKind::AllReduce);
  const std::string base = key_of(t, c);
  EXPECT_EQ(key_of(t, c), base);  // the same inputs, the same key
  std::vector<std::string> others;
  others.push_back(key_of(t, c, kSize * 2));
  others.push_back(cache_key("tenet", t, c, kSize, false, 8, {}));  // a fixed chunk size
  others.push_back(cache_key("tenet", t, c, kSize, true, 16, {}));  // a wider search
  others.push_back(cache_key("ring", t, c, kSize, true, 8, {}));
  Collective other = c;
  other.kind = CollectiveKind::AllGather;
  others.push_back(key_of(t, other));
  other = c;
  other.ranks.pop_back();
  others.push_back(key_of(t, other));
  other = c;
  other.chunks_per_npu = 2;
  others.push_back(key_of(t, other));
  for (auto change : std::vector<void (*)(SynthOptions&)>{
           [](SynthOptions& o) { o.seed = 2; },
           [](SynthOptions& o) { o.restarts = 2; },
           [](SynthOptions& o) { o.method = SynthMethod::Matcher; },
           [](SynthOptions& o) { o.link_model = LinkModel::Hold; },
           [](SynthOptions& o) { o.reduce_bandwidth = 1'000'000'000; },
           [](SynthOptions& o) { o.matcher.priority = ChunkPriority::Random; },
           [](SynthOptions& o) { o.portfolio.borrow_servers = false; },
           [](SynthOptions& o) { o.portfolio.chunk_transfers = 1000; },
           [](SynthOptions& o) { o.portfolio.full_rate_drain = false; },
       }) {
    SynthOptions o;
    change(o);
    others.push_back(key_of(t, c, kSize, o));
  }
  // The topology: another one, per-step costs off, one link's step changed.
  others.push_back(
      key_of(stepped("leafspine:2x2"),
             Collective::over_all(stepped("leafspine:2x2"), CollectiveKind::AllReduce)));
  topo::Topology unstepped = t;
  unstepped.set_charges_steps(false);
  others.push_back(key_of(unstepped, c));
  // Four NPUs in a ring, one link's step doubled: the same fingerprint.
  auto ring_of = [](Time first_step) {
    topo::TopologyBuilder b("ring");
    for (int i = 0; i < 4; ++i) b.add_npu();
    for (int i = 0; i < 4; ++i) b.add_bidirectional(i, (i + 1) % 4, 100'000'000'000, 500'000);
    b.set_link_step(0, first_step);
    return b;
  };
  topo::TopologyBuilder b = ring_of(2 * topo::kDefaultStep);
  topo::Topology changed = b.build();
  changed.set_charges_steps(true);
  topo::Topology ring = ring_of(topo::kDefaultStep).build();
  ring.set_charges_steps(true);
  ASSERT_EQ(changed.fingerprint(), ring.fingerprint());  // steps are not in the fingerprint
  const Collective rc = Collective::over_all(ring, CollectiveKind::AllReduce);
  EXPECT_NE(key_of(changed, rc), key_of(ring, rc));
  for (size_t i = 0; i < others.size(); ++i) EXPECT_NE(others[i], base) << i;
}

TEST(AlgorithmCache, AnotherKeyMisses) {
  topo::testing::TempDir tmp;
  const topo::Topology t = stepped("ring:4");
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather);
  AlgorithmCache cache(tmp.file("cache"));
  SynthOptions o;
  o.cache = &cache;
  make_algorithm_auto_chunks("tenet", t, c, kSize, o, 8);
  make_algorithm_auto_chunks("tenet", t, c, kSize * 2, o, 8);
  o.seed = 7;
  make_algorithm_auto_chunks("tenet", t, c, kSize, o, 8);
  EXPECT_EQ(cache.hits(), 0);
  EXPECT_EQ(cache.misses(), 3);
  EXPECT_EQ(cache.stores(), 3);
}

// An entry made under one key, stored, and the file it lives in.
struct Stored {
  topo::Topology t = stepped("ring:4");
  Collective c = Collective::over_all(t, CollectiveKind::AllGather);
  std::string key = key_of(t, c);
  ChunkingResult made = synthesize_auto_chunks(t, c, kSize, {}, 8);
  AlgorithmCache::Expected expected{kSize, true, LinkModel::Pipelined, 0};
};

// A hit keeps the fraction of the run `field` (named `name` in the entry) set to `value`; `damaged`
// there instead is a damaged entry, not trusted.
void expect_fraction_kept(double Provenance::*field, const std::string& name, double value,
                          double damaged) {
  topo::testing::TempDir tmp;
  Stored s;
  AlgorithmCache cache(tmp.file("cache"));
  s.made.algorithm.provenance.*field = value;
  ASSERT_TRUE(cache.store(s.key, s.made.algorithm, s.made.chunks_per_npu, s.made.tried));
  const std::optional<ChunkingResult> hit = cache.load(s.key, s.t, s.c, s.expected);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->algorithm.provenance.*field, value);
  const std::string path = cache.path_of(s.key);
  std::string whole = topo::read_file(path);
  const size_t header = whole.find('\n');
  nlohmann::json head = nlohmann::json::parse(whole.substr(0, header));
  head.at("provenance").at(name) = damaged;
  topo::write_file_atomically(path, head.dump() + whole.substr(header));
  EXPECT_FALSE(cache.load(s.key, s.t, s.c, s.expected));
}

// An answer whose drain went at full rate (synth/plans/full_rate_drain.hpp) keeps the tail it
// drained from; a tail out of range (none drains all of the run) is a damaged entry.
TEST(AlgorithmCache, AHitKeepsTheTailItsDrainWentAtFullRateFrom) {
  expect_fraction_kept(&Provenance::full_rate_drain, "full_rate_drain", 0.03, 1.5);
}

// An answer whose last deliveries were listed again (synth/plans/tail_spread.hpp) keeps the tail
// they were listed from; a negative one is a damaged entry.
TEST(AlgorithmCache, AHitKeepsTheTailItsDeliveriesWereListedAgainFrom) {
  expect_fraction_kept(&Provenance::tail_spread, "tail_spread", 0.015, -0.5);
}

// An All-Reduce made of its halves' own answers (Provenance::halves_answers) keeps that and both
// halves' traits; a producer past the last is a damaged entry.
TEST(AlgorithmCache, AHitKeepsAnAllReduceOfItsHalvesAnswers) {
  topo::testing::TempDir tmp;
  Stored s;
  AlgorithmCache cache(tmp.file("cache"));
  Provenance& p = s.made.algorithm.provenance;
  p = Provenance(Producer::TeamRelay);
  p.mirrors = p.halves_in_turn = p.halves_answers = true;
  p.pipeline.trees = 3;
  p.all_gather.trees = 5;
  ASSERT_TRUE(cache.store(s.key, s.made.algorithm, s.made.chunks_per_npu, s.made.tried));
  const std::optional<ChunkingResult> hit = cache.load(s.key, s.t, s.c, s.expected);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->algorithm.provenance, p);
  const std::string path = cache.path_of(s.key);
  std::string whole = topo::read_file(path);
  const size_t header = whole.find('\n');
  nlohmann::json head = nlohmann::json::parse(whole.substr(0, header));
  head.at("provenance").at("producer") = static_cast<int>(Producer::Baseline) + 1;
  topo::write_file_atomically(path, head.dump() + whole.substr(header));
  EXPECT_FALSE(cache.load(s.key, s.t, s.c, s.expected));
}

// The counts tried keep what each was: a time, a floor (not timed: it could not win), or a floor
// standing on a method's predicted time (printed "at least" and "predicted" from a hit as from the
// search). An entry of three fields per count (before floors were kept) reads as times.
TEST(AlgorithmCache, AHitKeepsWhichCountsWereFloorsOrPredicted) {
  topo::testing::TempDir tmp;
  Stored s;
  AlgorithmCache cache(tmp.file("cache"));
  const Time answer = s.made.algorithm.claimed_time;  // (no count made is faster)
  std::vector<ChunkingResult::Try> tried = {
      {1, answer + 900, std::nullopt},
      {2, answer + 800, std::nullopt, true},
      {4, answer + 850, SynthMethod::PlanPipeline, true, true}};
  ASSERT_TRUE(cache.store(s.key, s.made.algorithm, s.made.chunks_per_npu, tried));
  const std::optional<ChunkingResult> hit = cache.load(s.key, s.t, s.c, s.expected);
  ASSERT_TRUE(hit);
  ASSERT_EQ(hit->tried.size(), tried.size());
  for (size_t i = 0; i < tried.size(); ++i) {
    EXPECT_EQ(hit->tried[i].time, tried[i].time);
    EXPECT_EQ(hit->tried[i].alone, tried[i].alone);
    EXPECT_EQ(hit->tried[i].floor, tried[i].floor) << i;
    EXPECT_EQ(hit->tried[i].predicted, tried[i].predicted) << i;
  }
  const std::string path = cache.path_of(s.key);
  std::string whole = topo::read_file(path);
  const size_t header = whole.find('\n');
  nlohmann::json head = nlohmann::json::parse(whole.substr(0, header));
  for (nlohmann::json& count : head.at("tried")) count.erase(3);
  topo::write_file_atomically(path, head.dump() + whole.substr(header));
  const std::optional<ChunkingResult> old = cache.load(s.key, s.t, s.c, s.expected);
  ASSERT_TRUE(old);
  ASSERT_EQ(old->tried.size(), tried.size());
  for (const ChunkingResult::Try& x : old->tried) EXPECT_FALSE(x.floor || x.predicted);
}

TEST(AlgorithmCache, ADamagedEntryIsIgnoredAndReplaced) {
  topo::testing::TempDir tmp;
  Stored s;
  AlgorithmCache cache(tmp.file("cache"));
  ASSERT_TRUE(cache.store(s.key, s.made.algorithm, s.made.chunks_per_npu, s.made.tried));
  const std::string path = cache.path_of(s.key);
  const std::string whole = topo::read_file(path);
  // (The header line, the algorithm's JSON head, then its transfers as columns: each cut short,
  // the head's length off by one either way.)
  const size_t line = whole.find('\n');
  const auto head_bytes =
      nlohmann::json::parse(whole.substr(0, line)).at("head_bytes").get<size_t>();
  std::string longer_head = whole, shorter_head = whole;
  const std::string said = fmt::format("\"head_bytes\":{}", head_bytes);
  ASSERT_NE(whole.find(said), std::string::npos);
  longer_head.replace(whole.find(said), said.size(),
                      fmt::format("\"head_bytes\":{}", head_bytes + 1));
  shorter_head.replace(whole.find(said), said.size(),
                       fmt::format("\"head_bytes\":{}", head_bytes - 1));
  for (const std::string& damaged :
       {whole.substr(0, whole.size() / 2), std::string("not an entry"), std::string(),
        whole.substr(0, line), std::string("{}\n") + whole.substr(line + 1),
        whole.substr(0, line + 1 + head_bytes), whole.substr(0, whole.size() - 1), longer_head,
        shorter_head}) {
    topo::write_file_atomically(path, damaged);
    const int64_t rejected = cache.rejected();
    EXPECT_FALSE(cache.load(s.key, s.t, s.c, s.expected));
    EXPECT_EQ(cache.rejected(), rejected + 1);
  }
  ASSERT_TRUE(cache.store(s.key, s.made.algorithm, s.made.chunks_per_npu, s.made.tried));
  const std::optional<ChunkingResult> hit = cache.load(s.key, s.t, s.c, s.expected);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->algorithm.claimed_time, s.made.algorithm.claimed_time);
}

TEST(AlgorithmCache, ATamperedEntryIsNotTrusted) {
  topo::testing::TempDir tmp;
  Stored s;
  AlgorithmCache cache(tmp.file("cache"));
  // A faster claim than the schedule gives: the verifier's time disagrees.
  Algorithm faster = s.made.algorithm;
  faster.claimed_time /= 2;
  cache.store(s.key, faster, s.made.chunks_per_npu);
  EXPECT_FALSE(cache.load(s.key, s.t, s.c, s.expected));
  // A transfer dropped: some rank lacks a chunk.
  Algorithm missing;
  missing.collective = s.made.algorithm.collective;
  missing.topology_fingerprint = s.t.fingerprint();
  missing.chunk_bytes = s.made.algorithm.chunk_bytes;
  missing.step_costs = s.made.algorithm.step_costs;
  for (TransferId i = 1; i < static_cast<TransferId>(s.made.algorithm.size()); ++i) {
    const Transfer& x = s.made.algorithm[i];
    missing.add(x.chunk, x.src, x.dst, s.made.algorithm.route(i), x.op, {}, -1, -1, 0, x.channel);
  }
  missing.claimed_time = -1;
  cache.store(s.key, missing, s.made.chunks_per_npu);
  EXPECT_FALSE(cache.load(s.key, s.t, s.c, s.expected));
  // Made for another collective (the key says one thing, the algorithm another).
  const Collective other = Collective::over_all(s.t, CollectiveKind::ReduceScatter);
  cache.store(s.key, synthesize(s.t, other, s.made.algorithm.chunk_bytes), 1);
  EXPECT_FALSE(cache.load(s.key, s.t, s.c, s.expected));
  // Correct and honestly timed, but for another size, or under another link model.
  const ChunkingResult larger = synthesize_auto_chunks(s.t, s.c, 2 * kSize, {}, 8);
  cache.store(s.key, larger.algorithm, larger.chunks_per_npu);
  EXPECT_FALSE(cache.load(s.key, s.t, s.c, s.expected));
  SynthOptions hold;
  hold.link_model = LinkModel::Hold;
  cache.store(s.key, synthesize(s.t, s.c, s.made.algorithm.chunk_bytes, hold), 1);
  EXPECT_FALSE(cache.load(s.key, s.t, s.c, s.expected));
  // The algorithm itself correct, but what the entry says of its search (printed beside it) is
  // false: a count made faster than the answer, a count out of range, a negative time.
  const Time answer = s.made.algorithm.claimed_time;
  for (const std::vector<ChunkingResult::Try>& tried :
       {std::vector<ChunkingResult::Try>{{1, answer / 2, std::nullopt}},
        std::vector<ChunkingResult::Try>{{0, answer, std::nullopt}},
        std::vector<ChunkingResult::Try>{{2, -1, std::nullopt, true}}}) {
    cache.store(s.key, s.made.algorithm, s.made.chunks_per_npu, tried);
    EXPECT_FALSE(cache.load(s.key, s.t, s.c, s.expected));
  }
  cache.store(s.key, s.made.algorithm, 0);
  EXPECT_FALSE(cache.load(s.key, s.t, s.c, s.expected));
  // (A floor or a prediction under the answer is what it says: a count not made.)
  cache.store(s.key, s.made.algorithm, s.made.chunks_per_npu,
              {{1, answer / 2, std::nullopt, true}});
  EXPECT_TRUE(cache.load(s.key, s.t, s.c, s.expected));
  EXPECT_EQ(cache.rejected(), 9);
  EXPECT_EQ(cache.hits(), 1);
}

TEST(AlgorithmCache, LinksAreNeverFollowed) {
  topo::testing::TempDir tmp;
  Stored s;
  AlgorithmCache cache(tmp.file("cache"));
  ASSERT_TRUE(cache.store(s.key, s.made.algorithm, s.made.chunks_per_npu, s.made.tried));
  const std::string path = cache.path_of(s.key);
  // A link to a good entry elsewhere is not read ...
  fs::rename(path, tmp.file("elsewhere"));
  fs::create_symlink(tmp.file("elsewhere"), path);
  EXPECT_FALSE(cache.load(s.key, s.t, s.c, s.expected));
  // ... and a store replaces the link itself, leaving the file it named alone.
  topo::write_file_atomically(tmp.file("elsewhere"), "precious");
  ASSERT_TRUE(cache.store(s.key, s.made.algorithm, s.made.chunks_per_npu, s.made.tried));
  EXPECT_FALSE(fs::is_symlink(fs::symlink_status(path)));
  EXPECT_EQ(topo::read_file(tmp.file("elsewhere")), "precious");
  EXPECT_TRUE(cache.load(s.key, s.t, s.c, s.expected));
}

TEST(AlgorithmCache, ConcurrentWritersNeverTearAnEntry) {
  topo::testing::TempDir tmp;
  Stored s;
  // Writers of the same key and readers of it at once, each with its own cache object over the
  // same folder (as processes are): every load is a miss or the whole entry, never a torn one.
  std::vector<std::thread> threads;
  std::atomic<int> hits{0}, rejected{0};
  for (int i = 0; i < 6; ++i)
    threads.emplace_back([&, i] {
      AlgorithmCache cache(tmp.file("cache"));
      for (int round = 0; round < 4; ++round) {
        if (i % 2 == 0) {
          EXPECT_TRUE(cache.store(s.key, s.made.algorithm, s.made.chunks_per_npu, s.made.tried));
        } else if (std::optional<ChunkingResult> hit = cache.load(s.key, s.t, s.c, s.expected)) {
          EXPECT_EQ(hit->algorithm.claimed_time, s.made.algorithm.claimed_time);
          ++hits;
        }
      }
      rejected += static_cast<int>(cache.rejected());
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(rejected, 0);
  AlgorithmCache after(tmp.file("cache"));
  EXPECT_TRUE(after.load(s.key, s.t, s.c, s.expected));
  // Nothing but the one entry is left (no temporaries).
  int files = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(tmp.file("cache"))) {
    ++files;
    EXPECT_EQ(e.path(), after.path_of(s.key));
  }
  EXPECT_EQ(files, 1);
}

TEST(AlgorithmCache, TheFolderStaysUnderItsSize) {
  topo::testing::TempDir tmp;
  Stored s;
  AlgorithmCache probe(tmp.file("probe"));
  probe.store(s.key, s.made.algorithm, s.made.chunks_per_npu);
  const uint64_t entry = fs::file_size(probe.path_of(s.key));
  // Room for two entries: the third store removes the least recently used.
  AlgorithmCache cache(tmp.file("cache"), 2 * entry + entry / 2);
  const std::vector<std::string> keys{s.key + "a", s.key + "b", s.key + "c"};
  for (const std::string& k : keys) {
    ASSERT_TRUE(cache.store(k, s.made.algorithm, s.made.chunks_per_npu));
    // Modification times of one second apart would slow the test: set them.
    const struct timespec times[2] = {{0, UTIME_OMIT},
                                      {static_cast<time_t>(1000 + (&k - keys.data())), 0}};
    ::utimensat(AT_FDCWD, cache.path_of(k).c_str(), times, 0);
  }
  EXPECT_FALSE(fs::exists(cache.path_of(keys[0])));
  EXPECT_TRUE(fs::exists(cache.path_of(keys[1])));
  EXPECT_TRUE(fs::exists(cache.path_of(keys[2])));
}

TEST(AlgorithmCache, AFolderThatCannotBeWrittenLosesStoresNotSyntheses) {
  topo::testing::TempDir tmp;
  topo::write_file_atomically(tmp.file("a-file"), "not a folder");
  AlgorithmCache cache(tmp.file("a-file"));
  const topo::Topology t = stepped("ring:4");
  const Collective c = Collective::over_all(t, CollectiveKind::AllGather);
  SynthOptions o;
  o.cache = &cache;
  const Algorithm a = make_algorithm("tenet", t, c, c.chunk_bytes_for(kSize), o);
  EXPECT_GT(a.claimed_time, 0);
  EXPECT_EQ(cache.failed_stores(), 1);
}

TEST(AlgorithmCache, TheDefaultFolderFollowsXdg) {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const std::string saved = xdg ? xdg : "";
  ::setenv("XDG_CACHE_HOME", "/somewhere", 1);
  EXPECT_EQ(AlgorithmCache::default_folder(), "/somewhere/tenet");
  ::setenv("XDG_CACHE_HOME", "relative", 1);  // not absolute: ignored, as the spec says
  const std::optional<std::string> home = AlgorithmCache::default_folder();
  if (home) {
    EXPECT_TRUE(home->ends_with("/.cache/tenet"));
  }
  if (xdg)
    ::setenv("XDG_CACHE_HOME", saved.c_str(), 1);
  else
    ::unsetenv("XDG_CACHE_HOME");
}

}  // namespace
}  // namespace tenet::synth
