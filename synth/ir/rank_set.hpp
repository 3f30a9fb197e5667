// A set of ranks: which ranks' contributions a partial reduction holds.
//
// Two forms, one set: while every rank in it is below 64 the set is one machine word (bit r for
// rank r), so the replay of an All-Reduce on up to 64 ranks copies, unions and tests sets with no
// allocation; otherwise it is kept as sorted disjoint half-open intervals, so that structured
// algorithms (rings, halving-doubling, trees over contiguous ranks) keep a handful of intervals
// even at thousands of ranks. Invariant: the form is decided by the ranks alone (runs_ is empty
// exactly when every rank lies in [0, kWordRanks), and bits_ is 0 otherwise), so equal sets are
// equal objects whichever way they were made.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tenet::synth {

class RankSet {
 public:
  static constexpr int kWordRanks = 64;  // ranks 0..63 fit the word form

  RankSet() = default;
  static RankSet single(int rank) { return range(rank, rank + 1); }
  static RankSet range(int first, int last);  // [first, last)

  bool empty() const { return bits_ == 0 && runs_.empty(); }
  int size() const;
  bool contains(int rank) const;
  bool is_range(int first, int last) const;   // exactly [first, last)
  bool includes(const RankSet& other) const;  // other ⊆ this
  // The smallest rank in both, or -1.
  int first_common(const RankSet& other) const;
  // this ∪ other.
  void add(const RankSet& other);
  // [0, n) minus this, as a set.
  RankSet missing_from(int n) const;
  // this minus other.
  RankSet minus(const RankSet& other) const;

  bool operator==(const RankSet& o) const { return bits_ == o.bits_ && runs_ == o.runs_; }
  // "{0-3,5}", "{}".
  std::string str() const;

 private:
  using Runs = std::vector<std::pair<int, int>>;
  bool word() const { return runs_.empty(); }
  // The set as intervals, whichever form it is in.
  Runs runs() const;
  // The set holding exactly `runs` (sorted, disjoint, not touching), in its canonical form.
  static RankSet from_runs(Runs runs);

  uint64_t bits_ = 0;
  Runs runs_;
};

}  // namespace tenet::synth
