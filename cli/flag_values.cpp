// The values of flags several verbs share (commands.hpp).
#include <fmt/format.h>

#include <charconv>

#include "cli/commands.hpp"
#include "topo/units.hpp"

namespace tenet::cli {

int parse_chunks(const std::string& text, int when_auto, int most) {
  if (text == "auto") return when_auto;
  int k = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), k);
  if (ec != std::errc() || end != text.data() + text.size())
    throw Error(fmt::format("--chunks-per-npu must be a whole number or auto, not '{}'", text));
  if (k < 1 || k > most) throw Error(fmt::format("--chunks-per-npu must lie in [1, {}]", most));
  return k;
}

Bytes size_flag(const std::string& flag, const std::string& text) {
  try {
    return parse_bytes(text);
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", flag, e.what()));
  }
}

}  // namespace tenet::cli
