// Paths as the user is shown them.
//
// A command writes its files into its output folder's staging folder through the stage's
// descriptor (/proc/self/fd/<n>/<relative>, topo/output_folder.hpp), a path the user never gave
// and that means nothing once the run has ended. While a stage lives, its roots (that path, and
// the stage's name inside the folder) are registered here with the folder's path, and every
// tenet::Error naming a file under one of them names the file it was to become instead:
// <folder>/<relative>. Registrations are process-wide and thread-safe.
#pragma once

#include <string>

namespace tenet::shown_paths {

// `root` (a folder path) shown as `as` while this lives. Neither copied nor moved.
class Registration {
 public:
  Registration(std::string root, std::string as);
  ~Registration();
  Registration(const Registration&) = delete;
  Registration& operator=(const Registration&) = delete;

 private:
  std::string root_;
};

// `path` as shown: below a registered root (after a '/'), that root replaced by the path it is
// shown as (the most recent registration of that root); else `path`, the root itself included (an
// error about the stage itself names the stage).
std::string shown(const std::string& path);

}  // namespace tenet::shown_paths
