#include "topo/no_follow.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "topo/error.hpp"

namespace tenet::topo::no_follow {

Fd::~Fd() {
  if (fd_ >= 0) ::close(fd_);
}

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}

std::string random_name_suffix() {
  unsigned char bytes[8];
  size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(fmt::format("no random source: {}", std::strerror(errno)));
    got += static_cast<size_t>(n);
  }
  std::string out;
  for (unsigned char b : bytes) out += fmt::format("{:02x}", b);
  return out;
}

bool has_random_suffix(std::string_view name, std::string_view prefix) {
  if (!name.starts_with(prefix) || name.size() != prefix.size() + 16) return false;
  for (char c : name.substr(prefix.size()))
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

bool is_plain_relative(const std::string& rel) {
  const std::filesystem::path p(rel);
  if (rel.empty() || !p.is_relative()) return false;
  for (const auto& part : p)
    if (part.empty() || part == "." || part == "..") return false;
  return true;
}

Fd open_root(const std::string& dir) {
  Fd fd(::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) throw Error(fmt::format("cannot open the folder: {}", std::strerror(errno)), {dir});
  return fd;
}

Fd open_file_at(int folder, const std::string& name, const std::string& shown) {
  // (O_NONBLOCK: a FIFO planted there opens without waiting for a writer, and is refused below.)
  Fd fd(::openat(folder, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) return fd;
    if (errno == ELOOP) throw Error("a symbolic link, not read", {shown});
    throw Error(fmt::format("cannot open: {}", std::strerror(errno)), {shown});
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
    throw Error("not a regular file, not read", {shown});
  return fd;
}

std::optional<std::string> read_file_at(int folder, const std::string& name,
                                        const std::string& shown) {
  const Fd fd = open_file_at(folder, name, shown);
  if (!fd) return std::nullopt;
  std::string text;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(fmt::format("cannot read: {}", std::strerror(errno)), {shown});
    }
    text.append(buffer, static_cast<size_t>(n));
  }
  return text;
}

Fd open_folder(int root, const std::string& rel, bool create, const std::string& shown) {
  Fd at(::fcntl(root, F_DUPFD_CLOEXEC, 0));
  if (!at) throw Error(fmt::format("cannot open the folder: {}", std::strerror(errno)), {shown});
  std::string walked = shown;
  for (const auto& part : std::filesystem::path(rel)) {
    const std::string name = part.string();
    if (name.empty()) continue;  // "a/b/" ends in an empty part
    walked += "/" + name;
    Fd next(::openat(at.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next && errno == ENOENT) {
      if (!create) return Fd();
      if (::mkdirat(at.get(), name.c_str(), 0777) != 0 && errno != EEXIST)
        throw Error(fmt::format("cannot create folder {}: {}", walked, std::strerror(errno)));
      next = Fd(::openat(at.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    }
    if (!next) {
      struct stat st {};
      const bool link =
          ::fstatat(at.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
      if (link)
        throw Error(fmt::format(
            "{} is a symbolic link: Tenet does not write or remove through links inside a folder",
            walked));
      throw Error(fmt::format("cannot create folder {}: {}", walked,
                              errno == ENOTDIR ? walked + " is a file" : std::strerror(errno)));
    }
    at = std::move(next);
  }
  return at;
}

std::vector<std::string> entries(int fd) {
  std::vector<std::string> names;
  const int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);  // closedir closes the copy, not `fd`
  DIR* d = copy >= 0 ? ::fdopendir(copy) : nullptr;
  if (!d) {
    if (copy >= 0) ::close(copy);
    return names;
  }
  ::rewinddir(d);
  while (const dirent* e = ::readdir(d))
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
      names.emplace_back(e->d_name);
  ::closedir(d);
  return names;
}

bool remove_all_at(int parent, const std::string& name) {
  if (::unlinkat(parent, name.c_str(), 0) == 0 || errno == ENOENT) return true;
  if (errno != EISDIR && errno != EPERM) return false;  // EPERM: Linux's answer for a folder
  Fd dir(::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir) return false;
  bool ok = true;
  for (const std::string& e : entries(dir.get())) ok = remove_all_at(dir.get(), e) && ok;
  return ::unlinkat(parent, name.c_str(), AT_REMOVEDIR) == 0 && ok;
}

}  // namespace tenet::topo::no_follow
