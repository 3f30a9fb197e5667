// Shared by the fuzz harnesses (one per input format, tests/fuzz/*_fuzz.cpp).
//
// A harness feeds the bytes to a reader exactly as the CLI does. A tenet::Error is the answer to
// bad input and ends the run quietly; anything else (another exception, a crash, a sanitizer
// report, a hang) is a finding. `must` marks steps that may not fail on any input the reader
// accepted (printing what was read and reading it back).
//
// Built two ways: with clang's libFuzzer (`./tenet.sh fuzz`), which supplies main(); and, in every
// build, with driver.cpp, which runs the harness over corpus files (the CI regression run).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "topo/error.hpp"

namespace tenet::fuzz {

// Runs `f(text)`; a tenet::Error is the expected outcome of bad input.
template <class F>
int run(const uint8_t* data, size_t size, F&& f) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    f(text);
  } catch (const Error& e) {
    // The driver's TENET_FUZZ_VERBOSE=1 shows how far each input got (are the seeds valid?).
    if (std::getenv("TENET_FUZZ_VERBOSE")) std::fprintf(stderr, "  tenet::Error: %s\n", e.what());
  }
  return 0;
}

// `f()` must not throw: a tenet::Error here is a bug (what Tenet wrote, it cannot read back).
template <class F>
void must(const char* what, F&& f) {
  try {
    f();
  } catch (const Error& e) {
    std::fprintf(stderr, "fuzz: %s failed: %s\n", what, e.what());
    std::abort();
  }
}

}  // namespace tenet::fuzz
