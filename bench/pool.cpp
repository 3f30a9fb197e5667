#include "bench/pool.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <thread>

#ifdef TENET_WITH_MPI
#include <mpi.h>
#endif

#include "topo/error.hpp"

namespace tenet::bench {
namespace {

// The variables the launchers set: Open MPI's mpirun, PMIx (Open MPI 4+/5, `srun --mpi=pmix`),
// PMI-1/2 (MPICH's hydra, `srun --mpi=pmi2`).
const char* first_env(std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (const char* v = std::getenv(n)) return v;
  return nullptr;
}
const char* launcher_rank() { return first_env({"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}); }
[[maybe_unused]] const char* launcher_size() {
  return first_env({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"});
}

std::string this_host() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "?";
  return name;
}

// ---- Crash reports: which item a thread was running when the process received a fatal signal.

thread_local char crash_note[1024];
thread_local size_t crash_note_length = 0;

void write_stderr(const char* s, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(STDERR_FILENO, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<size_t>(w);
  }
}

extern "C" void on_fatal_signal(int sig) {
  if (crash_note_length > 0) {
    const char* what = sig == SIGSEGV   ? "segmentation fault (or stack overflow)"
                       : sig == SIGBUS  ? "bus error"
                       : sig == SIGFPE  ? "arithmetic exception"
                       : sig == SIGILL  ? "illegal instruction"
                       : sig == SIGABRT ? "aborted"
                                        : "fatal signal";
    write_stderr("\n", 1);
    write_stderr(crash_note, crash_note_length);
    write_stderr(": ", 2);
    write_stderr(what, std::strlen(what));
    write_stderr("\n", 1);
  }
  ::signal(sig, SIG_DFL);
  ::raise(
      sig);  // delivered when the handler returns: the process dies of the signal as it would have
}

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};

// Installs the crash reporter for the lifetime of a run_items call; restores what was there.
class CrashReports {
 public:
  CrashReports() {
    struct sigaction sa {};
    sa.sa_handler = on_fatal_signal;
    sa.sa_flags = SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < std::size(kFatalSignals); ++i)
      ::sigaction(kFatalSignals[i], &sa, &previous_[i]);
  }
  ~CrashReports() {
    for (size_t i = 0; i < std::size(kFatalSignals); ++i)
      ::sigaction(kFatalSignals[i], &previous_[i], nullptr);
  }

 private:
  struct sigaction previous_[std::size(kFatalSignals)]{};
};

// A signal stack for the calling thread while it lives, so that a stack overflow can still be
// reported.
class AltStack {
 public:
  AltStack() : memory_(new char[kSize]) {
    stack_t s{};
    s.ss_sp = memory_.get();
    s.ss_size = kSize;
    installed_ = ::sigaltstack(&s, &previous_) == 0;
  }
  ~AltStack() {
    if (installed_) ::sigaltstack(&previous_, nullptr);
  }

 private:
  static constexpr size_t kSize = 64 * 1024;
  std::unique_ptr<char[]> memory_;
  stack_t previous_{};
  bool installed_ = false;
};

// ---- Running one item.

enum class Failure : int32_t { None = 0, Input = 1, Internal = 2 };

struct Outcome {
  std::string output;  // or the failure's message
  Failure failure = Failure::None;
  double seconds = 0;
};

Outcome attempt(size_t item, const std::function<std::string(size_t)>& run,
                const std::function<std::string(size_t)>& describe, const std::string& where) {
  const std::string note =
      fmt::format("tenet bench{}: crashed while running case {}", where, describe(item));
  crash_note_length = std::min(note.size(), sizeof crash_note);
  std::memcpy(crash_note, note.data(), crash_note_length);
  const auto begin = std::chrono::steady_clock::now();
  Outcome o;
  try {
    o.output = run(item);
  } catch (const Error& e) {
    o = {e.what(), Failure::Input};
  } catch (const std::exception& e) {
    o = {e.what(), Failure::Internal};
  } catch (...) {
    o = {"an unknown exception", Failure::Internal};
  }
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  crash_note_length = 0;
  return o;
}

// Rank 0's record of the run.
struct Ledger {
  std::vector<size_t> order;  // items, most expensive first
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex mutex;  // guards everything below
  std::vector<std::string> outputs;
  size_t done = 0;
  struct FirstFailure {
    size_t item;
    int rank;
    Failure kind;
    std::string message;
  };
  std::optional<FirstFailure> failure;

  std::optional<size_t> take() {
    if (stop) return std::nullopt;
    const size_t k = next++;
    if (k >= order.size()) return std::nullopt;
    return order[k];
  }

  // Keeps the outcome of `item` run by `rank`, counts it in `stats` and reports progress.
  void record(size_t item, int rank, Outcome&& o, PoolStats& stats, const PoolOptions& options) {
    std::lock_guard lock(mutex);
    ++stats.items[static_cast<size_t>(rank)];
    stats.busy_seconds[static_cast<size_t>(rank)] += o.seconds;
    if (o.failure != Failure::None) {
      if (!failure) failure = FirstFailure{item, rank, o.failure, std::move(o.output)};
      stop = true;
    } else {
      outputs[item] = std::move(o.output);
    }
    ++done;
    if (options.progress)
      options.progress(static_cast<double>(done) / static_cast<double>(outputs.size()));
  }
};

std::vector<size_t> dealing_order(size_t count, const std::vector<double>& cost) {
  std::vector<size_t> order(count);
  std::iota(order.begin(), order.end(), size_t{0});
  if (cost.size() == count)
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return cost[a] > cost[b]; });
  return order;
}

#ifdef TENET_WITH_MPI
constexpr int kTagRequest = 1, kTagReply = 2;

// A request for work, carrying the previous item's outcome: item (-1: none yet), failure kind,
// seconds, then the output or the failure's message.
struct Header {
  int64_t item;
  int32_t failure;
  double seconds;
};

std::string encode(int64_t item, const Outcome& o) {
  const Header h{item, static_cast<int32_t>(o.failure), o.seconds};
  std::string msg(sizeof h, '\0');
  std::memcpy(msg.data(), &h, sizeof h);
  return msg + o.output;
}
#endif

}  // namespace

Processes::Processes() {
  if (!launcher_rank()) {
    // srun without an MPI plugin starts K copies that know only their Slurm task number: without
    // this, each would run the whole suite into the same folder.
    const char* task = std::getenv("SLURM_PROCID");
    const char* tasks = std::getenv("SLURM_NTASKS");
    if (task && tasks && std::atoi(tasks) > 1) {
      rank_ = std::atoi(task);
      warning_ = fmt::format(
          "started by srun as one of {} tasks without an MPI plugin (srun --mpi=pmix): task 0 "
          "runs every case, the others exit",
          tasks);
    }
    return;
  }
#ifdef TENET_WITH_MPI
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
  initialized_ = true;
  // Finalized at exit, after main() has printed any error: MPI_Finalize waits for every rank, so no
  // rank's exit can make the launcher kill rank 0 before it has said why the run failed.
  std::atexit([] { MPI_Finalize(); });
  serialized_ = provided >= MPI_THREAD_SERIALIZED;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
  MPI_Comm_size(local, &local_size_);
  MPI_Comm_free(&local);
#else
  rank_ = std::atoi(launcher_rank());
  if (const char* size = launcher_size(); size && std::atoi(size) > 1)
    warning_ = fmt::format(
        "started by an MPI launcher as one of {} processes, but this tenet was built without MPI "
        "(Debian: libopenmpi-dev, then rebuild): rank 0 runs every case, the others exit",
        size);
#endif
}

int Processes::default_threads() const {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / std::max(1, local_size_));
}

