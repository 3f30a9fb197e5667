#include "bench/table.hpp"

#include <gtest/gtest.h>

#include "topo/error.hpp"

namespace tenet::bench {
namespace {

TEST(Table, MarkdownAlignsAndRightAlignsNumbers) {
  Table t({"algorithm", "time"});
  t.add_row({"ring", "12.5 us"});
  t.add_row({"tenet", "9 us"});
  EXPECT_EQ(t.markdown(),
            "| algorithm |    time |\n"
            "| --------- | ------: |\n"
            "| ring      | 12.5 us |\n"
            "| tenet     |    9 us |\n");
}

TEST(Table, CsvQuotesWhatNeedsIt) {
  Table t({"name", "note"});
  t.add_row({"a,b", "say \"hi\""});
  t.add_row({"plain", ""});
  EXPECT_EQ(t.csv(), "name,note\n\"a,b\",\"say \"\"hi\"\"\"\nplain,\n");
  EXPECT_THROW(t.add_row({"too", "many", "cells"}), Error);
}

}  // namespace
}  // namespace tenet::bench
