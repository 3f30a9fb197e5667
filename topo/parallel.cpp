#include "topo/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>
#include <vector>

namespace tenet {

void parallel_for(int n, int threads, const std::function<void(int)>& job) {
  std::vector<std::exception_ptr> errors(n);
  std::atomic<int> next{0};
  auto worker = [&] {
    for (int i = next++; i < n; i = next++) {
      try {
        job(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  threads = std::clamp(threads, 1, std::max(1, n));
  if (threads == 1) {
    worker();
  } else {
    std::vector<std::thread> pool;
    for (int i = 0; i < threads; ++i) pool.emplace_back(worker);
    for (std::thread& th : pool) th.join();
  }
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

int cores() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

}  // namespace tenet