std::vector<int> Processes::failed_ranks(bool ok) const {
  std::vector<int> failed;
#ifdef TENET_WITH_MPI
  if (initialized_) {
    int mine = ok ? 1 : 0;
    std::vector<int> all(static_cast<size_t>(size_));
    MPI_Allgather(&mine, 1, MPI_INT, all.data(), 1, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < size_; ++r)
      if (!all[static_cast<size_t>(r)]) failed.push_back(r);
    return failed;
  }
#endif
  if (!ok) failed.push_back(rank_);
  return failed;
}

std::vector<std::string> run_items(const Processes& procs, size_t count,
                                   const std::function<std::string(size_t)>& run,
                                   const std::function<std::string(size_t)>& describe,
                                   const PoolOptions& options, PoolStats* stats) {
  const CrashReports crash_reports;
  const int threads = options.threads > 0 ? options.threads : procs.default_threads();
  const std::string host = this_host();
  const std::string where =
      procs.distributed() ? fmt::format(" (rank {} on {})", procs.rank(), host) : "";
  PoolStats local_stats;
  PoolStats& st = stats ? *stats : local_stats;
  st = PoolStats{};
  st.processes = procs.size();
  // Rank 0 of a distributed run deals from its main thread and works on `threads` others; a single
  // process works on its main thread too.
  int local_threads =
      std::max(1, std::min<int>(threads, static_cast<int>(std::max<size_t>(count, 1))));
  st.threads = {local_threads};
  std::vector<std::string> hosts{host};

#ifdef TENET_WITH_MPI
  if (procs.distributed()) {
    // Who is there: threads and host per rank.
    const bool remote = procs.rank() != 0;
    local_threads = remote && !procs.serialized() ? 1 : threads;
    st.threads.assign(static_cast<size_t>(procs.size()), 0);
    MPI_Gather(&local_threads, 1, MPI_INT, st.threads.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    char name[MPI_MAX_PROCESSOR_NAME] = {};
    std::strncpy(name, host.c_str(), sizeof name - 1);
    std::vector<char> names(static_cast<size_t>(procs.size()) * MPI_MAX_PROCESSOR_NAME);
    MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names.data(), MPI_MAX_PROCESSOR_NAME,
               MPI_CHAR, 0, MPI_COMM_WORLD);
    hosts.clear();
    for (int r = 0; r < procs.size(); ++r)
      hosts.emplace_back(names.data() + static_cast<size_t>(r) * MPI_MAX_PROCESSOR_NAME);
    if (remote) {
      std::mutex mpi;  // one thread talks to rank 0 at a time (MPI_THREAD_SERIALIZED)
      auto worker = [&] {
        const AltStack alt;
        std::string msg = encode(-1, {});
        for (;;) {
          int64_t item = -1;
          {
            std::lock_guard lock(mpi);
            MPI_Send(msg.data(), static_cast<int>(msg.size()), MPI_CHAR, 0, kTagRequest,
                     MPI_COMM_WORLD);
            MPI_Recv(&item, 1, MPI_INT64_T, 0, kTagReply, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
          }
          if (item < 0) return;
          msg = encode(item, attempt(static_cast<size_t>(item), run, describe, where));
        }
      };
      std::vector<std::thread> pool;
      for (int i = 1; i < local_threads; ++i) pool.emplace_back(worker);
      worker();
      for (std::thread& t : pool) t.join();
      int failed = 0;
      MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
      if (failed) throw RemoteFailure{};
      return {};
    }
  }
#endif

  Ledger ledger;
  ledger.order = dealing_order(count, options.cost);
  ledger.outputs.resize(count);
  st.items.assign(st.threads.size(), 0);
  st.busy_seconds.assign(st.threads.size(), 0.0);
  auto record = [&](size_t item, int rank, Outcome&& o) {
    ledger.record(item, rank, std::move(o), st, options);
  };
  auto worker = [&] {
    const AltStack alt;
    while (const auto item = ledger.take()) record(*item, 0, attempt(*item, run, describe, where));
  };
  std::vector<std::thread> pool;
  if (!procs.distributed()) {
    for (int i = 1; i < local_threads; ++i) pool.emplace_back(worker);
    worker();
  }
#ifdef TENET_WITH_MPI
  else {
    for (int i = 0; i < local_threads; ++i) pool.emplace_back(worker);
    // Deal to the other ranks until each of their threads has been told to stop.
    const int remote_threads = std::accumulate(st.threads.begin() + 1, st.threads.end(), 0);
    for (int stopped = 0; stopped < remote_threads;) {
      int arrived = 0;
      MPI_Status status;
      MPI_Iprobe(MPI_ANY_SOURCE, kTagRequest, MPI_COMM_WORLD, &arrived, &status);
      if (!arrived) {
        std::this_thread::sleep_for(
            std::chrono::microseconds(500));  // no busy wait: rank 0's threads work too
        continue;
      }
      int bytes = 0;
      MPI_Get_count(&status, MPI_CHAR, &bytes);
      std::string msg(static_cast<size_t>(bytes), '\0');
      MPI_Recv(msg.data(), bytes, MPI_CHAR, status.MPI_SOURCE, kTagRequest, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
      Header h{};
      std::memcpy(&h, msg.data(), sizeof h);
      if (h.item >= 0)
        record(static_cast<size_t>(h.item), status.MPI_SOURCE,
               Outcome{msg.substr(sizeof h), static_cast<Failure>(h.failure), h.seconds});
      const auto next = ledger.take();
      const int64_t reply = next ? static_cast<int64_t>(*next) : -1;
      MPI_Send(&reply, 1, MPI_INT64_T, status.MPI_SOURCE, kTagReply, MPI_COMM_WORLD);
      if (reply < 0) ++stopped;
    }
  }
#endif
  for (std::thread& t : pool) t.join();
#ifdef TENET_WITH_MPI
  if (procs.distributed()) {
    int failed = ledger.failure ? 1 : 0;
    MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
  }
#endif
  if (const auto& f = ledger.failure) {
    const std::string at = procs.distributed() ? fmt::format(" (rank {} on {})", f->rank,
                                                             hosts[static_cast<size_t>(f->rank)])
                                               : "";
    const std::string message = fmt::format("case {}{}: {}", describe(f->item), at, f->message);
    if (f->kind == Failure::Input) throw Error(message);
    throw std::runtime_error(message);
  }
  return std::move(ledger.outputs);
}

}  // namespace tenet::bench
