// Output folders written whole or not at all, safe in a folder others can write to or sent us.
//
// A command's files (algorithm.json, algorithm.xml, chakra/algorithm.<rank>.et, ...) are written
// into a staging folder inside the output folder, `.tenet-stage.<random>`, and committed together
// under an exclusive flock(2) of the output folder:
//   1. a journal naming every file to move and every stale file to remove is written as
//      `.tenet-commit.<random>`; from then on the commit is decided;
//   2. the staged files are renamed into place and the stale files removed;
//   3. the journal and the staging folder are removed.
// Stale files are found under the lock, at the commit, so two runs writing one folder at once
// leave exactly the set of the one that committed last.
//
// Safety (the folder may hold anything another user planted):
// - every step walks from the folder's descriptor without following a symbolic link; a link
//   where a folder goes is an error, a link where a file goes is replaced or removed as a link;
// - names are random, so nothing can be planted at them ahead, and only entries of Tenet's own
//   patterns (`.tenet-stage.<16 hex>`, `.tenet-commit.<16 hex>`) are ever removed as leftovers;
// - a live run holds an flock on its staging folder for its whole life; a leftover stage is a
//   killed run's only when that lock can be taken (true across PID namespaces, unlike a pid);
// - a journal is acted on only by a writer, under the folder's lock, only within the folder and
//   only where this user wrote it (another user's is refused: never replayed): it moves regular
//   files from a leftover stage to the names Tenet writes (is_staged_name) and removes Tenet's
//   output names (is_output_name), nothing else; one that names anything else is refused whole;
// - readers never change anything: a journal they find (its run was killed inside step 2, since
//   live commits exclude readers) makes them refuse the folder, which may then mix two runs, until
//   the next write completes the commit; where this user or the folder's owner left it;
// - a lock is waited for at most kFolderLockWait: any process that may open a folder may flock it
//   (a reader of one file waits kFolderReadGrace where no commit is under way, FolderReadLock);
// - staged files are written through the stage's descriptor (stage(): /proc/self/fd/<n>/...), and a
//   commit moves nothing where the stage's name no longer names that folder: renaming a live stage
//   and putting a link at its name steers no write elsewhere. An error naming a staged file names
//   the file it was to become, <dir>/<relative> (topo/shown_paths.hpp).
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "topo/error.hpp"
#include "topo/no_follow.hpp"
#include "topo/shown_paths.hpp"

namespace tenet::topo {

// How long a reader or writer waits for another process's lock of a folder before it gives up
// with an error: Tenet's own holds last a commit's renames or a read of the folder's files.
inline constexpr std::chrono::milliseconds kFolderLockWait = std::chrono::minutes(10);
// How long a reader of one file waits for another process's lock of its folder before it reads
// without it, where no commit is under way there (FolderReadLock).
inline constexpr std::chrono::milliseconds kFolderReadGrace = std::chrono::seconds(10);

// The names Tenet's commands write in an output folder, relative to it: algorithm.json,
// algorithm.xml, results.csv, simulations.csv, simulation_collectives.csv, report.md,
// system.json, network.yml, anything under chakra/, astra-sim/ or plots/, and Chakra ranks
// `<stem>.<rank>.et` anywhere. Only these are removed by a commit.
bool is_output_name(const std::string& relative);
// The names a commit may move into place: the output names, and the algorithm files `tenet synth
// --algo all` writes (`<name>.json` at the folder's top, not hidden). Never removed as stale.
bool is_staged_name(const std::string& relative);

class OutputFolder {
 public:
  // Creates `dir` (and its parents), completes what killed runs left there (their journals
  // rolled forward, their stages removed) and makes this run's stage. Throws tenet::Error naming
  // the folder when it cannot be created or written.
  explicit OutputFolder(std::string dir);
  ~OutputFolder();  // not committed: the staging folder and all in it go
  OutputFolder(const OutputFolder&) = delete;
  OutputFolder& operator=(const OutputFolder&) = delete;

