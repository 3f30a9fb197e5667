// Running independent jobs on a few threads.
#pragma once

#include <functional>

namespace tenet {

// Calls job(0) .. job(n - 1) on up to `threads` threads (on the calling one when that is 1), then
// rethrows the exception of the first job (by index) that threw.
void parallel_for(int n, int threads, const std::function<void(int)>& job);

// The hardware threads of this machine, at least 1.
int cores();

}  // namespace tenet
