#include "topo/error.hpp"

#include <fmt/format.h>

#include "topo/shown_paths.hpp"

namespace tenet {

std::string Location::str() const {
  std::string out = file;
  if (!file.empty() && line > 0) {
    out += fmt::format(":{}", line);
    if (column > 0) out += fmt::format(":{}", column);
  }
  if (!object.empty()) out += out.empty() ? object : ": " + object;
  return out;
}

static std::string render(const std::string& message, const Location& where) {
  return where.empty() ? message : where.str() + ": " + message;
}

// A staged file (written through its output folder's stage) named as the file it was to become.
static Location shown(Location where) {
  where.file = shown_paths::shown(where.file);
  return where;
}

Error::Error(std::string message, Location where)
    : Error(std::move(message), shown(std::move(where)), Shown{}) {}

Error::Error(std::string message, Location where, Shown)
    : std::runtime_error(render(message, where)),
      where_(std::move(where)),
      message_(std::move(message)) {}

Error Error::located(const Location& outer) const {
  Location merged = where_;
  if (merged.file.empty()) merged.file = outer.file;
  if (merged.line == 0) {
    merged.line = outer.line;
    merged.column = outer.column;
  }
  if (merged.object.empty()) merged.object = outer.object;
  return Error(message_, merged);
}

}  // namespace tenet