  const std::string& dir() const { return dir_; }
  // Where to write `relative` now (inside the staging folder; its parent folders are created): a
  // path through the stage's descriptor (/proc/self/fd/<n>/...), which no rename or link in the
  // output folder can turn elsewhere, valid while this object lives.
  std::string stage(const std::string& relative);
  // The staging folder itself, for writers that make many files under it (plots); every file in
  // it is committed. Named through its descriptor, as stage() names files.
  const std::string& staging_dir() const { return stage_root_; }
  // Where `relative` will be once committed: <dir>/<relative>.
  std::string final_path(const std::string& relative) const;
  // At commit, remove <dir>/<relative> unless this set writes it (a stale file of an earlier set).
  // `relative` must be a name Tenet writes (is_staged_name).
  void remove_at_commit(const std::string& relative);
  // At commit, remove every file under the folder <dir>/<relative> that this set does not write
  // (a format owned whole by Tenet: chakra/, astra-sim/, plots/), and the folders left empty.
  void replace_tree_at_commit(const std::string& relative);
  // At commit, remove the files of the folder <dir>/<folder> whose names `stale` accepts and this
  // set does not write (the ranks `<stem>.<n>.et` of an earlier, larger set).
  void remove_matching_at_commit(const std::string& folder,
                                 std::function<bool(std::string_view name)> stale);
  // Takes back what was staged, and marked for removal, at `relative` or under it (a format that
  // turned out unwritable after its files were staged): the folder keeps what it had there.
  void drop(const std::string& relative);
  // Commits the set (steps 1-3 above); returns the final paths of the staged files, in the order
  // they were staged. Throws tenet::Error naming the file that blocks it (a folder where a file
  // goes, a link, no permission); before step 1 that leaves the old set untouched.
  std::vector<std::string> commit();

 private:
  struct Matching {
    std::string folder;
    std::function<bool(std::string_view)> stale;
  };
  std::vector<std::string> stale_files() const;
  bool stage_in_place() const;  // whether the stage's name still names this run's stage
  Error stage_moved() const;    // the error when it does not

  std::string dir_, stage_name_, stage_dir_;
  std::string stage_root_;  // the stage through its descriptor (/proc/self/fd/<n>), else stage_dir_
  no_follow::Fd dir_fd_, stage_fd_;  // stage_fd_ holds the stage's flock while this run lives
  std::vector<std::string> staged_, stale_, trees_;
  std::vector<Matching> matching_;
  bool committed_ = false, decided_ = false;
  // While this lives, an error naming a file under the stage (by its descriptor or its name)
  // names <dir>/<relative> instead (topo/shown_paths.hpp).
  std::optional<shown_paths::Registration> shown_by_fd_, shown_by_name_;
};

// What a reader reads under a FolderReadLock: one file (a commit replaces each file whole, by a
// rename, so one file is one run's whatever is committed meanwhile) or a set of files that must be
// one run's (a Chakra prefix's ranks).
enum class FolderRead { OneFile, Set };

// Held while reading files of one folder: keeps commits to it and to the folder above it (a
// command's set may have a sub-folder, chakra/) out with a shared flock until destroyed. Throws
// tenet::Error when either holds the journal of a commit a killed run left unfinished (the files
// may mix two runs; the next Tenet write to the folder completes it): one this user or the
// folder's owner left, not one anyone else planted in a folder all may write. Changes nothing. A
// folder that cannot be opened (absent, no permission) is not locked. Waits at most `wait` for a
// commit to end (kFolderLockWait; then throws, naming the folder). Anyone who may open a folder may
// flock it: reading one file, a lock still held after `grace` (kFolderReadGrace) where no journal
// that counts is in the folder is read past, with a note (once per folder and process: later reads
// there do not wait for it).
class FolderReadLock {
 public:
  FolderReadLock(const std::string& dir, FolderRead read,
                 std::chrono::milliseconds wait = kFolderLockWait,
                 std::chrono::milliseconds grace = kFolderReadGrace);
  ~FolderReadLock();
  FolderReadLock(const FolderReadLock&) = delete;
  FolderReadLock& operator=(const FolderReadLock&) = delete;

 private:
  std::vector<no_follow::Fd> fds_;
};

}  // namespace tenet::topo
