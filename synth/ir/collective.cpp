#include "synth/ir/collective.hpp"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>

#include "topo/error.hpp"
#include "topo/suggest.hpp"
#include "topo/units.hpp"

namespace tenet::synth {

std::string_view to_string(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::AllGather:
      return "all-gather";
    case CollectiveKind::ReduceScatter:
      return "reduce-scatter";
    case CollectiveKind::AllReduce:
      return "all-reduce";
    case CollectiveKind::Broadcast:
      return "broadcast";
    case CollectiveKind::Reduce:
      return "reduce";
    case CollectiveKind::Gather:
      return "gather";
    case CollectiveKind::Scatter:
      return "scatter";
    case CollectiveKind::AllToAll:
      return "all-to-all";
  }
  return "?";
}

CollectiveKind parse_collective(std::string_view name) {
  auto squash = [](std::string_view s) {
    std::string out;
    for (char c : s)
      if (c != '-' && c != '_' && c != ' ')
        out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  };
  std::string want = squash(name);
  std::string known;
  std::vector<std::string> names;
  for (CollectiveKind k : kAllCollectives) {
    if (squash(to_string(k)) == want) return k;
    known += (known.empty() ? "" : ", ") + std::string(to_string(k));
    names.emplace_back(to_string(k));
  }
  throw Error(
      fmt::format("unknown collective '{}'{} (known: {})", name, did_you_mean(name, names), known));
}

bool is_rooted(CollectiveKind k) {
  return k == CollectiveKind::Broadcast || k == CollectiveKind::Reduce ||
         k == CollectiveKind::Gather || k == CollectiveKind::Scatter;
}

double bus_bandwidth_factor(CollectiveKind k, int ranks) {
  if (ranks < 1) throw Error("a collective needs at least one rank");
  double n = ranks;
  switch (k) {
    case CollectiveKind::AllReduce:
      return 2 * (n - 1) / n;
    case CollectiveKind::AllGather:
    case CollectiveKind::ReduceScatter:
    case CollectiveKind::AllToAll:
      return (n - 1) / n;
    default:
      return 1.0;
  }
}

bool one_destination(CollectiveKind k) {
  return k == CollectiveKind::AllToAll || k == CollectiveKind::Scatter ||
         k == CollectiveKind::Gather;
}

bool reduces(CollectiveKind k) {
  return k == CollectiveKind::ReduceScatter || k == CollectiveKind::AllReduce ||
         k == CollectiveKind::Reduce;
}

Collective Collective::over_all(const topo::Topology& t, CollectiveKind kind, int chunks_per_npu,
                                int root) {
  Collective c;
  c.kind = kind;
  c.chunks_per_npu = chunks_per_npu;
  c.root = root;
  for (topo::NodeId v = 0; v < t.num_npus(); ++v) c.ranks.push_back(v);
  return c;
}

void Collective::set_pair_units(std::vector<int32_t> units) {
  const size_t p = ranks.size();
  if (units.size() != p * p)
    throw Error(
        fmt::format("an All-to-Allv over {} ranks needs a {} x {} traffic matrix, got {} entries",
                    p, p, p, units.size()));
  std::vector<int64_t> offset(units.size() + 1, 0);
  for (size_t i = 0; i < units.size(); ++i) {
    if (units[i] < 0)
      throw Error(fmt::format("traffic from rank {} to rank {} is negative", i / p, i % p));
    if (units[i] > 0 && i / p == i % p)
      throw Error(fmt::format("traffic from rank {} to itself", i / p));
    offset[i + 1] = offset[i] + units[i];
  }
  if (offset.back() == 0) throw Error("the All-to-Allv traffic matrix sends nothing");
  kind = CollectiveKind::AllToAll;
  pair_units = std::move(units);
  unit_offset = std::move(offset);
}

int64_t Collective::units_sent(int r) const {
  const size_t p = ranks.size();
  return unit_offset.empty() ? 0 : unit_offset[(r + 1) * p] - unit_offset[r * p];
}

int64_t Collective::most_units_sent() const {
  int64_t most = 0;
  for (int r = 0; r < num_ranks(); ++r) most = std::max(most, units_sent(r));
  return most;
}

int64_t Collective::pair_of(ChunkId c) const {
  const int64_t unit = c / chunks_per_npu;
  return std::upper_bound(unit_offset.begin(), unit_offset.end(), unit) - unit_offset.begin() - 1;
}

int64_t Collective::wide_chunks() const {
  const int64_t p = num_ranks(), k = chunks_per_npu;
  if (all_reduce_chunks > 0) return all_reduce_chunks;
  if (uneven()) return total_units() * k;
  switch (kind) {
    case CollectiveKind::Broadcast:
    case CollectiveKind::Reduce:
      return k;
    case CollectiveKind::AllToAll:
      return p * p * k;
    default:
      return p * k;
  }
}

int Collective::num_chunks() const { return static_cast<int>(wide_chunks()); }

