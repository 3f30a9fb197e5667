// "Does not apply" as a value. A producer that cannot make its result for a collective, topology
// or chunk count returns NotMade, saying why, instead of throwing: the `auto` policy and the chunk
// search skip it and go on. Public functions that must return a result (synth::synthesize,
// synth::make_baseline) throw NotApplicable with the same words.
#pragma once

#include <string>
#include <variant>

namespace tenet::synth {

struct NotMade {
  std::string why;
};

// A result, or why there is none.
template <class T>
using Made = std::variant<T, NotMade>;

// The result in `m`, or null when it says why there is none.
template <class T>
T* made(Made<T>& m) {
  return std::get_if<T>(&m);
}
template <class T>
const T* made(const Made<T>& m) {
  return std::get_if<T>(&m);
}

}  // namespace tenet::synth
