#include "topo/output_folder.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <thread>

#include "topo/error.hpp"
#include "topo/io.hpp"
#include "topo/limits.hpp"
#include "topo/quoting.hpp"

namespace tenet::topo {
namespace {

namespace fs = std::filesystem;
using no_follow::Fd;

constexpr std::string_view kStage = ".tenet-stage.", kJournal = ".tenet-commit.",
                           kJournalTmp = ".tenet-commit-tmp.";
// A journal is a list of names; one larger than this was not written by Tenet.
constexpr off_t kMaxJournalBytes = off_t{1} << 30;

// The kind of the entry `name` of folder `fd`, links not followed; 0 when there is none.
mode_t kind_at(int fd, const std::string& name) {
  struct stat st {};
  return ::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 ? st.st_mode & S_IFMT : 0;
}

// flock(2) on a folder's descriptor, waiting (and saying so once: `said`) when another process
// holds it, for at most `wait`: true where it was taken (or the file system has no locks), false
// where it is still held then.
bool lock_folder_within(int fd, int operation, const std::string& dir,
                        std::chrono::milliseconds wait, bool& said) {
  if (::flock(fd, operation | LOCK_NB) == 0) return true;
  if (errno != EWOULDBLOCK) return true;  // (a file system without locks: nothing to wait for)
  if (!said)
    fmt::print(stderr,
               "waiting for another process's lock of {} (a Tenet run reading or writing it)\n",
               dir);
  said = true;
  const auto until = std::chrono::steady_clock::now() + wait;
  while (::flock(fd, operation | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) return true;
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// The error of a lock of folder `dir` still held after `wait`.
Error lock_held(const std::string& dir, std::chrono::milliseconds wait) {
  return Error(fmt::format("waited {:g} s for another process's lock of this folder (a Tenet "
                           "run reading or writing it, or any process holding a flock on it)",
                           std::chrono::duration<double>(wait).count()),
               {dir});
}

// The lock, waited for at most `wait`: anyone who may open a folder may flock it, so a process
// that holds it for ever (in /tmp, any user's) ends the wait with an error naming the folder, not
// a hang.
void lock_folder(int fd, int operation, const std::string& dir,
                 std::chrono::milliseconds wait = kFolderLockWait) {
  bool said = false;
  if (!lock_folder_within(fd, operation, dir, wait, said)) throw lock_held(dir, wait);
}

// The parent folder of `rel` under `root` (walked without links, created when `create`) and the
// last name of `rel`.
std::pair<Fd, std::string> parent_of(int root, const std::string& rel, bool create,
                                     const std::string& shown) {
  const fs::path p(rel);
  return {no_follow::open_folder(root, p.parent_path().string(), create, shown),
          p.filename().string()};
}

// A commit's journal: the stage it moves from, what it moves and what it removes.
struct Journal {
  std::string stage;
  std::vector<std::string> move, remove;
};

nlohmann::json to_json(const Journal& j) {
  return {{"stage", j.stage}, {"move", j.move}, {"remove", j.remove}};
}

// A journal found in the folder, read without following a link, or why it cannot be acted on.
// It may have been planted: it is accepted only when it names a stage of Tenet's pattern and
// plain relative paths, and removes output names only.
Journal read_journal(int dir, const std::string& name, const std::string& shown) {
  const std::string file = shown + "/" + name;
  const Fd fd(::openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > kMaxJournalBytes)
    throw Error("a commit journal that is not a regular file of Tenet's", {file});
  // Only this user's own killed runs are rolled forward: another's journal (a folder shared, or
  // written to by others) is not replayed.
  if (st.st_uid != ::geteuid())
    throw Error(
        "a commit journal another user's run left (not replayed): remove it and its "
        ".tenet-stage.* folder to write here",
        {file});
  std::string text(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd.get(), text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  text.resize(got);
  Journal j;
  try {
    const nlohmann::json json = nlohmann::json::parse(text);
    j.stage = json.at("stage").get<std::string>();
    j.move = json.at("move").get<std::vector<std::string>>();
    j.remove = json.at("remove").get<std::vector<std::string>>();
  } catch (const nlohmann::json::exception& e) {
    throw Error(
        fmt::format("unreadable commit journal of a killed run ({}): the folder may mix two "
                    "runs; remove the journal to accept that",
                    e.what()),
        {file});
  }
  if (!no_follow::has_random_suffix(j.stage, kStage))
    throw Error(fmt::format("commit journal names '{}' as its stage", j.stage), {file});
  for (const auto& list : {j.move, j.remove})
    for (const std::string& rel : list)
      if (!no_follow::is_plain_relative(rel))
        throw Error(
            fmt::format("commit journal names '{}', which is not a file inside its folder", rel),
            {file});
  // Tenet stages its own names alone (OutputFolder::stage, is_staged_name), so a journal that
  // moves anything else into place, or removes what is not an output name, was not written by it.
  for (const std::string& rel : j.move)
    if (!is_staged_name(rel))
      throw Error(fmt::format("commit journal moves '{}', which Tenet does not write", rel),
                  {file});
  for (const std::string& rel : j.remove)
    if (!is_output_name(rel))
      throw Error(fmt::format("commit journal removes '{}', which Tenet does not write", rel),
                  {file});
  return j;
}

// Step 2 of a commit (also the roll-forward of a killed one): staged regular files into place,
// stale output files out, never through a link. Files already moved are skipped, so running it
// twice is harmless.
// A live commit moves from its own stage's descriptor (`own_stage`), never from the name: between
// its check (stage_in_place) and the moves, whoever may write the folder could rename the stage
// and put another folder at its name. A killed run's journal is replayed from the stage it names.
void apply(int dir, const std::string& shown, const Journal& j, int own_stage = -1) {
  const Fd named = own_stage >= 0 ? Fd() : no_follow::open_folder(dir, j.stage, false, shown);
  const int stage = own_stage >= 0 ? own_stage : named.get();
  for (const std::string& rel : j.move) {
    if (stage < 0) break;
    const auto [from, name] = parent_of(stage, rel, false, shown + "/" + j.stage);
    if (!from || kind_at(from.get(), name) != S_IFREG) continue;  // moved already
    const auto [to, to_name] = parent_of(dir, rel, true, shown);
    if (::renameat(from.get(), name.c_str(), to.get(), to_name.c_str()) != 0)
      throw Error(
          fmt::format("cannot move {}/{} into place: {} (the folder now mixes two runs; the "
                      "next Tenet write to it completes the commit once that is fixed)",
                      shown, rel, std::strerror(errno)),
          {shown});
  }
  for (const std::string& rel : j.remove) {
    const auto [parent, name] = parent_of(dir, rel, false, shown);
    if (parent && kind_at(parent.get(), name) != S_IFDIR) ::unlinkat(parent.get(), name.c_str(), 0);
  }
}

// Under the folder's exclusive lock: commits killed runs left are rolled forward, and the
// stages of runs that are gone (their flock can be taken) removed.
void complete_killed_runs(int dir, const std::string& shown) {
  const std::vector<std::string> names = no_follow::entries(dir);
  std::set<std::string> journaled;
  for (const std::string& name : names) {
    if (!no_follow::has_random_suffix(name, kJournal)) continue;
    const Journal j = read_journal(dir, name, shown);
    const Fd stage(::openat(dir, j.stage.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (stage && ::flock(stage.get(), LOCK_EX | LOCK_NB) != 0) continue;  // its run is alive
    apply(dir, shown, j);
    no_follow::remove_all_at(dir, j.stage);
    ::unlinkat(dir, name.c_str(), 0);
    journaled.insert(j.stage);
  }
  for (const std::string& name : names) {
    // A journal still being written belongs to a commit that was never decided; none is live, as
    // the folder's lock is held.
    if (no_follow::has_random_suffix(name, kJournalTmp) && kind_at(dir, name) != S_IFDIR)
      ::unlinkat(dir, name.c_str(), 0);
    if (!no_follow::has_random_suffix(name, kStage) || journaled.count(name) > 0) continue;
    const Fd stage(::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!stage || ::flock(stage.get(), LOCK_EX | LOCK_NB) != 0) continue;  // a link, or alive
    no_follow::remove_all_at(dir, name);
  }
}

// The regular files under `fd` (a folder of this run's own stage), relative, in name order.
void files_under(int fd, const std::string& prefix, std::set<std::string>& out) {
  for (const std::string& name : no_follow::entries(fd)) {
    const mode_t kind = kind_at(fd, name);
    if (kind == S_IFREG) out.insert(prefix + name);
    if (kind != S_IFDIR) continue;
    const Fd sub(::openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (sub) files_under(sub.get(), prefix + name + "/", out);
  }
}

// Removes the folders under `rel` (and `rel` itself) that are empty, deepest first.
void remove_empty_folders(int dir, const std::string& rel) {
  const Fd fd = no_follow::open_folder(dir, rel, false, "");
  if (!fd) return;
  for (const std::string& name : no_follow::entries(fd.get()))
    if (kind_at(fd.get(), name) == S_IFDIR) remove_empty_folders(dir, rel + "/" + name);
  const auto [parent, name] = parent_of(dir, rel, false, "");
  if (parent) ::unlinkat(parent.get(), name.c_str(), AT_REMOVEDIR);  // fails when not empty
}

// What would block moving `moves` into place is found while the old set is still whole: a link
// or a file where a folder goes, a folder where a file goes, a folder that cannot be written.
void check_targets(int dir, const std::string& shown, const std::vector<std::string>& moves) {
  std::set<std::string> probed;
  for (const std::string& rel : moves) {
    const auto [parent, name] = parent_of(dir, rel, true, shown);
    if (kind_at(parent.get(), name) == S_IFDIR)
      throw Error(fmt::format("cannot write {}/{}: a folder of that name exists", shown, rel),
                  {shown});
    const std::string folder = fs::path(rel).parent_path().string();
    if (!probed.insert(folder).second) continue;
    // Permissions, read-only mounts and ACLs all answer a real create: of an unnamed file, which
    // a kill cannot leave behind (file systems without O_TMPFILE answer the permission bits).
    const Fd fd(::openat(parent.get(), ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600));
    const bool unsupported = !fd && (errno == EOPNOTSUPP || errno == EISDIR);
    if (!fd && (!unsupported || ::faccessat(parent.get(), ".", W_OK | X_OK, AT_EACCESS) != 0))
      throw Error(fmt::format("cannot write in {}: {}",
                              folder.empty() ? shown : shown + "/" + folder, std::strerror(errno)),
                  {shown});
  }
}

// Writes the journal whole under a temporary name, on disk, then renames it into place: a journal
// exists only once every name in it is written.
std::string write_journal(int dir, const std::string& shown, const Journal& j) {
  const std::string suffix = no_follow::random_name_suffix();
  const std::string tmp = std::string(kJournalTmp) + suffix, name = std::string(kJournal) + suffix;
  const Fd fd(
      ::openat(dir, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  const std::string text = to_json(j).dump();
  size_t put = 0;
  while (fd && put < text.size()) {
    const ssize_t n = ::write(fd.get(), text.data() + put, text.size() - put);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    put += static_cast<size_t>(n);
  }
  if (!fd || put < text.size() || ::fsync(fd.get()) != 0 ||
      ::renameat(dir, tmp.c_str(), dir, name.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    if (fd) ::unlinkat(dir, tmp.c_str(), 0);
    throw Error(fmt::format("cannot write the commit journal: {}", why), {shown});
  }
  return name;
}

// Ranks `<stem>.<digits>.et`.
bool is_rank_file(std::string_view name) {
  if (!name.ends_with(".et")) return false;
  name.remove_suffix(3);
  const size_t dot = name.rfind('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == name.size()) return false;
  return std::all_of(name.begin() + static_cast<std::ptrdiff_t>(dot) + 1, name.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

bool is_output_name(const std::string& relative) {
  if (!no_follow::is_plain_relative(relative)) return false;
  const fs::path p(relative);
  const std::string first = p.begin()->string(), last = p.filename().string();
  static const std::set<std::string> files = {"algorithm.json",
                                              "algorithm.xml",
                                              "results.csv",
                                              "simulations.csv",
                                              "simulation_collectives.csv",
                                              "report.md",
                                              "system.json",
                                              "network.yml"};
  static const std::set<std::string> folders = {"chakra", "astra-sim", "plots"};
  return (files.count(relative) > 0) || (folders.count(first) > 0 && first != relative) ||
         is_rank_file(last);
}

bool is_staged_name(const std::string& relative) {
  return is_output_name(relative) ||
         (no_follow::is_plain_relative(relative) && relative.find('/') == std::string::npos &&
          relative.front() != '.' && relative.ends_with(".json"));
}

OutputFolder::OutputFolder(std::string dir) : dir_(std::move(dir)) {
  make_directories(dir_);
  dir_fd_ = no_follow::open_root(dir_);
  lock_folder(dir_fd_.get(), LOCK_EX, dir_);
  complete_killed_runs(dir_fd_.get(), dir_);
  stage_name_ = std::string(kStage) + no_follow::random_name_suffix();
  if (::mkdirat(dir_fd_.get(), stage_name_.c_str(), 0700) != 0)
    throw Error(fmt::format("cannot write in the output folder: {}", std::strerror(errno)), {dir_});
  stage_fd_ = Fd(::openat(dir_fd_.get(), stage_name_.c_str(),
                          O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!stage_fd_ || ::flock(stage_fd_.get(), LOCK_EX | LOCK_NB) != 0)
    throw Error(fmt::format("cannot use the staging folder: {}", std::strerror(errno)), {dir_});
  ::flock(dir_fd_.get(), LOCK_UN);
  stage_dir_ = (fs::path(dir_) / stage_name_).string();
  // The stage's own descriptor, as /proc shows it, where there is a /proc: a path that names this
  // folder whatever is done to its name (a child process started before its exec, gnuplot's
  // chdir, sees the same descriptor). Whoever may write the output folder (not sticky) could
  // rename the stage and put a link to any folder at its name, and a write by name would follow
  // it; everything under the stage is this run's own (mode 0700).
  static const bool proc = ::access("/proc/self/fd", X_OK) == 0;
  stage_root_ = proc ? fmt::format("/proc/self/fd/{}", stage_fd_.get()) : stage_dir_;
  shown_by_name_.emplace(stage_dir_, dir_);
  if (stage_root_ != stage_dir_) shown_by_fd_.emplace(stage_root_, dir_);
}

OutputFolder::~OutputFolder() {
  // A decided commit that failed keeps its stage: the next writer rolls its journal forward.
  // (By name only where the name is still this run's stage: not what another put there.)
  if (!committed_ && !decided_ && dir_fd_ && stage_in_place())
    no_follow::remove_all_at(dir_fd_.get(), stage_name_);
}

std::string OutputFolder::stage(const std::string& relative) {
  if (!is_staged_name(relative))
    throw Error(fmt::format("internal: '{}' is not a name Tenet writes", relative), {dir_});
  // The commit journal holds the names as JSON text, which is UTF-8.
  if (!valid_utf8(relative))
    throw Error(fmt::format("the file name '{}' is not valid UTF-8: give a name in UTF-8",
                            one_line(relative)),
                {dir_});
  no_follow::open_folder(stage_fd_.get(), fs::path(relative).parent_path().string(), true,
                         stage_dir_);
  if (std::find(staged_.begin(), staged_.end(), relative) == staged_.end())
    staged_.push_back(relative);
  return (fs::path(stage_root_) / relative).string();
}

bool OutputFolder::stage_in_place() const {
  // The journal names the stage by its name: it must still be this run's own folder (whoever may
  // write the output folder may have renamed it and put another folder or a link there).
  struct stat named {};
  struct stat own {};
  return ::fstatat(dir_fd_.get(), stage_name_.c_str(), &named, AT_SYMLINK_NOFOLLOW) == 0 &&
         ::fstat(stage_fd_.get(), &own) == 0 && named.st_dev == own.st_dev &&
         named.st_ino == own.st_ino;
}

Error OutputFolder::stage_moved() const {
  return Error(
      "this run's staging folder was moved or replaced while it wrote (another process writes in "
      "this folder): nothing was committed",
      {stage_dir_});
}

std::string OutputFolder::final_path(const std::string& relative) const {
  return (fs::path(dir_) / relative).string();
}

void OutputFolder::remove_at_commit(const std::string& relative) {
  const std::string rel = fs::path(relative).lexically_normal().string();
  if (!is_output_name(rel))
    throw Error(fmt::format("internal: '{}' is not a name Tenet writes", relative), {dir_});
  stale_.push_back(rel);
}

void OutputFolder::replace_tree_at_commit(const std::string& relative) {
  if (!is_output_name(relative + "/x"))
    throw Error(fmt::format("internal: '{}' is not a folder Tenet writes", relative), {dir_});
  trees_.push_back(relative);
}

void OutputFolder::remove_matching_at_commit(const std::string& folder,
                                             std::function<bool(std::string_view)> stale) {
  matching_.push_back({folder, std::move(stale)});
}

void OutputFolder::drop(const std::string& relative) {
  const fs::path at = fs::path(relative).lexically_normal();
  auto under = [&](const std::string& p) {
    const fs::path rel = fs::path(p).lexically_normal().lexically_relative(at);
    return !rel.empty() && *rel.begin() != "..";
  };
  std::erase_if(staged_, under);
  std::erase_if(stale_, under);
  if (!no_follow::remove_all_at(stage_fd_.get(), at.string()))
    throw Error(fmt::format("cannot remove what this run staged for {} (in its staging folder {})",
                            at.string(), stage_name_),
                {dir_});
}

// Under the folder's lock: the stale files named, those under replaced trees, and the matching.
std::vector<std::string> OutputFolder::stale_files() const {
  std::set<std::string> found(stale_.begin(), stale_.end());
  for (const std::string& tree : trees_)
    if (const Fd fd = no_follow::open_folder(dir_fd_.get(), tree, false, dir_))
      files_under(fd.get(), tree + "/", found);
  for (const Matching& m : matching_) {
    const Fd fd = m.folder.empty() ? Fd(::fcntl(dir_fd_.get(), F_DUPFD_CLOEXEC, 0))
                                   : no_follow::open_folder(dir_fd_.get(), m.folder, false, dir_);
    if (!fd) continue;
    for (const std::string& name : no_follow::entries(fd.get()))
      if (kind_at(fd.get(), name) == S_IFREG && m.stale(name))
        found.insert(m.folder.empty() ? name : m.folder + "/" + name);
  }
  std::vector<std::string> out;
  for (const std::string& rel : found)
    if (is_output_name(rel)) out.push_back(rel);
  return out;
}

std::vector<std::string> OutputFolder::commit() {
  if (committed_) throw Error("internal: an output folder was committed twice", {dir_});
  // Every file in the stage, those named by stage() first in their order, then the others (files
  // a writer put beside them: Chakra ranks, plots) in name order.
  std::set<std::string> on_disk;
  files_under(stage_fd_.get(), "", on_disk);
  if (!stage_in_place()) throw stage_moved();  // (before check_targets makes folders)
  Journal j{stage_name_, {}, {}};
  for (const std::string& s : staged_)
    if (on_disk.erase(s)) j.move.push_back(s);
  j.move.insert(j.move.end(), on_disk.begin(), on_disk.end());
  check_targets(dir_fd_.get(), dir_, j.move);

  lock_folder(dir_fd_.get(), LOCK_EX, dir_);
  if (!stage_in_place()) {  // (again under the lock: the journal names the stage by its name)
    ::flock(dir_fd_.get(), LOCK_UN);
    throw stage_moved();
  }
  complete_killed_runs(dir_fd_.get(), dir_);  // a run killed since this one began
  const std::set<std::string> moving(j.move.begin(), j.move.end());
  for (const std::string& rel : stale_files())
    if (moving.count(rel) == 0) j.remove.push_back(rel);
  const std::string journal = write_journal(dir_fd_.get(), dir_, j);  // step 1: decided
  decided_ = true;
  apply(dir_fd_.get(), dir_, j, stage_fd_.get());  // step 2
  for (const std::string& tree : trees_) remove_empty_folders(dir_fd_.get(), tree);
  ::unlinkat(dir_fd_.get(), journal.c_str(), 0);  // step 3
  if (stage_in_place()) no_follow::remove_all_at(dir_fd_.get(), stage_name_);
  ::flock(dir_fd_.get(), LOCK_UN);
  committed_ = true;
  std::vector<std::string> paths;
  for (const std::string& rel : j.move) paths.push_back(final_path(rel));
  return paths;
}

namespace {

// The name of a commit's journal in folder `fd` that counts: one this user or the folder's owner
// left (in a folder others may write, /tmp, anyone could plant one to keep every file there and
// below it unread), or nothing.
std::optional<std::string> counted_journal(int fd) {
  struct stat folder {};
  const bool owner_known = ::fstat(fd, &folder) == 0;
  for (const std::string& name : no_follow::entries(fd))
    if (struct stat st{}; no_follow::has_random_suffix(name, kJournal) &&
                          ::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                          S_ISREG(st.st_mode) && st.st_nlink == 1 &&
                          (st.st_uid == ::geteuid() || (owner_known && st.st_uid == folder.st_uid)))
      return name;
  return std::nullopt;
}

// The folders (device, inode) this process read one file of past another process's lock
// (FolderReadLock): their lock is not waited for again.
std::mutex read_past_mutex;
std::set<std::pair<dev_t, ino_t>> read_past_folders;

// Folder `fd`'s (device, inode), or nothing where it cannot be asked.
std::optional<std::pair<dev_t, ino_t>> folder_id(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return std::nullopt;
  return std::pair(st.st_dev, st.st_ino);
}

bool read_past_before(int fd) {
  const auto id = folder_id(fd);
  const std::lock_guard lock(read_past_mutex);
  return id && read_past_folders.count(*id) > 0;
}

void remember_read_past(int fd) {
  const auto id = folder_id(fd);
  const std::lock_guard lock(read_past_mutex);
  if (id) read_past_folders.insert(*id);
}

}  // namespace

FolderReadLock::FolderReadLock(const std::string& dir, FolderRead read,
                               std::chrono::milliseconds wait, std::chrono::milliseconds grace) {
  // The folder and the one above it: a command's set may put files in a sub-folder (chakra/).
  const fs::path here(dir.empty() ? "." : dir);
  std::error_code ec;
  fs::path absolute = fs::absolute(here, ec).lexically_normal();  // "/a/b/." -> "/a/b/"
  if (!absolute.has_filename()) absolute = absolute.parent_path();
  std::vector<fs::path> folders{here};
  if (absolute.has_relative_path())
    folders.insert(folders.begin(), absolute.parent_path());  // not for "/"
  const bool one = read == FolderRead::OneFile;
  for (const fs::path& d : folders) {
    Fd fd(::open(d.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd) continue;
    // One file is one run's whatever is committed while it is read (each is renamed into place
    // whole), so its reader need not keep commits out: it takes the lock only to see a killed
    // run's journal once any live commit has ended. A lock held past `grace` where no journal
    // that counts is there (in /tmp anyone may hold one for ever) is read past, once per folder
    // and process.
    const bool known = one && read_past_before(fd.get());
    bool said = known;  // (a folder read past before: neither waited for nor said again)
    const std::chrono::milliseconds first = known ? std::chrono::milliseconds(0)
                                            : one ? std::min(grace, wait)
                                                  : wait;
    if (!lock_folder_within(fd.get(), LOCK_SH, d.string(), first, said)) {
      if (one && !counted_journal(fd.get())) {
        if (!known) {
          fmt::print(stderr,
                     "note: {}: another process has held a lock on this folder for {:g} s and no "
                     "Tenet commit is under way there: reading one file without the lock\n",
                     d.string(), std::chrono::duration<double>(first).count());
          remember_read_past(fd.get());
        }
        continue;  // (no journal there just now: nothing killed to refuse)
      }
      // A set, or one file while a commit is under way: the rest of `wait` (a set has none left).
      if (!one || !lock_folder_within(fd.get(), LOCK_SH, d.string(), wait - first, said))
        throw lock_held(d.string(), wait);
    }
    if (const std::optional<std::string> name = counted_journal(fd.get()))
      throw Error(
          "a Tenet run writing this folder was killed during its commit: its files may mix two "
          "runs, so Tenet does not read them; the next Tenet write to the folder completes the "
          "commit (or remove the folder)",
          {(d / *name).string()});
    fds_.push_back(std::move(fd));
  }
}

FolderReadLock::~FolderReadLock() = default;  // closing the descriptors releases the locks

}  // namespace tenet::topo
