// A persistent cache of synthesized algorithms, on disk, shared by `tenet synth`, `tenet sim`,
// `tenet bench` and any program of the library that hands one to SynthOptions::cache.
//
// Model: an entry is the result of one synthesis (the algorithm, its chunk count and the counts
// tried), kept under a key that names everything that decides that result: the producer, the
// topology's fingerprint and per-step costs, the collective (its ranks, root, chunks, an
// All-to-Allv's traffic), the size, every synthesis option, and the build of Tenet that made it
// (cache_key). Its file is `<folder>/<16 hex digits of the key's hash>.tenet`: one line of JSON
// (the full key, the chunk count, the counts tried, the head's length), then the algorithm's own
// JSON without its transfers (its head), then its transfers as protobuf columns
// (synth/formats/algorithm_columns.hpp).
//
// Invariants:
// - Nothing loaded is trusted: an entry is used only when its key equals the one asked for
//   (a hash collision is a miss), the algorithm reads, it is for the topology and collective
//   asked for, and the verifier finds it correct with its claimed time the timing model's. Any
//   other entry is a miss, counted as rejected, and the next store replaces it.
// - Entries are written whole: a temporary of a random name in the folder, renamed into place
//   (topo/io.hpp), so processes sharing the folder see an old entry or a new one, never a torn
//   one; two writers of one key leave one of theirs. A link where an entry goes is removed, never
//   written through; entries are opened without following links.
// - The folder holds at most `max_bytes` of entries: a store past it removes the least recently
//   used (by modification time, which a hit renews) first.
// - The cache never fails a synthesis: a folder that cannot be created or written makes misses
//   and lost stores, counted (`failed_stores`), not errors.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "synth/synthesizer.hpp"
#include "topo/topology.hpp"

namespace tenet::synth {

class AlgorithmCache {
 public:
  // 4 GiB: about forty 1 GiB All-Reduce schedules of a 16-GPU cluster (~90 MB each), or thousands
  // of the sizes a training iteration calls.
  static constexpr uint64_t kDefaultMaxBytes = uint64_t{4} << 30;

  // A cache in `folder` (created, owner-only, on the first store).
  explicit AlgorithmCache(std::string folder, uint64_t max_bytes = kDefaultMaxBytes);

  // The default folder: $XDG_CACHE_HOME/tenet, else $HOME/.cache/tenet; none when neither is set.
  static std::optional<std::string> default_folder();

  const std::string& folder() const { return folder_; }

  // What a load expects of the algorithm besides its topology and collective: the size it was
  // asked for (the collective's total where `auto_chunks`, its chunk size otherwise), and the model
  // it must be timed under.
  struct Expected {
    Bytes bytes = 0;
    bool auto_chunks = false;
    LinkModel link_model = LinkModel::Pipelined;
    Bandwidth reduce_bandwidth = 0;
  };
  // The entry under `key`, checked as the header says, or none (a miss).
  std::optional<ChunkingResult> load(const std::string& key, const topo::Topology& t,
                                     const Collective& c, const Expected& expected);
  // Keeps `a`, made at `chunks_per_npu` after trying `tried`, under `key`. Returns whether it was
  // written.
  bool store(const std::string& key, const Algorithm& a, int chunks_per_npu,
             const std::vector<ChunkingResult::Try>& tried = {});

  // What this object saw since it was made.
  int64_t hits() const { return hits_; }
  int64_t misses() const { return misses_; }
  int64_t rejected() const { return rejected_; }  // entries found but not trusted (among misses)
  int64_t stores() const { return stores_; }
  int64_t failed_stores() const { return failed_stores_; }

  // The file an entry under `key` lives in.
  std::string path_of(const std::string& key) const;

 private:
  void prune();

  std::string folder_;
  uint64_t max_bytes_;
  std::atomic<int64_t> hits_{0}, misses_{0}, rejected_{0}, stores_{0}, failed_stores_{0};
};

// The key of `producer`'s result for `c` on `t` at `bytes` (the collective's total size where
// `auto_chunks`, its chunk size otherwise; `max_chunks_per_npu` bounds the auto search) under
// `o`: one line per input, in a fixed order. Two calls give the same key exactly when everything
// that decides the result is the same (progress callbacks and the cache itself aside).
std::string cache_key(std::string_view producer, const topo::Topology& t, const Collective& c,
                      Bytes bytes, bool auto_chunks, int max_chunks_per_npu, const SynthOptions& o);

// The build of Tenet this is: its version and the source it was built from (`git describe`, with
// a digest of uncommitted changes), or the version alone outside a git checkout.
std::string_view build_id();

}  // namespace tenet::synth
