#include "synth/ir/rank_set.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace tenet::synth {

RankSet RankSet::range(int first, int last) {
  RankSet s;
  if (first < last) s.runs_.emplace_back(first, last);
  return s;
}

int RankSet::size() const {
  int n = 0;
  for (const auto& [a, b] : runs_) n += b - a;
  return n;
}

bool RankSet::contains(int rank) const {
  auto it = std::upper_bound(runs_.begin(), runs_.end(), rank,
                             [](int r, const std::pair<int, int>& run) { return r < run.second; });
  return it != runs_.end() && it->first <= rank;
}

bool RankSet::includes(const RankSet& other) const {
  size_t i = 0;
  for (const auto& [a, b] : other.runs_) {
    while (i < runs_.size() && runs_[i].second <= a) ++i;
    if (i == runs_.size() || runs_[i].first > a || runs_[i].second < b) return false;
  }
  return true;
}

int RankSet::first_common(const RankSet& other) const {
  size_t i = 0, j = 0;
  while (i < runs_.size() && j < other.runs_.size()) {
    int lo = std::max(runs_[i].first, other.runs_[j].first);
    int hi = std::min(runs_[i].second, other.runs_[j].second);
    if (lo < hi) return lo;
    if (runs_[i].second < other.runs_[j].second)
      ++i;
    else
      ++j;
  }
  return -1;
}

void RankSet::add(const RankSet& other) {
  if (other.runs_.empty()) return;
  decltype(runs_) merged;
  merged.reserve(runs_.size() + other.runs_.size());
  std::merge(runs_.begin(), runs_.end(), other.runs_.begin(), other.runs_.end(),
             std::back_inserter(merged));
  runs_.clear();
  for (const auto& run : merged) {
    if (!runs_.empty() && run.first <= runs_.back().second)
      runs_.back().second = std::max(runs_.back().second, run.second);
    else
      runs_.push_back(run);
  }
}

RankSet RankSet::missing_from(int n) const {
  RankSet out;
  int at = 0;
  for (const auto& [a, b] : runs_) {
    if (a > at) out.runs_.emplace_back(at, std::min(a, n));
    at = std::max(at, b);
  }
  if (at < n) out.runs_.emplace_back(at, n);
  return out;
}

RankSet RankSet::minus(const RankSet& other) const {
  RankSet out;
  size_t j = 0;
  for (auto [a, b] : runs_) {
    while (j < other.runs_.size() && other.runs_[j].second <= a) ++j;
    size_t k = j;
    while (a < b) {
      if (k == other.runs_.size() || other.runs_[k].first >= b) {
        out.runs_.emplace_back(a, b);
        break;
      }
      if (other.runs_[k].first > a) out.runs_.emplace_back(a, other.runs_[k].first);
      a = std::max(a, other.runs_[k].second);
      ++k;
    }
  }
  return out;
}

std::string RankSet::str() const {
  std::string s = "{";
  for (size_t i = 0; i < runs_.size(); ++i) {
    if (i) s += ',';
    const auto& [a, b] = runs_[i];
    s += b - a == 1 ? fmt::format("{}", a) : fmt::format("{}-{}", a, b - 1);
  }
  s += '}';
  return s;
}

}  // namespace tenet::synth
