// Reading and writing topologies.
//
// Inputs: the Tenet format in YAML or JSON (.yaml, .yml, .json), ASTRA-sim's network.yml (a YAML
// map with `topology` and `npus_count`), Graphviz DOT as written by to_dot (.dot, .gv), or a
// generator spec string (see generators.hpp). Outputs: Tenet YAML, Tenet JSON, DOT.
// The Tenet format is documented in docs/formats.md ("Topology files").
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>

#include "topo/topology.hpp"

namespace tenet::topo {

// Why `text` names no topology, when it looks like a mistyped spec or preset rather than a path
// (with the nearest generators or presets); "" when it looks like a path.
std::string not_a_topology(const std::string& text);

// A file path, a generator spec or a system preset. Errors name the file and line.
Topology load(const std::string& path_or_spec);
Topology load_file(const std::string& path);
// The same for a file another file names (a suite's topology: the suite may be someone else's):
// read only where it is a regular file, not through a link at its last name (a FIFO would hold the
// read for ever, a link read what it names). Throws tenet::Error naming it otherwise.
Topology load_named_file(const std::string& path);
// Parses text in the Tenet or ASTRA-sim format; `file` is used in error messages.
Topology parse_yaml(std::string_view text, const std::string& file = "<string>");
Topology parse_dot(std::string_view text, const std::string& file = "<string>");

std::string to_yaml(const Topology& t);
std::string to_json(const Topology& t);
std::string to_dot(const Topology& t);

// Writes by extension (.yaml/.yml, .json, .dot/.gv), through a temporary file renamed into
// place, so nothing half-written is ever left behind.
void save(const Topology& t, const std::string& path);

// Writes `content` to `path` atomically: a temporary of a random name beside it, renamed into
// place, so nothing half-written is ever seen. A link to a file writes the file it names (the link
// stays); a pipe or a terminal (`/dev/stdout`, a FIFO) is written through, never replaced; a
// folder, a socket or a block device is refused. Throws tenet::Error naming `path` on failure.
void write_file_atomically(const std::string& path, std::string_view content);
// The same for content `write` puts on a stream (large outputs, never whole in memory).
void write_file_atomically(const std::string& path,
                           const std::function<void(std::ostream&)>& write);
std::string read_file(const std::string& path);
// `text` without a leading UTF-8 byte-order mark (spreadsheets write one before CSV; editors on
// some systems before any text). Text parsers read through it, as YAML, JSON and XML parsers do.
inline std::string_view without_bom(std::string_view text) {
  return text.starts_with("\xEF\xBB\xBF") ? text.substr(3) : text;
}

// A file's bytes, read-only, for large inputs (a 1024-NPU algorithm is 160 MB): a regular file is
// mapped (no copy, no zeroed buffer), anything else read whole (read_file). Errors as read_file's.
// The mapping shows the file as it was opened: Tenet replaces its outputs by renaming, never in
// place. A file truncated in place while mapped would fault (SIGBUS) at the next page read, so
// only a file no one else may write is mapped (this user's, not writable by others, nor by its
// group unless that group is this user's own, as under umask 002); a shared one is read whole
// (read_file), never a crash.
class FileBytes {
 public:
  explicit FileBytes(const std::string& path);
  ~FileBytes();
  FileBytes(const FileBytes&) = delete;
  FileBytes& operator=(const FileBytes&) = delete;
  std::string_view view() const {
    return map_ ? std::string_view(static_cast<const char*>(map_), size_) : text_;
  }
  // The reader is done with the text before `up_to` for now: a mapped file's pages there leave
  // memory (and come back from the file if read again). A file is mapped, not read in, and its
  // pages come as they are read: a 2.6 GB algorithm file is not held whole.
  void release(size_t up_to) const;
  // Whether the file is mapped (else read whole).
  bool mapped() const { return map_ != nullptr; }

 private:
  void* map_ = nullptr;
  size_t size_ = 0;
  mutable size_t released_ = 0;  // pages before this are let go (release)
  std::string text_;             // when not mapped
};
// Creates an output folder and its parents; throws tenet::Error naming it when it cannot (a file of
// that name, no permission, a name too long) instead of std::filesystem's exception.
void make_directories(const std::string& path);

}  // namespace tenet::topo
