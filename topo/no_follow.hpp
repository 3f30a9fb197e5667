// File-system steps inside a folder that may hold anything (one a user was sent, or one another
// user can write to): every path is walked one component at a time from the folder's own
// descriptor (openat), and no symbolic link is ever followed. A link where a folder is expected is
// an error naming it; a link where a file goes is replaced or removed as the link itself.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tenet::topo::no_follow {

// An open file descriptor, closed when destroyed; -1 when none.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd();
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// 16 hexadecimal digits from the kernel's random source: names no one can guess or plant ahead.
std::string random_name_suffix();
// `name` is `prefix` followed by exactly a random_name_suffix().
bool has_random_suffix(std::string_view name, std::string_view prefix);

// `rel` is a relative path of plain names: not empty, no "." or "..", no leading "/".
bool is_plain_relative(const std::string& rel);

// Opens the folder `dir` (a path the user gave: links in it are the user's) for use as a root.
// Throws tenet::Error naming it when it is not a folder that can be opened.
Fd open_root(const std::string& dir);

// The folder `rel` under `root`, opened without following a link at any component; missing ones
// are created when `create`. Returns an empty Fd when a component is missing and not `create`.
// Throws tenet::Error naming `<shown>/<component>` when a component is a link, a file, or cannot
// be created. `rel` must be plain relative ("" is the root itself).
Fd open_folder(int root, const std::string& rel, bool create, const std::string& shown);

// The file `name` in the open folder `folder` (AT_FDCWD: the working folder), open for reading,
// without following a link at its last component; empty when there is no such entry. Throws
// tenet::Error naming `shown` when it is a link or not a regular file (a FIFO is not waited on).
Fd open_file_at(int folder, const std::string& name, const std::string& shown);

// The whole of the file `name` in the open folder `folder` (AT_FDCWD: the working folder),
// opened without following a link at its last component; none when there is no such entry.
// Throws tenet::Error naming `shown` when it is a link, not a regular file, or cannot be read.
std::optional<std::string> read_file_at(int folder, const std::string& name,
                                        const std::string& shown);

// The names in the open folder `fd` (not "." and ".."); none when it cannot be listed.
std::vector<std::string> entries(int fd);

// Removes the entry `name` of the folder `parent`: a file or a link (never followed), or a folder
// with everything in it (walked without following links). Missing is not an error; returns false
// when something could not be removed.
bool remove_all_at(int parent, const std::string& name);

}  // namespace tenet::topo::no_follow