int Collective::origin(ChunkId c) const {
  const int p = num_ranks(), k = chunks_per_npu;
  switch (kind) {
    case CollectiveKind::Broadcast:
    case CollectiveKind::Reduce:
    case CollectiveKind::Scatter:
      return root;
    case CollectiveKind::AllToAll:
      return uneven() ? static_cast<int>(pair_of(c) / p) : c / k / p;
    // C chunks in all: rank r owns the r-th P-th of them, as c / k does for P*k.
    case CollectiveKind::AllReduce:
      return all_reduce_chunks > 0
                 ? static_cast<int>(static_cast<int64_t>(c) * p / all_reduce_chunks)
                 : c / k;
    default:
      return c / k;
  }
}

bool Collective::initially_holds(int rank, ChunkId c) const {
  switch (kind) {
    case CollectiveKind::ReduceScatter:
    case CollectiveKind::AllReduce:
    case CollectiveKind::Reduce:
      return true;
    default:
      return origin(c) == rank;
  }
}

bool Collective::finally_needs(int rank, ChunkId c) const {
  const int k = chunks_per_npu;
  switch (kind) {
    case CollectiveKind::AllGather:
    case CollectiveKind::AllReduce:
    case CollectiveKind::Broadcast:
      return true;
    case CollectiveKind::ReduceScatter:
    case CollectiveKind::Scatter:
      return c / k == rank;
    case CollectiveKind::Reduce:
    case CollectiveKind::Gather:
      return rank == root;
    case CollectiveKind::AllToAll:
      return needed_by(c) == rank;
  }
  return false;
}

int Collective::needed_by(ChunkId c) const {
  switch (kind) {
    case CollectiveKind::AllGather:
    case CollectiveKind::AllReduce:
    case CollectiveKind::Broadcast:
      return -1;
    case CollectiveKind::ReduceScatter:
    case CollectiveKind::Scatter:
      return c / chunks_per_npu;
    case CollectiveKind::Reduce:
    case CollectiveKind::Gather:
      return root;
    case CollectiveKind::AllToAll:
      return static_cast<int>((uneven() ? pair_of(c) : c / chunks_per_npu) % num_ranks());
  }
  return -1;
}

std::string format_ranks(const std::vector<topo::NodeId>& ranks) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i + 1;
    const int64_t step = j < ranks.size() ? ranks[j] - ranks[i] : 1;
    while (step > 0 && j < ranks.size() && ranks[j] - ranks[j - 1] == step) ++j;
    if (j - i >= 3) {
      parts.push_back(step == 1 ? fmt::format("{}-{}", ranks[i], ranks[j - 1])
                                : fmt::format("{}-{}:{}", ranks[i], ranks[j - 1], step));
      i = j;
    } else {
      parts.push_back(std::to_string(ranks[i++]));
    }
  }
  return fmt::format("{}", fmt::join(parts, ","));
}

std::vector<topo::NodeId> parse_ranks(std::string_view list, int npus) {
  std::vector<topo::NodeId> out;
  std::vector<char> named(static_cast<size_t>(std::max(npus, 0)), 0);
  // A whole number at the front of `s`, consumed.
  const auto number = [](std::string_view& s, std::string_view item) {
    int64_t v = -1;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end == s.data() || v < 0)
      throw Error(fmt::format(
          "--ranks: '{}' is not a rank, a range a-b or a strided range a-b:step", item));
    s.remove_prefix(static_cast<size_t>(end - s.data()));
    return v;
  };
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    const std::string_view item = list.substr(start, comma - start);
    std::string_view rest = item;
    const int64_t first = number(rest, item);
    int64_t last = first, step = 1;
    if (!rest.empty() && rest.front() == '-') {
      rest.remove_prefix(1);
      last = number(rest, item);
      if (!rest.empty() && rest.front() == ':') {
        rest.remove_prefix(1);
        step = number(rest, item);
      }
    }
    if (!rest.empty())
      throw Error(fmt::format(
          "--ranks: '{}' is not a rank, a range a-b or a strided range a-b:step", item));
    if (last < first) throw Error(fmt::format("--ranks: '{}' runs backwards", item));
    if (step < 1) throw Error(fmt::format("--ranks: '{}' has a step below 1", item));
    if (last >= npus)
      throw Error(fmt::format("--ranks: '{}' names NPU {}, and the topology has NPUs 0..{}", item,
                              last, npus - 1));
    for (int64_t r = first; r <= last; r += step) {
      if (named[static_cast<size_t>(r)])
        throw Error(fmt::format("--ranks: NPU {} is named twice ('{}')", r, item));
      named[static_cast<size_t>(r)] = 1;
      out.push_back(static_cast<topo::NodeId>(r));
    }
    start = comma + 1;
  }
  if (out.size() < 2)
    throw Error(
        fmt::format("--ranks: '{}' names {} NPU; a collective needs at least 2", list, out.size()));
  return out;
}

