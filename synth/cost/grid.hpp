// A value per (row, column) of a grid that may be far larger than the cells anyone touches: the
// timing's and the replay's tables per (node, chunk) and per (link, channel).
#pragma once

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace tenet::synth {

// The timing's and the replay's (node, chunk) tables stay tables up to this many cells, or this
// many per transfer, whichever is more; past both, maps of the cells touched.
inline constexpr uint64_t kFlatCells = uint64_t{1} << 22;
inline constexpr uint64_t kFlatCellsPerTransfer = 4;

// A table where the grid has at most `flat_limit` cells, else a map of the cells touched (a
// 1024-NPU All-to-All has a billion (node, chunk) cells, of which its transfers touch two per
// chunk). Every cell starts at `fill`, and clear() puts them all back there.
template <typename T>
class Grid {
 public:
  Grid(uint64_t rows, uint64_t columns, uint64_t flat_limit, T fill = T{})
      : columns_(columns), flat_(rows * columns <= flat_limit), fill_(fill) {
    if (flat_) table_.assign(rows * columns, fill_);
  }
  T& operator()(uint64_t row, uint64_t column) {
    const uint64_t i = row * columns_ + column;
    return flat_ ? table_[i] : map_.try_emplace(i, fill_).first->second;
  }
  // The cell's address where the grid is a table (to prefetch), else null.
  const T* flat_address(uint64_t row, uint64_t column) const {
    return flat_ ? &table_[row * columns_ + column] : nullptr;
  }
  bool flat() const { return flat_; }
  void clear() {
    std::fill(table_.begin(), table_.end(), fill_);
    map_.clear();
  }

 private:
  uint64_t columns_;
  bool flat_;
  T fill_;
  std::vector<T> table_;
  std::unordered_map<uint64_t, T> map_;
};

}  // namespace tenet::synth
