// A set of ranks, kept as sorted disjoint half-open intervals: which ranks' contributions a
// partial reduction holds. Structured algorithms (rings, halving-doubling, trees over contiguous
// ranks) keep a handful of intervals, so sets stay small even at thousands of ranks.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace tenet::synth {

class RankSet {
 public:
  RankSet() = default;
  static RankSet single(int rank) { return range(rank, rank + 1); }
  static RankSet range(int first, int last);  // [first, last)

  bool empty() const { return runs_.empty(); }
  int size() const;
  bool contains(int rank) const;
  bool is_range(int first, int last) const {  // exactly [first, last)
    return runs_.size() == 1 && runs_[0].first == first && runs_[0].second == last;
  }
  bool includes(const RankSet& other) const;  // other ⊆ this
  // The smallest rank in both, or -1.
  int first_common(const RankSet& other) const;
  // this ∪ other.
  void add(const RankSet& other);
  // [0, n) minus this, as a set.
  RankSet missing_from(int n) const;
  // this minus other.
  RankSet minus(const RankSet& other) const;

  bool operator==(const RankSet& o) const { return runs_ == o.runs_; }
  // "{0-3,5}", "{}".
  std::string str() const;

 private:
  std::vector<std::pair<int, int>> runs_;
};

}  // namespace tenet::synth
