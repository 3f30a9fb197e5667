// tenet::Error: the one exception type for bad input. It carries where (file, line, column, or a
// node/link) and what, so the CLI can print `error: file:line: message`.
#pragma once

#include <stdexcept>
#include <string>

namespace tenet {

struct Location {
  Location() = default;
  Location(std::string file_, int line_ = 0, int column_ = 0, std::string object_ = "")
      : file(std::move(file_)), line(line_), column(column_), object(std::move(object_)) {}

  std::string file;    // empty when the input is not a file (a spec string, an API call)
  int line = 0;        // 1-based; 0 when unknown
  int column = 0;      // 1-based; 0 when unknown
  std::string object;  // e.g. "node 'sw0'", "link 3 (npu0 -> npu1)"; empty when not about one

  bool empty() const { return file.empty() && line == 0 && object.empty(); }
  // "file:line:col", "file:line", "file", "node 'x'", or "file: node 'x'".
  std::string str() const;
};

class Error : public std::runtime_error {
 public:
  // A file under a live output folder's stage is named as the file it is to become
  // (topo/shown_paths.hpp).
  explicit Error(std::string message, Location where = {});
  const Location& where() const { return where_; }
  const std::string& message() const { return message_; }
  // A copy with the location filled in where this one left it unknown.
  Error located(const Location& outer) const;

 private:
  struct Shown {};  // `where` already as shown
  Error(std::string message, Location where, Shown);
  Location where_;
  std::string message_;
};

// Thrown where nodes that must exchange data are not joined: an NPU that cannot reach another, a
// synthesis stuck for want of a way between two members. It is a fact about the topology and the
// group, so a caller that tries a part of a topology (a sub-group, a slice) may take it as "does
// not apply" without swallowing the other errors.
class Unreachable : public Error {
 public:
  using Error::Error;
};

}  // namespace tenet
