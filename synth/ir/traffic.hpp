// All-to-Allv traffic: the bytes each rank sends each other rank, read from a file or generated as
// a mixture-of-experts layer's uneven token routing, and its conversion to the whole units
// Collective::set_pair_units takes.
//
// Files (bytes per source -> destination pair; plain whole numbers are bytes, sizes with a unit
// such as 4MiB are accepted too; the diagonal must be 0):
//   CSV   P lines of P entries separated by commas; blank lines and lines starting with '#'
//   skipped. JSON  {"bytes": [[...], ...]} or the bare P x P array.
// Generators, each rank sending `per_rank` bytes in tokens of per_rank / 4096 bytes:
//   zipf:S   expert (destination) popularity falls as 1 / rank^S over a seeded order of the
//            ranks (the same for every source, as hot experts are hot for every token); each
//            source's tokens are dealt to the other ranks by largest remainder.
//   hot:K    K seeded hot experts draw half of every rank's tokens, evenly; the others the rest.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "topo/units.hpp"

namespace tenet::synth {

struct Traffic {
  int ranks = 0;
  std::vector<Bytes> bytes;  // [source * ranks + destination]
  Bytes total() const;
  Bytes most_sent() const;  // the most any rank sends
};

// Throws tenet::Error naming the file and line for anything but a ranks x ranks matrix of
// non-negative sizes with a zero diagonal and some traffic.
Traffic read_traffic(const std::string& path, int ranks);
// The same for a file's text; `path` names it in errors.
Traffic parse_traffic(std::string_view text, const std::string& path, int ranks);
// "zipf:1.2" or "hot:4" (see above); `seed` orders the experts.
Traffic generate_traffic(std::string_view spec, int ranks, Bytes per_rank, uint64_t seed);

// The traffic in whole units of `unit_bytes`: exact when every pair's bytes share a divisor that
// leaves at most `max_units` in all (the greatest common divisor is tried first); otherwise the
// unit grows until they fit and each pair is rounded up, `padding` saying how many bytes that adds.
struct TrafficUnits {
  std::vector<int32_t> units;
  Bytes unit_bytes = 0;
  Bytes padding = 0;
};
TrafficUnits to_units(const Traffic& t, int64_t max_units);
// The cap `tenet synth` and `tenet sim` use: 64 units per pair on average (at least one per pair,
// at most 2^20 in all), which keeps chunk counts what the matcher can take.
int64_t default_max_units(int ranks);

}  // namespace tenet::synth
