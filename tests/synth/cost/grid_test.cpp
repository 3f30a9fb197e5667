#include "synth/cost/grid.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>

namespace tenet::synth {
namespace {

// A grid kept as a map of the cells touched reads and writes as the table does: every cell starts
// at the fill value, writes stay, and clear() puts every cell back, over seeded random operations.
TEST(Grid, AMapOfTheCellsTouchedReadsAsTheTable) {
  constexpr uint64_t kRows = 37, kColumns = 53;
  Grid<int32_t> table(kRows, kColumns, kRows * kColumns, -1), map(kRows, kColumns, 0, -1);
  ASSERT_TRUE(table.flat());
  ASSERT_FALSE(map.flat());
  std::mt19937_64 rng(7);
  for (int op = 0; op < 20000; ++op) {
    const uint64_t row = rng() % kRows, column = rng() % kColumns;
    switch (rng() % 16) {
      case 0:
        table.clear();
        map.clear();
        break;
      case 1:
      case 2:
      case 3:
      case 4:
      case 5: {
        const auto value = static_cast<int32_t>(rng() % 1000);
        table(row, column) = value;
        map(row, column) = value;
        break;
      }
      default:
        ASSERT_EQ(table(row, column), map(row, column)) << "op " << op;
    }
  }
  for (uint64_t row = 0; row < kRows; ++row)
    for (uint64_t column = 0; column < kColumns; ++column)
      ASSERT_EQ(table(row, column), map(row, column));
}

}  // namespace
}  // namespace tenet::synth
