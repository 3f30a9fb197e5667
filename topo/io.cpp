#include "topo/io.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <fcntl.h>
#include <grp.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <ext/stdio_filebuf.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <vector>

#include "topo/generators.hpp"
#include "topo/limits.hpp"
#include "topo/no_follow.hpp"
#include "topo/output_folder.hpp"
#include "topo/presets.hpp"
#include "topo/suggest.hpp"
#include "topo/units.hpp"

namespace tenet::topo {

std::string read_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw Error("is a directory, not a file", {path});
  // A folder a killed Tenet run was committing into is completed first (topo/output_folder.hpp).
  const std::string folder = std::filesystem::path(path).parent_path().string();
  FolderReadLock lock(folder.empty() ? "." : folder, FolderRead::OneFile);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open file (does it exist?)", {path});
  // A regular file is read at once into a string of its size (a 1024-NPU algorithm is 160 MB:
  // through a stringstream it was copied twice, growing); a pipe or a device as a stream.
  if (const auto size = std::filesystem::file_size(path, ec);
      !ec && std::filesystem::is_regular_file(path, ec)) {
    std::string text(size, '\0');
    in.read(text.data(), static_cast<std::streamsize>(size));
    if (static_cast<uintmax_t>(in.gcount()) == size && in.peek() == std::char_traits<char>::eof())
      return text;
    // It changed while being read: read it again as a stream.
    in.clear();
    in.seekg(0);
  }
  std::string text;
  std::vector<char> block(size_t{1} << 16);
  while (in.read(block.data(), static_cast<std::streamsize>(block.size())) || in.gcount() > 0) {
    text.append(block.data(), static_cast<size_t>(in.gcount()));
    if (static_cast<int64_t>(text.size()) > kMaxStreamBytes)
      throw Error(fmt::format("a pipe or device gave more than {} and is still going: give a "
                              "regular file",
                              format_bytes(kMaxStreamBytes)),
                  {path});
  }
  if (in.bad()) throw Error("cannot read file", {path});
  return text;
}

namespace {

// Whether group `gid` is this user's own: the effective group, listing no member (the
// user-private-group scheme, where umask 002 makes outputs 0664 and no one else is in the group).
bool private_group(gid_t gid) {
  if (gid != ::getegid()) return false;
  struct group g {};
  struct group* found = nullptr;
  std::vector<char> buffer(size_t{1} << 16);
  return ::getgrgid_r(gid, &g, buffer.data(), buffer.size(), &found) == 0 && found != nullptr &&
         (g.gr_mem == nullptr || g.gr_mem[0] == nullptr);
}

}  // namespace

FileBytes::FileBytes(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) {
    const std::string folder = std::filesystem::path(path).parent_path().string();
    // (As read_file: a killed commit's files refused.)
    FolderReadLock lock(folder.empty() ? "." : folder, FolderRead::OneFile);
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error("cannot open file (does it exist?)", {path});
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
        st.st_uid == ::geteuid() && (st.st_mode & S_IWOTH) == 0 &&
        ((st.st_mode & S_IWGRP) == 0 || private_group(st.st_gid))) {
      void* p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
      if (p != MAP_FAILED) {
        map_ = p;
        size_ = static_cast<size_t>(st.st_size);
        ::madvise(map_, size_, MADV_SEQUENTIAL);  // read ahead; only advice
      }
    }
    ::close(fd);
    if (map_) return;
  }
  text_ = read_file(path);  // empty, a pipe, a device, a file system without mmap
}

FileBytes::~FileBytes() {
  if (map_) ::munmap(map_, size_);
}

void FileBytes::release(size_t up_to) const {
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t end = std::min(up_to, size_) / page * page;
  if (!map_ || end <= released_) return;
  ::madvise(static_cast<char*>(map_) + released_, end - released_,
            MADV_DONTNEED);  // only what is new
  released_ = end;
}

void write_file_atomically(const std::string& path, std::string_view content) {
  write_file_atomically(path, [&](std::ostream& out) {
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
  });
}

namespace {

// Streams `write` into the open descriptor `fd` (closed here); the error, or "" when all went out.
std::string stream_into(int fd, const std::function<void(std::ostream&)>& write) {
  __gnu_cxx::stdio_filebuf<char> buf(fd, std::ios::out, size_t{1} << 16);
  std::ostream out(&buf);
  write(out);
  out.flush();
  const int err = errno;
  const bool ok = out.good();
  if (buf.close() == nullptr || !ok) return std::strerror(ok ? errno : err);
  return "";
}

// A pipe or a terminal given as the output (`--trace /dev/stdout`, a FIFO): written through, in
// place; it is never replaced by a regular file.
void write_through(const std::string& path, const std::function<void(std::ostream&)>& write) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) throw Error(fmt::format("cannot open for writing: {}", std::strerror(errno)), {path});
  if (const std::string why = stream_into(fd, write); !why.empty())
    throw Error(fmt::format("write failed: {}", why), {path});
}

}  // namespace

