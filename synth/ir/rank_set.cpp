#include "synth/ir/rank_set.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>

namespace tenet::synth {

namespace {

// Bits first..last-1 set; 0 <= first < last <= RankSet::kWordRanks (64, the word's bits).
uint64_t word_range(int first, int last) {
  static_assert(RankSet::kWordRanks <= 64);
  const uint64_t below_last = last == 64 ? ~uint64_t{0} : (uint64_t{1} << last) - 1;
  return below_last & ~((uint64_t{1} << first) - 1);
}

}  // namespace

RankSet RankSet::range(int first, int last) {
  RankSet s;
  if (first >= last) return s;
  if (first >= 0 && last <= kWordRanks)
    s.bits_ = word_range(first, last);
  else
    s.runs_.emplace_back(first, last);
  return s;
}

RankSet::Runs RankSet::runs() const {
  if (!word()) return runs_;
  Runs out;
  for (uint64_t b = bits_; b != 0;) {
    const int first = std::countr_zero(b);
    const int last = first + std::countr_one(b >> first);
    out.emplace_back(first, last);
    b &= last == 64 ? 0 : ~uint64_t{0} << last;
  }
  return out;
}

RankSet RankSet::from_runs(Runs runs) {
  RankSet s;
  if (!runs.empty() && runs.front().first >= 0 && runs.back().second <= kWordRanks) {
    for (const auto& [a, b] : runs) s.bits_ |= word_range(a, b);
  } else {
    s.runs_ = std::move(runs);
  }
  return s;
}

int RankSet::size() const {
  if (word()) return std::popcount(bits_);
  int n = 0;
  for (const auto& [a, b] : runs_) n += b - a;
  return n;
}

bool RankSet::contains(int rank) const {
  if (word()) return rank >= 0 && rank < kWordRanks && (bits_ >> rank & 1) != 0;
  auto it = std::upper_bound(runs_.begin(), runs_.end(), rank,
                             [](int r, const std::pair<int, int>& run) { return r < run.second; });
  return it != runs_.end() && it->first <= rank;
}

bool RankSet::is_range(int first, int last) const {
  if (word())
    return first >= 0 && first < last && last <= kWordRanks && bits_ == word_range(first, last);
  return runs_.size() == 1 && runs_[0].first == first && runs_[0].second == last;
}

bool RankSet::includes(const RankSet& other) const {
  if (word() && other.word()) return (other.bits_ & ~bits_) == 0;
  const Runs mine = runs(), theirs = other.runs();
  size_t i = 0;
  for (const auto& [a, b] : theirs) {
    while (i < mine.size() && mine[i].second <= a) ++i;
    if (i == mine.size() || mine[i].first > a || mine[i].second < b) return false;
  }
  return true;
}

int RankSet::first_common(const RankSet& other) const {
  if (word() && other.word()) {
    const uint64_t both = bits_ & other.bits_;
    return both == 0 ? -1 : std::countr_zero(both);
  }
  const Runs mine = runs(), theirs = other.runs();
  size_t i = 0, j = 0;
  while (i < mine.size() && j < theirs.size()) {
    int lo = std::max(mine[i].first, theirs[j].first);
    int hi = std::min(mine[i].second, theirs[j].second);
    if (lo < hi) return lo;
    if (mine[i].second < theirs[j].second)
      ++i;
    else
      ++j;
  }
  return -1;
}

void RankSet::add(const RankSet& other) {
  if (word() && other.word()) {
    bits_ |= other.bits_;
    return;
  }
  if (other.empty()) return;
  const Runs mine = runs(), theirs = other.runs();
  Runs merged;
  merged.reserve(mine.size() + theirs.size());
  std::merge(mine.begin(), mine.end(), theirs.begin(), theirs.end(), std::back_inserter(merged));
  Runs joined;
  for (const auto& run : merged) {
    if (!joined.empty() && run.first <= joined.back().second)
      joined.back().second = std::max(joined.back().second, run.second);
    else
      joined.push_back(run);
  }
  *this = from_runs(std::move(joined));
}

RankSet RankSet::missing_from(int n) const {
  Runs out;
  int at = 0;
  for (const auto& [a, b] : runs()) {
    if (std::min(a, n) > at) out.emplace_back(at, std::min(a, n));
    at = std::max(at, b);
  }
  if (at < n) out.emplace_back(at, n);
  return from_runs(std::move(out));
}

RankSet RankSet::minus(const RankSet& other) const {
  if (word() && other.word()) {
    RankSet out;
    out.bits_ = bits_ & ~other.bits_;
    return out;
  }
  const Runs theirs = other.runs();
  Runs out;
  size_t j = 0;
  for (auto [a, b] : runs()) {
    while (j < theirs.size() && theirs[j].second <= a) ++j;
    size_t k = j;
    while (a < b) {
      if (k == theirs.size() || theirs[k].first >= b) {
        out.emplace_back(a, b);
        break;
      }
      if (theirs[k].first > a) out.emplace_back(a, theirs[k].first);
      a = std::max(a, theirs[k].second);
      ++k;
    }
  }
  return from_runs(std::move(out));
}

std::string RankSet::str() const {
  const Runs all = runs();
  std::string s = "{";
  for (size_t i = 0; i < all.size(); ++i) {
    if (i) s += ',';
    const auto& [a, b] = all[i];
    s += b - a == 1 ? fmt::format("{}", a) : fmt::format("{}-{}", a, b - 1);
  }
  s += '}';
  return s;
}

}  // namespace tenet::synth