int64_t Collective::pieces() const {
  if (uneven()) return chunks_per_npu;  // a unit
  if (all_reduce_chunks > 0) return all_reduce_chunks;
  switch (kind) {
    case CollectiveKind::Broadcast:
    case CollectiveKind::Reduce:
      return chunks_per_npu;
    default:
      return static_cast<int64_t>(num_ranks()) * chunks_per_npu;
  }
}

int64_t Collective::chunk_bytes_for(int64_t total) const {
  const int64_t n = pieces();
  return (total + n - 1) / n;
}

int64_t Collective::whole_chunk_bytes_for(int64_t total) const {
  const int64_t n = pieces();
  if (total >= n) return chunk_bytes_for(total);
  const std::string size = format_bytes(total);
  if (all_reduce_chunks > 0)
    throw Error(
        fmt::format("{} cut into {} chunks in all makes chunks of less than a byte: at most "
                    "{} chunks for this size",
                    size, n, total));
  // pieces() is chunks_per_npu times the pieces of one chunk per NPU.
  const int64_t per_chunk_per_npu = n / std::max(1, chunks_per_npu);
  const int64_t most = total / per_chunk_per_npu;
  if (most < 1)
    throw Error(
        fmt::format("{} of {} is less than a byte for each of its {} pieces at one chunk "
                    "per NPU: give a size of at least {} B",
                    to_string(kind), size, per_chunk_per_npu, per_chunk_per_npu));
  throw Error(
      fmt::format("{} chunks per NPU cut {} of {} into {} chunks of less than a byte: at "
                  "most {} chunks per NPU for this size",
                  chunks_per_npu, to_string(kind), size, n, most));
}

void Collective::validate(const topo::Topology& t) const {
  if (ranks.size() < 2)
    throw Error(fmt::format("a collective needs at least 2 ranks, got {}", ranks.size()));
  if (chunks_per_npu < 1)
    throw Error(fmt::format("chunks per NPU must be at least 1, got {}", chunks_per_npu));
  std::vector<char> seen(t.num_npus(), 0);
  for (size_t r = 0; r < ranks.size(); ++r) {
    topo::NodeId v = ranks[r];
    if (v < 0 || v >= t.num_npus())
      throw Error(fmt::format("rank {} is node {}, which is not an NPU of the topology ({} NPUs)",
                              r, v, t.num_npus()));
    if (seen[v]++) throw Error(fmt::format("NPU {} appears twice among the ranks", v));
  }
  // The root is a rank for every kind: an unrooted collective ignores it, but code may read
  // ranks[root] before it looks at the kind.
  if (root < 0 || root >= num_ranks())
    throw Error(fmt::format("root {} is not a rank (0..{})", root, num_ranks() - 1));
  if (wide_chunks() >= (int64_t{1} << 31))
    throw Error(fmt::format("too many chunks ({}, over 2^31)", wide_chunks()));
  if (all_reduce_chunks < 0)
    throw Error(fmt::format("chunks in all must be at least 1, got {}", all_reduce_chunks));
  if (all_reduce_chunks > 0 && kind != CollectiveKind::AllReduce)
    throw Error(fmt::format("a chunk count in all is for all-reduce; {} has its chunks per NPU",
                            to_string(kind)));
  if (uneven()) {
    if (kind != CollectiveKind::AllToAll)
      throw Error(fmt::format("a traffic matrix is for all-to-all, not {}", to_string(kind)));
    const size_t p = ranks.size();
    if (pair_units.size() != p * p || unit_offset.size() != p * p + 1)
      throw Error(
          fmt::format("the All-to-Allv traffic matrix has {} entries for {} ranks (needs {} x {})",
                      pair_units.size(), p, p, p));
    if (static_cast<double>(total_units()) * chunks_per_npu > static_cast<double>(int64_t{1} << 31))
      throw Error(fmt::format("too many chunks: {} units of traffic x {} chunks each is over 2^31",
                              total_units(), chunks_per_npu));
  }
}

std::string Collective::describe() const {
  if (uneven())
    return fmt::format(
        "all-to-allv over {} ranks, {} units of traffic (a rank sends at most {}), {} chunk{} per "
        "unit",
        num_ranks(), total_units(), most_units_sent(), chunks_per_npu,
        chunks_per_npu == 1 ? "" : "s");
  if (all_reduce_chunks > 0)
    return fmt::format("{} over {} ranks in {} chunk{}", to_string(kind), num_ranks(),
                       all_reduce_chunks, all_reduce_chunks == 1 ? "" : "s");
  std::string s = fmt::format("{} over {} ranks, {} chunk{} per NPU", to_string(kind), num_ranks(),
                              chunks_per_npu, chunks_per_npu == 1 ? "" : "s");
  if (is_rooted(kind)) s += fmt::format(", root rank {}", root);
  return s;
}

}  // namespace tenet::synth