void write_file_atomically(const std::string& path,
                           const std::function<void(std::ostream&)>& write) {
  namespace fs = std::filesystem;
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (exists && (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode))) return write_through(path, write);
  if (exists && S_ISDIR(st.st_mode)) throw Error("is a folder, not a file", {path});
  if (exists && !S_ISREG(st.st_mode))
    throw Error("is not a regular file (a socket or a block device): give a file's path", {path});
  // A link to a file is written through: the file it names is replaced and the link stays.
  fs::path target(path);
  struct stat lst {};
  std::error_code ec;
  if (exists && ::lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode))
    if (fs::path resolved = fs::canonical(path, ec); !ec) target = resolved;
  // The temporary has a name no one can plant ahead (created exclusively, never through a link);
  // only this function removes it.
  const fs::path tmp = target.parent_path() / fmt::format(".{}.tenet-tmp.{}",
                                                          target.filename().string().substr(0, 96),
                                                          no_follow::random_name_suffix());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (fd < 0)
    throw Error(fmt::format("cannot write file: {} (does its folder exist?)", std::strerror(errno)),
                {path});
  std::string why;
  try {
    why = stream_into(fd, write);
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  if (!why.empty()) {
    ::unlink(tmp.c_str());
    throw Error(fmt::format("write failed: {}", why), {path});
  }
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    const std::string err = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw Error(fmt::format("cannot rename into place: {}", err), {path});
  }
}

void make_directories(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (!ec) return;
  if (std::error_code e;
      std::filesystem::exists(path, e) && !std::filesystem::is_directory(path, e))
    throw Error("cannot create the output folder: a file of that name exists", {path});
  throw Error(fmt::format("cannot create the output folder: {}", ec.message()), {path});
}

namespace {

std::string lower_extension(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

// A topology file's text, parsed by its name's extension (Graphviz, else YAML or JSON).
Topology parse_file_text(const std::string& text, const std::string& path) {
  const std::string ext = lower_extension(path);
  if (ext == ".dot" || ext == ".gv") return parse_dot(text, path);
  return parse_yaml(text, path);
}

}  // namespace

Topology load_file(const std::string& path) { return parse_file_text(read_file(path), path); }

Topology load_named_file(const std::string& path) {
  const std::string folder = std::filesystem::path(path).parent_path().string();
  std::optional<std::string> text;
  {
    FolderReadLock lock(folder.empty() ? "." : folder, FolderRead::OneFile);
    text = no_follow::read_file_at(AT_FDCWD, path, path);
  }
  if (!text) throw Error("cannot open file (does it exist?)", {path});
  return parse_file_text(*text, path);
}

std::string not_a_topology(const std::string& text) {
  std::vector<std::string> names;
  for (const GeneratorInfo& g : generators()) names.push_back(g.name);
  names.emplace_back("fattree");
  names.emplace_back("fully-connected");
  const size_t cut = std::min(text.find(':'), text.find(','));
  const std::string head(text.substr(0, cut));
  // A path has a '/' before any spec punctuation, or a topology file's extension ("bw=50GB/s" and
  // "lat=0.5us" inside a spec are neither).
  const std::string ext = lower_extension(text);
  const bool path_like = head.find('/') != std::string::npos || ext == ".yaml" || ext == ".yml" ||
                         ext == ".json" || ext == ".dot" || ext == ".gv";
  if (cut != std::string::npos && !path_like) {
    // "torus:4x4": a spec with a generator name that does not exist.
    std::string near;
    for (const std::string& n : nearest(head, names))
      for (const GeneratorInfo& g : generators())
        if (g.name == n)
          near += fmt::format("{}{} (e.g. {})", near.empty() ? "" : ", ", n, g.example);
    return fmt::format(
        "'{}' is not a file, and as a generator spec: no generator '{}'{}; `tenet topo generators` "
        "lists them all",
        text, head, near.empty() ? "" : "; nearest: " + near);
  }
  if (!path_like) {
    for (const GeneratorInfo& g : generators())
      if (g.name == head)
        return fmt::format(
            "'{}' is a generator without its shape: write it like {} (`tenet topo generators` "
            "lists "
            "every generator's shape and keys)",
            text, g.example);
    // A bare word: a preset or a spec without its shape?
    std::vector<std::string> words = names;
    for (const Preset& p : presets()) words.emplace_back(p.name);
    std::string presets_list;
    for (const Preset& p : presets())
      presets_list += fmt::format("{}{}", presets_list.empty() ? "" : ", ", p.name);
    return fmt::format(
        "'{}' is not a file, a system preset ({}) or a generator spec (such as torus2d:4x4){}",
        text, presets_list, did_you_mean(head, words));
  }
  return "";
}

Topology load(const std::string& path_or_spec) {
  std::error_code ec;
  if (!std::filesystem::exists(path_or_spec, ec)) {
    if (looks_like_spec(path_or_spec)) return generate(path_or_spec);
    if (auto text = preset_text(path_or_spec)) return parse_yaml(*text, "preset " + path_or_spec);
    if (const std::string why = not_a_topology(path_or_spec); !why.empty()) throw Error(why);
  }
  return load_file(path_or_spec);
}

void save(const Topology& t, const std::string& path) {
  std::string ext = lower_extension(path);
  if (ext == ".yaml" || ext == ".yml")
    write_file_atomically(path, to_yaml(t));
  else if (ext == ".json")
    write_file_atomically(path, to_json(t));
  else if (ext == ".dot" || ext == ".gv")
    write_file_atomically(path, to_dot(t));
  else
    throw Error(fmt::format("unknown output format '{}': use .yaml, .yml, .json or .dot", ext),
                {path});
}

}  // namespace tenet::topo
