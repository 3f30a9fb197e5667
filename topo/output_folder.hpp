// Output folders written whole or not at all.
//
// A command's files (algorithm.json, algorithm.xml, chakra/algorithm.<rank>.et, ...) are written
// into a staging folder inside the output folder (`.tenet-stage.<pid>`) and committed together:
//   1. a journal naming every file to move and every stale file to remove is written (atomically:
//      temporary + rename) as `.tenet-commit.<pid>`; from then on the commit is decided;
//   2. the staged files are renamed into place and the stale files removed;
//   3. the journal and the staging folder are removed.
// Commits and readers of one folder exclude each other with flock(2) on the folder. A run that
// fails or is killed before step 1 leaves the old set untouched (its staging folder is removed by
// the next Tenet command that opens the folder); a run killed during step 2 (about a millisecond)
// leaves a journal that the next Tenet command opening the folder, to read or to write, completes
// first. So Tenet always sees the old complete set or the new complete one; other tools see a
// mixture only if they read during those renames (Chakra sets also carry a `tenet_set` digest).
#pragma once

#include <string>
#include <vector>

namespace tenet::topo {

class OutputFolder {
 public:
  // Creates `dir` (and its parents) and settles it (see settle_folder). Throws tenet::Error naming
  // the folder when it cannot be created or written.
  explicit OutputFolder(std::string dir);
  ~OutputFolder();  // not committed: the staging folder and all in it go
  OutputFolder(const OutputFolder&) = delete;
  OutputFolder& operator=(const OutputFolder&) = delete;

  const std::string& dir() const { return dir_; }
  // Where to write `relative` now (inside the staging folder; its parent folders are created).
  std::string stage(const std::string& relative);
  // The staging folder itself, for writers that make many files under it (plots); every file in
  // it is committed.
  const std::string& staging_dir() const { return stage_dir_; }
  // Where `relative` will be once committed: <dir>/<relative>.
  std::string final_path(const std::string& relative) const;
  // At commit, remove <dir>/<relative> unless this set writes it (a stale file of an earlier set).
  void remove_at_commit(const std::string& relative);
  // Takes back what was staged, and marked for removal, at `relative` or under it (a format that
  // turned out unwritable after its files were staged): the folder keeps what it had there.
  void drop(const std::string& relative);
  // Commits the set (steps 1-3 above); returns the final paths of the staged files, in the order
  // they were staged. Throws tenet::Error naming the file that blocks it (a folder where a file
  // goes, no permission); before step 1 that leaves the old set untouched.
  std::vector<std::string> commit();

 private:
  std::string dir_, stage_dir_;
  std::vector<std::string> staged_, stale_;
  bool committed_ = false;
};

// Completes what killed runs left in `dir`: a commit journal whose process is gone is rolled
// forward. When `writing` (the folder is an output folder about to be written), staging folders
// and `<name>.tmp.<pid>` files of processes that are gone are removed too; readers leave those
// (a `.tmp.<pid>` name in a folder Tenet only reads may be another program's). Does nothing when
// `dir` holds none of these. Throws tenet::Error when a journal cannot be completed (the folder is
// then a mixture, and the error says so).
void settle_folder(const std::string& dir, bool writing = true);

// Held while reading files of one folder: settles it and the folder above it (a command's set may
// have a sub-folder, chakra/), then keeps commits to either out (a shared flock) until destroyed.
// A folder that cannot be opened (absent, no permission) is not locked.
class FolderReadLock {
 public:
  explicit FolderReadLock(const std::string& dir);
  ~FolderReadLock();
  FolderReadLock(const FolderReadLock&) = delete;
  FolderReadLock& operator=(const FolderReadLock&) = delete;

 private:
  std::vector<int> fds_;
};

}  // namespace tenet::topo
