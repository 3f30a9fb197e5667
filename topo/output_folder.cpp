#include "topo/output_folder.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "topo/error.hpp"
#include "topo/io.hpp"

namespace tenet::topo {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kStage = ".tenet-stage.", kJournal = ".tenet-commit.", kTmp = ".tmp.";

// The pid at the end of `name` after `marker` ("x.tmp.123" -> 123), or 0.
int pid_after(const std::string& name, std::string_view marker, bool prefix) {
  const size_t at =
      prefix ? (name.starts_with(marker) ? 0 : std::string::npos) : name.rfind(marker);
  if (at == std::string::npos || at + marker.size() >= name.size()) return 0;
  int pid = 0;
  const char* digits = name.data() + at + marker.size();
  const auto [end, ec] = std::from_chars(digits, name.data() + name.size(), pid);
  return ec == std::errc() && end == name.data() + name.size() && pid > 0 ? pid : 0;
}

bool gone(int pid) { return pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH; }

// flock(2) on the folder itself (no lock file is left behind).
class FolderLock {
 public:
  FolderLock(const std::string& dir, int operation)
      : fd_(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {
    if (fd_ >= 0)
      while (::flock(fd_, operation) != 0 && errno == EINTR) {
      }
  }
  ~FolderLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// A journal names files inside its folder only: relative, no "..", and a stage of ours.
void check_journal(const nlohmann::json& journal, const fs::path& file) {
  const std::string stage = journal.at("stage").get<std::string>();
  if (pid_after(stage, kStage, true) == 0)
    throw Error(fmt::format("commit journal names '{}' as its stage", stage), {file.string()});
  for (const char* list : {"move", "remove"})
    for (const auto& rel : journal.at(list)) {
      const fs::path p(rel.get<std::string>());
      bool inside = !p.empty() && p.is_relative();
      for (const auto& part : p) inside = inside && part != ".." && part != ".";
      if (!inside)
        throw Error(fmt::format("commit journal names '{}', which is not a file inside its folder",
                                p.string()),
                    {file.string()});
    }
}

// Step 2 of a commit (also the roll-forward of a killed one): staged files into place, stale ones
// out. Files already moved are skipped, so running it twice is harmless.
void apply(const fs::path& dir, const fs::path& stage, const nlohmann::json& journal) {
  for (const auto& rel : journal.at("move")) {
    const fs::path from = stage / rel.get<std::string>(), to = dir / rel.get<std::string>();
    std::error_code ec;
    if (!fs::exists(from, ec)) continue;
    fs::create_directories(to.parent_path(), ec);
    fs::rename(from, to, ec);
    if (ec)
      throw Error(
          fmt::format(
              "cannot move {} into place: {} (the folder now mixes two runs; the commit journal "
              "{} completes it once that is fixed)",
              to.string(), ec.message(), kJournal),
          {dir.string()});
  }
  for (const auto& rel : journal.at("remove")) {
    std::error_code ec;
    fs::remove(dir / rel.get<std::string>(), ec);
  }
}

}  // namespace

void settle_folder(const std::string& dir, bool writing) {
  std::error_code ec;
  auto dead_leftovers = [&] {
    std::vector<fs::path> journals, others;
    for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator();
         it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (gone(pid_after(name, kJournal, true))) journals.push_back(it->path());
      // A journal's own temporary (".tenet-commit.<pid>.tmp.<pid>"): the run was killed while
      // deciding, before any rename, so the folder holds the old set and a reader may drop it too.
      else if (name.starts_with(kJournal) && gone(pid_after(name, kTmp, false)))
        others.push_back(it->path());
      else if (writing &&
               (gone(pid_after(name, kStage, true)) || gone(pid_after(name, kTmp, false))))
        others.push_back(it->path());
    }
    return std::pair{journals, others};
  };
  if (auto [journals, others] = dead_leftovers(); journals.empty() && others.empty())
    return;  // the usual case
  FolderLock lock(dir, LOCK_EX);
  auto [journals, others] = dead_leftovers();  // again, under the lock
  for (const fs::path& j : journals) {
    nlohmann::json journal;
    try {
      std::ifstream in(j, std::ios::binary);  // not read_file: that settles this folder, as we are
      journal = nlohmann::json::parse(in);
      check_journal(journal, j);
      apply(dir, fs::path(dir) / journal.at("stage").get<std::string>(), journal);
    } catch (const nlohmann::json::exception& e) {
      throw Error(
          fmt::format("unreadable commit journal of a killed run ({}): the folder may mix two runs",
                      e.what()),
          {j.string()});
    }
    fs::remove_all(fs::path(dir) / journal.at("stage").get<std::string>(), ec);
    fs::remove(j, ec);
  }
  for (const fs::path& p : others)
    if (fs::exists(p, ec))
      fs::remove_all(p, ec);  // a journal above may have taken its stage already
}

OutputFolder::OutputFolder(std::string dir) : dir_(std::move(dir)) {
  make_directories(dir_);  // settles it too
  stage_dir_ = (fs::path(dir_) / fmt::format("{}{}", kStage, ::getpid())).string();
  std::error_code ec;
  fs::remove_all(stage_dir_, ec);  // a stage of this process's earlier set that was not committed
  if (!fs::create_directory(stage_dir_, ec) || ec)
    throw Error(fmt::format("cannot write in the output folder: {}", ec ? ec.message() : "exists"),
                {dir_});
}

OutputFolder::~OutputFolder() {
  if (committed_) return;
  std::error_code ec;
  fs::remove_all(stage_dir_, ec);
}

std::string OutputFolder::stage(const std::string& relative) {
  const fs::path p = fs::path(stage_dir_) / relative;
  std::error_code ec;
  fs::create_directories(p.parent_path(), ec);
  if (ec)
    throw Error(fmt::format("cannot create a staging folder: {}", ec.message()),
                {p.parent_path().string()});
  if (std::find(staged_.begin(), staged_.end(), relative) == staged_.end())
    staged_.push_back(relative);
  return p.string();
}

std::string OutputFolder::final_path(const std::string& relative) const {
  return (fs::path(dir_) / relative).string();
}

void OutputFolder::remove_at_commit(const std::string& relative) { stale_.push_back(relative); }

void OutputFolder::drop(const std::string& relative) {
  const fs::path at = fs::path(relative).lexically_normal();
  auto under = [&](const std::string& p) {
    const fs::path rel = fs::path(p).lexically_normal().lexically_relative(at);
    return !rel.empty() && *rel.begin() != "..";
  };
  std::erase_if(staged_, under);
  std::erase_if(stale_, under);
  std::error_code ec;
  fs::remove_all(fs::path(stage_dir_) / at, ec);
  if (ec)
    throw Error(fmt::format("cannot remove staged files: {}", ec.message()),
                {(fs::path(stage_dir_) / at).string()});
}

std::vector<std::string> OutputFolder::commit() {
  if (committed_) throw Error("internal: an output folder was committed twice", {dir_});
  // Every file in the stage, those named by stage() first in their order, then the others (files
  // a writer put beside them: Chakra ranks, plots) in name order.
  std::vector<std::string> moves;
  std::set<std::string> on_disk;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(stage_dir_, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (std::error_code kind; it->is_regular_file(kind))
      on_disk.insert(it->path().lexically_relative(stage_dir_).string());
  if (ec)
    throw Error(fmt::format("cannot list the staging folder: {}", ec.message()), {stage_dir_});
  for (const std::string& s : staged_)
    if (on_disk.erase(s)) moves.push_back(s);
  moves.insert(moves.end(), on_disk.begin(), on_disk.end());
  // What would block a rename is found now, while the old set is still whole.
  for (const std::string& rel : moves) {
    const fs::path to = fs::path(dir_) / rel;
    std::error_code made, probe;
    fs::create_directories(to.parent_path(), made);
    if (made || !fs::is_directory(to.parent_path(), probe)) {
      fs::path blocker = to.parent_path();  // the file that stands where a folder goes, if one does
      while (blocker.has_parent_path() && blocker != blocker.parent_path() &&
             !fs::exists(blocker, probe))
        blocker = blocker.parent_path();
      const bool file = fs::exists(blocker, probe) && !fs::is_directory(blocker, probe);
      throw Error(
          fmt::format("cannot create folder {}: {}", to.parent_path().string(),
                      file ? fmt::format("{} is a file", blocker.string()) : made.message()),
          {dir_});
    }
    if (fs::is_directory(to, ec))
      throw Error(fmt::format("cannot write {}: a folder of that name exists", to.string()),
                  {dir_});
  }
  nlohmann::json journal;
  journal["stage"] = fs::path(stage_dir_).filename().string();
  journal["move"] = moves;
  journal["remove"] = nlohmann::json::array();
  for (const std::string& rel : stale_)
    if (std::find(moves.begin(), moves.end(), rel) == moves.end()) journal["remove"].push_back(rel);

  FolderLock lock(dir_, LOCK_EX);
  const std::string journal_path =
      (fs::path(dir_) / fmt::format("{}{}", kJournal, ::getpid())).string();
  write_file_atomically(journal_path, journal.dump());  // step 1: decided
  apply(dir_, stage_dir_, journal);                     // step 2
  fs::remove(journal_path, ec);                         // step 3
  fs::remove_all(stage_dir_, ec);
  committed_ = true;
  std::vector<std::string> paths;
  for (const std::string& rel : moves) paths.push_back(final_path(rel));
  return paths;
}

FolderReadLock::FolderReadLock(const std::string& dir) {
  // The folder and the one above it: a command's set may put files in a sub-folder (chakra/).
  const fs::path here(dir.empty() ? "." : dir);
  std::error_code ec;
  fs::path absolute = fs::absolute(here, ec).lexically_normal();  // "/a/b/." -> "/a/b/"
  if (!absolute.has_filename()) absolute = absolute.parent_path();
  std::vector<fs::path> folders{here};
  if (absolute.has_relative_path())
    folders.insert(folders.begin(), absolute.parent_path());  // not for "/"
  for (const fs::path& d : folders) {
    settle_folder(d.string(), false);
    FolderLock lock(d.string(), LOCK_SH);
    fds_.push_back(lock.release());
  }
}

FolderReadLock::~FolderReadLock() {
  for (int fd : fds_)
    if (fd >= 0) ::close(fd);
}

}  // namespace tenet::topo
