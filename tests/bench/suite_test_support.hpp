// Helpers shared by the bench tests.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "bench/harness.hpp"
#include "topo/error.hpp"

namespace tenet::bench::testing {

// Parses `text` as suite.yaml and expects a tenet::Error at `line` whose message contains `what`.
inline void expect_suite_error(const std::string& text, int line, const std::string& what) {
  try {
    parse_suite(text, "suite.yaml");
    ADD_FAILURE() << "no error for:\n" << text;
  } catch (const Error& e) {
    EXPECT_EQ(e.where().file, "suite.yaml") << e.what();
    EXPECT_EQ(e.where().line, line) << e.what();
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

inline HarnessOptions on(int threads) {
  HarnessOptions o;
  o.threads = threads;
  return o;
}

}  // namespace tenet::bench::testing
