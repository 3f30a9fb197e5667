#include "topo/shown_paths.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <utility>
#include <vector>

namespace tenet::shown_paths {

namespace {

struct Registry {
  std::mutex mutex;
  std::vector<std::pair<std::string, std::string>> roots;  // (root, shown as), oldest first
  std::atomic<size_t> count{0};  // roots.size(), read without the lock: none, nothing to map
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

Registration::Registration(std::string root, std::string as) : root_(std::move(root)) {
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  r.roots.emplace_back(root_, std::move(as));
  r.count = r.roots.size();
}

Registration::~Registration() {
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  // (The most recent of this root: registrations of one root end in reverse order.)
  const auto it = std::find_if(r.roots.rbegin(), r.roots.rend(),
                               [&](const auto& e) { return e.first == root_; });
  if (it != r.roots.rend()) r.roots.erase(std::next(it).base());
  r.count = r.roots.size();
}

std::string shown(const std::string& path) {
  Registry& r = registry();
  if (r.count == 0 || path.empty()) return path;
  const std::lock_guard lock(r.mutex);
  for (auto it = r.roots.rbegin(); it != r.roots.rend(); ++it) {
    const std::string& root = it->first;
    if (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
        path[root.size()] == '/') {
      const std::string& as = it->second;
      // (One '/' between them: a folder given as "out/" shows "out/algorithm.json".)
      return as.ends_with('/') ? as + path.substr(root.size() + 1) : as + path.substr(root.size());
    }
  }
  return path;
}

}  // namespace tenet::shown_paths
