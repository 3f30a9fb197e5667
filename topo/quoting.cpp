#include "topo/quoting.hpp"

#include <fmt/format.h>

#include "topo/error.hpp"
#include "topo/limits.hpp"

namespace tenet::topo {

namespace {

// Appends `valid` (valid UTF-8) with its controls, C1 controls and line separators escaped.
void append_valid(std::string_view valid, std::string& out) {
  for (size_t i = 0; i < valid.size(); ++i) {
    const auto c = static_cast<unsigned char>(valid[i]);
    const auto next = [&](size_t k) {
      return i + k < valid.size() ? static_cast<unsigned char>(valid[i + k]) : 0u;
    };
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else if (c == 0xc2 && next(1) >= 0x80 && next(1) <= 0x9f) {  // U+0080 to U+009F
      out += fmt::format("\\u{:04x}", next(1));
      i += 1;
    } else if (c == 0xe2 && next(1) == 0x80 && (next(2) == 0xa8 || next(2) == 0xa9)) {
      out += next(2) == 0xa8 ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += static_cast<char>(c);
    }
  }
}

}  // namespace

std::string one_line(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    size_t bad = 0;
    if (valid_utf8(text, &bad)) bad = text.size();
    append_valid(text.substr(0, bad), out);
    if (bad == text.size()) break;
    out += fmt::format("\\x{:02x}", static_cast<unsigned char>(text[bad]));
    text.remove_prefix(bad + 1);
  }
  return out;
}

std::string shell_quoted(std::string_view text, std::string_view what) {
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos)
    throw Error(
        fmt::format("{} '{}' holds a NUL byte (at offset {}), which a shell word cannot hold", what,
                    one_line(text), nul));
  std::string out = "'";
  for (char ch : text) out += ch == '\'' ? std::string_view("'\\''") : std::string_view(&ch, 1);
  return out + "'";
}

}  // namespace tenet::topo
